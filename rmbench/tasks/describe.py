"""What ``rmbench tasks show TASK`` prints: a task's row format, an example row, its official
layout, its headline metrics, its score arguments and where its data comes from, read from its
kind's declarations (``Task.row_schemas``, ``official``, ``headline``, ``score_args``) and its
entry's arguments, without building the task or reading more than one row of a local file.

:func:`task_info` gathers it as a :class:`TaskInfo`; :func:`render_task_info` writes it as plain
lines (what the CLI prints)."""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmbench.core.metric_registry import DEFAULT_HEADLINE, OfficialLayout, metric_def
from rmbench.core.specs import TaskSpec
from rmbench.errors import RMBenchError
from rmbench.registry import RegistryError, import_target
from rmbench.tasks.schemas import RowSchema, schemas_of

EXAMPLE_TEXT_CHARS = 160
"""Longest string of a real example row shown whole; a longer one is cut with its length said."""
EXAMPLE_LIST_ITEMS = 3
"""Most items of a list shown in a real example row."""
MAX_FILE_LINES = 4
"""Most data files named one a line; the rest are counted on one line."""


@dataclass(frozen=True)
class ExampleRow:
    """An example row: the first row of the task's local file (``source``: FILE line N), or one
    built from its schema (``source`` None: placeholders of each field's type)."""

    row: Mapping[str, Any]
    source: str | None


@dataclass(frozen=True)
class TaskInfo:
    """Everything ``rmbench tasks show`` says of one task."""

    name: str
    kind: str
    version: int | None
    description: str
    schemas: tuple[RowSchema, ...]
    example: ExampleRow | None
    official: OfficialLayout | None
    headline: tuple[str, ...]
    score_args: tuple[tuple[str, Any], ...]
    data: tuple[str, ...]
    """Where the rows come from, one line each (with whether they are here), then how ``--data`` replaces them."""
    steps: bool


def _kind_class(kind: str) -> Any:
    """The kind's class or factory (an import target ``module:Class`` as entries may name it)."""
    from rmbench.tasks import TASK_KINDS

    return import_target(kind) if ":" in kind else TASK_KINDS.get(kind)


def _defaults(factory: Any) -> dict[str, Any]:
    """The keyword defaults of ``factory``'s signature ({} when it has none readable)."""
    try:
        params = inspect.signature(factory).parameters.values()
    except (TypeError, ValueError):
        return {}
    return {p.name: p.default for p in params if p.default is not inspect.Parameter.empty}


# --- an example row -----------------------------------------------------------------------------

def _placeholder(what: str, ok: Callable[[Any], bool]) -> Any:
    """A value of a field described as ``what`` that its check ``ok`` accepts: text as
    ``<what>``, else the first of a few shapes (a list of texts, of integers, an integer, chat
    messages, ``{llm_name, answer}`` objects) that fits."""
    count = int(m.group(1)) if (m := re.match(r"(\d+) ", what)) else 2
    item = "answer" if "answer" in what else "step" if "step" in what else "text"
    candidates: list[Any] = [
        f"<{what}>", [f"<{item} {i + 1}>" for i in range(count)], [1, 0], 0,
        [{"role": "user", "content": "<text>"}], {"llm_name": "<model>", "answer": "<text>"},
        [{"llm_name": "<model>", "answer": "<text>"}, {"llm_name": "<model>", "answer": "<text>"}]]
    for value in candidates:
        try:
            if ok(value):
                return value
        except Exception:  # a plugin's check that rejects a shape by raising
            continue
    return f"<{what}>"


def schema_example(schema: RowSchema) -> dict[str, Any]:
    """A row of ``schema`` made of placeholders (it fits the schema: tested for every built-in)."""
    return {name: _placeholder(what, ok) for name, what, ok in schema.fields}


def _shortened(value: Any) -> Any:
    if isinstance(value, str) and len(value) > EXAMPLE_TEXT_CHARS:
        return f"{value[:EXAMPLE_TEXT_CHARS]}… ({len(value):,} characters)"
    if isinstance(value, list):
        kept = [_shortened(v) for v in value[:EXAMPLE_LIST_ITEMS]]
        return kept + ([f"… ({len(value) - EXAMPLE_LIST_ITEMS} more)"] if len(value) > EXAMPLE_LIST_ITEMS else [])
    if isinstance(value, dict):
        return {k: _shortened(v) for k, v in value.items()}
    return value


def _local_file(args: Mapping[str, Any]) -> str | None:
    """The task's local data file, when it has one that exists (a shift task's first part)."""
    from rmbench.tasks.downloads import is_web_source

    candidates = [args.get("path"), *(args.get("paths") or {}).values()]
    for path in candidates:
        if isinstance(path, str) and not is_web_source(path) and Path(path).expanduser().is_file():
            return str(Path(path).expanduser())
    return None


def example_row(args: Mapping[str, Any], schemas: Sequence[RowSchema]) -> ExampleRow | None:
    """The first row of the task's local file (long texts and lists cut), else one built from
    its first schema; None when the kind declares no schema and has no local file."""
    from rmbench.tasks.sources import iter_rows

    local = _local_file(args)
    if local is not None:
        try:
            location, line, row = next(iter_rows(path=local))
            return ExampleRow({k: _shortened(v) for k, v in row.items()}, f"{location} line {line}")
        except (StopIteration, RMBenchError, OSError, ValueError):
            pass  # an empty or unreadable file: the schema's example instead
    return ExampleRow(schema_example(schemas[0]), None) if schemas else None


# --- where the data comes from ------------------------------------------------------------------

def _file_line(label: str, path: str) -> str:
    from rmbench.tasks.downloads import MIRROR_ENV, is_cached, parse_remote

    try:
        remote = parse_remote(path)
    except RMBenchError as exc:
        return f"{label}{path} ({exc})"
    if remote is None:
        here = "present" if Path(path).expanduser().is_file() else "missing"
        return f"{label}local file {path} ({here})"
    cached = "in the download cache" if is_cached(remote) else "not downloaded yet"
    mirror = os.environ.get(MIRROR_ENV)
    served = f"served by the mirror {MIRROR_ENV}={mirror}" if mirror else f"{MIRROR_ENV}=PREFIX serves it offline"
    return f"{label}web file {remote.url} (sha256 {remote.sha256[:12]}…; {cached}; {served})"


def _more_files(paths: Sequence[str]) -> str:
    """One line for the files past the first few: how many, and how many are here."""
    from rmbench.tasks.downloads import is_cached, parse_remote

    here = 0
    for path in paths:
        try:
            remote = parse_remote(path)
        except RMBenchError:
            continue
        here += is_cached(remote) if remote is not None else Path(path).expanduser().is_file()
    return f"... and {len(paths)} more files, {here} of them here (downloaded or present)"


def data_lines(spec: TaskSpec) -> tuple[str, ...]:
    """Where ``spec``'s rows come from (local files, web files, hub datasets, with whether each is
    here), the source arguments that choose among them, and how ``--data`` replaces them."""
    from rmbench import hub
    from rmbench.tasks.downloads import load_pins, pin_manifest
    from rmbench.tasks.loading import expected_file

    args = spec.args_dict
    lines: list[str] = []
    if isinstance(args.get("path"), str):
        lines.append(_file_line("", args["path"]))
    paths = args.get("paths")
    if paths is None and isinstance(args.get("pins"), str):  # the files of its pin manifest
        try:
            paths = load_pins(pin_manifest(args["pins"]))
        except RMBenchError as exc:
            lines.append(f"pins {args['pins']} ({exc})")
    parts = [(part, path) for part, path in (paths or {}).items() if isinstance(path, str)]
    shown = parts if len(parts) <= MAX_FILE_LINES else parts[:MAX_FILE_LINES - 1]
    lines += [_file_line(f"{part}: ", path) for part, path in shown]
    if len(shown) < len(parts):
        lines.append(_more_files([path for _, path in parts[len(shown):]]))
    datasets = args.get("dataset")
    named = datasets.items() if isinstance(datasets, dict) else [("", datasets)] if isinstance(datasets, str) else []
    for part, dataset in named:
        if not isinstance(dataset, str):
            continue
        cached = hub.cached_commit(dataset, args.get("revision"), repo_type="datasets") is not None
        where = ", ".join(f"{key} {args[key]}" for key in ("revision", "config", "split") if args.get(key))
        lines.append(f"{part + ': ' if part else ''}hub dataset {dataset}{f' ({where})' if where else ''}: "
                     f"{'in the hub cache' if cached else 'not in the hub cache (needs the hub, or --data)'}")
    if isinstance(args.get("source"), str):
        lines.append(f"source {args['source']} (--task-arg source=... chooses another; the kind's docs list them)")
    kind = _kind_class(spec.kind)
    no_source = getattr(kind, "no_source", None)
    if not lines:
        lines.append(f"none of its own: {no_source}" if isinstance(no_source, str)
                     else "generated: the task makes its rows itself (no data file)")
    if getattr(kind, "reads_folder", False):
        lines.append(f"--data {spec.name}=FOLDER (the folder its kind's docs describe) or =FILE replaces it; as a "
                     f"file, {expected_file(spec)}")
    else:
        lines.append(f"--data {spec.name}=FILE replaces it: {expected_file(spec)}")
    return tuple(lines)


# --- the whole description ----------------------------------------------------------------------

def task_info(spec: TaskSpec, description: str = "", headline: Sequence[str] | None = None) -> TaskInfo:
    """What ``rmbench tasks show`` says of the task ``spec`` (a catalog entry, or a kind used as a
    task): ``description`` its entry's (else its kind's), ``headline`` its entry's ``headline:``
    (else its kind's). A kind that fails to load is a :class:`~rmbench.registry.RegistryError`."""
    from rmbench.tasks import TASK_KINDS, declare_kind

    cls = _kind_class(spec.kind)
    origin = spec.kind if ":" in spec.kind else TASK_KINDS.origin(spec.kind)
    declare_kind(spec.kind, cls, origin=origin)  # a lazily loaded kind's schemas and scores
    schemas = schemas_of(spec.kind) or tuple(getattr(cls, "row_schemas", ()) or ())
    defaults = _defaults(cls)
    args = spec.args_dict
    score_args = tuple((name, args.get(name, defaults.get(name))) for name in getattr(cls, "score_args", ()) or ())
    if not description:
        try:
            description = TASK_KINDS.describe(spec.kind)[0] if ":" not in spec.kind else ""
        except RegistryError:
            description = ""
    official = getattr(cls, "official", None)
    shown: tuple[str, ...] = tuple(headline) if headline else tuple(getattr(cls, "headline", DEFAULT_HEADLINE))
    return TaskInfo(spec.name, spec.kind, spec.version, description or getattr(cls, "description", ""), schemas,
                    example_row(args, schemas), official if isinstance(official, OfficialLayout) else None,
                    shown, score_args, data_lines(spec),
                    bool(getattr(cls, "steps", False)))


def _metric(name: str) -> str:
    label = metric_def(name).label
    return name if label == name else f"{name} ({label})"


def render_task_info(info: TaskInfo) -> list[str]:
    """``info`` as the plain lines ``rmbench tasks show`` prints."""
    lines = [f"{info.name}: task kind {info.kind}, version {info.version}"]
    if info.description:
        lines.append(f"  {info.description}")
    if info.steps:
        lines.append("  step-level: a process reward model scores every step of each solution (prm:, python-prm:)")
    lines.append("")
    if not info.schemas:
        lines.append("Row schema: none declared by the kind (its docs say what it reads)")
    for schema in info.schemas:
        lines.append(f"Row schema: {schema.name} (the fields every row must have; a row may hold more)")
        width = max(len(name) for name, _, _ in schema.fields)
        lines += [f"  {name:<{width}}  {what}" for name, what, _ in schema.fields]
    if info.example is not None:
        lines.append("")
        said = (f"the first row of {info.example.source}" if info.example.source is not None
                else "built from the schema: replace each <...>")
        lines.append(f"Example row ({said}):")
        lines += ["  " + line for line in json.dumps(info.example.row, ensure_ascii=False, indent=2).splitlines()]
    lines.append("")
    if info.official is None:
        lines.append("Official layout: none (the leaderboard shows the headline metrics)")
    else:
        layout = info.official
        lines.append(f"Official layout: {layout.title}, {_metric(layout.metric)} ({layout.provenance})")
        lines.append("  columns: " + ", ".join(
            f"{c.label} = {layout.metric_of(c)}" + (f"[{c.subset}]" if c.subset is not None else " (total)")
            for c in layout.columns))
        lines.append("  beside: " + ", ".join(layout.beside))
    lines.append("Headline metrics: " + ", ".join(_metric(m) for m in info.headline))
    if info.score_args:
        lines.append("Score arguments (part of the task's fingerprint: runs at other values are never compared): "
                     + ", ".join(f"{name}={value!r}" for name, value in info.score_args)
                     + " (--task-arg NAME=VALUE sets one)")
    lines.append("")
    lines.append("Data:")
    lines += [f"  {line}" for line in info.data]
    return lines
