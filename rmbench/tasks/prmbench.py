"""PRMBench (Song et al. 2025, arXiv 2501.03124; ``hitsmy/PRMBench_Preview``) with its official PRMScore.

Data, as published: 6,216 rows (83,456 labelled steps), the hub dataset ``hitsmy/PRMBench_Preview``
(one file, ``prmbench_preview.jsonl``, split ``train``), or the 25 files the official task
``prmtest_classified`` reads from ``mr_eval/tasks/prmtest_classified/data/`` of the GitHub
repository ``ssmisya/PRMBench`` (:data:`PRMBENCH_FILES`: pinned at commit ``a1ae4ea`` with their
sha256; ``RMBENCH_MIRROR`` and the download cache serve them). A row: ``idx`` (the source
solution, e.g. ``prm_test_p1_0``), ``classification`` (the error type: ``redundency``,
``circular``, ``counterfactual``, ``step_contradiction``, ``domain_inconsistency``,
``confidence``, ``missing_condition``, ``deception``, ``multi_solutions``),
``original_question``, ``original_process`` (the original steps), ``modified_question``,
``modified_process`` (the steps with the error put in), ``error_steps`` (1-based numbers of the
wrong steps of ``modified_process``; none for ``multi_solutions``), ``modified_steps``,
``reason``.

The solutions, as the official ``load_data_function`` builds them: each row gives the
solution ``modified_process`` to ``modified_question``, id ``CLASSIFICATION_IDX`` (the first row
of an id is kept, a later one dropped, as its loader does); the first ``redundency`` row of each
``idx`` also gives, just before it, the original solution ``original_process`` to
``original_question``, class ``correct``, id ``correct_IDX``. Each is one
:class:`~rmbench.core.step_groups.StepGroup`: its steps, utilities 1 for a correct step and 0 for an
error step, subset its class, meta ``idx`` and ``classification``. Its step-level D/Spec pairs
run up to its first error; PRMBench's F1s use every step's score.

The official scores (:mod:`rmbench.core.prmbench`): a step score (P(step correct)) > ``threshold``
predicts the step correct; ``prmbench_f1`` and ``prmbench_negative_f1`` (positive class: a
correct step) over the pooled steps, overall (every process with an error type) and per type;
``prmbench_score`` (PRMScore, the paper's table) overall, per type and per category
(simplicity, soundness, sensitivity: the mean of its types'). The bootstrap resamples solutions.

Arguments: ``threshold`` (default 0.5, the official PRMs' ``validity_threshold``), ``source``
(``hub``: the dataset ``dataset`` at ``revision``, split ``split``, the default; ``github``: the
pinned files ``paths``, downloaded once and verified), ``path`` (a local PRMBench-format file or
``URL#sha256=HEX``: what ``--data prmbench=FILE`` sets; it replaces both sources).
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rmbench.core.canonical import canonical_json
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE
from rmbench.core.prmbench import (
    CATEGORIES,
    CORRECT,
    ERROR_TYPES,
    F1_ONLY,
    PRMBENCH_F1,
    PRMBENCH_LAYOUT,
    PRMBENCH_NEGATIVE_F1,
    PRMBENCH_SCORE,
    f1_pair,
    prm_score,
    step_confusion,
)
from rmbench.core.step_groups import StepGroup
from rmbench.core.types import ComparisonGroup, split_by_group
from rmbench.errors import DataError
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import PRMBENCH
from rmbench.tasks.sources import iter_rows

PRMBENCH_DATASET = "hitsmy/PRMBench_Preview"
PRMBENCH_COMMIT = "a1ae4eab803e14c4c6316bf89d1679b0486faa8c"
_RAW = f"https://raw.githubusercontent.com/ssmisya/PRMBench/{PRMBENCH_COMMIT}/mr_eval/tasks/prmtest_classified/data/"
_SHA256 = {
    "prm800k_test_p1_4o_circular": "7205855b6b7e9a161b9b7c1e163274bea5b9ecd4ba0a435100e8e545fea42a4a",
    "prm800k_test_p1_4o_confidence": "17ec2af85dfb6cc230c9d4c6f3b6b9b7668d5bcb7db0e8ae9e2b6b74e6b5a509",
    "prm800k_test_p1_4o_counterfactual": "18774eff6acc1a1ff8d8be5168d451511a1bb42d1b6a000f50db008cfb0a0d54",
    "prm800k_test_p1_4o_deception": "5a68973f459b49be56e6e2d375bf69668dcf8476c79096c1541e293bb02df44f",
    "prm800k_test_p1_4o_domain_inconsistency": "551818a44f7ccebda16743711f6f60198cd6617296c559243b3866fd7f562f0d",
    "prm800k_test_p1_4o_missing_condition": "216f8ea75d585becbb915070faa39b46ac07f618e7ece33bb3931ff0247b371c",
    "prm800k_test_p1_4o_redundency": "0c23552bf0abb801acc11ee18954c4595101f334761362afa809af76238eb2c9",
    "prm800k_test_p1_4o_step_contradiction": "7d291f5596715f8b21db2aae2ebcc5b7347b099f0cc66a7a2788ee56601c4aa8",
    "prm800k_test_p2_4o_circular": "531060d9a79fb9561b046361258c993bfe06a6e8df18e0f8f30bb28df0a200c4",
    "prm800k_test_p2_4o_confidence": "53ba01695ab145a8393f20cac6f96b9b836e39f169fc4ff18d7ed48cac9c1a0d",
    "prm800k_test_p2_4o_counterfactual": "8910343b84696dc2b36cc7b1833e934897e55c66bbe4b93d5040736443a2f03d",
    "prm800k_test_p2_4o_deception": "b98ba8ef38abbcb04ce8766e1bcb80e6aafb19661da675e3c2334e44ace3acdd",
    "prm800k_test_p2_4o_domain_inconsistency": "66bc63f3080fcbe8b372f0fe460b4f26f9ffd1cedef9a85e4cd354c9547ca479",
    "prm800k_test_p2_4o_missing_condition": "93b52efc514eeaed3156c1fccf3c9e4e7b633f0eb131c1a50a3b9a1d45b6c18c",
    "prm800k_test_p2_4o_redundency": "e729812baf0c3456dc7eafb856a8380f9c21579ea225f307d0edd947cd5e2746",
    "prm800k_test_p2_4o_step_contradiction": "7c77a62dfb9165db3d5033732eaef161b6d8dee09d548db6cb08d1a5ed4e74ac",
    "prm800k_train_p1_first400_4o_circular": "a4eae35fba1f169dc3a05f5e90ef7087c4be21c8dfbf9268ffbc750588221b89",
    "prm800k_train_p1_first400_4o_confidence": "3ed32dd0b67c59df3c854bacb72cc6d298aebc53e817eb61e504ff5de890711b",
    "prm800k_train_p1_first400_4o_counterfactual": "da97d496e32476912b4fcbc3254488f430f294ef6346698d5ce39af67ae24b00",
    "prm800k_train_p1_first400_4o_deception": "1125095799e9792d72156417f06acec7017447fdbe24d03129af5ca6e355a9cd",
    "prm800k_train_p1_first400_4o_domain_inconsistency":
        "2d68581c14f0d9dd9fa106f2060afb462561c2dd67246c0dea8ed393c90fe375",
    "prm800k_train_p1_first400_4o_missing_condition":
        "0d5f020b02bf4c631f0feb37063d0e7f2d6049c27d75dbc859ba81120e8a7070",
    "prm800k_train_p1_first400_4o_redundency": "03723fc0a28d896351969632c6e98e3d09c73cef41c4a5899ffdcc1ade28be47",
    "prm800k_train_p1_first400_4o_step_contradiction":
        "35accaa8eb3dc3e95eacfc51135b18949a1c68729e33803eb5edb3079dd8acdb",
    "prm_test_p12_multi_solutions": "4cda3e5946f02d0c3e79bd9e2513af8cde2efe83868c63e469ca10388a98a99d",
}
PRMBENCH_FILES = tuple(f"{_RAW}{name}.jsonl#sha256={sha}" for name, sha in _SHA256.items())
"""The official task's 25 data files at commit a1ae4ea (6,216 rows), by URL and sha256 (taken
from the repository's blobs), in file-name order."""
SOURCES = ("hub", "github")

_OVERALL = "every process with an error type (not the original, correct ones)"
PRMBENCH_READING = (
    "PRMScore's CIs may reach 0.000 (0.473 [0.000, 0.497]): in a bootstrap resample with no true positive for "
    "one class (no error step flagged, or no correct step passed), PRMBench gives that F1 its value -1, so 0.5 F1 "
    "+ 0.5 negative F1 is at most 0 and scores 0; where over 2.5% of the resamples do, the percentile CI starts "
    "at 0 (the value itself is the full data's)")
"""The leaderboard's note under PRMBench's scores: why a PRMScore CI reaches 0."""
PRMBENCH_SCORE_DEF = MetricDef(
    PRMBENCH_SCORE, "PRMScore", True, False, Counted.GROUPS,
    "PRMBench's PRMScore (ssmisya/PRMBench a1ae4ea, form_latex_strs.ipynb get_prmscore_from_current_res_dict): "
    "0.5 F1 + 0.5 negative F1 of the pooled steps (a step predicted correct iff its score > threshold, 0.5 by "
    "default), 0 where not > 0; multi_solutions: F1 alone. The total: over " + _OVERALL + "; subset records: "
    "each error type, and each category (simplicity, soundness, sensitivity) as the mean of its types' scores",
    official=True, reading=PRMBENCH_READING)
PRMBENCH_F1_DEF = MetricDef(
    PRMBENCH_F1, "F1", True, False, Counted.GROUPS,
    "PRMBench's step F1 (mr_eval prmtest_classified evaluate_function), the correct step the positive class: "
    "2PR/(P+R) over the pooled steps, -1 where P+R = 0 or both undefined (no true positive); the total: over "
    + _OVERALL + "; subset records: each class, correct included", official=True)
PRMBENCH_NEGATIVE_F1_DEF = MetricDef(
    PRMBENCH_NEGATIVE_F1, "Negative F1", True, False, Counted.GROUPS,
    "PRMBench's negative F1: its F1 with the error step the positive class (TN for TP), same pooling and "
    "sentinels as prmbench_f1", official=True)


class PRMBenchTask(Task):
    """PRMBench solutions (``idx``, ``classification``, ``modified_process``, ``error_steps``,
    ...) with PRMBench's official PRMScore per error type and category (module doc)."""

    description = "PRMBench: step-labelled solutions with 9 error types; official PRMScore per type and category"
    headline = (PRMBENCH_LAYOUT.metric,) + DEFAULT_HEADLINE
    official = PRMBENCH_LAYOUT
    scores = (PRMBENCH_SCORE_DEF, PRMBENCH_F1_DEF, PRMBENCH_NEGATIVE_F1_DEF)
    score_args = ("threshold",)
    row_schemas = (PRMBENCH,)
    steps = True
    version = 1

    def __init__(self, threshold: float = 0.5, source: str = "hub", path: str | None = None,
                 dataset: str | None = PRMBENCH_DATASET, revision: str | None = None, split: str = "train",
                 paths: Sequence[str] | None = None) -> None:
        if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not math.isfinite(threshold):
            raise ValueError(f"threshold must be a finite number (a step is predicted correct iff its score, "
                             f"P(correct), is above it), got {threshold!r}")
        if source not in SOURCES:
            raise ValueError(f"source {source!r}: use hub (the dataset {PRMBENCH_DATASET}) or github (the official "
                             f"task's pinned files, which RMBENCH_MIRROR can serve)")
        self.threshold = float(threshold)
        self.sources: list[dict[str, Any]]  # iter_rows's keywords, one per file
        if path is not None:
            self.sources = [dict(path=path)]
        elif source == "github":
            files = list(PRMBENCH_FILES if paths is None else paths)
            if not files or not all(isinstance(f, str) for f in files):
                raise ValueError("paths must list the data files (URL#sha256=HEX or local paths)")
            self.sources = [dict(path=f) for f in files]
        else:
            if dataset is None:
                raise ValueError(f"source hub needs a dataset (the hub id, {PRMBENCH_DATASET})")
            self.sources = [dict(dataset=dataset, revision=revision, split=split)]

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        for location, line, row in self._rows():
            r = RowReader(row, location, line, PRMBENCH)
            made: list[StepGroup] = []  # stays empty when --skip-bad-rows skips the row
            with r.skippable():
                idx = r.get("idx")
                if isinstance(idx, bool) or not isinstance(idx, (str, int)):
                    raise r.error("idx", f"expected a string or an integer, got {idx!r}"[:120])
                idx = str(idx)
                kind = r.string("classification")
                if kind == CORRECT:
                    raise r.error("classification", "is 'correct', the name PRMBench gives the original solutions "
                                                    "(made from the redundency rows); a row names its error type")
                steps = r.strings("modified_process")
                errors = r.integers("error_steps")
                wanted = [(f"{kind}_{idx}", r.string("modified_question"), steps, errors, kind)]
                if kind == "redundency":  # the original solution first, as PRMBench's loader lists it
                    wanted.insert(0, (f"{CORRECT}_{idx}", r.string("original_question"),
                                      r.strings("original_process"), [], CORRECT))
                made = [self._solution(r, *w) for w in wanted if w[0] not in seen]
            for group in made:
                seen.add(group.id)
                yield group

    @staticmethod
    def _solution(r: RowReader, gid: str, question: str, steps: list[str], errors: list[int],
                  kind: str) -> StepGroup:
        """One solution: step k (1-based) is wrong iff k is in ``errors`` (a number beyond the
        steps labels nothing, as PRMBench's evaluation never reaches it)."""
        wrong = set(errors)
        try:
            return StepGroup(id=gid, prompt=question, responses=tuple(steps),
                             utilities=tuple(0 if k in wrong else 1 for k in range(1, len(steps) + 1)),
                             subset=kind, meta=canonical_json({"idx": gid[len(kind) + 1:], "classification": kind}))
        except ValueError as exc:
            raise r.error(None, str(exc)) from None

    def _rows(self) -> Iterator[tuple[str, int, dict]]:
        """The rows of every source in order; a hub dataset that cannot be had says how to read
        the repository's pinned files instead."""
        for source in self.sources:
            try:
                yield from iter_rows(**source)
            except DataError as exc:
                if source.get("dataset") is None or exc.line is not None:
                    raise
                raise DataError(f"{exc}, or read the GitHub repository's pinned files with --task-arg source=github "
                                f"(RMBENCH_MIRROR=PREFIX serves them to an offline machine)") from None

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """``prmbench_score``, ``prmbench_f1``, ``prmbench_negative_f1`` of one resample of
        solutions (:func:`prmbench_task_scores`)."""
        per_group = split_by_group(groups, np.asarray(rewards, dtype=np.float64))
        confusion = np.array([step_confusion(g.utilities, r, self.threshold) for g, r in zip(groups, per_group)],
                             dtype=np.float64).reshape(-1, 4)
        return prmbench_task_scores(confusion, [g.subset or "" for g in groups])

    def item_correct(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> np.ndarray:
        """NaN for every solution: PRMBench scores steps pooled over solutions and has no notion
        of a solution being right or wrong."""
        return np.full(len(groups), np.nan)


def prmbench_task_scores(confusion: np.ndarray, classes: Sequence[str]) -> TaskScores:
    """PRMBench's scores from each solution's [TP, FP, TN, FN] (``confusion``, one row per
    solution) and class (an error type or ``correct``), for resampled solution numbers.

    With w_g the times a resample draws solution g, a class's counts are sum_g w_g c_g over its
    solutions and the overall counts that sum over every solution not ``correct``; F1, negative
    F1 and PRMScore of those (:mod:`rmbench.core.prmbench`); a category's PRMScore is the mean of
    its drawn types'. Records: ``prmbench_score`` overall, per error type (PRMBench's order, any
    other after) and per category; ``prmbench_f1`` and ``prmbench_negative_f1`` overall and per
    class (``correct`` last). NaN where nothing is drawn.
    """
    c = np.asarray(confusion, dtype=np.float64).reshape(-1, 4)
    n = len(c)
    present = list(dict.fromkeys(classes))
    types = [t for t in ERROR_TYPES if t in present] + [t for t in present if t not in ERROR_TYPES and t != CORRECT]
    all_classes = types + ([CORRECT] if CORRECT in present else [])
    class_of = np.array([all_classes.index(x) for x in classes], dtype=np.int64)
    scored = np.array([x != CORRECT for x in classes], dtype=bool)
    categories = [(cat, [types.index(t) for t, _ in members if t in types]) for cat, members in CATEGORIES]
    categories = [(cat, members) for cat, members in categories if members]
    f1_only = np.array([t in F1_ONLY for t in types], dtype=bool)
    k = len(all_classes)

    def statistic(units: np.ndarray) -> np.ndarray:
        w = np.bincount(units, minlength=n).astype(np.float64)
        wc = w[:, None] * c
        counts = np.stack([np.bincount(class_of, weights=wc[:, j], minlength=k) for j in range(4)], axis=1)
        drawn = np.bincount(class_of, weights=w, minlength=k) > 0
        overall = wc[scored].sum(axis=0)
        f1, nf1 = f1_pair(np.vstack([overall[None, :], counts]))
        f1[1:][~drawn], nf1[1:][~drawn] = np.nan, np.nan
        if not (w[scored] > 0).any():
            f1[0] = nf1[0] = np.nan
        per_type = prm_score(f1[1:1 + len(types)], nf1[1:1 + len(types)], f1_only)
        with np.errstate(invalid="ignore"):
            per_cat = [np.nanmean(per_type[m]) if np.isfinite(per_type[m]).any() else np.nan for _, m in categories]
        return np.concatenate([prm_score(f1[:1], nf1[:1]), per_type, per_cat, f1, nf1])

    def n_of(mask: np.ndarray) -> int:
        return int(mask.sum())

    type_n = [n_of(class_of == i) for i in range(len(types))]
    class_n = [n_of(class_of == i) for i in range(k)]
    labels = (((PRMBENCH_SCORE, None),) + tuple((PRMBENCH_SCORE, t) for t in types)
              + tuple((PRMBENCH_SCORE, cat) for cat, _ in categories)
              + ((PRMBENCH_F1, None),) + tuple((PRMBENCH_F1, x) for x in all_classes)
              + ((PRMBENCH_NEGATIVE_F1, None),) + tuple((PRMBENCH_NEGATIVE_F1, x) for x in all_classes))
    counts = ((n_of(scored),) + tuple(type_n) + tuple(sum(type_n[i] for i in m) for _, m in categories)
              + ((n_of(scored),) + tuple(class_n)) * 2)
    return TaskScores(labels, statistic, counts)
