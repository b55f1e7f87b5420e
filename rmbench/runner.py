"""``evaluate``: one model on a list of tasks, from specs to a written run record.

The CLI's ``rmbench eval`` is a thin wrapper around :func:`evaluate`; tests call it directly.
"""

from __future__ import annotations

import dataclasses
import math
import platform
import subprocess
import sys
import warnings
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Sequence

from rmbench import __version__
from rmbench.catalog import Catalog, load_catalog
from rmbench.backends import ENGINES, make_backend
from rmbench.cache import ScoreCache
from rmbench.engine import requests_for, score_groups
from rmbench.errors import ConfigError, DataError
from rmbench.metrics import METRIC_VERSION, reward_sigma
from rmbench.models import Runtime, build_model, parse_model_spec
from rmbench.record import SCHEMA_VERSION, RewardRow, comparability_key, write_run
from rmbench.summary import summarize
from rmbench.tasks import build_task
from rmbench.tasks.base import skipping_bad_rows
from rmbench.types import ComparisonGroup, Spec, TaskSpec, data_fingerprint

ProgressFactory = Callable[[str, int], Callable[[int], None]]
"""``factory(description, total)`` returns a callback that advances by the count it is given."""

DEFAULT_EPS = (0.0, 0.1)
DEFAULT_MODEL = "smollm2-135m"
REPORTED_BAD_ROWS = 5
"""How many skipped rows' errors a run record quotes (it always counts them all)."""


@dataclass(frozen=True)
class EvalConfig:
    """Everything that defines a run. ``data`` maps task names to local files that replace
    the task's own data source; ``eps`` is in ``eps_unit`` (``sigma`` or ``raw``)."""

    model: str = DEFAULT_MODEL
    tasks: tuple[str, ...] = ("ties",)
    data: tuple[tuple[str, str], ...] = ()
    eps: tuple[float, ...] = DEFAULT_EPS
    eps_unit: str = "sigma"
    limit: int | None = None
    include: tuple[str, ...] = ()
    n_bootstrap: int = 1000
    seed: int = 0
    model_args: tuple[tuple[str, Any], ...] = ()
    runtime: Runtime = field(default_factory=Runtime)
    cache_dir: str | None = None
    use_cache: bool = True
    skip_bad_rows: bool = False
    max_length: int | None = None
    truncation: str = "left"
    engine: str = "local"
    workers: int = 2
    ray_address: str | None = None
    worker_cpus: float = 1.0
    worker_gpus: float = 0.0

    def __post_init__(self) -> None:
        if not self.tasks:
            raise ConfigError("no tasks given")
        if len(set(self.tasks)) != len(self.tasks):
            raise ConfigError(f"--tasks names a task twice: {', '.join(self.tasks)}")
        if self.eps_unit not in ("sigma", "raw"):
            raise ConfigError(f"--eps-unit must be 'sigma' or 'raw', got {self.eps_unit!r}")
        if not self.eps or any(not math.isfinite(e) or e < 0 for e in self.eps):
            raise ConfigError(f"--eps must be a non-empty list of finite numbers >= 0, got {list(self.eps)}")
        if self.limit is not None and self.limit < 1:
            raise ConfigError(f"--limit must be >= 1, got {self.limit}")
        if self.max_length is not None and (isinstance(self.max_length, bool) or not isinstance(self.max_length, int)
                                            or self.max_length < 1):
            raise ConfigError(f"--max-length must be a positive integer, got {self.max_length!r}")
        if self.engine not in ENGINES:
            raise ConfigError(f"--engine {self.engine!r}: use one of {', '.join(ENGINES)}")
        if self.truncation not in ("left", "right"):
            raise ConfigError(f"--truncation must be 'left' (keep the response) or 'right', got {self.truncation!r}")


def task_spec_with_data(spec: TaskSpec, path: str) -> TaskSpec:
    """The same task reading a local file instead of its own source."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise DataError("no such file", path=str(p))
    args = {k: v for k, v in spec.args_dict.items() if k not in ("dataset", "revision", "config", "paths")}
    if spec.kind == "domain_shift" and "paths" in spec.args_dict:
        args["paths"] = spec.args_dict["paths"]  # keep the in-domain set; the file becomes the shifted domain
    args["path"] = str(p.resolve())
    return Spec.make(name=spec.name, kind=spec.kind, args=args, version=spec.version)


def _git_revision() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(__file__).parent, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None if out.returncode == 0 else None


def load_groups(spec: TaskSpec, limit: int | None = None) -> tuple[object, list[ComparisonGroup]]:
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
        if limit is not None and len(groups) >= limit:
            break
    if not groups:
        raise DataError(f"task {spec.name!r} has no comparison groups")
    return task, groups


def load_groups_skipping(spec: TaskSpec, limit: int | None = None
                         ) -> tuple[object, list[ComparisonGroup], list[DataError]]:
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
                task, groups = load_groups(spec, limit)
                return task, groups, sorted(bad.errors, key=lambda e: (str(e.path), e.line))
            except DataError as exc:
                if exc.line is None or exc.path is None or (str(exc.path), int(exc.line)) in bad.excluded:
                    if bad.errors and str(exc).endswith("has no comparison groups"):
                        raise DataError(f"{exc}: all {len(bad.errors)} rows were bad and skipped; the first: "
                                        f"{bad.errors[0]}") from None
                    raise
                bad.add(exc)


def skipped_rows_doc(errors: Sequence[DataError]) -> dict:
    """What a run record says about the rows ``--skip-bad-rows`` left out of a task."""
    return {"count": len(errors),
            "first": [{"path": e.path, "line": e.line, "field": e.field, "error": str(e)}
                      for e in errors[:REPORTED_BAD_ROWS]]}


def _tokenizing_parts(model) -> list:
    """The adapters inside ``model`` that tokenise and can truncate (itself, a discretised inner
    model, an implicit RM's reference), outermost first."""
    from rmbench.models.base import RewardModel

    parts, todo = [], [model]
    while todo:
        m = todo.pop(0)
        if callable(getattr(m, "set_truncation", None)):
            parts.append(m)
        todo += [sub for sub in (getattr(m, "inner", None), getattr(m, "reference", None))
                 if isinstance(sub, RewardModel)]
    return parts


@dataclass(frozen=True)
class ModelFactory:
    """Builds the run's model with its truncation set: in this process, and again in each
    worker of a distributed engine (it pickles: a spec, a runtime and two settings)."""

    spec: Spec
    runtime: Runtime
    max_length: int | None = None
    truncation: str = "left"

    def __call__(self):
        model = build_model(self.spec, self.runtime)
        if self.max_length is not None or self.truncation != "left":
            for part in _tokenizing_parts(model):
                part.set_truncation(self.max_length, self.truncation)
        return model


def evaluate(config: EvalConfig, out_dir: str | Path | None = None, progress: ProgressFactory | None = None,
             catalog: Catalog | None = None, warn: Callable[[str], None] | None = None) -> dict:
    """Score ``config.model`` on every task, compute all metrics, and write the run if ``out_dir``.

    Returns the results.json document. All tasks are loaded and checked before any scoring, so
    a bad data row fails fast and nothing is written (with ``config.skip_bad_rows`` bad rows are
    left out, counted in the record and reported through ``warn``; default: ``warnings.warn``).
    """
    warn = warn or (lambda message: warnings.warn(message, stacklevel=2))
    catalog = catalog or load_catalog(config.include)
    model_spec = parse_model_spec(config.model, catalog.models)
    if config.model_args:
        model_spec = Spec.make(model_spec.name, model_spec.kind, {**model_spec.args_dict, **dict(config.model_args)})
    overrides = dict(config.data)
    task_names = catalog.expand(config.tasks)
    unknown = sorted(set(overrides) - set(task_names))
    if unknown:
        raise ConfigError(f"--data names task {unknown[0]!r}, which is not among the tasks ({', '.join(task_names)})")
    loaded = []
    for name in task_names:
        spec = catalog.task_spec(name)
        if name in overrides:
            spec = task_spec_with_data(spec, overrides[name])
        if config.skip_bad_rows:
            task, groups, bad = load_groups_skipping(spec, config.limit)
        else:
            (task, groups), bad = load_groups(spec, config.limit), []
        if bad:
            where = "; ".join(str(e) for e in bad[:3])
            warn(f"task {name!r}: skipped {len(bad)} bad row{'s' * (len(bad) != 1)} (--skip-bad-rows), "
                 f"scoring {len(groups)} groups; {'first: ' if len(bad) > 3 else ''}{where}")
        loaded.append((spec, task, groups, bad))
    backend = make_backend(config.engine, workers=config.workers, ray_address=config.ray_address,
                           worker_cpus=config.worker_cpus, worker_gpus=config.worker_gpus)
    runtime = config.runtime
    if getattr(backend, "device", None) and runtime.device == "auto":  # accelerate: this rank's device
        runtime = dataclasses.replace(runtime, device=backend.device)
    factory = ModelFactory(model_spec, runtime, config.max_length, config.truncation)
    model = factory()  # with the truncation set (workers of a distributed engine build it the same way)
    parts = _tokenizing_parts(model)
    if (config.max_length is not None or config.truncation != "left") and not parts:
        warn(f"--max-length and --truncation do not apply to model {model_spec.name!r}: only transformers "
             f"adapters (implicit, seqcls, linear, generative) truncate")

    # All tasks are scored in one pass, so a response that several tasks share is scored once.
    all_groups = [g for _, _, groups, _ in loaded for g in groups]
    for part in parts:  # a text longer than the model's context fails here, before any scoring
        part.check_context(requests_for(all_groups))
    # Texts longer than the model's max_length lose tokens: counted per task, never silently.
    truncated = [parts[0].truncated(requests_for(groups)) if parts else None for _, _, groups, _ in loaded]
    for (spec, _, groups, _), n in zip(loaded, truncated):
        if n:
            warn(f"task {spec.name!r}: {n} of {sum(len(g.responses) for g in groups)} texts are longer than "
                 f"max_length {parts[0].max_length} tokens and lose tokens on the {parts[0].truncation_side} "
                 f"(--truncation {parts[0].truncation_side})")
    n_all = sum(len(g.responses) for g in all_groups)
    advance = progress(f"{model_spec.name} on {', '.join(task_names)}", n_all) if progress else None
    cache = ScoreCache(model.fingerprint(), config.cache_dir) if config.use_cache else None
    try:
        all_rewards, stats = score_groups(model, all_groups, runtime, advance, cache, backend, factory)
    finally:
        if cache is not None:
            cache.close()

    task_docs, metric_docs, reward_rows = [], [], []
    offset = 0
    for (spec, task, groups, bad), n_truncated in zip(loaded, truncated):
        n_responses = sum(len(g.responses) for g in groups)
        rewards = all_rewards[offset: offset + n_responses]
        offset += n_responses
        records = summarize(spec.name, groups, rewards, config.eps, config.eps_unit,
                            group_units=task.bootstrap_units(groups),
                            extra_metrics=task.extra_metrics(groups, rewards),
                            n_bootstrap=config.n_bootstrap, seed=config.seed)
        fingerprint = data_fingerprint(groups)
        task_docs.append({
            "name": spec.name, "version": spec.version, "kind": spec.kind, "args": spec.args_dict,
            "data_fingerprint": fingerprint,
            "comparability_key": comparability_key(spec.name, spec.version or 0, fingerprint, METRIC_VERSION,
                                                   config.eps, config.eps_unit),
            "counts": {"groups": len(groups), "responses": n_responses,
                       "discrimination_pairs": sum(len(g.discrimination_pairs()) for g in groups),
                       "specificity_pairs": sum(len(g.specificity_pairs()) for g in groups)},
            "sigma": reward_sigma(rewards),
            # Rows left out by --skip-bad-rows; the data fingerprint is of the groups kept.
            "skipped_rows": skipped_rows_doc(bad),
            # Texts longer than the model's max_length, which lost tokens (null: it does not tokenise).
            "truncated_texts": n_truncated,
        })
        metric_docs += [r.to_json() for r in records]
        row = 0
        for g in groups:
            for i, u in enumerate(g.utilities):
                reward_rows.append(RewardRow(spec.name, g.id, i, u, float(rewards[row + i])))
            row += len(g.responses)

    results = {
        "schema_version": SCHEMA_VERSION,
        "rmbench_version": __version__,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "model": {"name": model_spec.name, "spec": model_spec.to_json(), "fingerprint": model.fingerprint()},
        "tasks": task_docs,
        "metrics": metric_docs,
        "config": {"eps": list(config.eps), "eps_unit": config.eps_unit, "limit": config.limit,
                   "skip_bad_rows": config.skip_bad_rows, "max_length": config.max_length,
                   "truncation": config.truncation,
                   "n_bootstrap": config.n_bootstrap, "seed": config.seed,
                   "metric_version": METRIC_VERSION, "ci_level": 0.95},
        "engine": {"runtime": dataclasses.asdict(config.runtime), "model": model.runtime_info(),
                   "cache": str(cache.path) if cache is not None else None, "stats": stats.to_json(),
                   "backend": backend.describe()},
        "environment": {"python": sys.version.split()[0], "platform": platform.platform(),
                        "git_revision": _git_revision()},
    }
    if out_dir is not None and backend.is_main:  # under accelerate, rank 0 alone writes
        write_run(out_dir, results, reward_rows)
    return results


def parse_data_overrides(items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``["ties=path.jsonl"]`` -> ``(("ties", "path.jsonl"),)``; one entry per task."""
    out: dict[str, str] = {}
    for item in items:
        task, sep, path = item.partition("=")
        if not sep or not task.strip() or not path.strip():
            raise ConfigError(f"--data {item!r}: expected TASK=PATH")
        if task.strip() in out:
            raise ConfigError(f"--data gives task {task.strip()!r} twice")
        out[task.strip()] = path.strip()
    return tuple(out.items())


def parse_eps(text: str) -> tuple[float, ...]:
    try:
        values = tuple(float(x) for x in text.split(",") if x.strip())
    except ValueError:
        raise ConfigError(f"--eps {text!r}: expected comma-separated numbers like 0,0.1") from None
    return values
