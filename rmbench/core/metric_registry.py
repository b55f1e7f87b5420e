"""Declared metrics: what each reported number is called, which way is better, what ``n`` counts.

Every metric record in a run names one of these; leaderboards, ``compare``, plots and exports
take their labels, directions and eps-dependence from here instead of string constants. The
metrics the summary computes from pairs are declared with their computation
(:class:`~rmbench.core.metric_declaration.ComputedMetric`, the built-in ones in
:mod:`rmbench.core.computed_metrics`); the others here are a task's own scores. A task declares
its headline metrics and, for benchmarks with an official score, the official layout
(:class:`OfficialLayout`): which records, under which column names, make the table a user puts
beside the benchmark's own leaderboard.

A task's own scores are declared on its kind (``Task.scores``) and registered here when the kind
is registered (:func:`rmbench.tasks.register_task_kind`), so this layer never imports the tasks.
A run records the declaration of every metric it reports (:class:`MetricSpec`), and what reads
the run takes that first (:meth:`rmbench.results.storage.record.TaskResult.metric_def`). A
metric that is neither recorded nor registered is shown under its own name, higher taken as
better (:func:`metric_def`). :func:`register_metric` declares one, or a new computed metric,
which every summary then reports; an installed package declares its own through the
``rmbench.metrics`` entry points (each names a :class:`ComputedMetric` or a :class:`MetricDef` of
the entry point's name), loaded the first time the declarations are asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rmbench.core.computed_metrics import BUILTIN as BUILTIN_COMPUTED
from rmbench.core.computed_metrics import LENGTH_CORRELATION_READING, LENGTH_GAP_READING
from rmbench.core.metric_declaration import ComputedMetric
from rmbench.core.metric_def import Counted, MetricDef, MetricSpec
from rmbench.registry import Registry, RegistryError

__all__ = ["COMPUTED", "GAP_SUFFIX", "LENGTH_CORRELATION_READING", "LENGTH_GAP_READING", "METRICS", "TIES_READING",
           "ComputedMetric", "Counted", "MetricDef", "MetricSpec", "OfficialColumn", "OfficialLayout",
           "computed_metrics", "is_declared", "load_plugin_metrics", "metric_def", "register_metric"]

GAP_SUFFIX = "_shift_gap"


TIES_READING = ("ties_score ranges over [-0.01, 1.01], not [0, 1]: RewardBench 2's formula adds 0.01 x the "
                "mean tanh(margin ratio - 1) to terms that sum to at most 1, so an RM whose correct answers sit "
                "far above the incorrect ones, relative to their spread among themselves, scores up to 1.010")


METRICS: dict[str, MetricDef] = {c.definition.name: c.definition for c in BUILTIN_COMPUTED}
"""Every declared metric by name: the computed ones, then the task scores, which each task kind
declares on its class (``Task.scores``) and its registration adds here
(:func:`rmbench.tasks.register_task_kind`: this layer never imports the tasks); a plugin adds its own."""
COMPUTED: dict[str, ComputedMetric] = {c.name: c for c in BUILTIN_COMPUTED}
"""The metrics every summary computes from pairs, in the order of a slice's records."""


def register_metric(metric: MetricDef | ComputedMetric) -> None:
    """Declare a plugin's metric (a second declaration of a name must be identical).

    A :class:`MetricDef` declares a metric a task reports (``Task.extra_metrics``); a
    :class:`ComputedMetric` one that every summary computes from pairs, after the built-in ones.
    """
    definition = metric.definition if isinstance(metric, ComputedMetric) else metric
    known = METRICS.get(definition.name)
    if known is not None and known != definition:
        raise ValueError(f"metric {definition.name!r} is already declared differently: {known}")
    if isinstance(metric, ComputedMetric):
        computed = COMPUTED.get(metric.name)
        if computed is not None and computed != metric:
            raise ValueError(f"metric {metric.name!r} is already computed differently")
        if computed is None and known is not None:
            raise ValueError(f"metric {metric.name!r} is already declared as a task's score, not computed")
        COMPUTED[metric.name] = metric
    METRICS[definition.name] = definition


ENTRY_POINT_GROUP = "rmbench.metrics"
PLUGIN_METRICS: Registry[MetricDef | ComputedMetric] = Registry("metric", entry_point_group=ENTRY_POINT_GROUP)
"""The installed packages' metrics (``rmbench.metrics`` entry points), declared by :func:`load_plugin_metrics`."""
_plugins_declared: list[bool] = []


def load_plugin_metrics() -> None:
    """Declare every metric of the ``rmbench.metrics`` entry points (once per process; the
    functions below call it). An entry point that fails to import, names no declaration, a
    declaration of another name, or one that clashes with a metric already declared is a
    :class:`~rmbench.registry.RegistryError` naming it and its package."""
    if _plugins_declared:
        return
    _plugins_declared.append(True)  # first: a plugin module that asks for a declaration does not recurse
    try:
        for name in PLUGIN_METRICS.names():
            _declare_plugin_metric(name)
    except BaseException:
        _plugins_declared.clear()  # asked again, the broken plugin fails again, never silently
        raise


def _declare_plugin_metric(name: str) -> None:
    origin = PLUGIN_METRICS.describe(name)[1]
    metric = PLUGIN_METRICS.get(name)
    if not isinstance(metric, MetricDef | ComputedMetric) or metric.name != name:
        raise RegistryError(f"metric {name!r} from {origin} is not a ComputedMetric or MetricDef named {name!r} "
                            f"(got {type(metric).__name__} {getattr(metric, 'name', '')!r})")
    try:
        register_metric(metric)
    except ValueError as exc:
        raise RegistryError(f"metric {name!r} from {origin}: {exc}") from None


def computed_metrics() -> tuple[ComputedMetric, ...]:
    """The metrics a summary computes, in record order: the built-in ones, then those registered."""
    load_plugin_metrics()
    return tuple(COMPUTED.values())


def is_declared(name: str) -> bool:
    """Whether ``name`` is a registered metric, or the ``_shift_gap`` of one."""
    load_plugin_metrics()
    return name in METRICS or (name.endswith(GAP_SUFFIX) and name[: -len(GAP_SUFFIX)] in METRICS)


def metric_def(name: str) -> MetricDef:
    """The declaration of ``name``; ``X_shift_gap`` derives from X (shifted - original)."""
    load_plugin_metrics()
    if name in METRICS:
        return METRICS[name]
    if name.endswith(GAP_SUFFIX) and name[: -len(GAP_SUFFIX)] in METRICS:
        base = METRICS[name[: -len(GAP_SUFFIX)]]
        return MetricDef(name, f"{base.label} gap", base.higher_is_better, base.eps_dependent, Counted.ORIGINAL_GROUPS,
                         f"{base.name} on the shifted groups minus on their originals (paired)")
    return MetricDef(name, name, True, False, Counted.RESAMPLING_UNITS, "a task's own metric (not declared)")


@dataclass(frozen=True)
class OfficialColumn:
    """One column of an official table: the record ``metric`` with ``subset`` (None: the total)."""

    label: str
    """The column's heading, in the benchmark's own words."""
    subset: str | None
    metric: str | None = None
    """The record's metric where it is not the layout's (ProcessBench's per-split error and
    correct accuracies beside its F1); None: the layout's."""


CHECKED_AGAINST_CODE = "computed as its code does"
"""The provenance of a built-in official table whose tests run the benchmark's own code on the
same rewards and find the same scores (RewardBench 1 and 2, Ties, M-RewardBench, JudgeBench,
ProcessBench, PRMBench). Never a default: a layout claims it only by naming it."""


@dataclass(frozen=True)
class OfficialLayout:
    """A benchmark's official table: ``columns`` are records of ``metric``, in the benchmark's
    own order and names; ``beside`` are rmbench metrics shown next to them."""

    title: str
    """The benchmark's name, as the table's title says it (``RewardBench 2``)."""
    metric: str
    columns: tuple[OfficialColumn, ...]
    beside: tuple[str, ...] = ("discrimination", "specificity", "ds_auc")
    provenance: str | None = None
    """How the scores relate to the benchmark's own code, in the words the table's caption and the
    Hub export's notes give: "computed as its code does" only where tests run the benchmark's
    code and find the same numbers, else what they were checked against. Absent (None, the
    default): the caption says nothing about the benchmark's code."""

    def metric_of(self, column: OfficialColumn) -> str:
        """The metric of ``column``'s records: its own, else the layout's."""
        return column.metric or self.metric

    @property
    def metrics(self) -> tuple[str, ...]:
        """The metrics of the table's columns: the layout's first, then the columns' own."""
        return tuple(dict.fromkeys([self.metric, *(c.metric for c in self.columns if c.metric)]))

    def to_json(self) -> dict[str, Any]:
        """As results.json keeps it (``provenance`` only where it is not the default)."""
        out: dict[str, Any] = {"title": self.title, "metric": self.metric,
               "columns": [{"label": c.label, "subset": c.subset, **({"metric": c.metric} if c.metric else {})}
                           for c in self.columns],
               "beside": list(self.beside)}
        if self.provenance is not None:
            out["provenance"] = self.provenance
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OfficialLayout:
        """Read back what :meth:`to_json` wrote."""
        return cls(str(d["title"]), str(d["metric"]),
                   tuple(OfficialColumn(str(c["label"]), c["subset"], c.get("metric")) for c in d["columns"]),
                   tuple(d.get("beside", ())), None if d.get("provenance") is None else str(d["provenance"]))


DEFAULT_HEADLINE = ("pairwise_accuracy", "discrimination", "specificity", "ds_auc")

RB2_SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
RB1_SECTIONS = ("Chat", "Chat Hard", "Safety", "Reasoning", "Prior Sets")

RB2_LAYOUT = OfficialLayout("RewardBench 2", "rewardbench2_score",
                            tuple(OfficialColumn(s, s) for s in RB2_SUBSETS) + (OfficialColumn("Score", None),),
                            provenance=CHECKED_AGAINST_CODE)  # tests/tasks/test_official_scores.py: RewardBench's code
RB1_LAYOUT = OfficialLayout("RewardBench", "rewardbench_score",
                            tuple(OfficialColumn(s, s) for s in RB1_SECTIONS) + (OfficialColumn("Score", None),),
                            provenance=CHECKED_AGAINST_CODE)
TIES_LAYOUT = OfficialLayout("RewardBench 2 Ties", "ties_score", (OfficialColumn("Ties", None),),
                             provenance=CHECKED_AGAINST_CODE)

RM_BENCH_DOMAINS = ("chat", "math", "code", "safety")
"""RM-Bench's domains, in its own order (``split_dataset_by_domain`` in its ``scripts/utils.py``)."""
RM_BENCH_LEVELS = ("hard", "normal", "easy")
RM_BENCH_LAYOUT = OfficialLayout(
    "RM-Bench", "rm_bench_score",
    tuple(OfficialColumn(d.capitalize(), d) for d in RM_BENCH_DOMAINS)
    + tuple(OfficialColumn(level.capitalize(), level) for level in ("easy", "normal", "hard"))
    + (OfficialColumn("Avg", None),),
    beside=("discrimination", "rewrite_specificity", "preference_flip_rate", "ds_auc"),
    provenance="computed as RM-Bench's compute_accuracy is written (checked by hand, not against its code)")
"""The paper's table (Chat, Math, Code, Safety, Easy, Normal, Hard, Avg), beside D, Spec across
styles, the flip rate and ds_auc. Its tests check the formula by hand (tests/tasks/test_rm_bench.py),
never against RM-Bench's own code, so it does not claim :data:`CHECKED_AGAINST_CODE`."""
