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
