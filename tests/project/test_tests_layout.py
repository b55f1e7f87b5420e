"""The tests mirror the packages (CONTRIBUTING.md, "Where tests go"): each folder of tests/ is a
package of rmbench/ (or bench/, the docs, the project, or support/), a package in Python's sense
too, test files have names of their own, and only the top-level modules' tests sit at the top."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
BESIDE = {"bench", "docs", "project", "support"}
"""Folders of tests/ that mirror no package of rmbench/: bench/'s tests, the documentation's, the
whole repository's, and what the tests use."""
DATA = {"golden", "plugin_pkg", "__pycache__"}
"""Folders of tests/ that hold no test module: the golden runs' records and the example plugin package
(and tools' hidden caches, ``.mypy_cache``, which are no folder of the layout either)."""


def _test_files() -> list[Path]:
    return sorted(p for p in TESTS.rglob("test_*.py") if not DATA & set(p.relative_to(TESTS).parts))


def test_every_test_folder_mirrors_a_package_and_is_one():
    folders = {p.parent for p in _test_files()} | {p for p in TESTS.iterdir()
                                                   if p.is_dir() and p.name not in DATA and not p.name.startswith(".")}
    for folder in sorted(folders):
        relative = folder.relative_to(TESTS)
        assert (folder / "__init__.py").is_file(), f"tests/{relative} has no __init__.py (tests/ is a package)"
        if folder == TESTS or relative.parts[0] in BESIDE:
            continue
        package = REPO / "rmbench" / relative
        assert (package / "__init__.py").is_file(), f"tests/{relative} mirrors no package of rmbench/"


def test_the_top_holds_only_the_tests_of_rmbench_s_top_level_modules():
    top = sorted(p.name for p in TESTS.glob("test_*.py"))
    assert top, "no test at the top of tests/ (hub.py is a top-level module)"
    strays = [name for name in top if not (REPO / "rmbench" / name.removeprefix("test_")).is_file()]
    assert not strays, f"tests at the top of tests/ that test no top-level module of rmbench/: {strays}"


def test_test_files_have_names_of_their_own_and_support_holds_none():
    files = _test_files()
    twice = sorted(name for name, n in Counter(p.name for p in files).items() if n > 1)
    assert not twice, f"test files sharing a name: {twice}"
    assert not [p for p in files if p.parent == TESTS / "support"], "tests/support/ holds helpers, not tests"
