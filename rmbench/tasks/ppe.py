"""PPE's correctness sets (Preference Proxy Evaluations: Frick et al. 2024, "How to Evaluate
Reward Models for RLHF", arXiv 2410.14872; lmarena) as best-of-K groups.

Data, as published on the hub (split ``train`` of each; dataset cards read at their current
``main``): ``lmarena-ai/PPE-MMLU-Pro-Best-of-K``, ``-MATH-``, ``-GPQA-``, ``-IFEval-`` and
``-MBPP-Plus-Best-of-K`` (MATH and GPQA 512 rows, MBPP-Plus 507; 2,555 prompts and 81,760 answers
in all, as lmarena's announcement counts them). A row is
one prompt answered 32 times by one model: ``question_id``, ``model_name``, ``prompt`` (the
text the model was given), ``response_1`` .. ``response_32``, ``scores`` (32 booleans: answer
k correct), ``sampled_conflict_pairs`` (index pairs [i, j], 0-based, of one correct and one
incorrect answer: PPE's sample of the row's ``conflict_pairs``), and the source benchmark's own
columns (MMLU-Pro ``options``/``answer_index``, MATH ``sanitized_solution``, GPQA
``correct_choice_index``, IFEval ``instruction_id_list``, MBPP-Plus ``test_list``...), which
are not read except to tell the set of a local file's row.

Each row is one group: its answers in order, utility 1 (correct) or 0, id
``SET:question_id:model_name``, subset the set (``mmlu_pro``, ``math``, ``gpqa``, ``ifeval``,
``mbpp_plus``). Both utility levels are equivalence levels: two correct answers, or two
incorrect ones, are a specificity pair (equally correct answers are exactly what Spec asks
about). The bootstrap resamples questions (set and ``question_id``), a question's rows by all
models together.

Scores (records of the task, each per set and overall; :mod:`rmbench.core.best_of_k`):

* ``ppe_accuracy`` (the official layout's metric): over the row's ``sampled_conflict_pairs``
  (``pairs: sampled``, the default; a row without that field, or one a judge left answers of
  unscored, uses all its pairs), the share where r(correct) > r(incorrect), a reward tie 1/2
  (the expected value of picking one of the two at random, the best-of-2 rule below); pooled
  over the set's pairs; ``pairs: all`` takes every (correct, incorrect) pair of a row;
* ``ppe_best_of_k`` (subsets ``K=k`` and ``SET/K=k``): the expected correctness of the
  answer the reward model ranks first among K answers drawn without replacement from the row's
  answers, exactly over ranks, ties at the top broken uniformly; the mean over the set's rows;
* ``ppe_bok_gap``: the area between the oracle's best-of-K curve (pass@K without replacement)
  and the model's, divided by the number of K (mean over K = 1..32 of oracle - model), in
  correctness units, >= 0, lower is better.

The overall record of each is the mean of the sets present (each set counts once, whatever its
rows), as PPE averages its benchmarks.

Not checked against PPE's own code (``github.com/lmarena/PPE`` could not be read when this was
written): the tie rules (1/2 in the accuracy, a uniform pick in best-of-K), the pooling over a
set's pairs and the gap's normalisation are rmbench's, stated above; the data schema is the
dataset cards'.

Arguments: ``subsets`` (a list or ``mmlu_pro,math``; default all five), ``dataset`` (set ->
hub id, the entry's), ``revision``, ``split``, ``path`` (a local file or a folder of them in the
hub schema: what ``--data ppe_correctness=FILE_OR_FOLDER`` sets; a file's set is read from its
name, such as ``PPE-MATH-Best-of-K.parquet`` or ``math.jsonl``, else from its rows' columns,
else the one set ``subsets`` names), ``pairs``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbench.core.best_of_k import best_of_k_curves, conflict_pair_counts, oracle_curves
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE, OfficialColumn, OfficialLayout
from rmbench.core.types import ComparisonGroup, group_slices
from rmbench.errors import DataError
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import PPE_CORRECTNESS
from rmbench.tasks.sources import iter_rows

ACCURACY, CURVE, GAP = "ppe_accuracy", "ppe_best_of_k", "ppe_bok_gap"
PPE_SETS = {"mmlu_pro": "MMLU-Pro", "math": "MATH", "gpqa": "GPQA", "ifeval": "IFEval", "mbpp_plus": "MBPP-Plus"}
"""PPE's correctness sets, in its order: rmbench's subset name -> PPE's name."""
PPE_DATASETS = {key: f"lmarena-ai/PPE-{name}-Best-of-K" for key, name in PPE_SETS.items()}
SIGNATURES = {"mmlu_pro": ("answer_index", "options"), "math": ("sanitized_solution",),
              "gpqa": ("correct_choice_index",), "ifeval": ("instruction_id_list",), "mbpp_plus": ("test_list",)}
"""Columns that only the set's rows have (its source benchmark's own fields)."""
SUFFIXES = (".jsonl", ".json", ".parquet", ".pq", ".arrow", ".csv", ".tsv")
PAIRS = ("sampled", "all")


def _squash(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


def parse_subsets(subsets: str | Sequence[str] | None) -> tuple[str, ...]:
    """``"math,gpqa"``, a list, or None (all five) -> the sets in PPE's order; PPE's own names
    (``MMLU-Pro``) are accepted too."""
    if subsets is None:
        return tuple(PPE_SETS)
    items = subsets.split(",") if isinstance(subsets, str) else list(subsets)
    by_name = {_squash(k): k for k in PPE_SETS} | {_squash(v): k for k, v in PPE_SETS.items()}
    wanted = set()
    for item in items:
        if not str(item).strip():
            continue
        key = by_name.get(_squash(str(item)))
        if key is None:
            raise ValueError(f"subsets: {item!r} is not one of PPE's correctness sets ({', '.join(PPE_SETS)})")
        wanted.add(key)
    if not wanted:
        raise ValueError(f"subsets is empty: name one or more of {', '.join(PPE_SETS)}")
    return tuple(k for k in PPE_SETS if k in wanted)


def set_from_name(path: str | Path) -> str | None:
    """The set a file's name names, when exactly one (``PPE-MATH-Best-of-K.parquet``,
    ``mmlu_pro.jsonl``); for a file in a folder given to the task, ``path`` is relative to that
    folder and its subfolders count too (``gpqa/train.parquet``), the nearest first."""
    for part in reversed(Path(path).parts):
        squashed = _squash(Path(part).stem)
        hits = {k for k in PPE_SETS if _squash(k) in squashed or _squash(PPE_SETS[k]) in squashed}
        if len(hits) == 1:
            return hits.pop()
    return None


def set_from_columns(row: Mapping[str, Any]) -> str | None:
    """The set whose source benchmark's own columns the row has, when exactly one."""
    hits = [k for k, cols in SIGNATURES.items() if all(c in row for c in cols)]
    return hits[0] if len(hits) == 1 else None


def ppe_correctness_layout(subsets: Sequence[str]) -> OfficialLayout:
    """PPE's correctness table: accuracy per set, then their mean."""
    return OfficialLayout("PPE correctness", ACCURACY,
                          tuple(OfficialColumn(PPE_SETS[s], s) for s in subsets) + (OfficialColumn("Mean", None),),
                          beside=(GAP, "discrimination", "specificity", "ds_auc"),
                          provenance="computed as the PPE paper and dataset cards define them (PPE's code could not be "
                          "read)")


def _flags(r: RowReader, field: str) -> list[int]:
    """``scores``: a list of booleans (or 0/1), JSON in a CSV cell."""
    value = r.get(field)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            raise r.error(field, f"expected a list of booleans written as JSON in the cell, "
                                 f"got {value[:60]!r}") from None
    if not isinstance(value, (list, tuple)):
        raise r.schema_error(field, f"expected a list of booleans, got {type(value).__name__}")
    out = []
    for i, v in enumerate(value):
        if isinstance(v, (bool, np.bool_)) or (isinstance(v, (int, np.integer)) and v in (0, 1)):
            out.append(int(v))
        else:
            raise r.error(field, f"expected a list of booleans (or 0/1), but item {i} is {v!r}"[:160])
    return out


def _pairs(r: RowReader, field: str, flags: Sequence[int]) -> list[list[int]] | None:
    """``sampled_conflict_pairs``: [[i, j], ...], each one correct and one incorrect answer."""
    value = r.get(field, None)
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (json.JSONDecodeError, RecursionError):
            raise r.error(field, "expected a list of index pairs written as JSON in the cell") from None
    if not isinstance(value, (list, tuple)):
        raise r.error(field, f"expected a list of index pairs [i, j], got {type(value).__name__}")
    out = []
    n = len(flags)
    for k, pair in enumerate(value):
        if (not isinstance(pair, (list, tuple)) or len(pair) != 2
                or not all(isinstance(x, (int, np.integer)) and not isinstance(x, bool) for x in pair)):
            raise r.error(field, f"item {k} is {pair!r}, not a pair of answer indices [i, j]"[:160])
        i, j = int(pair[0]), int(pair[1])
        if not (0 <= i < n and 0 <= j < n):
            raise r.error(field, f"item {k} is [{i}, {j}]: answer indices run from 0 to {n - 1}")
        if flags[i] == flags[j]:
            raise r.error(field, f"item {k} is [{i}, {j}]: both answers are {'in' * (not flags[i])}correct, "
                                 f"not a conflict pair")
        out.append([i, j])
    return out


PPE_ACCURACY = MetricDef(
    "ppe_accuracy", "PPE acc", True, False, Counted.GROUPS,
    "PPE correctness accuracy: over each row's sampled_conflict_pairs (one correct, one incorrect answer; "
    "all such pairs with the task's pairs: all), the share with r(correct) > r(incorrect), a reward tie 1/2, "
    "pooled over a set's pairs; subset records: the sets (mmlu_pro, math, gpqa, ifeval, mbpp_plus); the "
    "total = the mean of the sets present", official=True)
PPE_BEST_OF_K = MetricDef(
    "ppe_best_of_k", "BoK", True, False, Counted.GROUPS,
    "PPE best-of-K: the expected correctness of the answer the RM ranks first among K answers drawn "
    "without replacement from a prompt's answers (exact over ranks; a reward tie at the top picks "
    "uniformly among the tied), averaged over a set's prompts; subset K=k: the mean over the sets, "
    "SET/K=k: one set")
PPE_BOK_GAP = MetricDef(
    "ppe_bok_gap", "BoK gap", False, False, Counted.GROUPS,
    "area between the oracle's best-of-K curve (1 - C(n - n_correct, K) / C(n, K)) and the RM's, divided "
    "by the number of K: mean over K = 1..n of oracle(K) - RM(K), in correctness units (0 = picks as well "
    "as the oracle at every K); subset records: the sets; the total = their mean")


class PPECorrectnessTask(Task):
    """PPE's five correctness sets: 32 answers a prompt, correct or not (module doc)."""

    description = "PPE correctness: 32 sampled answers a prompt, each correct or not; accuracy and best-of-K"
    headline = (ACCURACY, GAP) + DEFAULT_HEADLINE
    official = ppe_correctness_layout(tuple(PPE_SETS))
    scores = (PPE_ACCURACY, PPE_BEST_OF_K, PPE_BOK_GAP,)
    row_schemas = (PPE_CORRECTNESS,)
    reads_folder = True
    version = 1

    def __init__(self, subsets: str | Sequence[str] | None = None, path: str | None = None,
                 dataset: Mapping[str, str] | None = None, revision: str | None = None, split: str = "train",
                 pairs: str = "sampled") -> None:
        self.subsets = parse_subsets(subsets)
        if pairs not in PAIRS:
            raise ValueError(f"pairs must be sampled (PPE's sampled_conflict_pairs) or all, got {pairs!r}")
        self.pairs, self.path, self.revision, self.split = pairs, path, revision, split
        self.dataset = dict(PPE_DATASETS if dataset is None else dataset)
        if path is None:
            missing = [s for s in self.subsets if s not in self.dataset]
            if missing:
                raise ValueError(f"dataset gives no hub id for {', '.join(missing)}")
        self.official = ppe_correctness_layout(self.subsets)

    # --- reading --------------------------------------------------------------------------------

    def _sources(self) -> Iterator[tuple[str | None, dict]]:
        """(the set, or None when each row's must be found, iter_rows arguments) per source."""
        if self.path is None:
            for s in self.subsets:
                yield s, dict(dataset=self.dataset[s], revision=self.revision, split=self.split)
            return
        root = Path(self.path)
        if root.is_dir():
            files = sorted(p for p in root.rglob("*") if p.is_file() and p.suffix.lower() in SUFFIXES)
            if not files:
                raise DataError(f"the folder holds no data file ({', '.join(SUFFIXES)})", path=str(root))
            for f in files:
                yield set_from_name(f.relative_to(root)), {"path": str(f)}
        else:
            yield set_from_name(Path(self.path.split("#", 1)[0]).name), {"path": self.path}

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        wanted = set(self.subsets)
        for fixed, source in self._sources():
            if fixed is not None and fixed not in wanted:
                continue
            for location, line, row in iter_rows(**source):
                r = RowReader(row, location, line, PPE_CORRECTNESS)
                with r.skippable():
                    subset = fixed or set_from_columns(row) or (self.subsets[0] if len(self.subsets) == 1 else None)
                    if subset is None:
                        raise r.error(None, f"cannot tell which PPE set this row is from: name the file after it "
                                            f"({', '.join(PPE_SETS)}) or pass --task-arg subsets=SET")
                    if subset not in wanted:
                        continue
                    group = self._row_group(r, subset)
                    if group.id in seen:
                        raise r.error("question_id", f"duplicate row {group.id!r} (set, question_id, model_name)")
                    seen.add(group.id)
                    yield group

    def _row_group(self, r: RowReader, subset: str) -> ComparisonGroup:
        flags = _flags(r, "scores")
        if len(flags) < 2:
            raise r.error("scores", f"has {len(flags)} answer; a PPE row has 32")
        qid = r.get("question_id")
        if isinstance(qid, bool) or not isinstance(qid, (str, int)):
            raise r.error("question_id", f"expected a string or a number, got {qid!r}"[:120])
        model = r.string("model_name", None)
        responses = [r.string(f"response_{k + 1}") for k in range(len(flags))]
        sampled = _pairs(r, "sampled_conflict_pairs", flags)
        gid = f"{subset}:{qid}" + (f":{model}" if model is not None else "")
        return r.group(id=gid, prompt=r.prompt("prompt"), responses=responses, utilities=flags, subset=subset,
                       meta={"question_id": str(qid), "model_name": model, "answers": len(flags),
                             "sampled_conflict_pairs": sampled})

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        """One unit per question: a question's rows (one per model) are resampled together."""
        keys = [(g.subset, g.meta_dict.get("question_id", g.id)) for g in groups]
        unit_of = {k: i for i, k in enumerate(dict.fromkeys(keys))}
        return np.array([unit_of[k] for k in keys], dtype=np.int64)

    # --- scores ---------------------------------------------------------------------------------

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """Accuracy, the best-of-K curve and its gap to the oracle's, per set and their mean, from
        one resample of questions: every statistic is a ratio of sums over rows, so a resample is
        its unit counts times a per-unit table of sums (one matrix product)."""
        r = np.asarray(rewards, dtype=np.float64)
        sizes = np.array([len(g.responses) for g in groups], dtype=np.int64)
        correct = np.array([u for g in groups for u in g.utilities], dtype=np.float64)
        k_max = int(sizes.max())
        curve = best_of_k_curves(r, correct, sizes, k_max)
        oracle = oracle_curves(correct, sizes, k_max)
        defined = ~np.isnan(curve)
        hits, n_pairs = self._pair_hits(groups, r, correct, sizes)
        table = np.column_stack([hits, n_pairs, np.nan_to_num(curve), np.nan_to_num(oracle), defined])
        present: list[str | None] = [s for s in self.subsets if any(g.subset == s for g in groups)]
        set_of = np.array([present.index(g.subset) for g in groups], dtype=np.int64)
        units = self.bootstrap_units(groups)
        n_units, n_sets = int(units.max()) + 1, len(present)
        per_unit = np.zeros((n_units, table.shape[1]))
        np.add.at(per_unit, units, table)
        unit_set = np.zeros(n_units, dtype=np.int64)
        unit_set[units] = set_of
        members = [np.flatnonzero(unit_set == j) for j in range(n_sets)]  # each set's units
        blocks = [per_unit[m] for m in members]
        k_of_set = [int(sizes[set_of == j].max()) for j in range(n_sets)]

        def score(sample: np.ndarray) -> np.ndarray:
            w = np.bincount(sample, minlength=n_units).astype(np.float64)
            sums = np.stack([w[m] @ b for m, b in zip(members, blocks)])  # sets x columns
            with np.errstate(invalid="ignore", divide="ignore"):
                acc = sums[:, 0] / sums[:, 1]
                model = sums[:, 2:2 + k_max] / sums[:, 2 + 2 * k_max:]
                best = sums[:, 2 + k_max:2 + 2 * k_max] / sums[:, 2 + 2 * k_max:]
            gap = np.array([np.mean(best[j, :k_of_set[j]] - model[j, :k_of_set[j]]) for j in range(n_sets)])
            with np.errstate(invalid="ignore"):
                mean_curve = np.mean(model, axis=0) if n_sets else np.full(k_max, np.nan)
            return np.concatenate([[np.mean(acc)], acc, [np.mean(gap)], gap, mean_curve, model.reshape(-1)])

        labels = ([(ACCURACY, None)] + [(ACCURACY, s) for s in present] + [(GAP, None)] + [(GAP, s) for s in present]
                  + [(CURVE, f"K={k}") for k in range(1, k_max + 1)]
                  + [(CURVE, f"{s}/K={k}") for s in present for k in range(1, k_max + 1)])
        per_set = [int((set_of == j).sum()) for j in range(n_sets)]
        counts = ([len(groups)] + per_set) * 2 + [int((sizes >= k).sum()) for k in range(1, k_max + 1)]
        counts += [int(((set_of == j) & (sizes >= k)).sum()) for j in range(n_sets) for k in range(1, k_max + 1)]
        return TaskScores(tuple(labels), score, tuple(counts))

    def _pair_hits(self, groups: Sequence[ComparisonGroup], r: np.ndarray, correct: np.ndarray,
                   sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row: the accuracy's credit (right pairs + 1/2 per reward tie) and its pairs."""
        wins, ties, n_pairs = conflict_pair_counts(r, correct, sizes)
        hits = wins + 0.5 * ties
        if self.pairs == "all":
            return hits, n_pairs
        rows, first, second = [], [], []
        for gi, (g, where) in enumerate(zip(groups, group_slices(groups))):
            meta = g.meta_dict
            sampled = meta.get("sampled_conflict_pairs")
            if sampled is None or len(g.responses) != meta.get("answers"):
                continue  # no sample (or a judge left answers unscored): all the row's pairs count
            for i, j in sampled:
                good, bad = (i, j) if g.utilities[i] > g.utilities[j] else (j, i)
                rows.append(gi)
                first.append(where.start + good)
                second.append(where.start + bad)
        if rows:
            idx = np.array(rows, dtype=np.int64)
            a, b = r[np.array(first)], r[np.array(second)]
            credit = (a > b) + 0.5 * (a == b)
            sampled_rows = np.unique(idx)
            hits[sampled_rows] = 0.0
            n_pairs[sampled_rows] = 0.0
            hits += np.bincount(idx, weights=credit, minlength=len(groups))
            n_pairs += np.bincount(idx, minlength=len(groups))
        return hits, n_pairs
