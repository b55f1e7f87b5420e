"""The one record of an option that a pluggable thing declares: :class:`Option`.

A leaderboard format (``--format-option ci=pm``), an engine (``--engine-arg workers=8``) and an
experiment tracker (``--log-arg wandb.project=x``) each declare their options as a tuple of
:class:`Option` (name, the closed set of words or the type of its value, default, help); what a
user gives is read and checked here, once, by :func:`resolve_options`: a key the thing does not
declare, or a value its option refuses, is one :class:`~rmbench.errors.ConfigError` line naming
the thing and listing its options. ``rmbench.plugins`` exports :class:`Option` (and
``FormatOption``, the same class under the name formats used first).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from rmbench.errors import ConfigError, did_you_mean

OptionValue = str | int | float | bool | None
"""An option's value once read: text, a whole number, a number, true/false, or None (not set)."""
OptionKind = type[str] | type[int] | type[float] | type[bool]


class _FirstChoice(str):
    """The default of :attr:`Option.default`: the first of the choices (None without choices)."""

    __slots__ = ()


FIRST_CHOICE = _FirstChoice("<the first choice>")

_KIND_WORDS: dict[type, str] = {str: "TEXT", int: "INT", float: "NUMBER", bool: "true|false"}
_TRUE, _FALSE = ("true", "yes", "on", "1"), ("false", "no", "off", "0")


@dataclass(frozen=True)
class Option:
    """One option: ``NAME=VALUE``, the value one of ``choices`` (a closed set of words) or of
    ``kind`` (``str``, ``int``, ``float`` or ``bool``; a word from the command line is read as
    one), within ``at_least``/``above`` for a number. ``default``: what a run uses when the
    option is not given (the first choice unless given; None: not set, whoever reads it falls
    back, as a tracker falls back on its environment variable)."""

    name: str
    """The key of ``NAME=VALUE``: letters, digits and _."""
    choices: tuple[str, ...] = ()
    help: str = ""
    """What the option sets, for help and error messages."""
    kind: OptionKind = str
    default: OptionValue = FIRST_CHOICE
    at_least: float | None = None
    """A number's smallest value (``workers``: 1)."""
    above: float | None = None
    """A number must be greater than this (``worker_cpus``: 0)."""

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise ValueError(f"option name {self.name!r}: use letters, digits and _")
        if self.kind not in _KIND_WORDS:
            raise ValueError(f"option {self.name!r}: kind must be str, int, float or bool, not {self.kind!r}")
        if self.choices and self.kind is not str:
            raise ValueError(f"option {self.name!r}: choices are words (kind str)")
        if self.default is FIRST_CHOICE:
            object.__setattr__(self, "default", self.choices[0] if self.choices else None)
        elif self.default is not None:
            try:
                self.read(self.default)
            except ConfigError as exc:
                raise ValueError(f"option {self.name!r}: its default {self.default!r}: {exc}") from None

    def read(self, value: object) -> OptionValue:
        """``value`` (a word from the command line, or a Python value) as this option's value;
        None gives the default. A value it refuses: a ConfigError saying what it takes."""
        if value is None:
            return self.default
        out = _as_kind(value, self.kind)
        if self.choices and out not in self.choices:
            raise ConfigError(f"use one of {', '.join(self.choices)}")
        if isinstance(out, int | float) and not isinstance(out, bool):
            if self.at_least is not None and out < self.at_least:
                raise ConfigError(f"must be >= {_number(self.at_least)}")
            if self.above is not None and out <= self.above:
                raise ConfigError(f"must be > {_number(self.above)}")
        return out

    @property
    def usage(self) -> str:
        """``ci=brackets|pm``, ``workers=INT``: the option as its error lines and help list it."""
        return f"{self.name}={'|'.join(self.choices) if self.choices else _KIND_WORDS[self.kind]}"

    @property
    def line(self) -> str:
        """``workers=INT (actors ...; default 2)``: the usage with its help and default, for help texts."""
        said = "" if self.default is None else f"default {_value_text(self.default)}"
        inside = "; ".join(x for x in (self.help, said) if x)
        return f"{self.usage} ({inside})" if inside else self.usage


FormatOption = Option
"""The name formats declared their options with first (``FormatOption("ci", ("brackets", "pm"), help)``)."""


def _number(x: float) -> str:
    return str(int(x)) if float(x).is_integer() else str(x)


def _value_text(value: OptionValue) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _as_kind(value: object, kind: OptionKind) -> OptionValue:
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError("expected text")
        return value
    if kind is bool:
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise ConfigError("expected true or false")
    if isinstance(value, bool):
        raise ConfigError("expected a whole number" if kind is int else "expected a number")
    if kind is int:
        if isinstance(value, int):
            return value
        if isinstance(value, str):
            try:
                return int(value.strip())
            except ValueError:
                pass
        raise ConfigError("expected a whole number")
    number: float | None = None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            pass
    if number is None or not math.isfinite(number):
        raise ConfigError("expected a finite number")
    return number


def options_text(declared: Sequence[Option]) -> str:
    """``its options: ci=brackets|pm`` (or ``it takes none``): what every error line lists."""
    return f"its options: {', '.join(o.usage for o in declared)}" if declared else "it takes none"


def resolve_options(declared: Sequence[Option], given: Mapping[str, object] | Iterable[tuple[str, object]],
                    owner: str, *, defaults: bool = True, note: str = "") -> dict[str, OptionValue]:
    """``given`` (a mapping, or ``(name, value)`` pairs) read against ``declared``: every
    declared option in order, the defaults filled in (``defaults=False``: the given ones only).
    An undeclared name, a name given twice or a refused value: one ConfigError line that names
    ``owner`` (``format 'latex'``, ``--engine ray``) and lists its options, then ``note``."""
    pairs = list(given.items()) if isinstance(given, Mapping) else list(given)
    known = {o.name: o for o in declared}
    read: dict[str, OptionValue] = {}
    for name, value in pairs:
        if name not in known:
            raise ConfigError(f"{owner} has no option {name!r}{did_you_mean(name, known)} "
                              f"({options_text(declared)}){note}")
        if name in read:
            raise ConfigError(f"{owner}: option {name} is given twice{note}")
        try:
            read[name] = known[name].read(value)
        except ConfigError as exc:
            raise ConfigError(f"{owner}: option {name}={value!r}: {exc} ({options_text(declared)}){note}") from None
    if not defaults:
        return {o.name: read[o.name] for o in declared if o.name in read}
    return {o.name: read.get(o.name, o.default) for o in declared}


def split_assignment(word: str, flag: str, example: str) -> tuple[str, str]:
    """``NAME=VALUE`` -> ``(NAME, VALUE)``, both stripped; else a ConfigError naming ``flag``
    (``--engine-arg``) with ``example`` (``workers=8``)."""
    name, sep, value = word.partition("=")
    if not sep or not name.strip():
        raise ConfigError(f"{flag} {word!r}: expected NAME=VALUE (e.g. {example})")
    return name.strip(), value.strip()
