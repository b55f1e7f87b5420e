"""Export runs to the Hugging Face Hub's "Eval Results": ``rmbench export RUNS --format hf-eval-results``.

The Hub shows a model's benchmark results from YAML files in its repository's ``.eval_results/``
folder (https://huggingface.co/docs/hub/eval-results; the specification is ``eval_results.yaml``
in huggingface/hub-docs; ``huggingface_hub.EvalResultEntry`` reads and writes it). Each file is a
list of entries::

    - dataset:
        id: allenai/reward-bench-2     # required: the benchmark's Hub dataset
        task_id: factuality            # required: the task, as the dataset's eval.yaml names it
        revision: <40-hex commit>      # optional
      value: 0.7421                    # required
      date: "2026-12-05T10:00:00+00:00"  # optional, ISO-8601, a string
      source: {url: ..., name: ...}    # optional; url required when given
      notes: "..."                     # optional: details of the evaluation setup

What rmbench writes, per model: ``{out}/{ORG}/{NAME}/.eval_results/{benchmark}.yaml``, the folder
laid out as the model's repository (``ORG/NAME``: its Hub id where the weights came from the Hub;
``rmbench/{name}`` for a baseline; ``local/{name}`` otherwise), one file per benchmark dataset
(``reward-bench-2.yaml`` for ``allenai/reward-bench-2``), one entry per column of the task's
official layout (:class:`~rmbench.core.metric_registry.OfficialLayout`: RewardBench 2's total and
its six subsets, RM-Bench's domains and levels, JudgeBench's categories, ...):

* ``dataset.id``: the task's Hub dataset (its ``dataset`` argument; for a built-in task scored
  on a local copy with ``--data``, the built-in task's dataset, and the notes say so);
  ``revision`` only when the task pinned a commit (a branch such as ``main`` is no revision in
  the spec's sense);
* ``task_id``: ``default`` for the benchmark's total (the id eval.yaml gives a dataset's only
  task), else the column's label in lower case with ``_`` for other characters (``precise_if``);
  a one-column layout is a part of its benchmark, named by its label (the ``ties`` task's score
  is RewardBench 2's ``ties``, the same entry as ``rewardbench2``'s Ties column).
  a task scored on a split other than its default prefixes its ids with the split
  (:func:`split_prefix`: JudgeBench's Claude set is ``claude``, ``claude_knowledge``, ...).
  These are rmbench's choice: none of these datasets publishes an ``eval.yaml`` yet; where one
  does, its ids are the ones to use;
* ``value``: the official score on the benchmark code's own 0-1 scale (as the benchmark's code
  computes it: rmbench's tests check each against that code);
* ``date``: the run's ``created``;
* ``notes``: the score's bootstrap CI, and rmbench's D and Spec at each eps of the run with their
  CIs (the spec has no fields for them: ``notes`` is its place for the evaluation's details), the
  number of prompts, rmbench's version, the task and its data fingerprint; and, when the data came
  from a local file or a ``--limit`` sample, that it did;
* ``source``: only with ``--source-url URL`` (the spec requires a url with a source), named
  ``rmbench run of ORG/NAME`` (the model's id, never a path).

Left out, one line each: tasks without a Hub dataset (the offline samples, RMB's GitHub files),
tasks without an official layout, failed tasks. Several runs of one model merge: an entry
(dataset, task_id) of a newer run replaces an older one, with a note naming both (runs in
``created`` order; tasks in run order, so ``rewardbench2``'s Ties and the ``ties`` task's Ties are one entry).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Any

import yaml

from rmbench.core.metric_registry import CHECKED_AGAINST_CODE, OfficialColumn, OfficialLayout
from rmbench.errors import ConfigError
from rmbench.results.publishing.export_formats import Export, ExportFile, ExportOptions, safe_parts
from rmbench.results.publishing.export_names import hub_dataset, model_id, model_repo
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import MetricRecord, RunRecord, TaskResult

TOTAL_TASK_ID = "default"
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class HubEvalResult:
    """One entry of a ``.eval_results/*.yaml`` file (the fields of ``huggingface_hub.EvalResultEntry``
    that rmbench fills)."""

    dataset_id: str
    task_id: str
    value: float
    dataset_revision: str | None = None
    date: str | None = None
    source_url: str | None = None
    source_name: str | None = None
    notes: str | None = None

    def __post_init__(self) -> None:
        if self.source_name is not None and self.source_url is None:
            raise ValueError("a source needs its url (eval_results.yaml: 'Required if source is provided')")

    def to_yaml_data(self) -> dict[str, Any]:
        """The entry as the spec lays it out (keys in its order; optional ones only when set)."""
        dataset: dict[str, Any] = {"id": self.dataset_id, "task_id": self.task_id}
        if self.dataset_revision is not None:
            dataset["revision"] = self.dataset_revision
        out: dict[str, Any] = {"dataset": dataset, "value": self.value}
        if self.date is not None:
            out["date"] = self.date
        if self.source_url is not None:
            out["source"] = {"url": self.source_url, **({"name": self.source_name} if self.source_name else {})}
        if self.notes is not None:
            out["notes"] = self.notes
        return out


def task_id(column: OfficialColumn, layout: OfficialLayout) -> str:
    """``default`` for a benchmark's total; a column's (or a one-column layout's: RewardBench 2's
    ``ties`` task is its Ties column) label in lower case, ``_`` for other characters."""
    if column.subset is None and len(layout.columns) > 1:
        return TOTAL_TASK_ID
    return re.sub(r"[^a-z0-9]+", "_", column.label.lower()).strip("_") or "x"


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _ci(m: MetricRecord) -> str:
    e = m.estimate
    return f" [{e.ci_low:.4g}, {e.ci_high:.4g}]" if _finite(e.ci_low) and _finite(e.ci_high) else ""


def _eps(m: MetricRecord) -> str:
    unit = "σ" if m.eps_unit == "sigma" else "" if m.eps_unit in (None, "raw") else f" {m.eps_unit}"
    return f"{m.eps:g}{unit}"


def _records(task: TaskResult, metric: str, subset: str | None) -> list[MetricRecord]:
    return [m for m in task.metrics if m.metric == metric and m.subset == subset and m.shift is None]


def _provenance(task: TaskResult) -> str:
    if task.official is None:
        return "rmbench's score"
    if task.official.provenance == CHECKED_AGAINST_CODE:
        return "as the benchmark's own code computes it"
    return task.official.provenance or "as the task computes it"  # no provenance: no claim about the code


def _notes(task: TaskResult, record: RunRecord, m: MetricRecord, title: str) -> str:
    c = record.config
    parts = [f"rmbench {record.rmbench_version or '?'}: {title}, {_provenance(task)}"]
    if _ci(m):
        parts.append(f"{c.ci_level:.0%} CI{_ci(m)} (percentile bootstrap, {c.n_bootstrap} resamples)")
    for metric, label in (("discrimination", "D"), ("specificity", "Spec")):
        for r in _records(task, metric, m.subset):
            if _finite(r.value):
                parts.append(f"{label}(eps={_eps(r)}) = {r.value:.4g}{_ci(r)}")
    parts.append(f"n = {m.n}")
    parts.append(f"task {task.name} v{task.version}, data {task.data_fingerprint[:16]}")
    if "path" in task.args:
        parts.append(f"scored on a local copy ({PurePosixPath(str(task.args['path'])).name}), not read from the Hub")
    if c.limit is not None:
        parts.append(f"a sample of {c.limit} prompts (--limit), not the whole benchmark")
    return "; ".join(parts)


def split_prefix(task: TaskResult) -> str:
    """``{split}_`` for a task scored on a split other than its built-in default (JudgeBench's
    ``claude`` response set: ``claude``, ``claude_knowledge``, ...), so that two splits of one
    dataset are never one entry; empty for the default split."""
    split = task.args.get("split")
    if not isinstance(split, str):
        return ""
    from rmbench.catalog import load_catalog

    spec = load_catalog().tasks.get(task.name)
    default = spec.args_dict.get("split") if spec is not None and spec.kind == task.kind else None
    if default is None or split == default:
        return ""
    return re.sub(r"[^a-z0-9]+", "_", split.lower()).strip("_") + "_"


def task_entries(task: TaskResult, record: RunRecord, options: ExportOptions) -> tuple[str, list[HubEvalResult]]:
    """(dataset id, entries) of one task; ConfigError's text says why a task has none."""
    if task.status != "success":
        raise ConfigError(f"task {task.name!r} failed in this run")
    layout = task.official
    if layout is None:
        raise ConfigError(f"task {task.name!r} has no official score (no official layout)")
    dataset = hub_dataset(task)
    if dataset is None:
        raise ConfigError(f"task {task.name!r} has no Hub dataset (its data are local or web files)")
    revision = task.args.get("revision")
    prefix = split_prefix(task)
    entries = []
    for column in layout.columns:
        found = [m for m in _records(task, layout.metric_of(column), column.subset) if _finite(m.value)]
        if not found:
            continue
        m = found[0]
        title = f"{layout.title} {column.label}".strip()
        entries.append(HubEvalResult(
            dataset_id=dataset, task_id=_split_task_id(prefix, task_id(column, layout)), value=float(m.value),
            dataset_revision=revision if isinstance(revision, str) and _SHA.match(revision) else None,
            date=record.created or None,
            source_url=options.source_url,
            source_name=f"rmbench run of {model_id(record, options.name)}" if options.source_url else None,
            notes=_notes(task, record, m, title)))
    return dataset, entries


def _split_task_id(prefix: str, task_id_: str) -> str:
    if not prefix:
        return task_id_
    return prefix.rstrip("_") if task_id_ == TOTAL_TASK_ID else prefix + task_id_


def to_yaml(entries: Sequence[HubEvalResult]) -> str:
    return yaml.safe_dump([e.to_yaml_data() for e in entries], sort_keys=False, allow_unicode=True,
                          default_flow_style=False, width=1000)


def _benchmark_file_names(datasets: Sequence[str]) -> dict[str, str]:
    """``{name}.yaml`` per dataset id (``{org}--{name}.yaml`` where two share a name)."""
    names = [d.rsplit("/", 1)[-1] for d in datasets]
    return {d: safe_parts(n if names.count(n) == 1 else d.replace("/", "--")).name + ".yaml"
            for d, n in zip(datasets, names)}


def _model_dirs(records: Sequence[RunRecord], name: str | None = None) -> list[PurePosixPath]:
    """``ORG/NAME`` per model (:func:`~rmbench.results.publishing.export_names.model_repo`);
    models with one id get their fingerprints appended."""
    repos = [model_repo(r, name) for r in records]
    out = []
    for r, (org, name) in zip(records, repos):
        if repos.count((org, name)) > 1:
            name = f"{name}-{r.model.fingerprint[:12] or 'nofp'}"
        out.append(safe_parts(org, name))
    if len(set(out)) < len(out):
        out = [PurePosixPath(f"{p}-{k}") for k, p in enumerate(out, 1)]
    return out


def hf_eval_results_export(folders: Sequence[RunFolder], options: ExportOptions) -> Export:
    """Per model of ``folders``: ``ORG/NAME/.eval_results/{benchmark}.yaml`` (module docstring)."""
    groups: dict[tuple[str, str], list[RunFolder]] = {}
    for f in folders:
        groups.setdefault((f.record.model.name, f.record.model.fingerprint), []).append(f)
    skipped: list[str] = []
    models = []
    options.one_model(len(groups))
    for group in groups.values():
        ordered = sorted(group, key=lambda f: (f.record.created, str(f.path)))
        runs = [f.record for f in ordered]
        merged: dict[str, dict[str, HubEvalResult]] = {}
        came_from: dict[tuple[str, str], RunFolder] = {}
        for folder, r in zip(ordered, runs):
            for t in r.tasks:
                try:
                    dataset, entries = task_entries(t, r, options)
                except ConfigError as why:
                    skipped.append(f"{r.model.name}: {why}; left out of the Hub eval results")
                    continue
                replaced = [e.task_id for e in entries if came_from.get((dataset, e.task_id), folder) is not folder]
                if replaced:  # the page's promise: an older run's entry replaced is one note
                    older = came_from[(dataset, replaced[0])]
                    skipped.append(f"{older.path}: its {dataset} entr{'ies' if len(replaced) > 1 else 'y'} "
                                   f"{', '.join(replaced)} replaced by the newer run {folder.path}")
                for e in entries:  # a newer run's entry replaces an older one, in the newer's order
                    merged.setdefault(dataset, {}).pop(e.task_id, None)
                    merged[dataset][e.task_id] = e
                    came_from[(dataset, e.task_id)] = folder
        if merged:
            models.append((runs[-1], merged))
    if not models:
        raise ConfigError("none of these runs has a task with an official score on a Hub dataset, so there is "
                          "nothing to write as Hub eval results" + (f" ({skipped[0]})" if skipped else ""))
    files = []
    for repo, (_, merged) in zip(_model_dirs([r for r, _ in models], options.name), models):
        names = _benchmark_file_names(sorted(merged))
        for dataset in sorted(merged):
            path = repo / ".eval_results" / names[dataset]
            files.append(ExportFile(path, to_yaml(list(merged[dataset].values()))))
    return Export(tuple(files), tuple(skipped))
