"""A stored run's tasks scored again, by any model: exactly the run's task specs (source, split,
path, ``--data``), data (checked against the run's fingerprints), ``--limit`` sample, eps,
truncation and bootstrap, so the new run pairs with the old one item for item (``rmbench verify
RUN --against MODEL``). The tasks are read once, from the run's record, and handed to the plan,
which never reads them again, whatever the model (:func:`rmbench.scoring.planning.plan_run`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from rmbench.errors import ConfigError
from rmbench.results.storage.folder import RunFolder, load_run
from rmbench.results.storage.reload import reload_task
from rmbench.scoring.config import EvalConfig, ExecutionSettings, RunSpec
from rmbench.scoring.planning import LoadedTask, plan_run
from rmbench.scoring.runner import ProgressFactory, evaluate
from rmbench.scoring.suite import short_model_name
from rmbench.tasks.loading import DataOverride


def reference_dir(run_path: Path, model: str) -> Path:
    """Where the model's run on a run's tasks goes by default: beside the run,
    ``RUN__vs__MODEL`` (never the run's own folder)."""
    return run_path.parent / f"{run_path.name}__vs__{short_model_name(model)}"


def run_tasks_loaded(run: RunFolder, tasks: Sequence[str] = (),
                     data: Mapping[str, DataOverride | str] | None = None) -> list[LoadedTask]:
    """The run's tasks (or ``tasks`` of them) as it scored them: each reloaded from the spec it
    recorded, with its ``--limit`` sample and the rows it left out, checked against its fingerprint."""
    record = run.record
    out = []
    for name in tasks or record.task_names:
        td = reload_task(record.task(name), record.config.limit, data, record.config.limit_sampling)
        assert td.spec is not None  # reload_task always says which spec it read
        out.append(LoadedTask.read(td.spec, td.task, td.groups, list(td.bad_rows)))
    return out


def evaluate_on_run_tasks(run: RunFolder, model: str, out: Path | None = None, tasks: Sequence[str] = (),
                          data: Mapping[str, DataOverride | str] | None = None,
                          model_args: tuple[tuple[str, Any], ...] = (), execution: ExecutionSettings | None = None,
                          overwrite: bool = False, progress: ProgressFactory | None = None,
                          warn: Callable[[str], None] | None = None) -> RunFolder:
    """Score ``model`` (any ``rmbench eval --model`` spec) on ``run``'s tasks (the module's doc)
    into ``out`` (default :func:`reference_dir`), through the score cache as ``rmbench eval`` does,
    and return the new run folder."""
    out = Path(out) if out is not None else reference_dir(run.path, model)
    if out.resolve() == run.path.resolve():
        raise ConfigError(f"--out {out} is the run being verified; choose another folder")
    config = run.record.config
    loaded = run_tasks_loaded(run, tasks, data)
    measured = RunSpec(model=model, tasks=tuple(t.spec.name for t in loaded), eps=config.eps,
                       eps_unit=config.eps_unit, limit=config.limit, n_bootstrap=config.n_bootstrap, seed=config.seed,
                       model_args=model_args, skip_bad_rows=config.skip_bad_rows, max_length=config.max_length,
                       truncation=config.truncation)
    eval_config = EvalConfig(measured, execution or ExecutionSettings())
    # The run's own tasks, never read again: a model that gives pair verdicts takes its tasks'
    # verdict arguments (JudgeBench's single_game: false) on these same groups.
    plan = plan_run(eval_config, warn=warn, tasks=loaded)
    evaluate(eval_config, out, progress, warn=warn, overwrite=overwrite, plan=plan)
    return load_run(out)
