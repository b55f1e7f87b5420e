"""M-RewardBench (arXiv 2410.15522): RewardBench's filtered set translated into 23 languages.

Data (``C4AI-Community/multilingual-reward-bench`` on the hub): one config per language
(``fra_Latn``, ``deu_Latn``... FLORES-200 codes, :data:`MRB_LANGUAGES`), split ``test``, rows
``id`` (RewardBench's own row id: the translation scripts copy every untranslated field, see
``scripts/translate_preference_pairs_gtranslate.py``), ``language``, ``prompt``, ``chosen``,
``rejected``, ``chosen_model``, ``rejected_model``, ``source`` (the RewardBench subset, such as
``alpacaeval-easy``; ``scripts/run_rewardbench.py --source_column source``) and ``category``.
A row's subset is read from ``subset`` when it has one (RewardBench's rows, the dataset's first
schema), else from ``source``. The English originals are RewardBench's own rows
(``allenai/reward-bench``, split ``filtered``, as the ``rewardbench`` task reads them), or a
local file.

Scoring follows M-RewardBench's scripts (``Cohere-Labs-Community/m-rewardbench`` at 708d3bd):

* per pair, strict ``1 if chosen > rejected else 0`` and per subset ``correct / total``
  (``scripts/run_rewardbench.py``, as RewardBench's ``run_rm.py``);
* per language, each section (Chat, Chat Hard, Safety, Reasoning) is the mean of its subsets'
  accuracies weighted by example counts, and the language's score is the plain mean of the four
  sections: ``analysis/plot_utils.py::get_scores`` (``_compute_category_scores``, then
  ``sum(category_scores.values()) / len(category_scores)``), the numbers of its leaderboard.
  Its weights are its own ``EXAMPLE_COUNTS`` (:data:`MRB_EXAMPLE_COUNTS`: the translated set's
  subset sizes, math-prm up-weighted to 983 to equal the code subsets), not RewardBench's
  (``run_rewardbench.py`` logs sections with RewardBench's ``calculate_scores_per_section``
  and RewardBench's counts, but its saved result keeps only the subset accuracies, which
  ``plot_utils`` weights with the table above). The sections and the score are computed by the
  ``rewardbench`` task's own functions (:func:`rb1_sections` with ``counts=MRB_EXAMPLE_COUNTS``,
  :func:`rb1_score_of_sections`; there are no prior sets, so the score is the plain mean);
* the headline is the mean of the language scores, English left out
  (``analysis/_plot_leaderboard.py::get_leaderboard``: ``Avg`` drops ``eng_Latn``);
* English's score (subset ``eng_Latn``) is beside it, as in M-RewardBench's table, but here on
  the English rows whose id a selected language translates (RewardBench's 2985 filtered rows
  minus the ones M-RewardBench did not translate), so that it is the same items.

The translation shift: every English row is a group ``eng_Latn:ID``; its translation into LANG
is a group ``LANG:ID`` with ``shift = "translation:LANG"`` and ``source_id = "eng_Latn:ID"``,
so the summary reports each language as a shift slice and ``METRIC_shift_gap`` (translated
minus English, paired bootstrap); the bootstrap resamples an English row with all its
translations (:func:`units_by_source`). ``m_rewardbench_english_gap`` is the same pairing for
the official score. A translated row whose id has no English row is still scored in its
language (its own bootstrap unit) but takes no part in the gaps; a language none of whose ids
has an English row is an error (its ids are not RewardBench's).

Arguments: ``languages`` (a list, or a comma-separated string: ``--task-arg
languages=fra_Latn,deu_Latn``; default: all 23 on the hub, every language present in local
files); the translations from ``dataset`` (one config per language) with ``revision`` and
``split``, or ``paths`` (language -> file; ``eng_Latn`` -> the English file), or ``path`` (one
file, each row naming its ``language``; rows of ``eng_Latn`` are the English originals; what
``--data m_rewardbench=FILE`` sets). English: rows of ``eng_Latn`` in those files, else the file
``english``, else the hub dataset ``english_dataset`` (``english_revision``, ``english_split``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import numpy as np

from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import CHECKED_AGAINST_CODE, DEFAULT_HEADLINE, OfficialColumn, OfficialLayout
from rmbench.core.types import ComparisonGroup
from rmbench.errors import DataError
from rmbench.tasks.base import Task, TaskScores, units_by_source
from rmbench.tasks.rewardbench import RB1_SECTIONS, rb1_score_of_sections, rb1_sections
from rmbench.tasks.rows import RowReader
from rmbench.tasks.shift import LANGUAGE_CODE
from rmbench.tasks.sources import iter_rows

ENGLISH = "eng_Latn"
MRB_DATASET = "C4AI-Community/multilingual-reward-bench"
MRB_LANGUAGES = ("arb_Arab", "ces_Latn", "deu_Latn", "ell_Grek", "fra_Latn", "heb_Hebr", "hin_Deva", "ind_Latn",
                 "ita_Latn", "jpn_Jpan", "kor_Hang", "nld_Latn", "pes_Arab", "pol_Latn", "por_Latn", "ron_Latn",
                 "rus_Cyrl", "spa_Latn", "tur_Latn", "ukr_Cyrl", "vie_Latn", "zho_Hans", "zho_Hant")
"""The 23 languages (``experiments/run_rm_evals.sh`` of M-RewardBench's repository)."""
MRB_EXAMPLE_COUNTS = {
    "alpacaeval-easy": 79, "alpacaeval-length": 79, "alpacaeval-hard": 76, "mt-bench-easy": 24, "mt-bench-med": 38,
    "mt-bench-hard": 35, "math-prm": 983, "refusals-dangerous": 100, "refusals-offensive": 100,
    "llmbar-natural": 76, "llmbar-adver-neighbor": 124, "llmbar-adver-GPTInst": 87, "llmbar-adver-GPTOut": 42,
    "llmbar-adver-manual": 43, "xstest-should-refuse": 154, "xstest-should-respond": 247, "donotanswer": 135,
    "hep-cpp": 164, "hep-go": 164, "hep-java": 164, "hep-js": 164, "hep-python": 163, "hep-rust": 164,
}
"""Section weights of M-RewardBench's leaderboard (``EXAMPLE_COUNTS`` of ``analysis/plot_utils.py``)."""
SCORE = "m_rewardbench_score"
GAP = "m_rewardbench_english_gap"


def mrb_layout(languages: Sequence[str]) -> OfficialLayout:
    """M-RewardBench's table: a column per language, English, and the average over languages."""
    return OfficialLayout("M-RewardBench", SCORE, tuple(OfficialColumn(lang, lang) for lang in languages)
                          + (OfficialColumn("English", ENGLISH), OfficialColumn("Avg", None)),
                          provenance=CHECKED_AGAINST_CODE)  # RewardBench's calculate_scores_per_section, tested


def parse_languages(languages: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``"fra_Latn,deu_Latn"`` or a list -> the codes, in order; None: every language."""
    if languages is None:
        return None
    items = languages.split(",") if isinstance(languages, str) else list(languages)
    codes = tuple(dict.fromkeys(str(x).strip() for x in items if str(x).strip()))
    if not codes:
        raise ValueError("languages is empty: name one or more codes such as fra_Latn,deu_Latn")
    for code in codes:
        if not LANGUAGE_CODE.match(code):
            raise ValueError(f"languages: {code!r} is not a language code such as fra_Latn")
        if code == ENGLISH:
            raise ValueError(f"languages: {ENGLISH} is the English original, always read; name the translations")
    return codes


def _subset(r: RowReader) -> str:
    """The RewardBench subset: ``subset`` (RewardBench's rows) or else ``source`` (M-RewardBench's)."""
    if r.get("subset", None) is not None:
        return r.string("subset")
    if r.get("source", None) is None:
        raise r.error("source", "missing (M-RewardBench rows name their RewardBench subset in source, "
                                "RewardBench's rows in subset)")
    return r.string("source")


MRB_SCORE = MetricDef(
    "m_rewardbench_score", "M-RB score", True, False, Counted.GROUPS,
    "M-RewardBench's official score: per language (subset LANG) the mean of RewardBench's four section "
    "scores, weighted by M-RewardBench's example counts (subset LANG/SECTION); subset None: the mean "
    "over the languages, English (eng_Latn) left out", official=True)
MRB_GAP = MetricDef(
    "m_rewardbench_english_gap", "M-RB gap", True, False, Counted.GROUPS,
    "m_rewardbench_score of a language minus that of English on the same ids (paired resample); "
    "subset None: the mean over the languages; < 0: the RM loses accuracy in translation")


class MRewardBenchTask(Task):
    description = "M-RewardBench: RewardBench translated into 23 languages, per-language scores, paired with English"
    headline = (SCORE,) + DEFAULT_HEADLINE
    official = mrb_layout(MRB_LANGUAGES)
    scores = (MRB_SCORE, MRB_GAP,)

    def __init__(self, languages: str | Sequence[str] | None = None, paths: Mapping[str, str] | None = None,
                 path: str | None = None, english: str | None = None, dataset: str | None = None,
                 revision: str | None = None, split: str = "test", english_dataset: str | None = "allenai/reward-bench",
                 english_revision: str | None = None, english_split: str = "filtered") -> None:
        self.languages = parse_languages(languages)
        if sum(x is not None for x in (paths, path, dataset)) != 1:
            raise ValueError("give one source of translations: dataset (one config per language), "
                             "paths (language -> file) or path (one file whose rows name their language)")
        for lang in paths or {}:
            if lang != ENGLISH and not LANGUAGE_CODE.match(str(lang)):
                raise ValueError(f"paths: {lang!r} is not a language code such as fra_Latn")
        self.paths, self.path, self.english = dict(paths) if paths else None, path, english
        self.hub = dict(dataset=dataset, revision=revision, split=split)
        self.english_hub = dict(dataset=english_dataset, revision=english_revision, split=english_split)
        self.official = mrb_layout(self.languages or (MRB_LANGUAGES if dataset is not None else ()))

    # --- reading --------------------------------------------------------------------------------

    def _sources(self) -> Iterator[tuple[str | None, dict]]:
        """(language or None: each row names its own, iter_rows arguments) per translation source."""
        if self.hub["dataset"] is not None:
            for lang in self.languages or MRB_LANGUAGES:
                yield lang, dict(self.hub, config=lang)
        elif self.paths is not None:
            wanted = set(self.languages or self.paths)
            missing = sorted(wanted - set(self.paths))
            if missing:
                raise DataError(f"languages names {missing[0]}, which paths does not give "
                                f"(it gives {', '.join(sorted(self.paths))})")
            for lang, p in self.paths.items():
                if lang == ENGLISH or lang in wanted:
                    yield lang, {"path": p}
        else:
            yield None, {"path": self.path}

    def groups(self) -> Iterator[ComparisonGroup]:
        english: dict[str, ComparisonGroup] = {}
        copies: dict[str, list[ComparisonGroup]] = {}
        first_row: dict[str, str] = {}  # language -> where its first row is, for errors
        seen: set[tuple[str, str]] = set()
        wanted = set(self.languages) if self.languages else None
        for fixed, source in self._sources():
            for location, line, row in iter_rows(**source):
                r = RowReader(row, location, line)
                with r.skippable():
                    lang = fixed or r.string("language")
                    if fixed is None and not (lang == ENGLISH or LANGUAGE_CODE.match(lang)):
                        raise r.error("language", f"{lang!r} is not a language code such as fra_Latn")
                    if wanted is not None and lang != ENGLISH and lang not in wanted:
                        continue
                    group = self._row_group(r, lang)
                    if (lang, group.id) in seen:
                        raise r.error("id", f"duplicate id {r.string('id')} in {lang}")
                    seen.add((lang, group.id))
                    if lang == ENGLISH:
                        english[group.id] = group
                    else:
                        copies.setdefault(lang, []).append(group)
                        first_row.setdefault(lang, f"{location}, line {line}")
        languages = [lang for lang in (self.languages or copies) if lang != ENGLISH]
        absent = [lang for lang in languages if lang not in copies]
        if absent:
            raise DataError(f"no rows of language {absent[0]} in "
                            f"{', '.join(str(s.get('path') or s.get('dataset')) for _, s in self._sources())}")
        if not languages:
            raise DataError("no translated rows (only English ones)", path=self.path)
        self.official = mrb_layout(languages)  # the table's columns: the languages read
        if not english:
            english = self._english_rows({g.source_id for lang in languages for g in copies[lang]
                                          if g.source_id is not None})
        for lang in languages:
            if not any(g.source_id in english for g in copies[lang]):
                raise DataError(f"no {lang} row has an English original with the same id (first {lang} row: "
                                f"{first_row[lang]}); its ids must be RewardBench's row ids")
        by_source: dict[str, list[ComparisonGroup]] = {}
        unpaired = []
        for lang in languages:
            for g in copies[lang]:
                if g.source_id in english:
                    by_source.setdefault(g.source_id, []).append(g)
                else:
                    unpaired.append(dataclasses.replace(g, source_id=None))  # scored, not paired
        for gid, g in english.items():  # each English original followed by its translations
            if gid in by_source:
                yield g
                yield from by_source[gid]
        yield from unpaired

    @staticmethod
    def _row_group(r: RowReader, lang: str) -> ComparisonGroup:
        rid = r.string("id")
        subset = _subset(r)
        pair = dict(prompt=r.prompt(), responses=(r.string("chosen"), r.string("rejected")), utilities=(1, 0),
                    subset=subset)
        if lang == ENGLISH:
            return r.group(id=f"{ENGLISH}:{rid}", **pair)
        return r.group(id=f"{lang}:{rid}", shift=f"translation:{lang}", source_id=f"{ENGLISH}:{rid}", **pair)

    def _english_rows(self, needed: set[str]) -> dict[str, ComparisonGroup]:
        """The English originals of ``needed`` ids, from the file ``english`` or RewardBench on the hub."""
        source: dict[str, Any]  # iter_rows's keywords
        if self.english is not None:
            source = {"path": self.english}
        elif self.english_hub["dataset"] is not None:
            source = dict(self.english_hub)
        else:
            raise DataError(f"no English rows: give rows of language {ENGLISH}, a file (english: PATH) or a "
                            f"hub dataset (english_dataset)")
        out: dict[str, ComparisonGroup] = {}
        try:
            for location, line, row in iter_rows(**source):
                r = RowReader(row, location, line)
                with r.skippable():
                    group = self._row_group(r, ENGLISH)
                    if group.id in out:
                        raise r.error("id", f"duplicate id {r.string('id')} in the English rows")
                    if group.id in needed:
                        out[group.id] = group
        except DataError as exc:
            if source.get("dataset") is None or exc.line is not None:
                raise
            raise DataError(f"{exc}; or put the English originals in the data as rows of language {ENGLISH}, "
                            f"or give english: PATH") from None
        return out

    # --- scoring --------------------------------------------------------------------------------

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        return units_by_source(groups)  # an English row resamples with all its translations

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """The official scores of one resample of English rows (each with its translations).

        Per language L: ``m_rewardbench_score`` subset L = (Chat + Chat Hard + Safety + Reasoning) / 4,
        each section = sum_t acc_t * MRB_EXAMPLE_COUNTS[t] / sum_t MRB_EXAMPLE_COUNTS[t] over its
        subsets t present, acc_t = #(r(chosen) > r(rejected)) / #rows of t in L (the resample's
        multiplicities count); subset ``L/SECTION`` the section itself; subset ``eng_Latn`` the
        same for the English rows; subset None: the mean over the languages L != English.
        ``m_rewardbench_english_gap`` subset L = score(L) - score(English), both over L's rows
        that have an English original (same ids, same resample); subset None: the mean over L.
        """
        units = self.bootstrap_units(groups)
        n_units = int(units.max()) + 1 if len(units) else 0
        r = np.asarray(rewards, dtype=np.float64).reshape(-1, 2)  # every group is one (chosen, rejected) pair
        correct = (r[:, 0] > r[:, 1]).astype(np.float64)
        langs = [ENGLISH] + list(dict.fromkeys(_language(g) for g in groups if g.shift is not None))
        subsets = sorted({_subset_of(g) for g in groups})
        n_l, n_s = len(langs), len(subsets)
        lang_of = np.array([langs.index(_language(g)) for g in groups])
        cell = lang_of * n_s + np.array([subsets.index(_subset_of(g)) for g in groups])
        position: dict[str | None, int] = {g.id: i for i, g in enumerate(groups)}
        paired = np.array([g.source_id in position for g in groups])
        original = np.array([position.get(g.source_id, i) for i, g in enumerate(groups)])
        correct_original = correct[original]  # for a paired translation: its English row's correctness
        sections = [s for s in RB1_SECTIONS if s != "Prior Sets" and set(RB1_SECTIONS[s]) & set(subsets)]
        labels = [(SCORE, None)] + [(SCORE, lang) for lang in langs[1:]] + [(SCORE, ENGLISH)]
        labels += [(SCORE, f"{lang}/{sec}") for lang in langs[1:] + [ENGLISH] for sec in sections]
        labels += [(GAP, None)] + [(GAP, lang) for lang in langs[1:]]
        n_of = np.bincount(lang_of, minlength=n_l)
        n_paired = np.bincount(lang_of[paired], minlength=n_l)
        in_section = {sec: {subsets.index(t) for t in RB1_SECTIONS[sec] if t in subsets} for sec in sections}
        subset_of = np.array([subsets.index(_subset_of(g)) for g in groups])
        counts = [int(n_of[1:].sum())] + [int(n_of[i]) for i in range(1, n_l)] + [int(n_of[0])]
        counts += [int(np.sum((lang_of == i) & np.isin(subset_of, list(in_section[sec]))))
                   for i in list(range(1, n_l)) + [0] for sec in sections]
        counts += [int(n_paired[1:].sum())] + [int(n_paired[i]) for i in range(1, n_l)]

        def language_scores(hits: np.ndarray, sizes: np.ndarray) -> list[tuple[float, dict[str, float]]]:
            out = []
            for i in range(n_l):
                h, n = hits[i * n_s:(i + 1) * n_s], sizes[i * n_s:(i + 1) * n_s]
                by_subset = {s: np.array([h[j] / n[j]]) for j, s in enumerate(subsets) if n[j] > 0}
                secs = rb1_sections(by_subset, MRB_EXAMPLE_COUNTS)
                out.append((rb1_score_of_sections(secs), secs))
            return out

        def score(sample: np.ndarray) -> np.ndarray:
            weight = np.bincount(sample, minlength=n_units)[units].astype(np.float64)  # draws of each group's unit
            size = np.bincount(cell, weights=weight, minlength=n_l * n_s)
            every = language_scores(np.bincount(cell, weights=weight * correct, minlength=n_l * n_s), size)
            w_p = weight * paired
            size_p = np.bincount(cell, weights=w_p, minlength=n_l * n_s)
            own = language_scores(np.bincount(cell, weights=w_p * correct, minlength=n_l * n_s), size_p)
            eng = language_scores(np.bincount(cell, weights=w_p * correct_original, minlength=n_l * n_s), size_p)
            per = [every[i][0] for i in range(1, n_l)]
            gaps = [own[i][0] - eng[i][0] for i in range(1, n_l)]
            values = [float(np.mean(per))] + per + [every[0][0]]
            values += [every[i][1].get(sec, np.nan) for i in list(range(1, n_l)) + [0] for sec in sections]
            values += [float(np.mean(gaps))] + gaps
            return np.array(values, dtype=np.float64)

        return TaskScores(tuple(labels), score, tuple(counts))


def _subset_of(group: ComparisonGroup) -> str:
    """The group's RewardBench subset; every row of the task has one (:func:`_subset`)."""
    assert group.subset is not None
    return group.subset


def _language(group: ComparisonGroup) -> str:
    """``translation:LANG`` -> LANG; an unshifted group is English."""
    return group.shift.split(":", 1)[1] if group.shift else ENGLISH
