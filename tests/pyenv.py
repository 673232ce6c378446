#!/usr/bin/env python3
"""The one virtual environment the Python steps share: target/py-venv.

    python3 tests/pyenv.py      # make it (CI runs this beside `cargo test`)

The Python package's tests (python/tests/run.py), the proxy's tests with
the providers' official clients (tests/serve/test_serve.py) and the Spark
test (spark/test_spark.py) each call `python()`, which makes the
environment once, with every package any of them uses, pinned, in one
`pip install`, and gives its interpreter. A stamp file names what was
installed; a changed list installs again.
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VENV = os.path.join(ROOT, "target", "py-venv")

# The package's build and tests; the official clients the proxy is driven
# with; Spark for the batch job.
PACKAGES = [
    "maturin==1.16.0", "pytest==9.2.0", "langchain==1.5.2", "langchain-core==1.8.3",
    "tiktoken==0.14.0",
    "openai==3.57.0", "anthropic==2.14.0", "ollama==0.6.3", "langchain-openai==1.7.4",
    "google-genai==3.6.1",
    "pyspark==3.5.3",
]


def python(say=lambda msg: print(f"pyenv: {msg}", flush=True)):
    """The environment's interpreter, the environment made first if it is
    missing or holds another list of packages."""
    py = os.path.join(VENV, "bin", "python")
    stamp = os.path.join(VENV, "packages.txt")
    want = "\n".join(PACKAGES)
    if os.path.exists(py) and os.path.exists(stamp) and open(stamp).read() == want:
        return py
    if not os.path.exists(py):
        say(f"making {os.path.relpath(VENV, ROOT)}")
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    say("installing " + ", ".join(PACKAGES))
    subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile", *PACKAGES],
                   check=True)
    with open(stamp, "w") as f:
        f.write(want)
    return py


if __name__ == "__main__":
    python()
