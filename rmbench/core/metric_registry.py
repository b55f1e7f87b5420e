"""Declared metrics: what each reported number is called, which way is better, what ``n`` counts.

Every metric record in a run names one of these; leaderboards, ``compare``, plots and exports
take their labels, directions and eps-dependence from here instead of string constants. The
metrics the summary computes from pairs are declared with their computation
(:class:`~rmbench.core.metric_declaration.ComputedMetric`, the built-in ones in
:mod:`rmbench.core.computed_metrics`); the others here are a task's own scores. A task declares
its headline metrics and, for benchmarks with an official score, the official layout
(:class:`OfficialLayout`): which records, under which column names, make the table a user puts
beside the benchmark's own leaderboard.

A task plugin may report a metric that is not registered here; it is shown under its own name,
higher taken as better (:func:`metric_def`). :func:`register_metric` declares it properly, or
declares a new computed metric, which every summary then reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rmbench.core.computed_metrics import BUILTIN as BUILTIN_COMPUTED
from rmbench.core.computed_metrics import LENGTH_CORRELATION_READING, LENGTH_GAP_READING
from rmbench.core.metric_declaration import ComputedMetric
from rmbench.core.metric_def import Counted, MetricDef

__all__ = ["COMPUTED", "GAP_SUFFIX", "LENGTH_CORRELATION_READING", "LENGTH_GAP_READING", "METRICS", "TIES_READING",
           "ComputedMetric", "Counted", "MetricDef", "OfficialColumn", "OfficialLayout", "computed_metrics",
           "metric_def", "register_metric"]

GAP_SUFFIX = "_shift_gap"


TIES_READING = ("ties_score ranges over [-0.01, 1.01], not [0, 1]: RewardBench 2's formula adds 0.01 x the "
                "mean tanh(margin ratio - 1) to terms that sum to at most 1, so an RM whose correct answers sit "
                "far above the incorrect ones, relative to their spread among themselves, scores up to 1.010")

_TASK_SCORES = (
    MetricDef("ties_score", "ties_score", True, False, Counted.GROUPS, "RewardBench 2's official Ties score",
              official=True, reading=TIES_READING),
    MetricDef("rewardbench_score", "RB1 score", True, False, Counted.GROUPS,
              "RewardBench v1's official score; subset records are its sections", official=True),
    MetricDef("rewardbench2_score", "RB2 score", True, False, Counted.GROUPS,
              "RewardBench 2's official score; subset records are its six subsets", official=True),
    MetricDef("rm_bench_score", "RM-Bench", True, False, Counted.GROUPS,
              "RM-Bench's official accuracy (its scripts/utils.py compute_accuracy): per domain a 3x3 matrix "
              "M[i][j] = share of rows with r(chosen style i) > r(rejected style j), styles concise, detailed "
              "plain, detailed markdown; hard = mean over i < j, normal = mean of the diagonal, easy = mean over "
              "i > j; a domain's score = (hard + normal + easy) / 3; subset records: the domains, and hard / "
              "normal / easy as means over the domains present; the total = mean of the domain scores",
              official=True),
    MetricDef("m_rewardbench_score", "M-RB score", True, False, Counted.GROUPS,
              "M-RewardBench's official score: per language (subset LANG) the mean of RewardBench's four section "
              "scores, weighted by M-RewardBench's example counts (subset LANG/SECTION); subset None: the mean "
              "over the languages, English (eng_Latn) left out", official=True),
    MetricDef("m_rewardbench_english_gap", "M-RB gap", True, False, Counted.GROUPS,
              "m_rewardbench_score of a language minus that of English on the same ids (paired resample); "
              "subset None: the mean over the languages; < 0: the RM loses accuracy in translation"),
    MetricDef("judgebench_score", "JudgeBench", True, False, Counted.GROUPS,
              "JudgeBench's official accuracy (its utils/metrics.py compute_final_metrics, one game as run_judge.py "
              "--single_game with a reward_model judge): a pair is correct iff its verdict (A>B iff r(A) > r(B), "
              "else B>A: a tie is B>A) equals the label; subset records: the categories knowledge (mmlu-pro-*), "
              "reasoning, math, coding; the total = over all pairs. With the task's single_game: false both orders are "
              "played, as run_judge.py by default, and a tie is inconsistent, so wrong", official=True),
    MetricDef("ppe_accuracy", "PPE acc", True, False, Counted.GROUPS,
              "PPE correctness accuracy: over each row's sampled_conflict_pairs (one correct, one incorrect answer; "
              "all such pairs with the task's pairs: all), the share with r(correct) > r(incorrect), a reward tie 1/2, "
              "pooled over a set's pairs; subset records: the sets (mmlu_pro, math, gpqa, ifeval, mbpp_plus); the "
              "total = the mean of the sets present", official=True),
    MetricDef("ppe_best_of_k", "BoK", True, False, Counted.GROUPS,
              "PPE best-of-K: the expected correctness of the answer the RM ranks first among K answers drawn "
              "without replacement from a prompt's answers (exact over ranks; a reward tie at the top picks "
              "uniformly among the tied), averaged over a set's prompts; subset K=k: the mean over the sets, "
              "SET/K=k: one set"),
    MetricDef("ppe_bok_gap", "BoK gap", False, False, Counted.GROUPS,
              "area between the oracle's best-of-K curve (1 - C(n - n_correct, K) / C(n, K)) and the RM's, divided "
              "by the number of K: mean over K = 1..n of oracle(K) - RM(K), in correctness units (0 = picks as well "
              "as the oracle at every K); subset records: the sets; the total = their mean"),
    MetricDef("ppe_human_accuracy", "PPE human acc", True, False, Counted.GROUPS,
              "PPE human preference accuracy: over Chatbot Arena battles with a winner (human ties left out), the "
              "share where the winner's answer gets the higher reward, a reward tie 1/2; subset records: the "
              "categories hard, easy, if, math, code (rows flagged so) and lang:LANGUAGE", official=True),
    MetricDef("rmb_score", "RMB", True, False, Counted.GROUPS,
              "RMB's official accuracy (its eval/scripts/my_run_rm.py; BoN and the total as RM-R1's RMB scripts): "
              "an item is correct iff r(best) > r(every other answer), strictly (pairwise: r(chosen) > r(reject); "
              "BoN: above every loser; a tie is not correct); subset records: each scenario (its category_path) "
              "over its items, each section (Pairwise_set/GOAL, BoN_set/GOAL) over its items; the total = the mean "
              "of the sections present (both sets and goals: the paper's Overall)", official=True),
)

"""The task scores of the built-in tasks (official scores and their kin): declared, not computed here."""

METRICS: dict[str, MetricDef] = {m.name: m for m in (*(c.definition for c in BUILTIN_COMPUTED), *_TASK_SCORES)}
"""Every declared metric by name: the computed ones, then the task scores; a plugin adds its own."""
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


def computed_metrics() -> tuple[ComputedMetric, ...]:
    """The metrics a summary computes, in record order: the built-in ones, then those registered."""
    return tuple(COMPUTED.values())


def metric_def(name: str) -> MetricDef:
    """The declaration of ``name``; ``X_shift_gap`` derives from X (shifted - original)."""
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
    subset: str | None


CHECKED_AGAINST_CODE = "computed as its code does"
"""An official table's default provenance: the scores equal the benchmark's own code's (tested)."""


@dataclass(frozen=True)
class OfficialLayout:
    """A benchmark's official table: ``columns`` are records of ``metric``, in the benchmark's
    own order and names; ``beside`` are rmbench metrics shown next to them."""

    title: str
    metric: str
    columns: tuple[OfficialColumn, ...]
    beside: tuple[str, ...] = ("discrimination", "specificity", "ds_auc")
    provenance: str = CHECKED_AGAINST_CODE
    """How the scores relate to the benchmark's own: the table's caption says it."""

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"title": self.title, "metric": self.metric,
               "columns": [{"label": c.label, "subset": c.subset} for c in self.columns],
               "beside": list(self.beside)}
        if self.provenance != CHECKED_AGAINST_CODE:
            out["provenance"] = self.provenance
        return out

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> OfficialLayout:
        return cls(str(d["title"]), str(d["metric"]),
                   tuple(OfficialColumn(str(c["label"]), c["subset"]) for c in d["columns"]),
                   tuple(d.get("beside", ())), str(d.get("provenance", CHECKED_AGAINST_CODE)))


DEFAULT_HEADLINE = ("pairwise_accuracy", "discrimination", "specificity", "ds_auc")

RB2_SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", "Ties")
RB1_SECTIONS = ("Chat", "Chat Hard", "Safety", "Reasoning", "Prior Sets")

RB2_LAYOUT = OfficialLayout("RewardBench 2", "rewardbench2_score",
                            tuple(OfficialColumn(s, s) for s in RB2_SUBSETS) + (OfficialColumn("Score", None),))
RB1_LAYOUT = OfficialLayout("RewardBench", "rewardbench_score",
                            tuple(OfficialColumn(s, s) for s in RB1_SECTIONS) + (OfficialColumn("Score", None),))
TIES_LAYOUT = OfficialLayout("RewardBench 2 Ties", "ties_score", (OfficialColumn("Ties", None),))

RM_BENCH_DOMAINS = ("chat", "math", "code", "safety")
"""RM-Bench's domains, in its own order (``split_dataset_by_domain`` in its ``scripts/utils.py``)."""
RM_BENCH_LEVELS = ("hard", "normal", "easy")
RM_BENCH_LAYOUT = OfficialLayout(
    "RM-Bench", "rm_bench_score",
    tuple(OfficialColumn(d.capitalize(), d) for d in RM_BENCH_DOMAINS)
    + tuple(OfficialColumn(level.capitalize(), level) for level in ("easy", "normal", "hard"))
    + (OfficialColumn("Avg", None),),
    beside=("discrimination", "rewrite_specificity", "preference_flip_rate", "ds_auc"))
"""The paper's table (Chat, Math, Code, Safety, Easy, Normal, Hard, Avg), beside D, Spec across
styles, the flip rate and ds_auc."""
