"""``rmbench --traceback`` / ``RMBENCH_DEBUG=1``: where a user's own code failed.

A user's error is one ``error:`` line (:func:`rmbench.cli.common.user_errors`). When the error
came out of the user's own code (a ``python:`` reward function that raised, a plugin that
failed to import), that line alone does not say where; in debug mode the traceback comes first,
limited to the user's frames and the rmbench frame that called into them (the frames of the
standard library, of installed packages and the rest of rmbench's say nothing about the user's
bug). An error with no user frame shows rmbench's own frames, for a bug report.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from pathlib import Path

DEBUG_ENV = "RMBENCH_DEBUG"
_RMBENCH = str(Path(__file__).resolve().parents[1])
_LIBRARIES = tuple(p for p in {sysconfig.get_paths().get(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
                   if p)


class _State:
    traceback = False


state = _State()
"""Set by the ``--traceback`` option of the top-level command."""


def debug_on() -> bool:
    """``--traceback`` was given, or ``RMBENCH_DEBUG`` is set to anything but empty, 0, false or no."""
    return state.traceback or os.environ.get(DEBUG_ENV, "").strip().lower() not in ("", "0", "false", "no")


def _where(filename: str) -> str:
    """"rmbench", "library" (the standard library, installed packages, ``<frozen ...>``) or "user"."""
    path = os.path.abspath(filename)
    if filename.startswith("<") or path.startswith(_LIBRARIES):
        return "library" if not path.startswith(_RMBENCH) else "rmbench"
    return "rmbench" if path.startswith(_RMBENCH + os.sep) else "user"


def _chain(exc: BaseException) -> list[BaseException]:
    """``exc`` and what caused it, the first raised first (as Python prints them)."""
    out: list[BaseException] = []
    e: BaseException | None = exc
    while e is not None and not any(e is seen for seen in out):
        out.append(e)
        e = e.__cause__ if e.__cause__ is not None else (None if e.__suppress_context__ else e.__context__)
    return out[::-1]


def has_user_frames(exc: BaseException) -> bool:
    return any(_where(f.filename) == "user" for e in _chain(exc) for f in traceback.extract_tb(e.__traceback__))


def _kept(frames: traceback.StackSummary, user: bool) -> list[traceback.FrameSummary]:
    """The user's frames and the rmbench frame just before each run of them; without user
    frames anywhere in the chain, rmbench's own frames."""
    kinds = [_where(f.filename) for f in frames]
    if not user:
        return [f for f, k in zip(frames, kinds) if k == "rmbench"]
    return [f for i, (f, k) in enumerate(zip(frames, kinds))
            if k == "user" or (k == "rmbench" and "user" in kinds[i + 1:i + 2])]


def user_traceback(exc: BaseException) -> str:
    """The traceback of ``exc`` and its causes, limited as the module docstring says; ``exc``'s own
    message is left to the ``error:`` line printed after it."""
    chain, user = _chain(exc), has_user_frames(exc)
    parts = []
    for e in chain:
        kept = _kept(traceback.extract_tb(e.__traceback__), user)
        if kept:
            scope = "your code and the rmbench call into it" if user else "rmbench's frames"
            parts.append(f"Traceback ({scope}; most recent call last):\n" + "".join(traceback.format_list(kept)))
        if e is not exc:  # the error line that follows says what ``exc`` is
            parts.append("".join(traceback.format_exception_only(type(e), e)))
    return "".join(parts).rstrip("\n")
