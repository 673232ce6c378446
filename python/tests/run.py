#!/usr/bin/env python3
"""Builds the Python package and runs its tests.

    python3 python/tests/run.py [--build | --no-build] [pytest arguments]

Uses the virtual environment the Python steps share (target/py-venv, made
by tests/pyenv.py with what the tests use, pinned), builds the package into it
with `maturin build` (the dev profile, sharing target/ with `cargo test`,
so the library is not built twice) into target/py-wheels, and installs
that wheel, then runs pytest on python/tests. The
command line the tests compare with is target/debug/ctxclean (built if it
is not there). `--build` builds only, `--no-build` tests what was built
(CI builds the package while the Rust tests run, and tests it after).
"""

import glob
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests"))
import pyenv  # noqa: E402

VENV = pyenv.VENV
# Where the package's wheel is built (test_wheel.py takes it from here).
WHEELS = os.path.join(ROOT, "target", "py-wheels")


def wheel():
    """The abi3 wheel the last build made."""
    (found,) = glob.glob(os.path.join(WHEELS, "ctxclean-*-cp310-abi3-*.whl"))
    return found


def say(msg):
    print(f"python/tests/run.py: {msg}", flush=True)


def main():
    py = pyenv.python(say)
    env = dict(os.environ, VIRTUAL_ENV=VENV, PATH=os.path.join(VENV, "bin") + os.pathsep + os.environ["PATH"])
    args = sys.argv[1:]
    build, test = "--no-build" not in args, "--build" not in args
    args = [a for a in args if a not in ("--build", "--no-build")]
    if build:
        say("building the package (maturin build, installed with pip)")
        # `--features hf` as README's `cargo test --features hf`: the core is
        # the one that built (see python/Cargo.toml), not compiled again.
        # The abi3 wheel, built once: the tests' environment installs it,
        # and test_wheel.py installs the same file on other Pythons.
        for old in glob.glob(os.path.join(WHEELS, "ctxclean-*.whl")):
            os.remove(old)
        subprocess.run([os.path.join(VENV, "bin", "maturin"), "build", "--locked", "-q", "--features", "hf",
                        "-i", py, "-o", WHEELS],
                       cwd=os.path.join(ROOT, "python"), env=env, check=True)
        subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--force-reinstall",
                        "--disable-pip-version-check", wheel()], env=env, check=True)
    if not test:
        return
    if not os.path.exists(os.path.join(ROOT, "target", "debug", "ctxclean")):
        subprocess.run(["cargo", "build", "--locked"], cwd=ROOT, check=True)
    # The wheel the environment has, for test_wheel.py to install elsewhere.
    env["CTXCLEAN_WHEEL"] = wheel()
    # `-P`: the package as installed, not python/ctxclean/ from the working
    # directory (which has no extension module of its own).
    r = subprocess.run([py, "-P", "-m", "pytest", "-q", "-p", "no:cacheprovider", *args],
                       cwd=os.path.join(ROOT, "python"), env=env)
    sys.exit(r.returncode)


if __name__ == "__main__":
    main()
