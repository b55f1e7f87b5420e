"""Loading a task's groups: from its spec, from a user's ``--data`` file, skipping bad rows.

``--data TASK=PATH`` replaces a task's own data source with a local file. For shift tasks the
file's shift can be named: ``--data translation_shift=translation:de=FILE`` labels its shifted
copies ``translation:de`` (a file given to a translation task without a label is labelled
``translation``, never ``paraphrase``), ``--data domain_shift=domain:code=FILE`` names the
domain. A row's own ``shift`` (or ``lang``: ``translation:LANG``) field wins over both. Tasks that
read several files take ``--data`` once per file (:func:`task_spec_with_files`).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rmbench.core.specs import TaskSpec
from rmbench.core.splits import (
    LIMIT_FIRST,
    LIMIT_RULES,
    LIMIT_SAMPLING,
    LIMIT_SAMPLING_V1,
    PARTS,
    limit_sample,
    parts_of,
)
from rmbench.core.types import ComparisonGroup
from rmbench.errors import ConfigError, DataError
from rmbench.tasks import build_task
from rmbench.tasks.base import Task
from rmbench.tasks.downloads import parse_remote
from rmbench.tasks.rows import skipping_bad_rows
from rmbench.tasks.shift import SHIFT_LABEL


@dataclass(frozen=True)
class DataOverride:
    """``--data TASK=[PART=]PATH``: read ``task``'s data from ``path``; ``shift``: the part it is
    (a shift task's shift, domain shift's domain, RM-Bench's domain)."""

    task: str
    path: str
    shift: str | None = None

    def source_text(self) -> str:
        """``[SHIFT=]PATH``, as given after ``TASK=``."""
        return f"{self.shift}={self.path}" if self.shift else self.path

    def to_text(self) -> str:
        return f"{self.task}={self.source_text()}"


PART_LABEL = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*(:[A-Za-z0-9][A-Za-z0-9_-]*)?$")
"""A part's label before a path: ``paraphrase``, ``translation:de``, ``domain:math``, ``chat``."""

MULTI_FILE_KINDS = ("paired_shift", "domain_shift", "rm_bench")
"""Task kinds that read several files (``--data TASK=PART=PATH`` repeated): a shift task's shifts,
domain shift's domains, RM-Bench's domains."""


MULTI_FILE_PART_KINDS = ("rm_bench",)
"""Task kinds whose parts may each be several files (``--data TASK=PART=PATH`` repeated for one
part, read in order): RM-Bench's safety domain is two upstream files. Other kinds' parts take one."""


def parse_data_overrides(items: Sequence[str], several: bool = False) -> tuple[DataOverride, ...]:
    """``["ties=path.jsonl", "translation_shift=translation:de=de.jsonl"]`` -> overrides. With
    ``several`` (``rmbench eval``) a task may be given several files, a part once per file (which
    kinds take several, and whose parts take several: :func:`task_spec_with_files`); else one per task."""
    out: list[DataOverride] = []
    for item in items:
        task, sep, rest = item.partition("=")
        task, rest = task.strip(), rest.strip()
        if not sep or not task or not rest:
            raise ConfigError(f"--data {item!r}: expected TASK=PATH or TASK=PART=PATH")
        part, sep2, path = rest.partition("=")
        shift: str | None
        if not sep2 or not PART_LABEL.match(part.strip()) or Path(rest).exists():
            shift, path = None, rest
        else:
            shift, path = part.strip(), path.strip()
        given = [d for d in out if d.task == task]
        if given and not several:
            raise ConfigError(f"--data gives task {task!r} twice")
        if any(d.shift == shift and d.path == path for d in given):
            raise ConfigError(f"--data gives task {task!r}{f' its part {shift!r}' if shift else ''} the file {path} "
                              f"twice")
        out.append(DataOverride(task, path, shift))
    return tuple(out)


def task_spec_with_files(spec: TaskSpec, files: Sequence[DataOverride],
                         warn: Callable[[str], None] | None = None) -> TaskSpec:
    """``spec`` reading the files ``--data`` gave it (one: :func:`task_spec_with_data`).

    Several files are for the tasks that read several (:data:`MULTI_FILE_KINDS`): each is a part,
    named by its label or, for RM-Bench, by its rows' ``domain`` (or its file name); a part given
    several files keeps them in order where its kind allows (:data:`MULTI_FILE_PART_KINDS`), and is
    refused in one line otherwise. Such a task
    reads only the files given; domain shift keeps its own in-domain set only when no file is
    labelled with it, and ``warn`` then says where that set comes from (a download, for the
    published task)."""
    if len(files) == 1 and spec.kind != "domain_shift":
        return task_spec_with_data(spec, files[0].path, files[0].shift)
    if len(files) > 1 and spec.kind not in MULTI_FILE_KINDS:
        raise ConfigError(f"--data gives task {spec.name!r} {len(files)} files, but it reads one (kind {spec.kind}); "
                          f"the tasks that read several are those of kinds {', '.join(MULTI_FILE_KINDS)}")
    paths: dict[str, str] = {}
    several: dict[str, list[str]] = {}  # a part of several files (MULTI_FILE_PART_KINDS): its files in order
    for d in files:
        label = _part_label(spec, d)
        if label in paths and spec.kind not in MULTI_FILE_PART_KINDS:
            raise ConfigError(f"--data gives task {spec.name!r} two files for its part {label!r} ({paths[label]} and "
                              f"{d.path}), but a part of kind {spec.kind} reads one file; label each TASK=PART=PATH")
        source = _local_or_remote(d.path, spec)
        several.setdefault(label, []).append(source)
        paths.setdefault(label, source)
    old = spec.args
    if spec.kind == "rm_bench":
        parts = {label: got[0] if len(got) == 1 else got for label, got in several.items()}
        return TaskSpec.make(name=spec.name, kind=spec.kind, args={"paths": parts}, version=spec.version)
    args: dict[str, Any] = {"paths": paths}
    if spec.kind == "domain_shift":
        in_domain = old.get("in_domain", "chat")
        args["in_domain"] = in_domain
        if in_domain not in paths:
            kept = (old.get("paths") or {}).get(in_domain)
            if kept is None:
                raise ConfigError(f"--data gives task {spec.name!r} the domains {', '.join(paths)} but not its "
                                  "in-domain "
                                  f"set {in_domain!r}: add --data {spec.name}={in_domain}=FILE")
            args["paths"] = {in_domain: kept, **paths}
            if warn is not None:
                where = "downloaded once from its published source" if parse_remote(str(kept)) else f"read from {kept}"
                warn(f"task {spec.name!r}: --data gives {', '.join(paths)}; its in-domain set {in_domain!r} was not "
                     f"given, so it is the task's own ({where}); add --data {spec.name}={in_domain}=FILE to use yours")
    return TaskSpec.make(name=spec.name, kind=spec.kind, args=args, version=spec.version)


def _part_label(spec: TaskSpec, d: DataOverride) -> str:
    """The part a file is for: its label (a domain shift's ``domain:math`` is ``math``); RM-Bench's
    unlabelled files by their name; a shift task's unlabelled file by the task's default shift."""
    if spec.kind == "domain_shift":
        if d.shift is None:
            return str(spec.args.get("domain", "math"))
        return d.shift.split(":", 1)[-1]
    if spec.kind == "rm_bench":
        return d.shift or Path(d.path.split("#", 1)[0]).name
    label = d.shift or _default_shift(spec)
    if not SHIFT_LABEL.match(label):
        raise ConfigError(f"--data {spec.name}={label}=...: {label!r} is no shift label (paraphrase, translation:LANG "
                          f"or KIND:NAME)")
    return label


def _local_or_remote(path: str, spec: TaskSpec | None = None) -> str:
    """A data source as a task's ``path`` takes it: a web file's ``URL#sha256=HEX``, or an
    existing local file's absolute path ("no such file" otherwise; a folder: what ``spec``'s
    task expects instead, :func:`expected_file`)."""
    remote = parse_remote(path)
    if remote is not None:
        return remote.text()
    p = Path(path).expanduser()
    if p.is_dir():
        raise DataError(f"is a folder, but {expected_file(spec)}", path=str(p))
    if not p.is_file():
        raise DataError("no such file", path=str(p))
    return str(p.resolve())


def expected_file(spec: TaskSpec | None) -> str:
    """What a ``--data`` path of ``spec``'s task must be: one file, of its kind's rows."""
    from rmbench.tasks.schemas import schemas_of

    if spec is None:
        return "--data takes a file"
    rows = " or ".join(s.describe() for s in schemas_of(spec.kind))
    each = "a file per part (--data TASK=PART=FILE, once each)" if spec.kind in MULTI_FILE_KINDS else "one file"
    return (f"task {spec.name!r} (kind {spec.kind}) reads {each}: a JSON Lines, JSON, CSV or Parquet file"
            + (f" of {rows}" if rows else "") + f", e.g. --data {spec.name}=FILE.jsonl")


def _default_shift(spec: TaskSpec) -> str:
    """The shift label of a file given to a paired-shift task with no label of its own."""
    names = list(spec.args.get("paths") or {}) or [spec.args.get("shift") or "paraphrase"]
    if len(names) == 1:
        return names[0]
    return "translation" if all(n.startswith("translation") for n in names) else "paraphrase"


def _reads_folder(kind: str) -> bool:
    """Whether task kind ``kind``'s ``--data`` may be a folder (:attr:`Task.reads_folder`; an
    unknown kind: no, and it fails when the task is built, with its own message)."""
    from rmbench.registry import RegistryError
    from rmbench.tasks import TASK_KINDS

    try:
        return bool(getattr(TASK_KINDS.get(kind), "reads_folder", False))
    except RegistryError:
        return False


def task_spec_with_data(spec: TaskSpec, path: str, shift: str | None = None) -> TaskSpec:
    """The same task reading a local file, or a web file ``URL#sha256=HEX``, instead of its own
    source (``shift``: its label)."""
    folder = Path(path).expanduser()
    source = str(folder.resolve()) if _reads_folder(spec.kind) and folder.is_dir() else _local_or_remote(path, spec)
    old = spec.args
    args = {k: v for k, v in old.items() if k not in ("dataset", "revision", "config", "paths", "pins")}
    if spec.kind == "domain_shift":
        if "paths" in old:
            args["paths"] = old["paths"]  # keep the in-domain set; the file becomes the shifted domain
        if shift is not None:
            args["domain"] = shift.split(":", 1)[-1]
    elif spec.kind in ("paired_shift", "rewrite_invariance"):
        args["shift"] = shift or _default_shift(spec)
    elif shift is not None:
        raise ConfigError(f"--data {spec.name}={shift}=...: task {spec.name!r} (kind {spec.kind}) is not a shift "
                          f"task, so its data takes no shift label")
    args["path"] = source
    return TaskSpec.make(name=spec.name, kind=spec.kind, args=args, version=spec.version)


def split_task_args(items: Sequence[tuple[str, Any]], task_names: Sequence[str]) -> dict[str, dict[str, Any]]:
    """``--task-arg`` items -> task name -> arguments. ``TASK.KEY`` (TASK one of the run's tasks)
    sets KEY of that task; a bare ``KEY`` sets it on every task of the run (a task whose kind has
    no such argument then fails, naming it: with several tasks, name the one meant)."""
    out: dict[str, dict[str, Any]] = {name: {} for name in task_names}
    for key, value in items:
        key = str(key).strip()
        task, dot, rest = key.rpartition(".")
        if dot:  # argument names have no dots: TASK.KEY
            if task not in out or not rest:
                raise ConfigError(f"--task-arg {key}=...: {task!r} is not among the tasks ({', '.join(task_names)})")
            out[task][rest] = value
        elif not key:
            raise ConfigError("--task-arg: expected [TASK.]KEY=VALUE, got an empty KEY")
        else:
            for args in out.values():
                args[key] = value
    return out


def task_spec_with_args(spec: TaskSpec, args: Mapping[str, Any]) -> TaskSpec:
    """The same task with ``args`` (``--task-arg``) replacing or adding its arguments."""
    return TaskSpec.make(name=spec.name, kind=spec.kind, args={**spec.args, **args}, version=spec.version)


def task_spec_for_verdicts(spec: TaskSpec, given: Mapping[str, Any]) -> TaskSpec:
    """``spec`` with its kind's :attr:`~rmbench.tasks.base.Task.verdict_args` that ``given``
    (``--task-arg``) does not set: the task as a model that gives pair verdicts is scored on it."""
    from rmbench.registry import RegistryError
    from rmbench.tasks import TASK_KINDS

    try:
        kind = TASK_KINDS.get(spec.kind)
    except RegistryError:
        return spec  # an unknown kind fails when the task is built, with its own message
    extra = {k: v for k, v in getattr(kind, "verdict_args", {}).items() if k not in given}
    return task_spec_with_args(spec, extra) if extra else spec


PART_ARG = "part"
"""A task argument every kind accepts: ``train`` or ``held_out`` keeps only that part of its
groups (:mod:`rmbench.core.splits`); ``rmbench train`` and ``rmbench eval`` of a trained model set it."""


def without_part(spec: TaskSpec) -> tuple[TaskSpec, str | None]:
    """The spec without its ``part`` argument (which no task class takes), and the part."""
    args = spec.args
    if PART_ARG not in args:
        return spec, None
    part = args[PART_ARG]
    if part not in PARTS:
        raise ConfigError(f"task {spec.name!r}: part must be {' or '.join(PARTS)}, got {part!r}")
    rest = {k: v for k, v in args.items() if k != PART_ARG}
    return TaskSpec.make(name=spec.name, kind=spec.kind, args=rest, version=spec.version), part


def load_groups(spec: TaskSpec, limit: int | None = None, sampling: str = LIMIT_SAMPLING,
                warn: Callable[[str], None] | None = None) -> tuple[Task, list[ComparisonGroup]]:
    """Build the task and read its groups (of its ``part``, if the spec names one), checking ids
    are unique; with ``limit``, the sample of ``limit`` groups that :func:`rmbench.core.splits.limit_sample`
    takes over every slice (``sampling``: :data:`~rmbench.core.splits.LIMIT_SAMPLING`;
    :data:`~rmbench.core.splits.LIMIT_SAMPLING_V1`, as runs written before every reported slice kept a
    unit sampled; ``first``, the first ``limit`` groups in file order, as runs written before the sample
    existed took them). ``warn`` hears, in one line, of the reported slices a limit too small leaves out."""
    if sampling not in LIMIT_RULES:
        raise DataError(f"task {spec.name!r}: unknown --limit sampling {sampling!r} (a newer rmbench's?); this "
                        f"rmbench knows {LIMIT_SAMPLING!r}, {LIMIT_SAMPLING_V1!r} and {LIMIT_FIRST!r}")
    first = sampling == LIMIT_FIRST
    spec, part = without_part(spec)
    task = build_task(spec)
    groups = []
    seen: set[str] = set()
    for g in task.groups():
        if not isinstance(g, ComparisonGroup):
            raise DataError(f"task {spec.name!r} yielded a {type(g).__name__}, not a ComparisonGroup")
        if g.id in seen:  # loaders that know the line say so first; this catches the rest
            raise DataError(f"task {spec.name!r}: two groups have the id {g.id!r}; group ids must be unique")
        seen.add(g.id)
        groups.append(g)
        if first and part is None and limit is not None and len(groups) >= limit:
            break
    if part is not None and groups:
        # Split by bootstrap units (read whole: a unit's groups may lie apart), then limit.
        parts = parts_of(groups, task.bootstrap_units(groups))
        every = len(groups)
        groups = [g for g, p in zip(groups, parts) if p == part]
        groups = groups[:limit] if first else groups
        if not groups:
            raise DataError(f"task {spec.name!r} has no comparison groups in its {part} part: all {every} fall in "
                            f"the other part (rmbench train --split all trains on every group)")
    if not groups:
        raise DataError(f"task {spec.name!r} has no comparison groups")
    if limit is not None and not first and len(groups) > limit:
        slices = [task.limit_slice(g) for g in groups] if sampling == LIMIT_SAMPLING else None
        keep = limit_sample(groups, task.bootstrap_units(groups), limit, slices)
        if slices is not None and warn is not None:
            kept = {slices[i] for i in keep}
            left = [s for s in dict.fromkeys(slices) if s not in kept]
            if left:
                n_slices = len(set(slices))
                warn(f"task {spec.name!r}: --limit {limit} is too small to keep a unit (paired groups together) of "
                     f"each of its {n_slices} reported slices; left out: {', '.join(left)}")
        groups = [groups[i] for i in keep]
    return task, groups


def load_groups_skipping(spec: TaskSpec, limit: int | None = None, sampling: str = LIMIT_SAMPLING,
                         warn: Callable[[str], None] | None = None
                         ) -> tuple[Task, list[ComparisonGroup], list[DataError]]:
    """:func:`load_groups` that leaves out bad rows (``--skip-bad-rows``) and returns their errors.

    Readers skip rows they cannot parse as they go. A row that a loader rejects (a missing or
    mistyped field) stops its generator, so the task is read again without that row: the groups
    are exactly those of the file minus its bad rows, whatever state the loader keeps across rows.
    Errors that name no line (a missing, empty or binary file) still fail, as does one that
    recurs after its row was left out.
    """
    with skipping_bad_rows() as bad:
        while True:
            try:
                task, groups = load_groups(spec, limit, sampling, warn)
                return task, groups, sorted(bad.errors, key=lambda e: (str(e.path), e.line))
            except DataError as exc:
                if exc.line is None or exc.path is None or (str(exc.path), int(exc.line)) in bad.excluded:
                    if bad.errors and str(exc).endswith("has no comparison groups"):
                        raise DataError(f"{exc}: all {len(bad.errors)} rows were bad and skipped; the first: "
                                        f"{bad.errors[0]}") from None
                    raise
                bad.add(exc)


def load_task(spec: TaskSpec, limit: int | None = None, skip_bad_rows: bool = False,
              sampling: str = LIMIT_SAMPLING, warn: Callable[[str], None] | None = None
              ) -> tuple[Task, list[ComparisonGroup], list[DataError]]:
    """Task, groups and the bad rows left out (none unless ``skip_bad_rows``); ``limit``,
    ``sampling`` and ``warn`` as in :func:`load_groups`."""
    if skip_bad_rows:
        return load_groups_skipping(spec, limit, sampling, warn)
    task, groups = load_groups(spec, limit, sampling, warn)
    return task, groups, []


def held_out_spec(spec: TaskSpec, trained_on: Mapping[str, Any] | None, model: str, overridden: bool,
                  warn: Callable[[str], None]) -> TaskSpec:
    """``spec`` for scoring a model that ``rmbench train`` trained on ``trained_on`` (its card's
    record): the task's ``held_out`` part when it reads the data the model was trained on (the
    same task name without a --data file, or the same file) and the user named no part, with a
    warning that says so;
    a loud warning where the model was trained on every group (``--split all``)."""
    if trained_on is None or PART_ARG in spec.args:
        return spec
    data, path = trained_on["data"], spec.args.get("path")
    if Path(data).is_absolute():  # a file (recorded by its absolute path): the task reads that file
        same = isinstance(path, str) and Path(path).expanduser().resolve() == Path(data)
    else:  # a task name: that task on its own data (``overridden``: a --data file replaces it)
        same = spec.name == data and not overridden
    if not same:
        return spec
    if trained_on.get("part") == "train":
        warn(f"task {spec.name!r}: {model} was trained on the train part of this data; scoring only its "
             f"held_out part ({trained_on.get('rule', 'a hash split of group ids')}); results.json records "
             f"part: held_out")
        return task_spec_with_args(spec, {PART_ARG: "held_out"})
    warn(f"task {spec.name!r}: {model} was trained on every group of this data (rmbench train --split all): "
         f"these scores are on its own training rows, not held-out ones")
    return spec

