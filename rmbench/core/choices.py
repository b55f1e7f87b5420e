"""The closed sets of words that cross layers, as ``Literal`` types, each checked in one place.

A value read from a user (a CLI option, a model argument, a results.json field) is checked with
:func:`choice`, which names the option and the allowed words in one line; code that receives an
already checked value is typed with the alias, so mypy keeps a misspelt word from reaching it.
Engines are not here: they are open (a plugin registers one, :mod:`rmbench.scoring.engines`).
"""

from __future__ import annotations

from typing import Literal, TypeVar, get_args

from rmbench.errors import ConfigError

RunStatus = Literal["success", "partial", "error"]
"""A run: every task scored, some, or none."""
TaskStatus = Literal["success", "error"]
"""A task of a run: scored, or failed (its error recorded, the other tasks kept)."""
EpsUnit = Literal["sigma", "raw"]
"""eps in standard deviations of the model's rewards on the task, or in reward units."""
TruncationSide = Literal["left", "right"]
"""What a tokenised model drops of a text over ``max_length``: the prompt's start, or the end."""
Device = Literal["auto", "cpu", "cuda", "mps"]
DType = Literal["auto", "float32", "bfloat16", "float16"]
"""The dtypes a run may ask for (``fp32``, ``bf16`` and ``fp16`` are accepted and spelt out,
:func:`dtype_choice`)."""

RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
TASK_STATUSES: tuple[TaskStatus, ...] = get_args(TaskStatus)
EPS_UNITS: tuple[EpsUnit, ...] = get_args(EpsUnit)
TRUNCATION_SIDES: tuple[TruncationSide, ...] = get_args(TruncationSide)
DEVICES: tuple[Device, ...] = get_args(Device)
DTYPES: tuple[DType, ...] = get_args(DType)
DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}

_HINTS = {"--truncation": {"left": "'left' (keep the response)"}}

W = TypeVar("W", bound=str)


def choice(value: object, allowed: tuple[W, ...], option: str) -> W:
    """``value`` if it is one of ``allowed``, else a :class:`ConfigError` naming ``option``
    (``--eps-unit``, or a file's field) and the allowed words."""
    for word in allowed:
        if value == word:
            return word
    hints = _HINTS.get(option, {})
    words = [hints.get(w, repr(w)) for w in allowed]
    either = f"{words[0]} or {words[1]}" if len(words) == 2 else "one of " + ", ".join(words)
    raise ConfigError(f"{option} must be {either}, got {value!r}")


def dtype_choice(value: object, option: str = "--dtype") -> DType:
    """:func:`choice` over :data:`DTYPES`, with the short spellings (``bf16``) spelt out."""
    if isinstance(value, str):
        value = DTYPE_ALIASES.get(value, value)
    return choice(value, DTYPES, option)
