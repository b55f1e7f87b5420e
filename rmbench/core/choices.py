"""The closed sets of words that cross layers, as ``Literal`` types, each checked in one place.

A value read from a user (a CLI option, a model argument) is checked with :func:`choice`, which
names the option and the allowed words in one line (a results.json field is checked with
:func:`is_choice` by the reader, whose errors name the file and the field); code that receives an
already checked value is typed with the alias, so mypy keeps a misspelt word from reaching it.
Engines are not here: they are open (a plugin registers one, :mod:`rmbench.scoring.engines`).
"""

from __future__ import annotations

from typing import Literal, TypeGuard, TypeVar, get_args

from rmbench.errors import ConfigError

RunStatus = Literal["success", "partial", "error"]
"""A run: every task scored, some, or none."""
TaskStatus = Literal["success", "error"]
"""A task of a run: scored, or failed (its error recorded, the other tasks kept)."""
EpsUnit = Literal["sigma", "raw"]
"""eps in standard deviations of the model's rewards on the task, or in reward units."""
TruncationSide = Literal["left", "right"]
"""What a tokenised model drops of a text over ``max_length``: the prompt's start, or the end."""
PaddingSide = Literal["left", "right"]
"""Where a tokenizer pads the shorter texts of a batch (a transformers model's ``padding_side``)."""
Device = Literal["auto", "cpu", "cuda", "mps"]
"""Where a model runs (``cuda:N``, one GPU of several, and the like, are accepted too:
:func:`device_choice`)."""
DType = Literal["auto", "float32", "bfloat16", "float16"]
"""The dtypes a run may ask for (``fp32``, ``bf16`` and ``fp16`` are accepted and spelt out,
:func:`dtype_choice`)."""

RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
TASK_STATUSES: tuple[TaskStatus, ...] = get_args(TaskStatus)
EPS_UNITS: tuple[EpsUnit, ...] = get_args(EpsUnit)
TRUNCATION_SIDES: tuple[TruncationSide, ...] = get_args(TruncationSide)
PADDING_SIDES: tuple[PaddingSide, ...] = get_args(PaddingSide)
DEVICES: tuple[Device, ...] = get_args(Device)
DTYPES: tuple[DType, ...] = get_args(DType)
HALF_DTYPES: tuple[DType, ...] = ("bfloat16", "float16")
"""The 16-bit dtypes (the embedded default model keeps a copy of its weights in each)."""
DTYPE_ALIASES = {"fp32": "float32", "bf16": "bfloat16", "fp16": "float16", "half": "float16"}

_HINTS = {"--truncation": {"left": "'left' (keep the response)"}}

W = TypeVar("W", bound=str)


def is_choice(value: object, allowed: tuple[W, ...]) -> TypeGuard[W]:
    """Whether ``value`` is one of ``allowed`` (the one check, also :func:`choice`'s)."""
    return isinstance(value, str) and value in allowed


def choice(value: object, allowed: tuple[W, ...], option: str) -> W:
    """``value`` if it is one of ``allowed``, else a :class:`ConfigError` naming ``option``
    (``--eps-unit``, ``padding_side``) and the allowed words."""
    if is_choice(value, allowed):
        return value
    hints = _HINTS.get(option, {})
    words = [hints.get(w, repr(w)) for w in allowed]
    either = f"{words[0]} or {words[1]}" if len(words) == 2 else "one of " + ", ".join(words)
    raise ConfigError(f"{option} must be {either}, got {value!r}")


def dtype_choice(value: object, option: str = "--dtype") -> DType:
    """:func:`choice` over :data:`DTYPES`, with the short spellings (``bf16``) spelt out."""
    if isinstance(value, str):
        value = DTYPE_ALIASES.get(value, value)
    return choice(value, DTYPES, option)


def device_choice(value: object, option: str = "--device") -> str:
    """:func:`choice` over :data:`DEVICES`, and a device with an index, ``cuda:N`` (one GPU of
    several; accelerate gives each rank its own, ``cpu:0`` on CPUs)."""
    if isinstance(value, str):
        kind, colon, index = value.partition(":")
        if colon and index.isdigit() and kind in DEVICES and kind != "auto":
            return value
    return choice(value, DEVICES, option)
