"""RM-Bench (Liu et al., ICLR 2025; ``THU-KEG/RM-Bench``) with its official accuracy.

Data, as published: the hub dataset ``THU-KEG/RM-Bench`` (one file, ``total_dataset.json``,
with a ``domain`` field per row: ``chat``, ``math``, ``code``, ``safety-refuse``,
``safety-response``) or one domain's file of the GitHub repository ``THU-KEG/RM-Bench``
(``data/chat_filtered.json`` ...; no ``domain`` field). Both are one JSON array; JSON Lines with
the same rows read too. A row: ``id``, ``prompt``, ``chosen`` and ``rejected``, each a list of
three answers in the styles concise, detailed plain text and detailed markdown (in that order,
the order of RM-Bench's README and ``compute_accuracy``), and ``domain``. A row's domain is its
``domain`` field, else the task's ``domain`` argument, else the file's name
(``safety-refuse_filtered.json``); it is mapped to ``chat``, ``math``, ``code`` or ``safety`` by
the prefix rule of RM-Bench's ``split_dataset_by_domain`` (``domain.startswith(d)``), so both
safety files form one domain.

Each row is one group of six answers,

    responses = (chosen concise, chosen plain, chosen markdown, rejected concise, rejected plain,
                 rejected markdown), utilities = (1, 1, 1, 0, 0, 0),
    forms = ("original", "detailed_plain", "detailed_markdown") x 2, rewrite_of = (0, 0, 0, 3, 3, 3),

with ``subset`` = the domain. The three styles of one answer have the same substance, so they
are of equal utility and each is a rewrite of the concise one (rmbench's form ``original``, the
style y^0 without length or markup): specificity pairs are an answer against its own restyling
(``rewrite_specificity``: Spec across styles, which RM-Bench itself never reports), the
discrimination pairs split into within a style (RM-Bench's diagonal) and across styles (its two
triangles), and ``preference_flip_rate`` counts the detailed pairs whose preference differs from
the concise pair's.

The official score follows ``compute_accuracy`` and ``split_dataset_by_domain`` in
``scripts/utils.py`` of the GitHub repository ``THU-KEG/RM-Bench`` (commit ``73c52d7``): per
domain, ``M[i][j]`` = the share of its rows with ``score_chosen[i] > score_rejected[j]`` (strict:
a tie is a loss), rows = chosen styles, columns = rejected styles;

    hard   = mean of M[i][j] over i < j (``np.triu(M, 1)``: a plainer chosen answer against a
             fancier rejected one),
    normal = mean of the diagonal,
    easy   = mean of M[i][j] over i > j (``np.tril(M, -1)``);

a domain's score is (hard + normal + easy) / 3; the overall hard, normal and easy are the means
of the domains' ones, and the total (RM-Bench's ``total_avg_acc``, the leaderboard's Avg) the mean
of the domain scores, over the domains present. RM-Bench's function needs all four domains in a
``domain``-labelled file (an absent one is an empty list it cannot index) and reports no total for
a one-domain file; here both are the same means over the domains the data has.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE, RM_BENCH_DOMAINS, RM_BENCH_LAYOUT, RM_BENCH_LEVELS
from rmbench.core.types import ORIGINAL, ComparisonGroup
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import RM_BENCH
from rmbench.tasks.sources import iter_rows

RM_BENCH_DATASET = "THU-KEG/RM-Bench"
STYLES = ("concise", "detailed_plain", "detailed_markdown")
"""RM-Bench's three styles, in the order of its ``chosen``/``rejected`` lists."""
FORMS = (ORIGINAL, "detailed_plain", "detailed_markdown")
"""Each style's form in a group: the concise answer is the one the others restyle."""


def rm_bench_domain(value: str) -> str | None:
    """The RM-Bench domain of a ``domain`` value or file name: the first of chat, math, code and
    safety that it starts with (RM-Bench's ``split_dataset_by_domain``), else None."""
    return next((d for d in RM_BENCH_DOMAINS if value.startswith(d)), None)


def style_wins(chosen: np.ndarray, rejected: np.ndarray) -> np.ndarray:
    """W[..., i, j] = 1.0 if chosen[..., i] > rejected[..., j] else 0.0 (strict: a tie is 0)."""
    chosen, rejected = np.asarray(chosen, dtype=np.float64), np.asarray(rejected, dtype=np.float64)
    return (chosen[..., :, None] > rejected[..., None, :]).astype(np.float64)


def hard_normal_easy(matrix: np.ndarray) -> tuple[float, float, float]:
    """(hard, normal, easy) of a 3x3 accuracy matrix M: hard = mean of M[i][j] over i < j (the
    upper triangle), normal = mean of the diagonal, easy = mean over i > j (the lower triangle)."""
    m = np.asarray(matrix, dtype=np.float64)
    upper = np.triu_indices(m.shape[0], 1)
    lower = np.tril_indices(m.shape[0], -1)
    return float(m[upper].mean()), float(np.diag(m).mean()), float(m[lower].mean())


def rm_bench_scores(wins: np.ndarray, domain_of: np.ndarray, n_domains: int) -> np.ndarray:
    """[total, hard, normal, easy, score of domain 0, ..., score of domain n_domains - 1].

    ``wins``: (rows, 3, 3) strict win matrices (:func:`style_wins`), ``domain_of``: each row's
    domain number. Per domain, M = the mean of its rows' win matrices and its score
    (hard + normal + easy) / 3 (:func:`hard_normal_easy`); hard, normal and easy overall are the
    means of the domains' ones and the total the mean of the domain scores, over the domains with
    rows (a domain without rows is NaN).
    """
    wins = np.asarray(wins, dtype=np.float64).reshape(len(domain_of), -1)
    k = wins.shape[1]
    size = int(round(k ** 0.5))
    cells = (np.asarray(domain_of, dtype=np.int64)[:, None] * k + np.arange(k)).ravel()
    sums = np.bincount(cells, weights=wins.ravel(), minlength=n_domains * k).reshape(n_domains, k)
    rows = np.bincount(domain_of, minlength=n_domains)
    levels = np.full((n_domains, 3), np.nan)
    for d in np.flatnonzero(rows):
        levels[d] = hard_normal_easy((sums[d] / rows[d]).reshape(size, size))
    present = rows > 0
    per_domain = np.where(present, levels.mean(axis=1), np.nan)
    overall = levels[present].mean(axis=0) if present.any() else np.full(3, np.nan)
    total = per_domain[present].mean() if present.any() else np.nan
    return np.concatenate([[total], overall, per_domain])


def _file_domain(label: str, path: str, several: bool) -> str | None:
    """The domain of a ``paths`` file's rows that name none: the label if it is an RM-Bench domain;
    of a label with several files, the file name's first word (``safety-refuse`` of
    ``safety-refuse_filtered.json``) when it is a domain of the label's, so two files' ids stay apart."""
    domain = label if "." not in label and rm_bench_domain(label) else None
    if several and domain is not None:
        word = Path(path).name.split("_", 1)[0].split(".", 1)[0]
        if rm_bench_domain(word) == rm_bench_domain(domain):
            return word
    return domain


RM_BENCH_SCORE = MetricDef(
    "rm_bench_score", "RM-Bench", True, False, Counted.GROUPS,
    "RM-Bench's official accuracy (its scripts/utils.py compute_accuracy): per domain a 3x3 matrix "
    "M[i][j] = share of rows with r(chosen style i) > r(rejected style j), styles concise, detailed "
    "plain, detailed markdown; hard = mean over i < j, normal = mean of the diagonal, easy = mean over "
    "i > j; a domain's score = (hard + normal + easy) / 3; subset records: the domains, and hard / "
    "normal / easy as means over the domains present; the total = mean of the domain scores",
    official=True)


class RMBenchTask(Task):
    """RM-Bench rows (``id``, ``prompt``, ``chosen`` and ``rejected`` lists of three styles,
    ``domain``) as groups of six answers, with RM-Bench's official accuracy (module doc).

    ``path``: a local file (a JSON array or JSON Lines; ``--data rm_bench=FILE``);
    ``dataset``/``revision``/``split``/``data_files``: the hub dataset (``THU-KEG/RM-Bench``,
    ``total_dataset.json``); ``domain``: the domain of rows that name none (else the file name's);
    ``paths``: several local files, each under the domain of its rows that name none (a label that
    is an RM-Bench domain, else the file name's): ``--data rm_bench=chat=chat.json --data rm_bench=code=code.json``;
    a domain may be several files, in order (the upstream safety domain:
    ``--data rm_bench=safety=safety-refuse_filtered.json --data rm_bench=safety=safety-response_filtered.json``),
    each row then named by its file's own domain
    (``safety-refuse:7``) when the file's name starts with one of the label's, so the files' ids never meet.
    """

    description = ("RM-Bench: chosen vs rejected in three styles each; official hard/normal/easy accuracy, "
                   "Spec across styles")
    headline = ("rm_bench_score",) + DEFAULT_HEADLINE + (
        "rewrite_specificity", "within_form_discrimination", "cross_form_discrimination", "cross_form_gap",
        "preference_flip_rate")
    official = RM_BENCH_LAYOUT
    scores = (RM_BENCH_SCORE,)
    row_schemas = (RM_BENCH,)
    version = 1

    def __init__(self, path: str | None = None, dataset: str | None = None, revision: str | None = None,
                 split: str = "train", data_files: str | None = None, domain: str | None = None,
                 paths: Mapping[str, str | Sequence[str]] | None = None) -> None:
        self.sources: list[tuple[dict[str, Any], str | None, str | None]]  # (iter_rows's keywords, domain, file's)
        if paths:  # several local files (--data rm_bench=chat=FILE ...): label -> file, or files in order
            self.sources = [(dict(path=p), _file_domain(label, p, several), rm_bench_domain(Path(p).name))
                            for label, given in paths.items()
                            for several in [not isinstance(given, str) and len(given) > 1]
                            for p in ([given] if isinstance(given, str) else given)]
        else:
            self.sources = [(dict(path=path, dataset=dataset, revision=revision, split=split, data_files=data_files),
                             domain, rm_bench_domain(Path(path).name) if path is not None else None)]

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: set[str] = set()
        for source, domain, file_domain in self.sources:
            yield from self._groups(source, domain, file_domain, seen)

    def _groups(self, source: dict, default_domain: str | None, file_domain: str | None,
                seen: set[str]) -> Iterator[ComparisonGroup]:
        for location, line, row in iter_rows(**source):
            r = RowReader(row, location, line, RM_BENCH)
            with r.skippable():
                raw = r.string("domain", None) or default_domain
                domain = rm_bench_domain(raw) if raw is not None else file_domain
                if domain is None:
                    raise r.error("domain", f"is {raw!r}, which is none of RM-Bench's domains (chat, math, code, "
                                  f"safety-*)" if raw is not None else
                                  "missing: a row of RM-Bench names its domain (chat, math, code, safety-refuse, "
                                  "safety-response), or the file's name starts with it (chat_filtered.json), or "
                                  "the task's entry gives it (args: domain: chat)")
                answers = {}
                for field in ("chosen", "rejected"):
                    answers[field] = r.strings(field)
                    if len(answers[field]) != len(STYLES):
                        raise r.error(field, f"has {len(answers[field])} answers; an RM-Bench row has 3, one per "
                                      f"style ({', '.join(STYLES)})")
                gid = f"{raw or domain}:{r.string('id')}"
                if gid in seen:
                    raise r.error("id", f"duplicate row id {r.string('id')!r} in domain {raw or domain!r}")
                group = r.group(id=gid, prompt=r.prompt(), responses=answers["chosen"] + answers["rejected"],
                                utilities=(1, 1, 1, 0, 0, 0), subset=domain, forms=FORMS * 2,
                                rewrite_of=(0, 0, 0, 3, 3, 3), meta={"domain": raw or domain})
                seen.add(gid)
                yield group

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """``rm_bench_score``: the total (subset None), ``hard``/``normal``/``easy`` and each domain
        present, from one resample of rows (:func:`rm_bench_scores`)."""
        r = np.asarray(rewards, dtype=np.float64).reshape(-1, 6)  # every group: 3 chosen, then 3 rejected
        wins = style_wins(r[:, :3], r[:, 3:])
        domains: list[str | None] = [d for d in RM_BENCH_DOMAINS if any(g.subset == d for g in groups)]
        domain_of = np.array([domains.index(g.subset) for g in groups], dtype=np.int64)
        metric = RM_BENCH_LAYOUT.metric
        labels = ((metric, None),) + tuple((metric, level) for level in RM_BENCH_LEVELS) + tuple(
            (metric, d) for d in domains)
        counts = (len(groups),) * 4 + tuple(int((domain_of == i).sum()) for i in range(len(domains)))

        def score(units: np.ndarray) -> np.ndarray:
            return rm_bench_scores(wins[units], domain_of[units], len(domains))

        return TaskScores(labels, score, counts)
