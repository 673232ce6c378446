"""The README's and docs/python.md's Python examples run, as a newcomer
would run them from the repository's root, and print what they say."""

import contextlib
import io
import os
import re

import pytest

from conftest import ROOT

BLOCK = re.compile(r"```python runnable\n(.*?)```", re.S)


def blocks():
    out = []
    for doc in ("README.md", os.path.join("docs", "python.md")):
        text = open(os.path.join(ROOT, doc), encoding="utf-8").read()
        out += [(doc, k, b) for k, b in enumerate(BLOCK.findall(text))]
    return out


def test_the_readme_has_its_three_python_uses():
    assert sum(1 for doc, _, _ in blocks() if doc == "README.md") >= 3


@pytest.mark.parametrize("doc, k, code", blocks(), ids=lambda v: str(v)[:20])
def test_each_example_runs_and_prints_what_it_says(doc, k, code, monkeypatch):
    monkeypatch.chdir(ROOT)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(code, f"{doc} python block {k + 1}", "exec"), {})
    said = [m.group(1).strip() for m in re.finditer(r"print\(.*\)\s+# (.*)", code)]
    lines = printed.getvalue().splitlines()
    for want in said:
        assert any(line.strip() == want for line in lines), f"{doc} block {k + 1}: printed {lines}, says {want!r}"
