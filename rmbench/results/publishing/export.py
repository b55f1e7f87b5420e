"""Export runs to other result formats: ``rmbench export RUN... --format every-eval-ever``.

Every Eval Ever (``evaleval/every_eval_ever``, schema ``eval.schema.json`` 0.3.0) stores one
``EvaluationLog`` per model: who produced the numbers (``source_metadata``), the harness
(``eval_library``), the model (``model_info``) and a list of ``evaluation_results``, each a
score with its metric description and, optionally, its uncertainty.

:func:`to_every_eval_ever` builds that log from the runs of one model; :func:`export_runs`
groups run folders by model (name and fingerprint: several runs of one model merge into one
log) and writes ``{out_dir}/{model}.json`` for each, atomically.

Naming. RewardBench results take the names of the Every Eval Ever project's own RewardBench
adapter (``every_eval_ever/adapters/rewardbench/adapter.py``), so that an rmbench run sits beside
the leaderboard's entries in that database:

* RewardBench 2 (task kind ``rewardbench2``, metric ``rewardbench2_score``): evaluation names
  ``Score`` (the total), ``Factuality``, ``Precise IF``, ``Math``, ``Safety``, ``Focus``,
  ``Ties``; dataset name ``RewardBench 2``.
* RewardBench v1 (kind ``rewardbench``, metric ``rewardbench_score``): ``Score``, ``Chat``,
  ``Chat Hard``, ``Safety``, ``Reasoning``, ``Prior Sets (0.5 weight)`` (rmbench's ``Prior
  Sets`` section); dataset name ``RewardBench``.
* A Ties task (metric ``ties_score``) is RewardBench 2's ``Ties`` only when it reads the hub
  dataset ``allenai/reward-bench-2`` (the ``ties`` task); the built-in ``ties_sample`` is rmbench's own
  miniature, so it keeps rmbench's names.

As in the adapter these are continuous scores with ``lower_is_better: false`` on 0-1, except
the official Ties score and the RewardBench 2 total, whose formula reaches from -0.01 to 1.01
(its margin term is 0.01 * tanh(...)), so those bounds are declared instead of 0-1.

Every other pooled record of a task (subset and shift None: pairwise accuracy, D and Spec at
each eps, ds_auc, ...) is a further result named ``rmbench.{task}.{metric}``, with
``@eps={eps}{unit}`` for the eps-dependent metrics (the eps and its unit are also in
``metric_parameters`` and the description). Each result carries its 95% bootstrap interval in
``score_details.uncertainty.confidence_interval`` and its ``n`` in ``num_samples``; records
whose value is not defined (nan) are left out, as the schema wants a number.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import Any, TypeGuard

from rmbench.core.canonical import canonical_json
from rmbench.errors import ConfigError
from rmbench.files import safe_file_name
from rmbench.results.publishing.export_formats import (
    BUILTIN_EXPORT_FORMATS,
    Export,
    ExportFile,
    ExportOptions,
    export_format,
    write_export,
)
from rmbench.results.publishing.export_names import (
    RANGES,
    UNBOUNDED,
    Benchmark,
    benchmark_of,
    details,
    model_info,
    source_data,
)
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import MetricRecord, RunRecord, TaskResult

FORMATS = BUILTIN_EXPORT_FORMATS
"""The built-in export formats, in order (:func:`export_format_names` adds the plugins')."""

EEE_SCHEMA_VERSION = "0.3.0"
"""The Every Eval Ever schema version these logs follow (``eval.schema.json`` ``version``)."""




# --- small helpers -----------------------------------------------------------------------

def _finite(x: float | None) -> TypeGuard[float]:
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def _parse_time(created: str) -> datetime | None:
    try:
        t = datetime.fromisoformat(created.replace("Z", "+00:00"))
    except (ValueError, AttributeError):
        return None
    return t if t.tzinfo else t.replace(tzinfo=UTC)  # a naive time is taken as UTC


def _epoch(created: str) -> str:
    """The Unix-epoch string of a run's ``created`` (the raw string when it does not parse)."""
    t = _parse_time(created)
    return created if t is None else str(t.timestamp())


def _time_key(record: RunRecord) -> tuple:
    t = _parse_time(record.created)
    return (0, t.timestamp(), record.created) if t else (1, 0.0, record.created)


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_") or "x"


def _eps_text(eps: float | None, unit: str | None) -> str:
    return "" if eps is None else f"{eps:g}{unit or ''}"


# --- results -------------------------------------------------------------------------------

def _uncertainty(m: MetricRecord, record: RunRecord) -> dict:
    out: dict[str, Any] = {}
    e = m.estimate
    if _finite(e.ci_low) and _finite(e.ci_high):
        out["confidence_interval"] = {"lower": float(e.ci_low), "upper": float(e.ci_high),
                                      "confidence_level": float(record.config.ci_level),
                                      "method": "percentile bootstrap"}
        out["num_bootstrap_samples"] = int(record.config.n_bootstrap)
    out["num_samples"] = int(m.n)
    return out


def _result_id(task: TaskResult, m: MetricRecord) -> str:
    parts = ["rmbench", task.name, task.task_key[:12], m.metric, m.subset if m.subset is not None else "all"]
    if task.metric_def(m.metric).eps_dependent:
        parts.append(f"eps={_eps_text(m.eps, m.eps_unit)}")
    return ":".join(parts)


def _bounds_config(bounds: tuple[Any, Any]) -> dict:
    return {"score_type": "continuous", "min_score": bounds[0], "max_score": bounds[1]}


def _official_result(task: TaskResult, record: RunRecord, m: MetricRecord, bench: Benchmark) -> dict:
    label = bench.names[m.subset]
    bounds = bench.bounds.get(m.subset, (0.0, 1.0))
    config: dict[str, Any] = {
        "evaluation_description": bench.descriptions[m.subset] + " (reproduced by rmbench)",
        "metric_id": f"{bench.namespace}.{'overall' if m.subset is None else _slug(m.subset)}",
        "metric_name": f"{bench.dataset_name} score" if m.subset is None else f"{label} score",
        "metric_kind": "score",
        "lower_is_better": False,
        **_bounds_config(bounds),
        "additional_details": details([("rmbench_metric", m.metric), ("metric_version", task.metric_version)]),
    }
    if bounds == (0.0, 1.0):
        config["metric_unit"] = "proportion"
    return {
        "evaluation_result_id": _result_id(task, m),
        "evaluation_name": label,
        "source_data": source_data(task, record, bench.dataset_name),
        "evaluation_timestamp": record.created,
        "metric_config": config,
        "score_details": {"score": float(m.value), "details": details([
            ("rmbench_task", task.name), ("rmbench_metric", m.metric), ("subset", m.subset), ("n", m.n),
            ("n_counts", task.metric_def(m.metric).n_counts)]),
            "uncertainty": _uncertainty(m, record)},
    }


def _rmbench_result(task: TaskResult, record: RunRecord, m: MetricRecord, dataset_name: str) -> dict:
    d = task.metric_def(m.metric)
    name = f"rmbench.{task.name}.{m.metric}" + (f".{m.subset}" if m.subset is not None else "")
    description = d.description
    params: dict[str, Any] = {}
    score_extra: list[tuple[str, Any]] = []
    if d.eps_dependent:
        name += f"@eps={_eps_text(m.eps, m.eps_unit)}"
        params = {"eps": m.eps, "eps_unit": m.eps_unit}
        unit = "the task's reward standard deviation sigma" if m.eps_unit == "sigma" else "raw reward units"
        description += f"; eps = {m.eps:g} in {unit} ({m.eps_unit})"
        if m.eps_unit == "sigma":
            score_extra.append(("sigma", task.sigma))
    elif m.eps is not None:  # balanced_best: the eps where the maximum is reached
        score_extra += [("eps", m.eps), ("eps_unit", m.eps_unit)]
    description += f" (rmbench task {task.name!r})"
    lo, hi = RANGES.get(m.metric, UNBOUNDED)
    config: dict[str, Any] = {
        "evaluation_description": description,
        "metric_id": f"rmbench.{m.metric}",
        "metric_name": d.label,
        "metric_kind": m.metric,
        "lower_is_better": not d.higher_is_better,
        **_bounds_config((lo, hi)),
        "additional_details": details([("rmbench_metric", m.metric), ("metric_version", task.metric_version),
                                        ("eps_dependent", d.eps_dependent), ("n_counts", d.n_counts)]),
    }
    if (lo, hi) == (0.0, 1.0):
        config["metric_unit"] = "proportion"
    elif m.metric == "reward_margin":
        config["metric_unit"] = "sigma"
    if params:
        config["metric_parameters"] = params
    return {
        "evaluation_result_id": _result_id(task, m),
        "evaluation_name": name,
        "source_data": source_data(task, record, dataset_name),
        "evaluation_timestamp": record.created,
        "metric_config": config,
        "score_details": {"score": float(m.value), "details": details([
            ("rmbench_task", task.name), ("rmbench_metric", m.metric), ("subset", m.subset), ("n", m.n),
            *score_extra]),
            "uncertainty": _uncertainty(m, record)},
    }


def _task_results(task: TaskResult, record: RunRecord) -> list[dict]:
    """The task's results: its official columns (total first), then its pooled rmbench records."""
    if task.status != "success":
        return []
    bench = benchmark_of(task)
    official_metric = task.official.metric if task.official else None
    dataset_name = bench.dataset_name if bench else task.name
    defined = [m for m in task.metrics if m.shift is None and _finite(m.value)]
    out = []
    if bench is not None:
        by_subset = {m.subset: m for m in defined if m.metric == official_metric}
        out += [_official_result(task, record, by_subset[s], bench) for s in bench.order() if s in by_subset]
    for m in defined:
        official_record = m.metric == official_metric
        if bench is not None and official_record and m.subset in bench.names:
            continue  # already in, under its official name
        if m.subset is None or official_record:  # pooled records, and official subsets without a name
            out.append(_rmbench_result(task, record, m, dataset_name))
    return out


# --- the log -------------------------------------------------------------------------------

def _run_summary(r: RunRecord) -> dict:
    c, e = r.config, r.environment
    return {"created": r.created, "rmbench_version": r.rmbench_version, "status": r.status,
            "tasks": [{"name": t.name, "kind": t.kind, "version": t.version, "status": t.status,
                       "comparability_key": t.comparability_key} for t in r.tasks],
            "eps": list(c.eps), "eps_unit": c.eps_unit, "n_bootstrap": c.n_bootstrap, "seed": c.seed,
            "ci_level": c.ci_level, "limit": c.limit, "max_length": c.max_length, "truncation": c.truncation,
            "skip_bad_rows": c.skip_bad_rows, "backend": dict(r.execution.backend),
            "python": e.python, "platform": e.platform, "git_revision": e.git_revision, "git_dirty": e.git_dirty}


def to_every_eval_ever(records: Sequence[RunRecord], *, source_organization_name: str = "rmbench",
                       evaluator_relationship: str = "third_party", name: str | None = None) -> dict:
    """One Every Eval Ever ``EvaluationLog`` (a JSON-ready dict) for the runs of ONE model.

    ``records`` must share the model name and fingerprint; their tasks merge into one log (a
    result that two runs both report, same task, data and metric, comes from the newest run).
    The log's times are the newest run's ``created`` (``retrieved_timestamp`` as Unix epoch),
    so exporting the same runs again gives the same file. ``evaluator_relationship``: the
    schema's enum (first_party, third_party, collaborative, other), relative to the model's
    developer. ``name``: the model's Hub id (``rmbench export --name``).
    """
    if not records:
        raise ConfigError("no runs to export")
    models = {(r.model.name, r.model.fingerprint) for r in records}
    if len(models) > 1:
        names = ", ".join(f"{n!r} ({fp[:12] or 'no fingerprint'})" for n, fp in sorted(models))
        raise ConfigError(f"an Every Eval Ever log holds one model; these runs have {len(models)}: {names}")
    if evaluator_relationship not in ("first_party", "third_party", "collaborative", "other"):
        raise ConfigError(f"evaluator_relationship must be first_party, third_party, collaborative or other, "
                          f"got {evaluator_relationship!r}")
    runs = sorted(records, key=lambda r: (_time_key(r), canonical_json(_run_summary(r))))
    newest = runs[-1]

    results: dict[str, dict] = {}
    for r in runs:  # newer runs replace an older run's result of the same id, in place
        for t in r.tasks:
            for res in _task_results(t, r):
                results[res["evaluation_result_id"]] = res
    if not results:
        raise ConfigError(f"the runs of {newest.model.name!r} have no defined results to export")

    model = model_info(newest, name)
    retrieved = _epoch(newest.created)
    env = newest.environment
    versions = sorted({r.rmbench_version for r in runs})
    library_details = details([
        ("python", env.python or None), ("platform", env.platform or None),
        ("git_revision", env.git_revision), ("git_dirty", env.git_dirty),
        ("packages", dict(env.packages) or None),
        ("rmbench_versions", versions if len(versions) > 1 else None),
        ("runs", [_run_summary(r) for r in runs]),
    ])
    return {
        "schema_version": EEE_SCHEMA_VERSION,
        "evaluation_id": f"rmbench/{model['id'].replace('/', '_')}/{retrieved}",
        "evaluation_timestamp": newest.created,
        "retrieved_timestamp": retrieved,
        "source_metadata": {
            "source_name": "rmbench",
            "source_type": "evaluation_run",
            "source_organization_name": source_organization_name,
            "evaluator_relationship": evaluator_relationship,
            "additional_details": details([("exporter", "rmbench export --format every-eval-ever"),
                                            ("runs", len(runs))]),
        },
        "eval_library": {"name": "rmbench", "version": newest.rmbench_version or "unknown",
                         "additional_details": library_details},
        "model_info": model,
        "evaluation_results": list(results.values()),
    }


def _file_names(groups: list[tuple[str, str]]) -> list[str]:
    """``{safe model name}.json`` per group; names two models share get their fingerprints."""
    base = [safe_file_name(name, "model") for name, _ in groups]
    out = []
    for (_, fp), b in zip(groups, base):
        out.append(b if base.count(b) == 1 else f"{b}-{fp[:12] or 'nofp'}")
    seen: dict[str, int] = {}
    final = []
    for n in out:  # still equal (no fingerprints): number them in order
        seen[n] = seen.get(n, 0) + 1
        final.append(n if out.count(n) == 1 else f"{n}-{seen[n]}")
    return [f"{n}.json" for n in final]


def every_eval_ever_export(folders: Sequence[RunFolder], options: ExportOptions) -> Export:
    """``{model}.json`` per model of ``folders`` (runs grouped by model name and fingerprint), in
    the order the models first appear."""
    groups: dict[tuple[str, str], list[RunRecord]] = {}
    for f in folders:
        groups.setdefault((f.record.model.name, f.record.model.fingerprint), []).append(f.record)
    options.one_model(len(groups))
    logs = [to_every_eval_ever(records, name=options.name) for records in groups.values()]
    return Export(tuple(ExportFile(PurePosixPath(name), json.dumps(log, indent=2, ensure_ascii=False,
                                                                    allow_nan=False) + "\n")
                        for name, log in zip(_file_names(list(groups)), logs)))


def export_runs(folders: Sequence[RunFolder], out_dir: Path, fmt: str = "every-eval-ever", *,
                overwrite: bool = False, options: ExportOptions | None = None,
                warn: Callable[[str], None] | None = None,
                said: Callable[[Path, bool], None] | None = None) -> list[Path]:
    """Export ``folders`` in format ``fmt`` (one of :data:`FORMATS`) into ``out_dir``; returns the
    files' paths. Every file is built before any is written; a file already there with other
    content is refused unless ``overwrite`` (:func:`~rmbench.results.publishing.export_formats.write_export`).
    ``warn`` gets one line per run or task the format left out; ``said(path, written)`` each file,
    and whether it was written (False: it held this content already)."""
    export = export_format(fmt).build(folders, options or ExportOptions())
    for line in export.skipped:
        if warn is not None:
            warn(line)
    return write_export(export, Path(out_dir), overwrite, said)
