"""A mitmdump addon for bench/real_model.py: saves the body of each POST it
passes on to the server, in order (000001.json, 000002.json, …, in
CAPTURE_DIR), so that what the server received can be read back:

    mitmdump --mode reverse:http://127.0.0.1:PORT -s bench/real_model_capture.py
"""

import os

from mitmproxy import http

DIR = os.environ["CAPTURE_DIR"]
count = 0


def request(flow: http.HTTPFlow) -> None:
    global count
    if flow.request.method != "POST":
        return
    count += 1
    with open(os.path.join(DIR, f"{count:06d}.json"), "wb") as f:
        f.write(flow.request.get_content() or b"")
