"""Where rmbench keeps things on disk."""

from __future__ import annotations

import os
from pathlib import Path


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/rmbench``, or ``~/.cache/rmbench``; read at call time (tests override it)."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "rmbench"
