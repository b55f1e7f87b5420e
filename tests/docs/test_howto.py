"""Every how-to page's first command works as written: the first shell block of each page of
docs/how-to/ runs, command by command, in a user's fresh clone of the repository (as
tests/docs/test_readme.py runs the README and the tutorials), on an offline machine, with the page's
own set-up, and leaves ``git status`` clean there (every output in a folder git ignores).

The page's set-up is what its block says: ``pip install 'rmbench[EXTRA]'`` is checked, not run
(the extra's packages must be installed in this Python; the page skips, naming the extra, where
they are not), ``pip install -e FOLDER`` of a package in the clone installs it into a folder of
the test's own (as tests/plugins/test_plugins.py does), ``.venv/bin/`` is this Python's, and the hub is
unreachable (``HF_HUB_OFFLINE``, an empty hub cache). A page whose first command cannot run here
is declared below with its reason, never left out silently: ``NO_COMMAND`` (a page of code or
prose, with no shell block), ``NEEDS_THE_HUB`` (run offline, its first command must stop at once
with the hub's one line: it is valid as written and wants only the hub) and ``CANNOT_RUN_HERE``
(a GPU, a paid API, a file of your own). Each declared page is checked to be as declared, so a
page that changes is looked at again.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement

from tests.support.doc_commands import REPO, command_lines, fresh_clone, left_behind, shell_blocks

HOWTO = REPO / "docs" / "how-to"

NO_COMMAND = {
    "add-engine.md": "an engine's code and entry point (tests/plugin_pkg; tests/plugins/test_plugins.py runs them)",
    "add-model.md": ("a model's code, YAML entry and entry point (tests/plugin_pkg; tests/plugins/test_plugins.py "
                     "runs them)"),
    "gpu.md": "prose: what runs on a GPU and how it is chosen",
    "resume.md": "prose: what a rerun after a fault keeps",
    "troubleshooting.md": "prose: the error lines and what to do about each",
}
"""Pages with no shell block: what they hold instead."""

NEEDS_THE_HUB = {
    "hub-export.md": "a 435M-parameter model from the hub scored on RewardBench 2 and RM-Bench, read from the hub "
                     "(3,000+ prompts: a GPU's work)",
    "prmbench.md": "PRMBench's data, from the hub (or --task-arg source=github, from GitHub)",
    "published.md": "a model's scores file of RewardBench 2's results dataset and RewardBench 2's data, from the hub "
                    "(its other lines: files of JudgeBench's and RMB's repositories; "
                    "tests/models/test_published.py replays each format offline)",
}
"""Pages whose first command reads the hub: offline, it must fail at once with the hub's one line."""

CANNOT_RUN_HERE = {
    "prm.md": "a PRM checkpoint of your own (path/to/trl-prm) or a 7B PRM from the hub, on a GPU",
    "scale-out.md": "a Ray cluster or 8 GPUs and an 8B reward model of your own (path/to/8b-rm)",
}
"""Pages whose first command needs what no test machine has, with the reason."""

HUB_UNREACHABLE = "the hub is unreachable"
"""What rmbench's one error line says when a model or dataset needs the hub and there is none."""


def pages() -> list[str]:
    return sorted(p.name for p in HOWTO.glob("*.md"))


def first_block(page: str) -> list[str]:
    blocks = shell_blocks((HOWTO / page).read_text(encoding="utf-8"))
    return command_lines(blocks[0]) if blocks else []


def test_every_page_is_run_or_declared_with_its_reason():
    declared = [*NO_COMMAND, *NEEDS_THE_HUB, *CANNOT_RUN_HERE]
    assert len(declared) == len(set(declared)), "a page declared twice"
    assert set(declared) <= set(pages()), f"declared pages that are not how-to pages: {set(declared) - set(pages())}"
    runnable = [p for p in pages() if p not in declared]
    assert len(runnable) >= 7, runnable
    for page in runnable:
        assert first_block(page), f"{page} has no shell block: declare it in NO_COMMAND with what it holds"


def _extra_missing(extra: str) -> str | None:
    """Why ``rmbench[extra]`` is not installed in this Python, or None when it is."""
    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    assert extra in declared, f"no extra {extra!r} in pyproject.toml"
    for requirement in map(Requirement, declared[extra]):
        try:
            metadata.version(requirement.name)
        except metadata.PackageNotFoundError:
            return f"the {extra} extra is not installed here ({requirement.name}): pip install 'rmbench[{extra}]'"
    return None


TRACKERS = ("wandb", "mlflow", "tensorboard", "trackio")


def needed_extras(commands: list[str]) -> list[str]:
    """The extras a block installs (``pip install 'rmbench[X]'``) or whose tracker it logs to."""
    extras = []
    for command in commands:
        extras += re.findall(r"rmbench\[([\w-]+)\]", command)
        extras += [t for t in re.findall(r"(?:--log-to|--to)[ =](\w+)", command) if t in TRACKERS]
    return list(dict.fromkeys(extras))


TRACKER_DEFAULTS = {
    "wandb": "wandb/offline-run-1/files/config.yaml",  # W&B's WANDB_DIR: the current folder
    "mlflow": "mlruns/0/meta.yaml",  # a file: store (mlflow-skinny) where MLFLOW_TRACKING_URI says ./mlruns
    "mlflow artifacts": "mlartifacts/0/report.html",  # the artifact root of an mlflow server started there
    "mlflow database": "mlflow.db",  # the full mlflow's default store, sqlite:///mlflow.db
    "trackio": ".trackio/trackio.db",
}
"""What each tracker writes in the current folder when run from a clone's root with its defaults."""


def test_what_the_trackers_write_by_default_is_ignored_by_git():
    """A tracker's default local store, written from the repository's root, leaves ``git status`` clean."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    paths = list(TRACKER_DEFAULTS.values())
    ignored = subprocess.run(["git", "check-ignore", "--no-index", *paths], cwd=REPO, capture_output=True, text=True)
    if ignored.returncode == 128:
        pytest.skip(f"{REPO} is not a git checkout")
    assert ignored.stdout.split() == paths, f"not ignored by git: {set(paths) - set(ignored.stdout.split())}"


def _shims(clone: Path) -> Path:
    """``clone/.venv/bin`` (git ignores ``.venv/``) with ``rmbench`` and ``python`` of this Python,
    first on the commands' PATH: ``rmbench ...`` and ``.venv/bin/rmbench ...`` both run the clone's code."""
    bin_dir = clone / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "rmbench").write_text(f'#!/bin/sh\nexec "{sys.executable}" -m rmbench "$@"\n')
    (bin_dir / "python").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    for shim in bin_dir.iterdir():
        shim.chmod(0o755)
    return bin_dir


def _environment(clone: Path, tmp: Path) -> dict[str, str]:
    """An offline machine whose caches and home are the test's own (no tracker, hub or score cache of the user's)."""
    env = {**os.environ, "PATH": f"{_shims(clone)}{os.pathsep}{os.environ.get('PATH', '')}",
           "PYTHONPATH": str(clone), "COLUMNS": "200", "HOME": str(tmp / "home"),
           "XDG_CACHE_HOME": str(tmp / "cache"), "HF_HOME": str(tmp / "hf"), "HF_HUB_CACHE": str(tmp / "hf" / "hub"),
           "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
           "WANDB_SILENT": "true"}
    for name in ("MLFLOW_TRACKING_URI", "MLFLOW_ALLOW_FILE_STORE", "WANDB_MODE", "WANDB_DIR", "TRACKIO_DIR"):
        env.pop(name, None)  # the page's own settings, not the tester's
    return env


def _run_line(command: str, clone: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=600)


def _is_setup(command: str) -> bool:
    return command.startswith("pip install ")


def _install_local_package(command: str, clone: Path, tmp: Path, env: dict[str, str]) -> None:
    """``pip install [-e] FOLDER`` of a package in the clone, done as tests/plugins/test_plugins.py does it:
    into a folder of the test's own on the commands' PYTHONPATH (its .dist-info is how rmbench finds
    the entry points), so this Python's environment stays as it was; rmbench then loads that
    package's plugins (the suite's own runs load none: tests/conftest.py)."""
    for tool in ("pip", "setuptools"):
        if importlib.util.find_spec(tool) is None:
            pytest.skip(f"{tool} is not installed in this Python ({sys.executable}): `{command}` needs it")
    folder = clone / shlex.split(command)[-1]
    assert (folder / "pyproject.toml").is_file(), f"`{command}`: no package in {folder}"
    source, site = tmp / "package" / folder.name, tmp / "site"
    shutil.copytree(folder, source, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "--target", str(site), str(source)], check=True, capture_output=True, timeout=600)
    env["PYTHONPATH"] = os.pathsep.join([env["PYTHONPATH"], str(site)])
    env["RMBENCH_PLUGINS"] = tomllib.loads((folder / "pyproject.toml").read_text(encoding="utf-8"))["project"]["name"]


@pytest.mark.parametrize("page", [p for p in pages() if p not in (*NO_COMMAND, *NEEDS_THE_HUB, *CANNOT_RUN_HERE)])
def test_the_first_command_block_runs_as_written(page, tmp_path):
    commands = first_block(page)
    for extra in needed_extras(commands):
        missing = _extra_missing(extra)
        if missing:
            pytest.skip(f"{page}: {missing}")
    clone = fresh_clone(tmp_path / "rmbench")
    env = _environment(clone, tmp_path)
    ran = 0
    for command in commands:
        if _is_setup(command):
            if "rmbench[" not in command:  # an extra is checked above, not installed
                _install_local_package(command, clone, tmp_path, env)
            continue
        done = _run_line(command, clone, env)
        assert done.returncode == 0, f"{page}: {command}\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
        ran += 1
    assert ran or all(map(_is_setup, commands)), page
    status = left_behind(clone)
    assert not status, f"{page}'s first commands wrote outside the folders git ignores:\n{status}"


@pytest.mark.parametrize("page", sorted(NEEDS_THE_HUB))
def test_a_first_command_that_reads_the_hub_wants_only_the_hub(page, tmp_path):
    """Offline, the page's first command is accepted as written (its model spec, tasks and options)
    and stops at once with the one line that says the hub is unreachable; then the page skips, with
    what it needs."""
    command = next(c for c in first_block(page) if not _is_setup(c))
    clone = fresh_clone(tmp_path / "rmbench")
    done = _run_line(command, clone, _environment(clone, tmp_path))
    lines = done.stderr.strip().splitlines()
    assert done.returncode != 0 and lines and HUB_UNREACHABLE in lines[-1], \
        f"{page}: {command}\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    assert "Traceback" not in done.stderr
    assert not left_behind(clone)
    pytest.skip(f"{page}: needs the hub: {NEEDS_THE_HUB[page]} (offline it stops at once with the hub's one line)")


@pytest.mark.parametrize("page", sorted(CANNOT_RUN_HERE))
def test_a_first_command_that_cannot_run_here_is_declared(page):
    assert first_block(page), f"{page} has no shell block: declare it in NO_COMMAND"
    pytest.skip(f"{page}: needs {CANNOT_RUN_HERE[page]}")


@pytest.mark.parametrize("page", sorted(NO_COMMAND))
def test_a_page_without_a_command_has_no_shell_block(page):
    assert not first_block(page), f"{page} has a shell block now: its first command is to be run (or declared)"
