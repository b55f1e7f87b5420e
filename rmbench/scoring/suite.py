"""``rmbench eval`` as one library call: several models on the same tasks, each run written to
its own folder, and their leaderboard beside them, built from the records in memory.

Where things go (:func:`plan_outputs`), so that no command's results replace another's:

* one model: the run folder is ``--out``, by default ``runs/<model>__<tasks>`` (a task read
  from a ``--data`` file adds the file's stem: ``runs/length__ties-rb2_ties``); its
  leaderboard is ``leaderboard.md`` inside it.
* several models: each run goes to ``<root>/<model>__<tasks>`` (root: ``--out``, default
  ``runs``), and the leaderboard to ``<root>/leaderboard__<tasks>__<models>.md``, a name only
  the same command writes.

A folder that holds another run (model, tasks or comparability key) is refused before any
model is scored unless ``overwrite`` (:func:`rmbench.results.folder.check_destination`), and so
is a folder another process is writing (:mod:`rmbench.results.folder_lock`): every run is
planned, and its folder locked and checked, first.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Sequence

from rmbench.catalog import Catalog, load_catalog
from rmbench.errors import ConfigError
from rmbench.files import atomic_write_text, safe_file_name, signals_deferred
from rmbench.models.trained import trained_split
from rmbench.results.folder import check_destination
from rmbench.results.folder_lock import run_folders_locked
from rmbench.results.leaderboard import Leaderboard, build_leaderboard
from rmbench.results.leaderboard_render import render
from rmbench.results.record import RunRecord
from rmbench.scoring.runner import EvalConfig, ProgressFactory, RunPlan, evaluate, plan_run
from rmbench.tasks.loading import DataOverride

DEFAULT_ROOT = Path("runs")
MAX_NAME = 100


def _short(name: str) -> str:
    """``name``, or its start and a hash of the whole when it is too long for a file name."""
    if len(name) <= MAX_NAME:
        return name
    return f"{name[:MAX_NAME - 10]}-{hashlib.sha256(name.encode()).hexdigest()[:8]}"


def tasks_slug(tasks: Sequence[str], data: Sequence[DataOverride] = ()) -> str:
    """``ties+persona``; a task read from a ``--data`` file adds the file's stem: ``ties-rb2_ties``."""
    stems = {d.task: Path(d.path).stem for d in data}
    return "+".join(safe_file_name(t) + (f"-{safe_file_name(stems[t])}" if t in stems else "") for t in tasks)


def run_folder_name(model: str, tasks: Sequence[str], data: Sequence[DataOverride] = ()) -> str:
    return _short(f"{safe_file_name(model)}__{tasks_slug(tasks, data)}")


@dataclass(frozen=True)
class OutputPlan:
    run_dirs: tuple[Path, ...]
    leaderboard: Path


def plan_outputs(models: Sequence[str], tasks: Sequence[str], out: Path | None = None,
                 data: Sequence[DataOverride] = ()) -> OutputPlan:
    if not models:
        raise ConfigError("no model given")
    if len(set(models)) != len(models):
        raise ConfigError(f"--model names a model twice: {', '.join(models)}")
    if len(models) == 1:
        run_dir = out if out is not None else DEFAULT_ROOT / run_folder_name(models[0], tasks, data)
        return OutputPlan((Path(run_dir),), Path(run_dir) / "leaderboard.md")
    root = Path(out) if out is not None else DEFAULT_ROOT
    board = _short(f"leaderboard__{tasks_slug(tasks, data)}__{'+'.join(safe_file_name(m) for m in models)}")
    return OutputPlan(tuple(root / run_folder_name(m, tasks, data) for m in models), root / f"{board}.md")


def _plan_all(configs: Sequence[EvalConfig], warn: Callable[[str], None] | None) -> list[RunPlan]:
    """A plan per config; configs that read the same data share its loaded tasks (read, checked,
    fingerprinted and warned about once)."""
    shared: dict[tuple, tuple[Catalog, tuple]] = {}
    plans = []
    for c in configs:
        # A trained model reads the held-out part of the data it was trained on: other groups.
        trained_on = json.dumps(trained_split(c.model), sort_keys=True)
        key = (c.tasks, c.data, c.limit, c.skip_bad_rows, c.include, trained_on)
        if key in shared:
            catalog, tasks = shared[key]
            plans.append(plan_run(c, catalog, warn, tasks))
        else:
            catalog = load_catalog(c.include)
            plans.append(plan_run(c, catalog, warn))
            shared[key] = (catalog, plans[-1].tasks)
    return plans


@dataclass(frozen=True)
class SuiteResult:
    records: tuple[RunRecord, ...]
    plan: OutputPlan
    leaderboard: Leaderboard


def evaluate_models(configs: Sequence[EvalConfig], out: Path | None = None, overwrite: bool = False,
                    progress: ProgressFactory | None = None, warn: Callable[[str], None] | None = None,
                    write: bool = True) -> SuiteResult:
    """Evaluate each config (one per model, same tasks), write every run and the leaderboard.

    ``write=False`` (an ``accelerate`` rank other than 0) scores but writes nothing.
    """
    if not configs:
        raise ConfigError("no model given")
    plan = plan_outputs([c.model for c in configs], configs[0].tasks, out, configs[0].data)
    # Every run is planned (its data read and checked, its model's adapter built without weights)
    # and its folder locked and checked before any scoring, so neither a model argument that the
    # last model does not take nor its refused folder costs the first models' scoring.
    plans = _plan_all(configs, warn)
    folders = plan.run_dirs if write else ()
    with run_folders_locked(folders):  # another process writing one of them: refused here
        for run_plan, run_dir in zip(plans, folders):
            check_destination(run_dir, run_plan.identity, overwrite)
        records = tuple(evaluate(c, out_dir=d if write else None, progress=progress, warn=warn,
                                 overwrite=overwrite, plan=p) for c, d, p in zip(configs, plan.run_dirs, plans))
        board = build_leaderboard(records)
        if write:
            with signals_deferred():  # Ctrl-C or SIGTERM now: after the leaderboard, never half of it
                atomic_write_text(plan.leaderboard, render(board, "md"))
    return SuiteResult(records, plan, board)
