"""Atomic file writes (a file is written to a temporary name and renamed into place, so no
reader ever sees half of it), safe file names, and how a bad JSON line is described."""

from __future__ import annotations

import json
import os
import re
import tempfile
from pathlib import Path


def json_error_text(exc: json.JSONDecodeError) -> str:
    """``exc`` as words: ``Unterminated string starting at column 28``, never "at at" (some of
    json's messages end with their own "at"). Parse a line without its newline, so that a line cut
    mid-string reads as unterminated rather than as "Invalid control character"."""
    at = "" if exc.msg.endswith(" at") else " at"
    return f"{exc.msg}{at} column {exc.colno}"


def safe_file_name(text: str, fallback: str = "x") -> str:
    """``text`` as a file name: letters, digits, ``.``, ``_``, ``+`` and ``-``; other runs become ``_``."""
    return re.sub(r"[^A-Za-z0-9_.+-]+", "_", text).strip("_.") or fallback


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
