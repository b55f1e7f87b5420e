"""The row schemas rmbench's task kinds read, and which one a row looks like: a file given to the
wrong task (preference pairs to ``ties``) then fails with the schema the task expects and the
one the row has, not only ``field 'id': missing``.

A kind declares the schemas it reads on its class (``Task.row_schemas``); registering the kind
registers them here (:func:`register_row_schemas`, into :data:`ROW_SCHEMAS`, called by
:func:`rmbench.tasks.register_task_kind`). No list order decides which schema a row looks like:
the most specific ones it fits do (:func:`looks_like`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from rmbench.core.types import prompt_from_json
from rmbench.registry import Registry


def _text(value: Any) -> bool:
    return isinstance(value, str)


def _id(value: Any) -> bool:
    return isinstance(value, str) or (isinstance(value, int) and not isinstance(value, bool))


def _texts(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def _ints(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def _int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _flag_list(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, bool) or v in (0, 1) for v in value)


def _answer_object(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("answer"), str)


def _answer_objects(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(_answer_object(v) for v in value)


def _prompt(value: Any) -> bool:
    try:
        prompt_from_json(value)
    except (ValueError, TypeError):
        return False
    return True


def _reply(value: Any) -> bool:
    return _text(value) or (isinstance(value, list) and bool(value) and isinstance(value[-1], dict))


@dataclass(frozen=True)
class RowSchema:
    """A row format: its name and its required fields (each with what it must hold). The task
    kinds that read it are registered with it (:func:`kinds_reading`)."""

    name: str
    """How errors and ``rmbench tasks show`` name the format (``"preference pairs"``)."""
    fields: tuple[tuple[str, str, Callable[[Any], bool]], ...]
    """The required fields, each ``(name, what it holds, check)``: the check takes the field's
    value (as a JSON row holds it) and says whether it is of the right type."""

    def fits(self, row: dict) -> bool:
        """Whether ``row`` holds every required field with a value of the right type (a CSV row,
        whose cells are all text, is judged by its field names only)."""
        textual = all(isinstance(v, str) for v in row.values())
        return all(row.get(name) is not None and (textual or ok(row[name])) for name, _, ok in self.fields)

    def describe(self) -> str:
        """``name (field: what, ...)``, as an error hint names the format a row looks like."""
        return f"{self.name} ({', '.join(f'{name}: {what}' for name, what, _ in self.fields)})"

    @property
    def field_names(self) -> frozenset[str]:
        """The names of the required fields."""
        return frozenset(name for name, _, _ in self.fields)


RM_BENCH = RowSchema("RM-Bench rows", (("prompt", "text", _prompt), ("chosen", "3 answers", _texts),
                                       ("rejected", "3 answers", _texts), ("domain", "text", _text)))
RB2 = RowSchema("RewardBench 2 rows", (("id", "tied:K/ref:K or any id", _id), ("prompt", "text", _prompt),
                                       ("chosen", "list of answers", _texts), ("rejected", "list of answers", _texts)))
RB1 = RowSchema("RewardBench rows", (("prompt", "text", _prompt), ("chosen", "text", _text),
                                     ("rejected", "text", _text), ("subset", "text", _text)))
PREFERENCE = RowSchema("preference pairs", (("prompt", "text", _prompt), ("chosen", "text", _reply),
                                            ("rejected", "text", _reply)))
GROUPS = RowSchema("rmbench groups", (("id", "text", _id), ("prompt", "text", _prompt),
                                      ("responses", "list of answers", _texts),
                                      ("utilities", "list of integers", _ints)))
PAIRED_SHIFT = RowSchema("paired shift rows", (("orig_index", "integer", lambda v: _id(v)),
                                               ("prompt", "text", _prompt), ("orig_chosen", "text", _text),
                                               ("orig_rejected", "text", _text), ("chosen", "text", _text),
                                               ("rejected", "text", _text)))
PERSONA = RowSchema("persona statements", (("question", "text", _text), ("answer_matching_behavior", "Yes/No", _text)))
JUDGEBENCH = RowSchema("JudgeBench rows", (("pair_id", "text", _id), ("source", "text", _text),
                                           ("question", "text", _prompt), ("response_A", "text", _text),
                                           ("response_B", "text", _text), ("label", "A>B or B>A", _text)))
PROCESSBENCH = RowSchema("ProcessBench rows", (("id", "text", _id), ("problem", "text", _text),
                                                ("steps", "list of steps", _texts),
                                                ("label", "index of the first wrong step, -1 if none", _int)))
PRMBENCH = RowSchema("PRMBench rows", (("idx", "text", _id), ("classification", "error type", _text),
                                       ("modified_question", "text", _text),
                                       ("modified_process", "list of steps", _texts),
                                       ("error_steps", "list of step numbers", _ints)))
PPE_CORRECTNESS = RowSchema("PPE correctness rows", (("question_id", "text", _id), ("prompt", "text", _prompt),
                                                     ("scores", "list of booleans", _flag_list),
                                                     ("response_1", "text, one per score", _text)))
PPE_HUMAN = RowSchema("PPE human preference rows", (("question_id", "text", _id),
                                                    ("winner", "model_a/model_b/tie", _text),
                                                    ("prompt", "text", _prompt), ("response_1", "text", _reply),
                                                    ("response_2", "text", _reply)))

RMB_PAIRWISE = RowSchema("RMB pairwise rows",
                         (("pair_uid", "text", _id), ("conversation_input", "chat messages", _prompt),
                                               ("chosen", "{llm_name, answer}", _answer_object),
                                               ("reject", "{llm_name, answer}", _answer_object),
                                               ("category_path", "Pairwise_set/GOAL/...", _text)))
RMB_BON = RowSchema("RMB Best-of-N rows", (("bon_uid", "text", _id), ("conversation_input", "chat messages", _prompt),
                                           ("bon_best", "{llm_name, answer}", _answer_object),
                                           ("loser_list", "list of {llm_name, answer}", _answer_objects),
                                           ("category_path", "BoN_set/GOAL/...", _text)))
VL_REWARDBENCH = RowSchema("VL-RewardBench rows", (("id", "text", _id), ("query", "text", _text),
                                                   ("response", "two texts", _texts),
                                                   ("human_ranking", "two ranks, 0 the best", _ints)))
MM_REWARDBENCH = RowSchema("Multimodal RewardBench items", (("ID", "text", _id), ("Text", "text", _text),
                                                             ("Image", "image path", _text),
                                                             ("Output1", "text", _text), ("Output2", "text", _text),
                                                             ("Better", "Output1 or Output2", _text)))

ROW_SCHEMAS: Registry[tuple[RowSchema, ...]] = Registry("row schemas of task kind", same_ok=True)
"""Each task kind that reads rows and the schemas it reads, in registration order (a schema read
by several kinds, as RewardBench 2 rows by ``rb2_ties`` and ``rewardbench2``, is under each), with
the kind's origin."""


def register_row_schemas(kind: str, schemas: tuple[RowSchema, ...], *, description: str = "") -> None:
    """Note that the task kind ``kind`` reads rows of ``schemas`` (the same ones again: a no-op).
    A kind's registration does it with the kind's origin (:func:`rmbench.tasks.declare_kind`)."""
    ROW_SCHEMAS.register(kind, tuple(schemas), description=description, origin=f"register_row_schemas({kind!r})")


def _registered() -> list[RowSchema]:
    """Every registered schema once, in registration order."""
    return list(dict.fromkeys(s for _, schemas in ROW_SCHEMAS.items() for s in schemas))


def kinds_reading(schema: RowSchema) -> tuple[str, ...]:
    """The registered kinds that read ``schema``."""
    return tuple(kind for kind, schemas in ROW_SCHEMAS.items() if schema in schemas)


def schemas_of(kind: str) -> tuple[RowSchema, ...]:
    """The schemas the registered kind ``kind`` reads."""
    return ROW_SCHEMAS.get(kind) if kind in ROW_SCHEMAS else ()


def looks_like(row: dict) -> tuple[RowSchema, ...]:
    """The registered schemas ``row`` fits that no other one it fits refines (a schema refines
    another when its required fields include all of the other's and more: RewardBench rows refine
    preference pairs); several when the row fits schemas that neither refines (an RM-Bench row,
    whose id also makes it RewardBench 2's), most fields first, then by name; () for none."""
    fits = [s for s in _registered() if s.fits(row)]
    best = [s for s in fits if not any(s.field_names < o.field_names for o in fits)]
    return tuple(sorted(best, key=lambda s: (-len(s.fields), s.name)))


def _kinds_text(schema: RowSchema) -> str:
    return " or ".join(f"'{k}'" for k in kinds_reading(schema))


def _read_with(schema: RowSchema, path: str | None) -> str:
    """The command-line options that read a file of ``schema`` with a kind that reads it (a
    registered kind is also a task of that name): ``--tasks prmbench --data prmbench=FILE``."""
    file = path if path and not path.startswith("hf://") else "FILE"
    return " or ".join(f"--tasks {k} --data {k}={file}" for k in kinds_reading(schema))


def schema_hint(row: dict, expected: RowSchema | None, path: str | None = None) -> str:
    """What to add to a row's missing or mistyped field: the schema the task reads, and the one
    the row looks like with the kinds that read it and the options that read the file (``path``,
    the row's file; FILE where unknown or on the hub) with one of them (empty when the row fits
    ``expected``, or when neither is known)."""
    if expected is not None and expected.fits(row):
        return ""
    others = [s for s in looks_like(row) if s != expected]
    parts = []
    if expected is not None:
        parts.append(f"this task reads {expected.describe()}")
    if others:
        like = " or ".join(f"{s.describe()}, which the task kind {_kinds_text(s)} reads (read the file with "
                           f"{_read_with(s, path)})" for s in others)
        parts.append(f"this row looks like {like}")
    elif expected is not None:
        parts.append(f"the row has {', '.join(map(str, list(row)[:8])) or 'no fields'}")
    return "; ".join(parts)
