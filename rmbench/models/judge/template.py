"""A template file (``--model-arg prompt=FILE``) as a judge protocol: its text, and how its grade is read.

The file begins with a front-matter block that declares the grade's pattern, a regular
expression with one group, and in mode rating the scale::

    ---
    grade: '\\[RESULT\\]\\s*(\\d+)'
    scale: 1-5
    ---
    Rate the answer from 1 to 5 ... {question} ... {answer} ... End with "[RESULT] N".

The block is YAML (single quotes keep a pattern's backslashes as they are). The text after it
is the user message, with ``{question}`` and ``{answer}`` (rating), ``{question}``,
``{answer_a}``, ``{answer_b}`` (pairwise) or ``{question}``, ``{answer_a}``..``{answer_d}``
(fourway); other braces are doubled. How the group is read:

* rating: the LAST match's group is the grade, a number; a grade outside ``scale`` (MIN-MAX,
  both included) is no verdict, counted like any unparsed reply, so a 1-5 template never
  accepts a 6;
* pairwise: every match's group is a verdict: ``A`` or ``A>B``/``A>>B`` (A is better), ``B`` or
  ``B>A``/``B>>A``, ``A=B`` (a tie); several different verdicts are no verdict;
* fourway: the FIRST match's group is the chosen slot, ``A``..``D``.

A template has no official client: it is read strictly and never asked again. A file without
the block is refused in one line that shows the block to add.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import yaml

from rmbench.errors import ConfigError, did_you_mean
from rmbench.models.judge.judge_protocol import JudgeProtocol, Messages

FIELDS = {"rating": ("question", "answer"), "pairwise": ("question", "answer_a", "answer_b"),
          "fourway": ("question", "answer_a", "answer_b", "answer_c", "answer_d")}
EXAMPLE = {"rating": ("'(\\d+)\\s*$'", "scale: 1-10\\n"), "pairwise": ("'\\[\\[([AB<>=]+)\\]\\]'", ""),
           "fourway": ("'\\[\\[([ABCD])\\]\\]'", "")}
"""Per mode, the example block's grade pattern and scale line (as shown, ``\\n`` for a newline)."""
KEYS = ("grade", "scale")
_SCALE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*-\s*(-?\d+(?:\.\d+)?)\s*$")
_NUMBER = re.compile(r"^[+-]?\d+(?:\.\d+)?$")
_PAIR_VERDICTS = {"A": "A>B", "A>B": "A>B", "A>>B": "A>B", "B": "B>A", "B>A": "B>A", "B>>A": "B>A", "A=B": "A=B"}
_SLOTS = ("A", "B", "C", "D")


def block_to_add(mode: str) -> str:
    """The front-matter block a ``mode`` template needs, on one line (``\\n`` for each newline)."""
    grade, scale = EXAMPLE[mode]
    return f"---\\ngrade: {grade}\\n{scale}---\\n"


def read_template(prompt: str, mode: str) -> JudgeProtocol:
    """The protocol of the template file ``prompt`` in ``mode``; a bad file is one ConfigError line."""
    path = Path(prompt)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"judge prompt {prompt}: cannot read it ({exc})") from None
    header, body = _split(text, prompt, mode)
    pattern, scale = _declaration(header, prompt, mode)
    _check_fields(body, prompt, mode)
    return JudgeProtocol(prompt, mode, _messages(body, mode), _parser(pattern, mode), text, scale=scale,
                         template=text)


def _split(text: str, prompt: str, mode: str) -> tuple[str, str]:
    """The front matter and the text after it."""
    lines = text.splitlines(keepends=True)
    end = next((i for i, line in enumerate(lines[1:], 1) if line.rstrip("\r\n") == "---"), None)
    if not lines or lines[0].rstrip("\r\n") != "---" or end is None:
        raise ConfigError(f"judge prompt {prompt}: a template must declare how its grade is read; add this block "
                          f"as its first lines: {block_to_add(mode)} (grade: a regular expression with one group"
                          f"{'; scale: the lowest and highest grade' if mode == 'rating' else ''})")
    return "".join(lines[1:end]), "".join(lines[end + 1:])


def _declaration(header: str, prompt: str, mode: str) -> tuple[re.Pattern[str], tuple[float, float] | None]:
    try:
        fields = yaml.safe_load(header) or {}
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        line = f" line {where.line + 2}" if where is not None else ""
        raise ConfigError(f"judge prompt {prompt}{line}: the front matter is not YAML "
                          f"({getattr(exc, 'problem', None) or exc}); e.g. {block_to_add(mode)}") from None
    if not isinstance(fields, dict):
        raise ConfigError(f"judge prompt {prompt}: the front matter must be 'key: value' lines, e.g. "
                          f"{block_to_add(mode)}")
    unknown = [str(k) for k in fields if k not in KEYS]
    if unknown:
        raise ConfigError(f"judge prompt {prompt}: unknown front-matter key {unknown[0]!r}"
                          f"{did_you_mean(unknown[0], KEYS)} (it takes: {', '.join(KEYS)})")
    if "grade" not in fields:
        raise ConfigError(f"judge prompt {prompt}: the front matter needs grade, e.g. {block_to_add(mode)}")
    try:
        pattern = re.compile(str(fields["grade"]))
    except re.error as exc:
        raise ConfigError(f"judge prompt {prompt}: grade {fields['grade']!r} is not a regular expression ({exc})"
                          ) from None
    if pattern.groups != 1:
        raise ConfigError(f"judge prompt {prompt}: grade {pattern.pattern!r} must have exactly one group (the "
                          f"grade), it has {pattern.groups}")
    if mode != "rating":
        if "scale" in fields:
            raise ConfigError(f"judge prompt {prompt}: scale is for mode rating; a {mode} grade is a verdict "
                              f"label ({'A, B, A=B' if mode == 'pairwise' else 'A..D'})")
        return pattern, None
    return pattern, _scale(fields.get("scale"), prompt)


def _scale(value: Any, prompt: str) -> tuple[float, float]:
    match = _SCALE.match(str(value)) if value is not None else None
    low, high = (float(match.group(1)), float(match.group(2))) if match else (0.0, 0.0)
    if match is None or not low < high:
        raise ConfigError(f"judge prompt {prompt}: a rating template needs scale: MIN-MAX (the lowest and highest "
                          f"grade, e.g. scale: 1-10), got {value!r}")
    return low, high


def _check_fields(body: str, prompt: str, mode: str) -> None:
    fields = FIELDS[mode]
    try:
        body.format(**{f: "" for f in fields})
    except (KeyError, IndexError, ValueError) as exc:
        raise ConfigError(f"judge prompt {prompt}: a {mode} template may use only "
                          f"{', '.join('{' + f + '}' for f in fields)} (double other braces); {type(exc).__name__}: "
                          f"{exc}") from None
    missing = [f for f in fields if "{" + f + "}" not in body]
    if missing:
        raise ConfigError(f"judge prompt {prompt}: a {mode} template needs {', '.join('{' + f + '}' for f in missing)}")


def _messages(body: str, mode: str) -> Callable[[str, Sequence[str], str | None], Messages]:
    names = FIELDS[mode][1:]

    def messages(question: str, answers: Sequence[str], subset: str | None) -> Messages:
        return (("user", body.format(question=question, **dict(zip(names, answers)))),)
    return messages


def _parser(pattern: re.Pattern[str], mode: str) -> Callable[[str], Any]:
    def rating(text: str) -> float | None:
        grades = [m.group(1) for m in pattern.finditer(text or "")]
        grade = (grades[-1] or "").strip() if grades else ""
        return float(grade) if _NUMBER.match(grade) else None

    def pairwise(text: str) -> str | None:
        verdicts = {_PAIR_VERDICTS.get((m.group(1) or "").strip()) for m in pattern.finditer(text or "")}
        return verdicts.pop() if len(verdicts) == 1 else None

    def fourway(text: str) -> str | None:
        match = pattern.search(text or "")
        slot = (match.group(1) or "").strip() if match else ""
        return slot if slot in _SLOTS else None

    return {"rating": rating, "pairwise": pairwise, "fourway": fourway}[mode]
