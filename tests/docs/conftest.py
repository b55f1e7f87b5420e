"""The documentation's tests share one built site per test session (``site``)."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def site(tmp_path_factory) -> Path:
    """The site ``mkdocs build --strict`` writes, built once per test session for every test that reads it."""
    mkdocs = shutil.which("mkdocs") or str(Path(sys.executable).parent / "mkdocs")
    if not Path(mkdocs).exists():
        pytest.skip("MkDocs is not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    # Material's notice about its successor is a warning, which --strict would count (.ci/run sets the same)
    result = subprocess.run([mkdocs, "build", "--strict", "-d", str(out)], cwd=REPO, capture_output=True, text=True,
                            timeout=600, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return out
