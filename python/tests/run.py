#!/usr/bin/env python3
"""Builds the Python package and runs its tests.

    python3 python/tests/run.py [pytest arguments]

Makes a virtual environment under target/py-venv with what the tests use
(maturin, pytest, LangChain, tiktoken; pinned), builds the package into it
with `maturin develop` (the dev profile, sharing target/ with `cargo test`,
so the library is not built twice), then runs pytest on python/tests. The
command line the tests compare with is target/debug/ctxclean (built if it
is not there).
"""

import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.join(ROOT, "target", "py-venv")
PACKAGES = ["maturin==1.16.0", "pytest==9.2.0", "langchain==1.5.2", "langchain-core==1.8.3", "tiktoken==0.14.0"]


def say(msg):
    print(f"python/tests/run.py: {msg}", flush=True)


def main():
    py = os.path.join(VENV, "bin", "python")
    stamp = os.path.join(VENV, "packages.txt")
    if not os.path.exists(py):
        say("making target/py-venv")
        subprocess.run([sys.executable, "-m", "venv", VENV], check=True)
    if not os.path.exists(stamp) or open(stamp).read() != "\n".join(PACKAGES):
        say("installing " + ", ".join(PACKAGES))
        subprocess.run([py, "-m", "pip", "install", "-q", "--disable-pip-version-check", *PACKAGES], check=True)
        with open(stamp, "w") as f:
            f.write("\n".join(PACKAGES))
    env = dict(os.environ, VIRTUAL_ENV=VENV, PATH=os.path.join(VENV, "bin") + os.pathsep + os.environ["PATH"])
    say("building the package (maturin develop)")
    subprocess.run([os.path.join(VENV, "bin", "maturin"), "develop", "--locked", "-q"],
                   cwd=os.path.join(ROOT, "python"), env=env, check=True)
    if not os.path.exists(os.path.join(ROOT, "target", "debug", "ctxclean")):
        subprocess.run(["cargo", "build", "--locked"], cwd=ROOT, check=True)
    r = subprocess.run([py, "-m", "pytest", "-q", "-p", "no:cacheprovider", *sys.argv[1:]],
                       cwd=os.path.join(ROOT, "python"), env=env)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
