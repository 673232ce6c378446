"""The abi3 wheel on the oldest and the newest CPython this machine has
beside the tests' own: the wheel the tests' environment has (built once,
the dev profile, as the tests' build), installed into a fresh virtual
environment of each, it gives the command
line's bytes, trims, counts and raises as on the tests' Python."""

import glob
import os
import subprocess
import sys

import pytest

from conftest import ROOT

SCRIPT = r"""
import json, sys, ctxclean
body = json.load(open("fixtures/functionary/test_case.json"))
r = ctxclean.apply(open("fixtures/functionary/test_case.json", "rb").read(), [{"op": "trim", "max_tokens": 300}])
sys.stdout.buffer.write(r.body)
kept = ctxclean.trim_messages(body["messages"], max_tokens=300)
assert kept == json.loads(r.body)["messages"], "trim_messages"
assert ctxclean.count_tokens("hello world") == 2
try:
    ctxclean.apply(b'{"messages": [', [{"op": "trim", "max_tokens": 5}])
    raise SystemExit("no InputError")
except ctxclean.InputError as e:
    assert e.line == 1
"""


def interpreters():
    """CPython 3.10 and 3.13 where pyenv keeps them (not the shims, which
    run only the version a directory selects)."""
    found = []
    for version in ("3.10", "3.13"):
        paths = sorted(glob.glob(os.path.expanduser(f"~/.pyenv/versions/{version}.*/bin/python{version}")))
        if paths:
            found.append(paths[-1])
    return found


def the_wheel(tmp_path):
    """The wheel the tests' environment was installed from (run.py names
    it), else one built here: the dev profile and the features run.py
    builds with, so the core is not compiled again."""
    built = os.environ.get("CTXCLEAN_WHEEL")
    if built and os.path.exists(built):
        return built
    maturin = os.path.join(os.path.dirname(sys.executable), "maturin")
    wheels = tmp_path / "wheels"
    subprocess.run([maturin, "build", "--locked", "-q", "--features", "hf", "-i", sys.executable,
                    "-o", str(wheels)],
                   cwd=os.path.join(ROOT, "python"),
                   check=True, capture_output=True)
    (wheel,) = wheels.glob("ctxclean-*-cp310-abi3-*.whl")
    return str(wheel)


@pytest.mark.skipif(not interpreters(), reason="no CPython 3.10 or 3.13 under ~/.pyenv/versions")
def test_the_abi3_wheel_runs_on_the_oldest_and_newest_python(exe, tmp_path):
    wheel = the_wheel(tmp_path)
    assert "-cp310-abi3-" in os.path.basename(wheel), wheel
    want = subprocess.run([exe, "trim", "--max-tokens", "300", "-q", "fixtures/functionary/test_case.json"],
                          cwd=ROOT, capture_output=True, check=True).stdout
    for python in interpreters():
        venv = tmp_path / os.path.basename(python)
        # No pip of its own (ensurepip is most of a venv's time): the
        # tests' pip installs into it.
        subprocess.run([python, "-m", "venv", "--without-pip", str(venv)], check=True)
        subprocess.run([sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "-q",
                        "--no-deps", "--no-index", "--disable-pip-version-check", wheel], check=True)
        r = subprocess.run([str(venv / "bin" / "python"), "-c", SCRIPT], cwd=ROOT, capture_output=True)
        assert r.returncode == 0, (python, r.stderr.decode())
        assert r.stdout == want, python
