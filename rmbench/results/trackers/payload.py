"""What one run logs to a tracker, the same for every tracker (:class:`TrackedRun`).

* **config**: the run's identity and settings as results.json holds them (the model's name, spec
  and fingerprint; each task's kind, version, data fingerprint, score arguments and comparability key; eps, limit,
  bootstrap, seed, metric version ...), never a secret: a model's spec holds no API key
  (keys are read from the environment) and nothing here reads the environment;
* **metrics**: every *headline* metric of each task (the metrics the task declares for its
  leaderboard columns, and its official score with the metrics shown beside it), on every slice
  (overall, each subset, each shift, the shift gaps) and at every eps of the run, each as three
  numbers: ``KEY`` (the value), ``KEY_ci_low`` and ``KEY_ci_high`` (its 95% bootstrap interval).
  An undefined value (nan) or a missing CI bound (``--bootstrap 0``) is left out, never logged as 0;
* **tables**: the run's leaderboard, one table per section (the headline table; an official
  layout; original vs shifted), value and CI bounds in numeric columns;
* **files**: results.json, as ``rmbench-results.json`` (a tracker's local store, ``mlruns/`` or
  a TensorBoard log folder under ``runs/``, must not hold a folder with a ``results.json``:
  ``rmbench leaderboard build runs`` would read it as one more run), and the HTML report
  (``rmbench report``), rendered afresh.

Keys (:func:`metric_key`): ``TASK/METRIC`` for a task's pooled number, ``TASK/subset/SUBSET/METRIC``
and ``TASK/shift/SHIFT/METRIC`` for a slice, with ``_epsE`` after an eps-dependent metric
(``ties/discrimination_eps0.1``, in the run's eps unit, which the config names). Every part keeps
only ASCII letters, digits, ``_ - .`` and spaces (anything else becomes ``_``), the characters
every tracker accepts in a name (MLflow's rule is the narrowest).
"""

from __future__ import annotations

import json
import re
import tempfile
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from rmbench.core.metric_registry import GAP_SUFFIX, metric_def
from rmbench.files import atomic_write_bytes, atomic_write_text
from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.publishing.leaderboard_render import to_frame
from rmbench.results.storage.folder import RESULTS_FILE, RunFolder, record_to_json
from rmbench.results.storage.record import MetricRecord, RunRecord, TaskResult

CI_SUFFIXES = ("_ci_low", "_ci_high")
REPORT_FILE = "report.html"
RESULTS_COPY = "rmbench-results.json"
_UNSAFE = re.compile(r"[^\w.\- ]", re.ASCII)


def safe_part(text: str) -> str:
    """One part of a key as every tracker takes it: ASCII word characters, ``. - _`` and spaces;
    a part that a path would read otherwise (empty, ``.``, ``..``) becomes ``_``."""
    part = _UNSAFE.sub("_", text)
    return "_" if part.strip(".") == "" else part


def metric_key(m: MetricRecord) -> str:
    """``TASK[/subset/SUBSET][/shift/SHIFT]/METRIC[_epsE]`` (module doc)."""
    parts = [m.task]
    if m.subset is not None:
        parts += ["subset", m.subset]
    if m.shift is not None:
        parts += ["shift", m.shift]
    eps = f"_eps{m.eps:g}" if m.eps is not None and metric_def(m.metric).eps_dependent else ""
    return "/".join(safe_part(p) for p in parts + [m.metric + eps])


def headline_metrics(task: TaskResult) -> tuple[str, ...]:
    """The task's leaderboard metrics: its headline, then its official score and the metrics beside
    it, each with its shift gap (``METRIC_shift_gap``) where the task has shifts."""
    names = list(task.headline)
    if task.official is not None:
        names += [*task.official.metrics, *task.official.beside]
    names = list(dict.fromkeys(names))
    return tuple(names + [n + GAP_SUFFIX for n in names])


@dataclass(frozen=True)
class TrackedMetric:
    """One metric record of a run as a tracker logs it, under its tracker-neutral ``key``
    (:func:`metric_key`: ``TASK[/subset/SUBSET][/shift/SHIFT]/METRIC[_epsE]``)."""

    key: str
    record: MetricRecord
    """The record: its value, CI, task, subset, shift and eps."""

    def numbers(self) -> dict[str, float]:
        """``key``, ``key_ci_low``, ``key_ci_high``: those that are defined."""
        e = self.record.estimate
        out = {self.key: e.value} if e.defined else {}
        if e.has_ci:
            assert e.ci_low is not None and e.ci_high is not None  # has_ci
            out.update({self.key + CI_SUFFIXES[0]: e.ci_low, self.key + CI_SUFFIXES[1]: e.ci_high})
        return out


def tracked_metrics(record: RunRecord) -> tuple[TrackedMetric, ...]:
    """Every headline metric record of every task, in record order, each under its key (a key
    two records would share after :func:`safe_part` gets ``_2``, ``_3`` ... in order)."""
    out: list[TrackedMetric] = []
    seen: set[str] = set()
    for task in record.tasks:
        wanted = set(headline_metrics(task))
        for m in task.metrics:
            if m.metric not in wanted:
                continue
            key, n = metric_key(m), 1
            while key in seen:
                n += 1
                key = f"{metric_key(m)}_{n}"
            seen.add(key)
            out.append(TrackedMetric(key, m))
    return tuple(out)


def run_config(folder: RunFolder) -> dict[str, Any]:
    """The run's identity and settings, JSON values (module doc)."""
    doc = record_to_json(folder.record)
    keep = ("kind", "version", "args", "status", "data_fingerprint", "score_args", "task_key", "comparability_key",
            "metric_version", "eps", "eps_unit", "counts", "headline")
    return {"run_folder": folder.label, "rmbench_version": doc["rmbench_version"], "created": doc["created"],
            "status": doc["status"], "model": doc["model"], "config": doc["config"],
            "tasks": {t["name"]: {k: t[k] for k in keep if k in t} for t in doc["tasks"]},
            "git_revision": doc["environment"]["git_revision"]}


def flat_config(config: Mapping[str, Any], prefix: str = "") -> dict[str, str]:
    """``config`` as one level of text values (for trackers whose parameters are flat strings,
    MLflow's): nested keys joined by ``.``, each part :func:`safe_part`; lists and None as JSON."""
    out: dict[str, str] = {}
    for key, value in config.items():
        name = prefix + safe_part(str(key))
        if isinstance(value, Mapping) and value:
            out.update(flat_config(value, name + "."))
        else:
            out[name] = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    return out


def _table_key(title: str) -> str:
    slug = re.sub(r"[^a-z0-9]+", "_", title.lower()).strip("_")
    return "leaderboard" if slug == "rmbench_leaderboard" else f"leaderboard/{slug or 'table'}"


def leaderboard_tables(folder: RunFolder) -> tuple[tuple[str, pd.DataFrame], ...]:
    """The run's leaderboard sections as (key, frame): ``leaderboard`` for the headline table,
    ``leaderboard/<title>`` for the others; value, ``ci_low`` and ``ci_high`` columns per metric."""
    out: list[tuple[str, pd.DataFrame]] = []
    for section in build_leaderboard([folder]).sections():
        key = _table_key(section.table.title)
        while key in dict(out):
            key += "_"
        out.append((key, to_frame(section.table, wide_ci=True)))
    return tuple(out)


@dataclass(frozen=True, eq=False)
class TrackedRun:
    """One run as every tracker logs it (module doc). ``name``: the run folder's name, the
    tracker run's name."""

    name: str
    folder: Path
    """The run folder."""
    record: RunRecord
    """The run's record (results.json, read)."""
    config: Mapping[str, Any]
    """What the run measured and how, as a tracker's run config (:func:`run_config`)."""
    metrics: tuple[TrackedMetric, ...]
    """Every headline number, each under its key (:func:`tracked_metrics`)."""
    tables: tuple[tuple[str, pd.DataFrame], ...]
    """(key, table) for each table of the run's leaderboard, as a tracker's table."""
    results: Path
    """A copy of results.json (``rmbench-results.json``) in a temporary folder."""
    report: Path
    """The run's HTML report (``report.html``) in that temporary folder."""

    def scalars(self) -> dict[str, float]:
        """Every number of :attr:`metrics`, by key."""
        out: dict[str, float] = {}
        for m in self.metrics:
            out.update(m.numbers())
        return out

    @property
    def files(self) -> tuple[Path, ...]:
        """The files a tracker uploads as artifacts: the results copy and the report."""
        return (self.results, self.report)


@contextmanager
def tracked_run(folder: RunFolder) -> Iterator[TrackedRun]:
    """The :class:`TrackedRun` of ``folder``, its files (its report rendered, its results.json
    copied as ``rmbench-results.json``) in a temporary folder removed afterwards (never in the run
    folder: the report would replace one the user wrote)."""
    from rmbench.results.publishing.report import build_report
    from rmbench.results.publishing.report_html import render_report

    with tempfile.TemporaryDirectory(prefix="rmbench-tracker-") as tmp:
        report = Path(tmp) / REPORT_FILE
        atomic_write_text(report, render_report(build_report([folder])))  # a full disk: one line naming it
        results = Path(tmp) / RESULTS_COPY
        atomic_write_bytes(results, (folder.path / RESULTS_FILE).read_bytes())
        yield TrackedRun(folder.label, folder.path, folder.record, run_config(folder),
                         tracked_metrics(folder.record), leaderboard_tables(folder), results, report)

