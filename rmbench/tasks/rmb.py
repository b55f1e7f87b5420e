"""RMB (Zhou et al., "RMB: Comprehensively Benchmarking Reward Models in LLM Alignment", ICLR 2025,
arXiv 2410.09893; ``Zhou-Zoey/RMB-Reward-Model-Benchmark``) with its official accuracies.

Data, as published: the JSON files of the GitHub repository's ``RMB_dataset/`` at commit
``2be3180`` (:data:`RMB_COMMIT`), one file per scenario: ``Pairwise_set/<goal>/...json`` (49
files) and ``BoN_set/<goal>/...json`` (49), the goals (RMB's top-level categories) being
``Helpfulness`` (37 scenarios in 12 groups: ``Helpfulness/Code/Documentation``) and
``Harmlessness`` (``S1`` ... ``S11`` and ``multi``). Each file is one JSON array of items:

* pairwise: ``pair_uid``, ``conversation_input`` (the conversation so far: a list of
  ``{role, content, language}`` messages, ending with the user's turn), ``chosen`` and
  ``reject`` (each ``{llm_name, answer}``), ``category_path`` (``Pairwise_set/Helpfulness/Code/
  Documentation``, the scenario);
* Best-of-N: ``bon_uid``, ``conversation_input``, ``bon_best`` (``{llm_name, answer}``),
  ``loser_list`` (2 to 6 such objects), ``category_path`` (``BoN_set/...``).

Where it comes from: each file by URL and checksum at that commit, written once, in the
package's manifest ``rmbench/tasks/data/rmb_pins.json`` (the entry's ``pins: rmb_pins.json``,
the default; read by :func:`rmbench.tasks.downloads.load_pins` into :data:`RMB_FILES` and
:data:`RMB_GIT_BLOBS`; ``paths`` and ``git_blobs``, scenario -> source, replace them),
downloaded once into the download cache, verified, and read; ``RMBENCH_MIRROR`` serves them to an offline machine
(:mod:`rmbench.tasks.downloads`). 95 files are pinned by sha256. Three
(``Pairwise_set/Harmlessness/S11``, ``.../Brainstorming/Idea Development``,
``.../Generation/Creative Writing``, each over 4 MiB) could not be had when this task was
written, so they are pinned by their git blob id in the commit's tree (:data:`RMB_GIT_BLOBS`, ``URL#git-blob-
sha1=HEX``: sha1 of ``"blob <size>\\0" + bytes``, what the pinned commit itself records):
downloaded by the same mechanism (the mirror too), checked against that id before they are cached
(``downloads/git-blob-sha1-HEX/``). Or ``path`` (``--data rmb=PATH``): a local folder that holds
RMB's tree (the repository, its ``RMB_dataset/``, or any part of it: every ``*.json`` under it),
one of its JSON files, or ``URL#sha256=HEX``.

Arguments: ``set`` (``both``, the default: both sets, so the total is the paper's Overall;
``pairwise`` or ``bon``: one set) and ``category`` (``Helpfulness`` or ``Harmlessness``: one
goal; default both). A folder's files that its path puts in another set or goal
(``Pairwise_set``, ``BoN_set``, ``Helpfulness``, ``Harmlessness`` folders) are not read; an item
is kept by its own ``category_path``.

Groups. A pairwise item is the group [chosen, reject] with utilities (1, 0); a BoN item is
[bon_best, *loser_list] with utilities (1, 0, ..., 0) and ``equivalence_levels=()``: RMB ranks
the best answer above each loser and never declares two losers equal, so they form no
specificity pairs (as RewardBench 2's best-of-n rows). The prompt is the whole
``conversation_input`` as chat messages (every turn reaches the chat template; never flattened).
Id ``pairwise:<pair_uid>`` / ``bon:<bon_uid>`` (the two sets number their items apart), subset =
``category_path`` (the scenario), meta: the uid, ``category`` (the goal), ``set`` and the answers'
``llm_names``. An item whose answers are the same text (11 pairs and 28 BoN items of the
published data) is kept: no reward model gets it right, as in RMB.

The official score ``rmb_score`` (:mod:`rmbench.core.rmb`, which says what of RMB's code it
follows): an item is correct iff r(best) is strictly above every other answer's reward
(pairwise: r(chosen) > r(reject), ``my_run_rm.py``'s ``1 if chosen > rejected else 0``; BoN: above
every loser; a reward tie is not correct); accuracy per scenario over its items, per section
(set and goal, the paper's four columns) over the items of all its scenarios, and the total is
the mean of the sections present. rmbench's own ``pairwise_accuracy`` beside it counts a tie 1/2
and a BoN item once per loser.
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.metric_registry import DEFAULT_HEADLINE
from rmbench.core.rmb import (
    RMB_GOALS,
    RMB_LAYOUT,
    RMB_METRIC,
    RMB_SECTIONS,
    RMB_SETS,
    best_beats_all,
    rmb_accuracies,
    section_of_path,
)
from rmbench.core.types import ComparisonGroup
from rmbench.errors import DataError
from rmbench.tasks.base import Task, TaskScores
from rmbench.tasks.downloads import is_web_source, load_pins, pin_manifest
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import RMB_BON, RMB_PAIRWISE
from rmbench.tasks.sources import iter_rows

RMB_REPOSITORY = "Zhou-Zoey/RMB-Reward-Model-Benchmark"
RMB_COMMIT = "2be3180857f2190b7ffa929d43190835627f1f4d"
_RAW = f"https://raw.githubusercontent.com/{RMB_REPOSITORY}/{RMB_COMMIT}/RMB_dataset/"

PINS = "rmb_pins.json"
"""The manifest of RMB's 98 files at RMB_COMMIT: scenario -> checksum (package data in
``rmbench/tasks/data/``, read by :func:`rmbench.tasks.downloads.load_pins`): the entry's ``pins``
and the kind's default."""


def rmb_url(scenario: str) -> str:
    """The raw URL of a scenario's file at RMB_COMMIT (spaces and the like percent-encoded)."""
    return f"{_RAW}{urllib.parse.quote(scenario)}.json"


def _split(pinned: Mapping[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    """A manifest's sources: (those pinned by sha256, those by git blob id)."""
    return ({k: v for k, v in pinned.items() if "#git-blob-sha1=" not in v},
            {k: v for k, v in pinned.items() if "#git-blob-sha1=" in v})


RMB_FILES, RMB_GIT_BLOBS = _split(load_pins(pin_manifest(PINS)))
"""RMB_FILES: scenario -> ``URL#sha256=HEX`` (95 of the manifest's 98 files); RMB_GIT_BLOBS:
scenario -> ``URL#git-blob-sha1=HEX`` for the three files over 4 MiB whose bytes were not at
hand, pinned by their git blob id in RMB_COMMIT's tree (module doc)."""
SETS = ("both", "pairwise", "bon")
_SET_FIELDS = {"pairwise": ("pair_uid", "chosen", "reject"), "bon": ("bon_uid", "bon_best", "loser_list")}


# --- the task ---------------------------------------------------------------------------------

def _choice(value: Any, choices: Sequence[str], what: str) -> str:
    if isinstance(value, str):
        for c in choices:
            if value.strip().lower() == c.lower():
                return c
    raise ValueError(f"{what} {value!r}: use {', '.join(choices[:-1])} or {choices[-1]}")


def _section_of_key(key: str) -> str:
    section = section_of_path(str(key))
    if section not in RMB_SECTIONS or len(str(key).split("/")) < 3:
        raise ValueError(f"paths key {key!r}: name each file by its scenario, SET/GOAL/..., e.g. "
                         f"Pairwise_set/Helpfulness/Code/Documentation")
    return section


RMB_SCORE = MetricDef(
    "rmb_score", "RMB", True, False, Counted.GROUPS,
    "RMB's official accuracy (its eval/scripts/my_run_rm.py; BoN and the total as RM-R1's RMB scripts): "
    "an item is correct iff r(best) > r(every other answer), strictly (pairwise: r(chosen) > r(reject); "
    "BoN: above every loser; a tie is not correct); subset records: each scenario (its category_path) "
    "over its items, each section (Pairwise_set/GOAL, BoN_set/GOAL) over its items; the total = the mean "
    "of the sections present (both sets and goals: the paper's Overall)", official=True)


class RMBTask(Task):
    """RMB's pairwise and Best-of-N items (``conversation_input``, ``chosen``/``reject`` or
    ``bon_best``/``loser_list``, ``category_path``) with RMB's official accuracies (module doc)."""

    description = ("RMB: pairwise and Best-of-N items over 49 scenarios (helpfulness, harmlessness), "
                   "conversations kept; official accuracy per scenario, per set and goal, overall")
    headline = (RMB_METRIC,) + DEFAULT_HEADLINE
    official = RMB_LAYOUT
    scores = (RMB_SCORE,)
    row_schemas = (RMB_PAIRWISE, RMB_BON)
    reads_folder = True
    version = 1

    def __init__(self, set: str = "both", category: str | None = None, path: str | None = None,  # noqa: A002
                 paths: Mapping[str, str] | None = None, git_blobs: Mapping[str, str] | None = None,
                 pins: str | None = None) -> None:
        chosen_set = _choice(set, SETS, "set")
        self.category = None if category is None else _choice(category, RMB_GOALS, "category")
        self.sets = ("pairwise", "bon") if chosen_set == "both" else (chosen_set,)
        goals = RMB_GOALS if self.category is None else (self.category,)
        self.sections = tuple(s for s in RMB_SECTIONS
                              if s.split("/")[0] in {RMB_SETS[k] for k in self.sets} and s.split("/")[1] in goals)
        if path is not None and not isinstance(path, str):
            raise ValueError(f"path must be a file, a folder or URL#sha256=HEX, got {path!r}")
        self.path = path
        by_sha256, by_blob = (RMB_FILES, RMB_GIT_BLOBS) if pins is None else _split(load_pins(pin_manifest(pins)))
        files = {**dict(by_blob if git_blobs is None else git_blobs),
                 **dict(by_sha256 if paths is None else paths)}  # a key in both: its paths entry
        for key in files:
            _section_of_key(key)
        self.files = {k: files[k] for k in sorted(files, key=lambda k: (not k.startswith("Pairwise_set/"), k))}
        """Scenario -> source, pairwise first, each set's in path order."""

    def groups(self) -> Iterator[ComparisonGroup]:
        seen: dict[str, set] = {"pairwise": set(), "bon": set()}
        elsewhere: dict[str, int] = {}
        kept = 0
        for location, line, row in self._rows():
            kind = "bon" if any(k in row for k in ("bon_best", "loser_list", "bon_uid")) else "pairwise"
            r = RowReader(row, location, line, RMB_BON if kind == "bon" else RMB_PAIRWISE)
            with r.skippable():
                uid_field, best_field, other_field = _SET_FIELDS[kind]
                category_path = r.string("category_path")
                parts = category_path.split("/")
                if len(parts) < 3 or not all(parts) or parts[0] not in RMB_SETS.values() or parts[1] not in RMB_GOALS:
                    raise r.error("category_path", f"is {category_path!r}; RMB's is SET/GOAL/SCENARIO with SET "
                                                   f"Pairwise_set or BoN_set and GOAL Helpfulness or Harmlessness")
                if parts[0] != RMB_SETS[kind]:
                    raise r.error("category_path", f"is {category_path!r}, in {parts[0]}, but the row is a "
                                                   f"{RMB_SETS[kind]} item ({', '.join(_SET_FIELDS[kind])})")
                section = section_of_path(category_path)
                if section not in self.sections:
                    elsewhere[section] = elsewhere.get(section, 0) + 1
                    continue
                uid = r.get(uid_field)
                if isinstance(uid, bool) or not isinstance(uid, (str, int)):
                    raise r.schema_error(uid_field, f"expected a string or a number, got {uid!r}"[:120])
                uid = str(uid)
                prompt = r.prompt("conversation_input")
                if not isinstance(prompt, str) and prompt[-1].role != "user":
                    raise r.error("conversation_input", f"ends with a {prompt[-1].role!r} message; an RMB "
                                                        f"conversation ends with the user's turn, which the answers "
                                                        f"reply to")
                best = _answer(r, best_field, r.get(best_field))
                if kind == "pairwise":
                    others = [_answer(r, other_field, r.get(other_field))]
                else:
                    losers = r.get(other_field)
                    if not isinstance(losers, list) or not losers:
                        raise r.schema_error(other_field, "expected a non-empty list of {llm_name, answer} objects, "
                                                          f"got {losers!r}"[:160])
                    others = [_answer(r, f"{other_field}[{i}]", x) for i, x in enumerate(losers)]
                if uid in seen[kind]:
                    raise r.error(uid_field, f"duplicate {uid_field} {uid!r}")
                group = r.group(id=f"{kind}:{uid}", prompt=prompt, responses=[best[0]] + [o[0] for o in others],
                                utilities=[1] + [0] * len(others), subset=category_path, equivalence_levels=(),
                                meta={uid_field: uid, "category": parts[1], "set": kind,
                                      "llm_names": [best[1]] + [o[1] for o in others]})
                seen[kind].add(uid)
                kept += 1
                yield group
        if not kept and elsewhere:
            where = self.path if self.path is not None else "RMB's pinned files"
            given = ", ".join(f"{n} in {s}" for s, n in sorted(elsewhere.items()))
            sets = {s.split("/")[0] for s in elsewhere}
            hint = ("--task-arg set=" + ("pairwise" if sets == {"Pairwise_set"} else "bon" if sets == {"BoN_set"}
                                         else "both")
                    + ("" if self.category is None else " or leave out category"))
            raise DataError(f"no RMB item of {', '.join(self.sections)} (the task's set and category); the data "
                            f"holds {given}: pass {hint}", path=where)

    def _rows(self) -> Iterator[tuple[str, int, dict]]:
        """The rows of ``path`` (a file, a folder of RMB's tree) or of the pinned files of the
        sections read."""
        if self.path is not None:
            for source in self._local_files(self.path):
                yield from iter_rows(path=source)
            return
        wanted = [key for key in self.files if _section_of_key(key) in self.sections]
        if not wanted:
            raise DataError(f"paths names no file of {', '.join(self.sections)}")
        for key in wanted:
            yield from iter_rows(path=self.files[key])  # pinned by sha256 or git blob id (downloads)

    def _local_files(self, path: str) -> list[str]:
        """A file or a web file as it is; a folder's ``*.json`` files (under its ``RMB_dataset/``
        when it has one), pairwise first, in path order, but for those its folders put in another
        set or goal."""
        if is_web_source(path):
            return [path]
        p = Path(path).expanduser()
        if p.is_file():
            return [str(p)]
        if not p.is_dir():
            raise DataError("no such file or folder", path=str(p))
        root = p / "RMB_dataset" if (p / "RMB_dataset").is_dir() else p
        found = sorted((f for f in root.rglob("*.json") if f.is_file()
                        and not any(part.startswith(".") for part in f.relative_to(root).parts)),
                       key=lambda f: ("BoN_set" in f.relative_to(root).parts, f.relative_to(root).as_posix()))
        if not found:
            raise DataError("holds no .json file: give RMB's RMB_dataset folder (or part of it) or one of its "
                            "JSON files", path=str(p))
        sets = {RMB_SETS[k] for k in self.sets}
        goals = {s.split("/")[1] for s in self.sections}
        keep = []
        for f in found:
            parts = set(f.relative_to(root).parts[:-1])
            if (parts & (set(RMB_SETS.values()) - sets)) or (parts & (set(RMB_GOALS) - goals)):
                continue
            keep.append(str(f))
        if not keep:
            raise DataError(f"holds no .json file of {', '.join(self.sections)} (the task's set and category)",
                            path=str(p))
        return keep

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """``rmb_score``: the total (subset None), each section present (``Pairwise_set/Helpfulness``
        ...) and each scenario (its ``category_path``), from one resample of items
        (:func:`rmbench.core.rmb.rmb_accuracies`)."""
        correct = best_beats_all(rewards, [len(g.responses) for g in groups])
        section_names = [section_of_path(str(g.subset)) for g in groups]
        sections = [s for s in RMB_SECTIONS if s in section_names]
        sections += sorted(set(section_names) - set(sections))  # none from groups(); any other after RMB's four
        scenarios = list(dict.fromkeys(str(g.subset) for g in groups))
        section_of = np.array([sections.index(s) for s in section_names], dtype=np.int64)
        index = {s: i for i, s in enumerate(scenarios)}
        scenario_of = np.array([index[str(g.subset)] for g in groups], dtype=np.int64)
        names = (((RMB_METRIC, None),) + tuple((RMB_METRIC, s) for s in sections)
                 + tuple((RMB_METRIC, s) for s in scenarios))
        counts = ((len(groups),) + tuple(int(n) for n in np.bincount(section_of, minlength=len(sections)))
                  + tuple(int(n) for n in np.bincount(scenario_of, minlength=len(scenarios))))
        n, n_sections, n_scenarios = len(groups), len(sections), len(scenarios)

        def score(units: np.ndarray) -> np.ndarray:
            weights = np.bincount(units, minlength=n).astype(np.float64)
            return rmb_accuracies(correct, section_of, scenario_of, n_sections, n_scenarios, weights=weights)

        return TaskScores(names, score, counts)


def _answer(r: RowReader, field: str, value: Any) -> tuple[str, str | None]:
    """(answer, llm_name) of an ``{llm_name, answer}`` object; errors name ``field`` or ``field.answer``."""
    if not isinstance(value, dict):
        raise r.error(field, f"expected an object {{llm_name, answer}}, got {value!r}"[:160])
    answer = value.get("answer")
    if not isinstance(answer, str):
        raise r.error(f"{field}.answer", "missing" if answer is None else f"expected a string, got {answer!r}"[:120])
    name = value.get("llm_name")
    if name is not None and not isinstance(name, str):
        raise r.error(f"{field}.llm_name", f"expected a string, got {name!r}"[:120])
    return answer, name
