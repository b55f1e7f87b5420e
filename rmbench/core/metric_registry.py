"""Declared metrics: what each reported number is called, which way is better, what ``n`` counts.

Every metric record in a run names one of these; leaderboards, ``compare``, plots and exports
take their labels, directions and eps-dependence from here instead of string constants. A task
declares its headline metrics and, for benchmarks with an official score, the official layout
(:class:`OfficialLayout`): which records, under which column names, make the table a user puts
beside the benchmark's own leaderboard.

A task plugin may report a metric that is not registered here; it is shown under its own name,
higher taken as better (:func:`metric_def`). :func:`register_metric` declares it properly.
"""

from __future__ import annotations

from dataclasses import dataclass

GAP_SUFFIX = "_shift_gap"


@dataclass(frozen=True)
class MetricDef:
    """One kind of reported number.

    ``eps_dependent``: reported once per eps of the run (D and Spec). ``n_counts``: what the
    record's ``n`` counts. ``official``: a benchmark's own score, reproduced to its code.
    ``reading``: a note that leaderboards showing the metric carry (e.g. a range that is not [0, 1]).
    """

    name: str
    label: str
    higher_is_better: bool
    eps_dependent: bool
    n_counts: str
    description: str
    official: bool = False
    reading: str | None = None


TIES_READING = ("ties_score ranges over [-0.01, 1.01], not [0, 1]: RewardBench 2's formula adds 0.01 x the "
                "mean tanh(margin ratio - 1) to terms that sum to at most 1, so an RM whose correct answers sit "
                "far above the incorrect ones, relative to their spread among themselves, scores up to 1.010")
LENGTH_CORRELATION_READING = (
    "length_correlation ranges over [-1, 1] and 0 is ideal (the reward difference of two equally good answers "
    "does not follow their length difference); > 0: longer answers get more reward, < 0: shorter ones. Both "
    "signs are a bias: it is marked lower-is-better only because the typical bias is positive; read |value|")
LENGTH_GAP_READING = (
    "length_bias_gap = acc when the better answer is longer - acc when it is shorter, over [-1, 1]; 0 is ideal, "
    "> 0 favours length, < 0 brevity. Both signs are a bias: marked lower-is-better only because the typical "
    "bias is positive; read |value|")

_BUILTIN = (
    MetricDef("pairwise_accuracy", "acc", True, False, "discrimination pairs",
              "over pairs with u(a) > u(b): 1 if r(a) > r(b), 0.5 if equal"),
    MetricDef("sign_accuracy", "sign acc", True, False, "all pairs",
              "sign(r(a) - r(b)) = sign(u(a) - u(b)) over all pairs"),
    MetricDef("discrimination", "D", True, True, "discrimination pairs",
              "D(eps) = P(r(a) > r(b) + eps | u(a) > u(b))"),
    MetricDef("specificity", "Spec", True, True, "specificity pairs",
              "Spec(eps) = 1 - P(|r(a) - r(b)| > eps | u(a) = u(b))"),
    MetricDef("ds_auc", "ds_auc", True, False, "all pairs",
              "area under (Spec(eps), D(eps)) for eps from 0 to inf"),
    MetricDef("balanced_best", "bal best", True, False, "all pairs",
              "max over eps of (D + Spec) / 2; its record's eps is where it is reached"),
    MetricDef("reward_margin", "margin", True, False, "discrimination pairs",
              "mean |r(better) - r(worse)| / sigma"),
    MetricDef("ties_score", "ties_score", True, False, "groups", "RewardBench 2's official Ties score", official=True,
              reading=TIES_READING),
    MetricDef("rewardbench_score", "RB1 score", True, False, "groups",
              "RewardBench v1's official score; subset records are its sections", official=True),
    MetricDef("rewardbench2_score", "RB2 score", True, False, "groups",
              "RewardBench 2's official score; subset records are its six subsets", official=True),
    MetricDef("rm_bench_score", "RM-Bench", True, False, "groups",
              "RM-Bench's official accuracy (its scripts/utils.py compute_accuracy): per domain a 3x3 matrix "
              "M[i][j] = share of rows with r(chosen style i) > r(rejected style j), styles concise, detailed "
              "plain, detailed markdown; hard = mean over i < j, normal = mean of the diagonal, easy = mean over "
              "i > j; a domain's score = (hard + normal + easy) / 3; subset records: the domains, and hard / "
              "normal / easy as means over the domains present; the total = mean of the domain scores",
              official=True),
    MetricDef("m_rewardbench_score", "M-RB score", True, False, "groups",
              "M-RewardBench's official score: per language (subset LANG) the mean of RewardBench's four section "
              "scores, weighted by M-RewardBench's example counts (subset LANG/SECTION); subset None: the mean "
              "over the languages, English (eng_Latn) left out", official=True),
    MetricDef("m_rewardbench_english_gap", "M-RB gap", True, False, "groups",
              "m_rewardbench_score of a language minus that of English on the same ids (paired resample); "
              "subset None: the mean over the languages; < 0: the RM loses accuracy in translation"),
    MetricDef("judgebench_score", "JudgeBench", True, False, "groups",
              "JudgeBench's official accuracy (its utils/metrics.py compute_final_metrics, one game as run_judge.py "
              "--single_game with a reward_model judge): a pair is correct iff its verdict (A>B iff r(A) > r(B), "
              "else B>A: a tie is B>A) equals the label; subset records: the categories knowledge (mmlu-pro-*), "
              "reasoning, math, coding; the total = over all pairs. With the task's single_game: false both orders are "
              "played, as run_judge.py by default, and a tie is inconsistent, so wrong", official=True),
    MetricDef("ppe_accuracy", "PPE acc", True, False, "groups",
              "PPE correctness accuracy: over each row's sampled_conflict_pairs (one correct, one incorrect answer; "
              "all such pairs with the task's pairs: all), the share with r(correct) > r(incorrect), a reward tie 1/2, "
              "pooled over a set's pairs; subset records: the sets (mmlu_pro, math, gpqa, ifeval, mbpp_plus); the "
              "total = the mean of the sets present", official=True),
    MetricDef("ppe_best_of_k", "BoK", True, False, "groups",
              "PPE best-of-K: the expected correctness of the answer the RM ranks first among K answers drawn "
              "without replacement from a prompt's answers (exact over ranks; a reward tie at the top picks "
              "uniformly among the tied), averaged over a set's prompts; subset K=k: the mean over the sets, "
              "SET/K=k: one set"),
    MetricDef("ppe_bok_gap", "BoK gap", False, False, "groups",
              "area between the oracle's best-of-K curve (1 - C(n - n_correct, K) / C(n, K)) and the RM's, divided "
              "by the number of K: mean over K = 1..n of oracle(K) - RM(K), in correctness units (0 = picks as well "
              "as the oracle at every K); subset records: the sets; the total = their mean"),
    MetricDef("ppe_human_accuracy", "PPE human acc", True, False, "groups",
              "PPE human preference accuracy: over Chatbot Arena battles with a winner (human ties left out), the "
              "share where the winner's answer gets the higher reward, a reward tie 1/2; subset records: the "
              "categories hard, easy, if, math, code (rows flagged so) and lang:LANGUAGE", official=True),
    MetricDef("rmb_score", "RMB", True, False, "groups",
              "RMB's official accuracy (its eval/scripts/my_run_rm.py; BoN and the total as RM-R1's RMB scripts): "
              "an item is correct iff r(best) > r(every other answer), strictly (pairwise: r(chosen) > r(reject); "
              "BoN: above every loser; a tie is not correct); subset records: each scenario (its category_path) "
              "over its items, each section (Pairwise_set/GOAL, BoN_set/GOAL) over its items; the total = the mean "
              "of the sections present (both sets and goals: the paper's Overall)", official=True),
    MetricDef("length_correlation", "len corr", False, False, "specificity pairs",
              "Spearman's rho between r(a) - r(b) and len(a) - len(b) (characters) over pairs with u(a) = u(b), "
              "each pair taken in both orientations; 0 = no length bias, > 0 = longer answers get more reward, "
              "< 0 = shorter ones", reading=LENGTH_CORRELATION_READING),
    MetricDef("accuracy_longer_better", "acc longer", True, False, "discrimination pairs",
              "pairwise accuracy over the pairs with u(a) > u(b) whose better answer a is the longer one "
              "(characters); pairs of equal length are left out"),
    MetricDef("accuracy_shorter_better", "acc shorter", True, False, "discrimination pairs",
              "pairwise accuracy over the pairs with u(a) > u(b) whose better answer a is the shorter one "
              "(characters); pairs of equal length are left out; far below acc longer = length bias"),
    MetricDef("length_bias_gap", "len gap", False, False, "discrimination pairs",
              "accuracy_longer_better - accuracy_shorter_better; 0 = no length bias, > 0 = favours longer answers, "
              "< 0 = shorter ones", reading=LENGTH_GAP_READING),
    MetricDef("rewrite_specificity", "rw Spec", True, True, "cross-form specificity pairs",
              "Spec(eps) over pairs of an answer and its meaning-preserving rewrite (equal utility by construction)"),
    MetricDef("within_form_discrimination", "D within", True, True, "within-form discrimination pairs",
              "D(eps) over pairs of one surface form (original vs original, rewrite vs rewrite)"),
    MetricDef("cross_form_discrimination", "D cross", True, True, "cross-form discrimination pairs",
              "D(eps) over pairs across forms (original better vs rewritten worse, and the reverse)"),
    MetricDef("cross_form_gap", "D gap", True, True, "cross-form discrimination pairs",
              "D cross - D within at eps, from the same resample (paired CI); < 0: the preference weakens when "
              "the surface changes"),
    MetricDef("preference_flip_rate", "flips", False, False, "rewritten discrimination pairs",
              "share of rewritten pairs whose preference sign differs from their originals'"),
)

METRICS: dict[str, MetricDef] = {m.name: m for m in _BUILTIN}


def register_metric(metric: MetricDef) -> None:
    """Declare a plugin's metric (a second declaration of a name must be identical)."""
    known = METRICS.get(metric.name)
    if known is not None and known != metric:
        raise ValueError(f"metric {metric.name!r} is already declared differently: {known}")
    METRICS[metric.name] = metric


def metric_def(name: str) -> MetricDef:
    """The declaration of ``name``; ``X_shift_gap`` derives from X (shifted - original)."""
    if name in METRICS:
        return METRICS[name]
    if name.endswith(GAP_SUFFIX) and name[: -len(GAP_SUFFIX)] in METRICS:
        base = METRICS[name[: -len(GAP_SUFFIX)]]
        return MetricDef(name, f"{base.label} gap", base.higher_is_better, base.eps_dependent, "original groups",
                         f"{base.name} on the shifted groups minus on their originals (paired)")
    return MetricDef(name, name, True, False, "resampling units", "a task's own metric (not declared)")


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

    def to_json(self) -> dict:
        out = {"title": self.title, "metric": self.metric,
               "columns": [{"label": c.label, "subset": c.subset} for c in self.columns],
               "beside": list(self.beside)}
        if self.provenance != CHECKED_AGAINST_CODE:
            out["provenance"] = self.provenance
        return out

    @classmethod
    def from_json(cls, d: dict) -> "OfficialLayout":
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
