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
from rmbench.registry import Registry

__all__ = ["GAP_SUFFIX", "LENGTH_CORRELATION_READING", "LENGTH_GAP_READING", "METRICS", "TIES_READING",
           "ComputedMetric", "Counted", "MetricDef", "MetricSpec", "OfficialColumn", "OfficialLayout",
           "computed_metrics", "declare_metric", "definition_of", "is_declared", "load_plugin_metrics", "metric_def",
           "register_metric"]

GAP_SUFFIX = "_shift_gap"


TIES_READING = ("ties_score ranges over [-0.01, 1.01], not [0, 1]: RewardBench 2's formula adds 0.01 x the "
                "mean tanh(margin ratio - 1) to terms that sum to at most 1, so an RM whose correct answers sit "
                "far above the incorrect ones, relative to their spread among themselves, scores up to 1.010")


ENTRY_POINT_GROUP = "rmbench.metrics"
METRICS: Registry[MetricDef | ComputedMetric] = Registry(
    "metric", entry_point_group=ENTRY_POINT_GROUP, kind=(ComputedMetric, MetricDef), key=lambda m: m.name)
"""Every declared metric by name, each with its origin: the computed ones (a
:class:`ComputedMetric`: every summary computes them from pairs, in this order), then the task
scores (a :class:`MetricDef`), which each task kind declares on its class (``Task.scores``) and
its registration adds here (:func:`rmbench.tasks.register_task_kind`: this layer never imports
the tasks); a plugin adds its own (:func:`register_metric`, or an ``rmbench.metrics`` entry point)."""
for _metric in BUILTIN_COMPUTED:
    METRICS.register(_metric.name, _metric, description=_metric.definition.label)


def definition_of(metric: MetricDef | ComputedMetric) -> MetricDef:
    """The :class:`MetricDef` of a declaration (a computed metric's own)."""
    return metric.definition if isinstance(metric, ComputedMetric) else metric


def register_metric(name: str | MetricDef | ComputedMetric, metric: MetricDef | ComputedMetric | str | None = None,
                    *, description: str = "") -> None:
    """Declare a plugin's metric ``name`` in this process (a second declaration of a name must be
    identical); an installed package uses the ``rmbench.metrics`` entry points instead.

    ``metric``: a :class:`MetricDef` declares a metric a task reports (``Task.extra_metrics``); a
    :class:`ComputedMetric` one that every summary computes from pairs, after the built-in ones;
    either may be a lazy ``"module:attr"``. ``register_metric(metric)``, the older form, takes the
    name from the declaration.
    """
    name, metric = METRICS.named(name, metric, "register_metric")
    declare_metric(name, metric, origin=f"register_metric({name!r})", description=description)


def declare_metric(name: str, metric: MetricDef | ComputedMetric | str, *, origin: str,
                   description: str = "") -> None:
    """Register ``metric`` as ``name`` from ``origin`` (``register_metric``, a task kind's
    ``scores``): the same declaration again is a no-op; another one of a declared name is a
    ValueError saying how they differ."""
    known = METRICS.find(name)
    if known is not None and not isinstance(metric, str):
        if definition_of(known) != definition_of(metric):
            raise ValueError(f"metric {name!r} is already declared differently: {definition_of(known)}")
        if isinstance(metric, ComputedMetric) and isinstance(known, ComputedMetric) and known != metric:
            raise ValueError(f"metric {name!r} is already computed differently")
        if isinstance(metric, ComputedMetric) and not isinstance(known, ComputedMetric):
            raise ValueError(f"metric {name!r} is already declared as a task's score, not computed")
        return  # the same declaration, or a computed metric's definition alone
    label = definition_of(metric).label if not isinstance(metric, str) else ""
    METRICS.register(name, metric, origin=origin, description=description or label)


def load_plugin_metrics() -> None:
    """Load every declaration of the ``rmbench.metrics`` entry points (the functions below call
    it). An entry point that fails to import, names no declaration, a declaration of another
    name, or a name already declared is a :class:`~rmbench.registry.RegistryError` naming it and
    its package, every time it is asked."""
    METRICS.items()


def computed_metrics() -> tuple[ComputedMetric, ...]:
    """The metrics a summary computes, in record order: the built-in ones, then those registered."""
    return tuple(m for _, m in METRICS.items() if isinstance(m, ComputedMetric))


def is_declared(name: str) -> bool:
    """Whether ``name`` is a registered metric, or the ``_shift_gap`` of one."""
    load_plugin_metrics()
    return name in METRICS or (name.endswith(GAP_SUFFIX) and name[: -len(GAP_SUFFIX)] in METRICS)


def metric_def(name: str) -> MetricDef:
    """The declaration of ``name``; ``X_shift_gap`` derives from X (shifted - original)."""
    load_plugin_metrics()
    if name in METRICS:
        return definition_of(METRICS.get(name))
    if name.endswith(GAP_SUFFIX) and name[: -len(GAP_SUFFIX)] in METRICS:
        base = definition_of(METRICS.get(name[: -len(GAP_SUFFIX)]))
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
