"""What the tests share: the repository's paths, the command line built by
cargo, tiktoken's vocabularies read from the Rust crate that ships them
(tiktoken would fetch them from the network)."""

import glob
import hashlib
import os
import shutil
import subprocess

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures")
EXE = os.environ.get("CTXCLEAN_EXE", os.path.join(ROOT, "target", "debug", "ctxclean"))

TIKTOKEN_URLS = {
    "o200k_base": "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken",
    "cl100k_base": "https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken",
}


@pytest.fixture(scope="session")
def exe():
    if not os.path.exists(EXE):
        subprocess.run(["cargo", "build", "--locked"], cwd=ROOT, check=True)
    return EXE


def fixture_files():
    """Every transcript of fixtures/, as a user would hand it over."""
    out = []
    for dp, _, fs in os.walk(FIXTURES):
        for f in sorted(fs):
            if f.endswith((".json", ".jsonl")):
                out.append(os.path.relpath(os.path.join(dp, f), ROOT))
    return sorted(out)


@pytest.fixture(scope="session")
def tiktoken_cache(tmp_path_factory):
    """A TIKTOKEN_CACHE_DIR holding the vocabularies tiktoken-rs ships
    (the same files tiktoken downloads), so tiktoken runs offline."""
    home = os.environ.get("CARGO_HOME", os.path.expanduser("~/.cargo"))
    found = glob.glob(os.path.join(home, "registry", "src", "*", "tiktoken-rs-*", "assets"))
    if not found:
        subprocess.run(["cargo", "fetch", "--locked"], cwd=ROOT, check=True)
        found = glob.glob(os.path.join(home, "registry", "src", "*", "tiktoken-rs-*", "assets"))
    assert found, "tiktoken-rs's vocabularies: not in the cargo registry"
    cache = tmp_path_factory.mktemp("tiktoken")
    for name, url in TIKTOKEN_URLS.items():
        key = hashlib.sha1(url.encode()).hexdigest()
        shutil.copy(os.path.join(sorted(found)[-1], f"{name}.tiktoken"), cache / key)
    os.environ["TIKTOKEN_CACHE_DIR"] = str(cache)
    return cache
