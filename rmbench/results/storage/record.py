"""The run record: what one ``rmbench eval`` of one model produced, as typed, frozen values.

:class:`RunRecord` is what :func:`rmbench.scoring.runner.evaluate` returns and what ``results.json``
holds (schema :data:`SCHEMA_VERSION`; :mod:`rmbench.results.storage.folder` reads, validates and migrates
older files). Leaderboards, ``compare``, plots, exports and the reproductions ask it questions
(``run.metric("ties", "specificity", eps=0.1)``) instead of walking JSON.

Every reported number is an :class:`Estimate`: a value with its 95% bootstrap interval.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from rmbench.core.canonical import canonical_json, sha256_hex
from rmbench.core.choices import EpsUnit, RunStatus, TaskStatus, TruncationSide
from rmbench.core.judge_replies import JudgeReplies
from rmbench.core.metric_registry import (
    DEFAULT_HEADLINE,
    MetricDef,
    MetricSpec,
    OfficialLayout,
    is_declared,
    metric_def,
)
from rmbench.core.types import with_score_args
from rmbench.errors import ConfigError
from rmbench.registry import PluginSource
from rmbench.results.storage.engine_stats import EngineStats

SCHEMA_VERSION = 2
KEY_VERSION = 1
"""Version of the comparability key's recipe; bump it when the recipe changes."""


def finite_or_none(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else float(x)


@dataclass(frozen=True)
class Estimate:
    """A value and its 95% bootstrap interval; nan means "not defined here" (null in JSON)."""

    value: float
    """The point estimate, on all the data (nan, null in JSON: not defined here)."""
    ci_low: float | None = None
    """The 95% bootstrap interval's lower end (None, null in JSON: no interval)."""
    ci_high: float | None = None
    """The interval's upper end (None, null in JSON: no interval)."""

    @property
    def defined(self) -> bool:
        """Whether the value is a number (not nan)."""
        return not math.isnan(self.value)

    @property
    def has_ci(self) -> bool:
        """Whether both ends of the interval are known."""
        return self.ci_low is not None and self.ci_high is not None

    def format(self, digits: int = 3) -> str:
        """``0.812 [0.790, 0.834]`` to ``digits`` places (no interval: the value alone; not defined:
        ``–``)."""
        if not self.defined:
            return "–"
        if not self.has_ci:
            return f"{self.value:.{digits}f}"
        return f"{self.value:.{digits}f} [{self.ci_low:.{digits}f}, {self.ci_high:.{digits}f}]"


@dataclass(frozen=True)
class MetricRecord:
    """One reported number: a metric of a task (overall, one subset or one shift) at an eps."""

    task: str
    subset: str | None
    shift: str | None
    metric: str
    eps: float | None
    eps_unit: EpsUnit | None
    estimate: Estimate
    n: int

    @property
    def value(self) -> float:
        return self.estimate.value

    @property
    def ci_low(self) -> float | None:
        return self.estimate.ci_low

    @property
    def ci_high(self) -> float | None:
        return self.estimate.ci_high

    def to_json(self) -> dict:
        e = self.estimate
        return {"task": self.task, "subset": self.subset, "shift": self.shift, "metric": self.metric,
                "eps": self.eps, "eps_unit": self.eps_unit, "value": finite_or_none(e.value),
                "ci_low": finite_or_none(e.ci_low), "ci_high": finite_or_none(e.ci_high), "n": self.n}

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> MetricRecord:
        value = d["value"]
        est = Estimate(math.nan if value is None else float(value),
                       None if d["ci_low"] is None else float(d["ci_low"]),
                       None if d["ci_high"] is None else float(d["ci_high"]))
        return cls(d["task"], d["subset"], d["shift"], d["metric"], None if d["eps"] is None else float(d["eps"]),
                   d["eps_unit"], est, int(d["n"]))


def task_key(task_name: str, task_version: int, data_fingerprint: str, metric_version: int, eps_unit: EpsUnit) -> str:
    """sha256 over what makes two runs' numbers on a task comparable, *except* the eps list.

    ``data_fingerprint``: the data's, with the task's score arguments folded in where it has
    some (:attr:`TaskKeyParts.fingerprint`).

    A leaderboard cell is (task key, metric, eps): runs with other eps lists share the cells
    at the eps values they have in common.
    """
    payload = {"key_version": KEY_VERSION, "task": task_name, "task_version": int(task_version),
               "data": data_fingerprint, "metric_version": int(metric_version), "eps_unit": eps_unit}
    return sha256_hex(canonical_json(payload))


def comparability_key(task_name: str, task_version: int, data_fingerprint: str, metric_version: int,
                      eps, eps_unit: EpsUnit) -> str:
    """sha256 over exactly what changes the scores of a task, eps list included.

    Task name and version, the data fingerprint, the metric version and the eps spec (unit and
    the sorted eps values). Not the batch size, device, seed of the CIs, or rmbench version.
    """
    payload = {"key_version": KEY_VERSION, "task": task_name, "task_version": int(task_version),
               "data": data_fingerprint, "metric_version": int(metric_version),
               "eps": sorted(float(e) for e in eps), "eps_unit": eps_unit}
    return sha256_hex(canonical_json(payload))


@dataclass(frozen=True)
class Counts:
    groups: int
    responses: int
    discrimination_pairs: int
    specificity_pairs: int


@dataclass(frozen=True)
class SkippedRow:
    path: str | None
    line: int | None
    field: str | None
    error: str


@dataclass(frozen=True)
class SkippedRows:
    """Rows ``--skip-bad-rows`` left out: all counted, the first few quoted."""

    count: int = 0
    first: tuple[SkippedRow, ...] = ()


@dataclass(frozen=True)
class TaskResult:
    """One task of a run: what was scored, how it compares, and its metric records."""

    name: str
    kind: str
    version: int
    args: Mapping[str, Any]
    data_fingerprint: str
    metric_version: int
    eps: tuple[float, ...]
    eps_unit: EpsUnit
    counts: Counts
    sigma: float | None
    metrics: tuple[MetricRecord, ...] = ()
    skipped_rows: SkippedRows = field(default_factory=SkippedRows)
    truncated_texts: int | None = None
    headline: tuple[str, ...] = DEFAULT_HEADLINE
    official: OfficialLayout | None = None
    status: TaskStatus = "success"
    error: str | None = None
    unparsed: int | None = None
    """Responses an LLM judge's replies gave no verdict for (never 0 when a reply did not parse):
    left out of the pairs and official scores (:mod:`rmbench.core.unscored`), or scored as the
    official client scores them (``judge_replies`` says which); None for a model that always gives one."""
    judge_replies: JudgeReplies | None = None
    """An LLM judge's replies on this task: cut off, with a ``<think>`` block, with no verdict,
    and how each was read and scored; None for other models (and for files written before it was recorded)."""
    metric_specs: tuple[MetricSpec, ...] = ()
    """The declaration of every metric the task reports or shows (label, direction, eps
    dependence, what ``n`` counts), as the run's process knew it: what reads the run takes these
    first (:meth:`metric_def`), so a plugin's metric keeps its meaning where the plugin is not
    installed; () in files written before they were recorded."""
    score_args: Mapping[str, Any] = field(default_factory=dict)
    """The values of the task kind's score arguments (``Task.score_args``: ProcessBench's and
    PRMBench's ``threshold``), which change its scores but not its groups: recorded apart from
    ``data_fingerprint`` (the groups' alone) and part of the task keys; written only where the
    kind has some. A file written before they were recorded apart has none, and its
    ``data_fingerprint`` folds them in (so its keys are what they were)."""

    def metric_def(self, metric: str) -> MetricDef:
        """The declaration of ``metric``: the run's own record of it, else the registry's
        (:func:`rmbench.core.metric_registry.metric_def`)."""
        known = metric_def(metric)
        for spec in self.metric_specs:
            if spec.name == metric:
                return spec.definition(known.description) if is_declared(metric) else spec.definition()
        return known

    @property
    def task_key(self) -> str:
        return self.key_parts.task_key

    @property
    def comparability_key(self) -> str:
        return self.key_parts.comparability_key

    @property
    def shifts(self) -> tuple[str, ...]:
        """The shift slices reported ("none" is the originals), in record order."""
        return tuple(dict.fromkeys(m.shift for m in self.metrics if m.shift is not None and m.subset is None
                                   and not m.metric.endswith("_shift_gap")))

    def has_eps(self, eps: float) -> bool:
        return any(math.isclose(eps, e, abs_tol=1e-12) for e in self.eps)

    def metric(self, metric: str, eps: float | None = None, subset: str | None = None,
               shift: str | None = None) -> MetricRecord | None:
        """The record of ``metric`` (at ``eps`` when it depends on eps), or None if not reported."""
        dependent = self.metric_def(metric).eps_dependent
        for m in self.metrics:
            if m.metric != metric or m.subset != subset or m.shift != shift:
                continue
            if dependent and (eps is None or m.eps is None or not math.isclose(m.eps, eps, abs_tol=1e-12)):
                continue
            return m
        return None

    @property
    def key_parts(self) -> TaskKeyParts:
        return TaskKeyParts(self.name, self.version, self.data_fingerprint, self.metric_version, self.eps,
                            self.eps_unit, self.score_args)

    def differences(self, other: TaskResult) -> list[str]:
        """What keeps this task's numbers from sharing cells with ``other``'s, with both values."""
        return self.key_parts.differences(other.key_parts)


@dataclass(frozen=True)
class TaskKeyParts:
    """What a task's comparability rests on (known before any scoring)."""

    name: str
    version: int
    data_fingerprint: str
    metric_version: int
    eps: tuple[float, ...]
    eps_unit: EpsUnit
    score_args: Mapping[str, Any] = field(default_factory=dict)
    """The task's score arguments (:attr:`TaskResult.score_args`), apart from ``data_fingerprint``."""

    @property
    def fingerprint(self) -> str:
        """The data fingerprint with the score arguments folded in (:func:`~rmbench.core.types.with_score_args`):
        what the keys rest on."""
        return with_score_args(self.data_fingerprint, self.score_args)

    @property
    def task_key(self) -> str:
        return task_key(self.name, self.version, self.fingerprint, self.metric_version, self.eps_unit)

    @property
    def comparability_key(self) -> str:
        return comparability_key(self.name, self.version, self.fingerprint, self.metric_version, self.eps,
                                 self.eps_unit)

    def differences(self, other: TaskKeyParts, with_eps: bool = False) -> list[str]:
        """What differs from ``other`` (task version, data, score arguments, metric version, eps
        unit; the eps list too when ``with_eps``), naming both values."""
        out = []
        if self.version != other.version:
            out.append(f"task version {self.version} vs {other.version}")
        out += self._data_differences(other)
        if self.metric_version != other.metric_version:
            out.append(f"metric version {self.metric_version} vs {other.metric_version}")
        if self.eps_unit != other.eps_unit:
            out.append(f"eps unit {self.eps_unit} vs {other.eps_unit}")
        if with_eps and sorted(self.eps) != sorted(other.eps):
            out.append(f"eps {eps_text(self.eps)} vs {eps_text(other.eps)}")
        return out

    def _data_differences(self, other: TaskKeyParts) -> list[str]:
        """The data and each score argument that differ (``threshold 0.5 vs 0.3``); where only one
        side records its score arguments apart (the other's file predates it, folding them into
        its data fingerprint), the two cannot be told apart and one line names both hashes."""
        if self.fingerprint == other.fingerprint:
            return []
        if bool(self.score_args) != bool(other.score_args):
            return [f"data or score arguments {self.fingerprint[:12]} vs {other.fingerprint[:12]} (one run records "
                    f"its score arguments ({score_args_text(self.score_args or other.score_args)}) apart from its "
                    f"data, the other's file folds them into its data fingerprint)"]
        out = []
        if self.data_fingerprint != other.data_fingerprint:
            out.append(f"data fingerprint {self.data_fingerprint[:12]} vs {other.data_fingerprint[:12]}")
        for name in dict.fromkeys([*self.score_args, *other.score_args]):
            mine, theirs = self.score_args.get(name, _UNSET), other.score_args.get(name, _UNSET)
            if canonical_json(mine) != canonical_json(theirs):
                out.append(f"{name} {_arg_value(mine)} vs {_arg_value(theirs)}")
        return out


_UNSET = "(not set)"


def _arg_value(value: Any) -> str:
    """A score argument's value as a note says it: ``0.5``, ``true``, ``[1, 2]``."""
    return value if isinstance(value, str) else canonical_json(value)


def score_args_text(score_args: Mapping[str, Any]) -> str:
    """``threshold 0.5``: a task's score arguments as notes and legends name them."""
    return ", ".join(f"{k} {_arg_value(v)}" for k, v in score_args.items())


def eps_text(eps) -> str:
    return ",".join(f"{e:g}" for e in eps)


def eps_display(eps: float, unit: str | None) -> str:
    """One eps as tables print it: ``0.1σ`` in sigma units (balanced_best's ``0.754111`` as
    ``0.754σ``, three significant digits), ``0.5`` in raw reward units."""
    return f"{eps:.3g}{'σ' if unit == 'sigma' else ''}"


@dataclass(frozen=True)
class RunIdentity:
    """What makes two runs "the same run" (a rerun of one command may replace its own folder)."""

    model: str
    spec: Mapping[str, Any]
    tasks: tuple[TaskKeyParts, ...]

    def differences(self, other: RunIdentity) -> list[str]:
        out = []
        if self.model != other.model:
            out.append(f"model {self.model!r}, not {other.model!r}")
        elif canonical_json(dict(self.spec)) != canonical_json(dict(other.spec)):
            out.append(f"model {self.model!r} with other arguments ({canonical_json(dict(self.spec))[:120]})")
        names, other_names = [t.name for t in self.tasks], [t.name for t in other.tasks]
        if names != other_names:
            out.append(f"tasks {','.join(names)}, not {','.join(other_names)}")
        else:
            for a, b in zip(self.tasks, other.tasks):
                d = a.differences(b, with_eps=True)
                if d:
                    out.append(f"task {a.name}: {'; '.join(d)}")
        return out


@dataclass(frozen=True)
class ModelIdentity:
    name: str
    spec: Mapping[str, Any]
    fingerprint: str

    @property
    def kind(self) -> str:
        return str(self.spec.get("kind", ""))

    @property
    def verdicts(self) -> str | None:
        """The judge mode whose rewards are verdicts (``pairwise``: +-1/2 or 0 per pair; ``fourway``:
        1 for the pick, 0 for the others), for which eps does not apply; None for other models."""
        mode = (self.spec.get("args") or {}).get("mode") if self.kind == "judge" else None
        return str(mode) if mode in ("pairwise", "fourway") else None


@dataclass(frozen=True)
class RunConfig:
    """The settings that defined the run (the model and tasks are in their own fields)."""

    eps: tuple[float, ...]
    eps_unit: EpsUnit
    limit: int | None
    skip_bad_rows: bool
    max_length: int | None
    truncation: TruncationSide
    n_bootstrap: int
    seed: int
    metric_version: int
    ci_level: float = 0.95
    data: Mapping[str, str] = field(default_factory=dict)
    limit_sampling: str | None = None
    """How ``--limit`` sampled (:data:`rmbench.core.splits.LIMIT_SAMPLING`); None without a limit,
    and in runs written before the sample existed, which took the first groups."""


@dataclass(frozen=True)
class Execution:
    """How the scores were computed: backend, runtime and the adapter's own description
    (free-form: each adapter reports what identifies it), the cache and the engine's stats
    (None: a results.json that recorded none)."""

    runtime: Mapping[str, Any]
    model: Mapping[str, Any]
    backend: Mapping[str, Any]
    stats: EngineStats | None
    cache: str | None = None


@dataclass(frozen=True)
class Environment:
    """Where the run ran: Python, platform, the versions of the packages that change scores, the
    git revision of the current directory's repository, and the plugins the run used."""

    python: str
    platform: str
    packages: Mapping[str, str] = field(default_factory=dict)
    git_revision: str | None = None
    git_dirty: bool | None = None
    git_root: str | None = None
    plugins: tuple[PluginSource, ...] = ()
    """Every installed distribution whose entry point registered something the run used (its model
    kind or a part's, a judge protocol, a task kind, a metric it recorded, its engine), one per
    module, sorted; empty in runs written before plugins were recorded."""

    def plugin_versions(self) -> dict[str, str]:
        """Each plugin distribution the run used, by name: its version, with its hashed modules'
        sha256 (first 12 digits) where taken: ``0.1.0 (model a1b2c3d4e5f6, tasks 0f1e2d3c4b5a)``."""
        return {name: _plugin_text(sources) for name, sources in _by_name(self.plugins).items()}

    def plugin_differences(self, other: Environment) -> list[str]:
        """The plugin distributions both runs used in other versions, or in one version with other
        module code (a local install's), one line each naming both: ``plugin rmbench-plugin-example
        0.1.0 vs 0.2.0``, ``plugin rmbench-plugin-example 0.1.0, module model a1b2c3d4e5f6 vs 0f1e2d3c4b5a``."""
        mine, theirs = _by_name(self.plugins), _by_name(other.plugins)
        out = []
        for name in sorted(mine.keys() & theirs.keys()):
            a, b = mine[name], theirs[name]
            va, vb = _versions(a), _versions(b)
            if va != vb:
                out.append(f"plugin {name} {va} vs {vb}")
                continue
            sha_a, sha_b = {s.module: s.sha256 for s in a}, {s.module: s.sha256 for s in b}
            changed = [f"module {m.rpartition('.')[2]} {str(sha_a[m])[:12]} vs {str(sha_b[m])[:12]}"
                       for m in sorted(sha_a.keys() & sha_b.keys()) if sha_a[m] != sha_b[m]]
            if changed:
                out.append(f"plugin {name} {va}, {', '.join(changed)}")
        return out


def _by_name(plugins: Iterable[PluginSource]) -> dict[str, list[PluginSource]]:
    out: dict[str, list[PluginSource]] = {}
    for p in sorted(plugins):
        out.setdefault(p.name, []).append(p)
    return out


def _versions(sources: Iterable[PluginSource]) -> str:
    return " ".join(sorted({s.version for s in sources}))


def _plugin_text(sources: Sequence[PluginSource]) -> str:
    """``0.1.0`` or ``0.1.0 (model a1b2c3d4e5f6, tasks 0f1e2d3c4b5a)`` where modules were hashed."""
    hashed = [f"{s.module.rpartition('.')[2]} {s.sha256[:12]}" for s in sources if s.sha256]
    return _versions(sources) + (f" ({', '.join(hashed)})" if hashed else "")


@dataclass(frozen=True)
class RunRecord:
    """One model on one or more tasks (see the module doc)."""

    rmbench_version: str
    created: str
    model: ModelIdentity
    tasks: tuple[TaskResult, ...]
    config: RunConfig
    execution: Execution
    environment: Environment
    status: RunStatus = "success"
    schema_version: int = SCHEMA_VERSION

    @property
    def model_name(self) -> str:
        return self.model.name

    @property
    def task_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.tasks)

    @property
    def identity(self) -> RunIdentity:
        return RunIdentity(self.model.name, self.model.spec, tuple(t.key_parts for t in self.tasks))

    def task(self, name: str) -> TaskResult:
        for t in self.tasks:
            if t.name == name:
                return t
        raise ConfigError(f"the run of {self.model.name!r} has no task {name!r} (it has {', '.join(self.task_names)})")

    def has_task(self, name: str) -> bool:
        return any(t.name == name for t in self.tasks)

    def metric(self, task: str, metric: str, eps: float | None = None, subset: str | None = None,
               shift: str | None = None) -> MetricRecord | None:
        """``run.metric("ties", "specificity", eps=0.1)``: one record, or None if not reported."""
        return self.task(task).metric(metric, eps, subset, shift)

    def value(self, task: str, metric: str, eps: float | None = None, subset: str | None = None,
              shift: str | None = None) -> float:
        """The value of :meth:`metric`; nan when it is not reported or not defined."""
        m = self.metric(task, metric, eps, subset, shift)
        return math.nan if m is None else m.value

    def records(self, task: str | None = None) -> Iterator[MetricRecord]:
        for t in self.tasks:
            if task is None or t.name == task:
                yield from t.metrics
