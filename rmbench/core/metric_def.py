"""What a reported number is: :class:`MetricDef` (name, label, direction, eps use, what ``n``
counts, formula) and :class:`Counted`, the closed set of things a built-in metric's ``n`` counts.

Metadata only: :mod:`rmbench.core.metric_declaration` adds the computation of the metrics the
summary computes from pairs; :mod:`rmbench.core.metric_registry` holds every declaration.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from rmbench.registry import PluginSource


class Counted(StrEnum):
    """What a record's ``n`` counts. A member is its words (a ``str``); :class:`MetricDef`
    keeps the plain words (``n_counts``, what records and exports show) and gives the member back
    (``counted``)."""

    DISCRIMINATION_PAIRS = "discrimination pairs"
    """Pairs with u(a) > u(b)."""
    SPECIFICITY_PAIRS = "specificity pairs"
    """Pairs with u(a) = u(b) (of an equivalence level)."""
    ALL_PAIRS = "all pairs"
    """Discrimination and specificity pairs."""
    CROSS_FORM_SPECIFICITY_PAIRS = "cross-form specificity pairs"
    """Specificity pairs of two surface forms (an answer and its rewrite)."""
    WITHIN_FORM_DISCRIMINATION_PAIRS = "within-form discrimination pairs"
    """Discrimination pairs of one surface form."""
    CROSS_FORM_DISCRIMINATION_PAIRS = "cross-form discrimination pairs"
    """Discrimination pairs of two surface forms."""
    REWRITTEN_DISCRIMINATION_PAIRS = "rewritten discrimination pairs"
    """Discrimination pairs of two rewrites of one form, each beside the pair of its originals."""
    GROUPS = "groups"
    """Comparison groups (a task's own scores)."""
    ORIGINAL_GROUPS = "original groups"
    """Originals of shifted groups (the paired shift gaps)."""
    RESAMPLING_UNITS = "resampling units"
    """The bootstrap's units (a plugin's undeclared metric)."""


@dataclass(frozen=True)
class MetricDef:
    """One kind of reported number.

    ``eps_dependent``: reported once per eps of the run (D and Spec). ``n_counts``: what the
    record's ``n`` counts, in words: a :class:`Counted` (kept as its plain words, so that
    records and exports hold strings; :attr:`counted` gives the member back) or a plugin's own
    words. ``official``: a benchmark's own score, reproduced to its code.
    ``reading``: a note that leaderboards showing the metric carry (e.g. a range that is not [0, 1]).
    """

    name: str
    """The registered name, as records and ``--metrics`` spell it (``pairwise_accuracy``)."""
    label: str
    """How a table heads its column (``Acc``)."""
    higher_is_better: bool
    """Whether a larger value is better (a leaderboard marks the best of each column)."""
    eps_dependent: bool
    n_counts: str
    description: str
    """What it measures, in one line (the metrics reference shows it)."""
    official: bool = False
    reading: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "n_counts", str(self.n_counts))

    @property
    def counted(self) -> Counted | None:
        """What ``n`` counts as a :class:`Counted`; None for a plugin's own words."""
        return _BY_WORDS.get(self.n_counts)


_BY_WORDS: dict[str, Counted] = {c.value: c for c in Counted}


UNKNOWN_FORMULA = "declared by the run's process (a plugin not loaded here): as the run recorded it"


@dataclass(frozen=True)
class MetricSpec:
    """What a run records of a metric's declaration, so that what reads the run later (a
    leaderboard built in another process, without the plugin that declared the metric) takes
    its label, direction and eps dependence from the run, never a guess: :class:`MetricDef`
    less its description (the formula, which the metrics reference holds)."""

    name: str
    label: str
    higher_is_better: bool
    eps_dependent: bool
    n_counts: str
    official: bool = False
    reading: str | None = None
    plugin: PluginSource | None = None
    """The installed distribution whose ``rmbench.metrics`` entry point declared the metric (its
    version and, for a local install, its module's sha256); None for rmbench's own, a task's, or
    one registered in code."""

    @classmethod
    def of(cls, d: MetricDef, plugin: PluginSource | None = None) -> MetricSpec:
        return cls(d.name, d.label, d.higher_is_better, d.eps_dependent, d.n_counts, d.official, d.reading, plugin)

    def definition(self, description: str = UNKNOWN_FORMULA) -> MetricDef:
        """The declaration as the run recorded it, with ``description`` (the formula, which the
        run does not record: the registry's where this process declares the metric too)."""
        return MetricDef(self.name, self.label, self.higher_is_better, self.eps_dependent, self.n_counts,
                         description, self.official, self.reading)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "label": self.label, "higher_is_better": self.higher_is_better,
                               "eps_dependent": self.eps_dependent, "n_counts": self.n_counts}
        if self.official:
            out["official"] = True
        if self.reading is not None:
            out["reading"] = self.reading
        if self.plugin is not None:
            out["plugin"] = self.plugin.to_json()
        return out
