"""Where a run ran: Python, platform, the versions of the packages that change scores, and the
user's own git revision (the repository of the current directory, if any) with a dirty flag, and
the plugin distributions whose entry points the run used (:class:`~rmbench.registry.PluginSource`)."""

from __future__ import annotations

import platform
import subprocess
import sys
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path

from rmbench.registry import PluginSource
from rmbench.results.storage.record import Environment

PACKAGES = ("rmbench", "numpy", "torch", "transformers", "tokenizers", "safetensors", "datasets", "accelerate",
            "gguf", "pandas", "ray", "vllm", "lm-eval")


def package_versions(names=PACKAGES) -> dict[str, str]:
    out = {}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return out


def _git(args: list[str], cwd: Path) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def git_state(cwd: Path | None = None) -> tuple[str | None, bool | None, str | None]:
    """(revision, dirty, repository root) of the git repository holding ``cwd``; Nones outside one."""
    cwd = Path.cwd() if cwd is None else cwd
    root = _git(["rev-parse", "--show-toplevel"], cwd)
    if not root:
        return None, None, None
    revision = _git(["rev-parse", "HEAD"], cwd) or None
    status = _git(["status", "--porcelain", "--untracked-files=no"], cwd)
    return revision, (None if status is None else bool(status)), root


def current_environment(cwd: Path | None = None, plugins: Iterable[PluginSource] = ()) -> Environment:
    """This process's environment; ``plugins``: the entry points' distributions the run used
    (recorded once each, sorted)."""
    revision, dirty, root = git_state(cwd)
    return Environment(python=sys.version.split()[0], platform=platform.platform(), packages=package_versions(),
                       git_revision=revision, git_dirty=dirty, git_root=root, plugins=tuple(sorted(set(plugins))))
