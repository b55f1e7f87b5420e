"""Export runs in RewardBench 2's results layout: ``rmbench export RUNS --format rewardbench2-results``.

RewardBench 2's results dataset (``allenai/reward-bench-2-results``) holds, per model, the files
that ``scripts/run_v2.py`` of allenai/reward-bench writes through ``rewardbench.utils.save_to_hub``
(``json.dumps(d, indent=4, sort_keys=True)``, no final newline):

* ``eval-set/{model}.json``: ``results_grouped``, ``{"model", "model_type", "chat_template"}``
  and each subset present with its score (the best-of-n accuracy ``sum(results) / len(results)``;
  for ``Ties``, ``process_single_model``'s score). There is no total: the leaderboard averages
  the subsets.
* ``eval-set-scores/{model}.json``: ``scores_dict``, the columnar ``to_dict()`` of the scored
  dataset after ``reroll_and_score_dataset``: per prompt ``id``, ``subset``, ``num_correct``,
  ``text`` and ``scores`` (one per completion, the correct ones first) and ``results`` (``1/k``
  when the first completion's score is the maximum, shared by k completions, else 0; run_v2's Ties
  branch leaves these as they are, since it looks for ``"ties"`` where the data says ``"Ties"``),
  plus ``model``, ``model_type`` and ``chat_template``.

``{model}`` is the model's Hub id (``ORG/NAME``: the folder is the organisation), as ``--model``
is in run_v2; a model not from the Hub is ``local/{name}`` (``rmbench/{name}`` for a baseline).

What rmbench puts where run_v2 has values rmbench does not keep: ``text`` holds each completion's
text as the data give it (run_v2 holds the chat-templated conversation the model read; nothing
reads it back); ``model_type`` is ``Seq. Classifier`` for rmbench's sequence classifiers,
``Generative RM`` for its judges (as run_generative_v2.py names them), else ``rmbench {kind}``;
``chat_template`` is ``rmbench`` (rmbench renders conversations itself, per model kind).

Which runs: a run's ``rewardbench2`` task (every subset), else its ``ties`` task when that reads
RewardBench 2's Hub dataset, from the Hub or a local copy (its rows become ``subset: Ties``).
Per model the newest such run is written; the others, runs of other tasks and failed tasks are
left out with a line each.

Only RewardBench 2's own data make submission files (:func:`not_rewardbench2_data`): a run read
from the Hub, or from a local copy of the ``rewardbench2`` task that holds its
:data:`RB2_ROWS` rows, without ``--limit``. Any other run (a local copy of other rows, a local
``ties`` copy, a ``--limit`` sample) is refused in one line, or with ``force`` (``--force``)
written with the reason in both files (:data:`NOTE_KEY`, a key run_v2 never writes).
The scores are the run's rewards (rewards.jsonl) on the task's data, reloaded and checked against
the run's data fingerprint (``--data TASK=PATH`` where the file moved).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import PurePosixPath

import numpy as np

from rmbench.core.metric_registry import RB2_LAYOUT, TIES_LAYOUT
from rmbench.errors import ConfigError
from rmbench.results.publishing.export_formats import Export, ExportFile, ExportOptions, safe_parts
from rmbench.results.publishing.export_names import RB2_HF_DATASET, hub_dataset, model_repo
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import RunRecord, TaskResult
from rmbench.results.storage.reload import aligned_rewards, reload_task

RB2_ROWS = 1865
"""RewardBench 2's prompts (allenai/reward-bench-2, split test), every subset."""
NOTE_KEY = "rmbench_note"
"""The key of the note a forced export writes in both files (why they are not RewardBench 2's whole data)."""
SUMMARY_DIR = "eval-set"
SCORES_DIR = "eval-set-scores"
TIES = "Ties"
_SEQ_CLASSIFIERS = ("seqcls", "vllm_seqcls", "linear")
_GENERATIVE = ("judge", "generative")


@dataclass(frozen=True)
class Rb2Item:
    """One prompt of the scores file: its completions' texts and rewards, correct ones first."""

    id: str
    subset: str
    texts: tuple[str, ...]
    scores: tuple[float, ...]
    num_correct: int

    @property
    def result(self) -> float | int:
        """``reroll_and_score_dataset``'s ``results``: ``1 / #(scores == max)`` if ``scores[0]`` is the max, else 0."""
        top = max(self.scores)
        return 1 / sum(s == top for s in self.scores) if self.scores[0] == top else 0


def rb2_task(record: RunRecord) -> TaskResult | None:
    """The run's task that RewardBench 2's layout holds: its ``rewardbench2`` task, else a ``ties``
    task on RewardBench 2's Hub dataset; None if neither succeeded."""
    ok = [t for t in record.tasks if t.status == "success" and t.official is not None]
    for t in ok:
        if t.official == RB2_LAYOUT:
            return t
    for t in ok:
        if t.official == TIES_LAYOUT and hub_dataset(t) == RB2_HF_DATASET:
            return t
    return None


def model_type(kind: str) -> str:
    if kind in _SEQ_CLASSIFIERS:
        return "Seq. Classifier"
    if kind in _GENERATIVE:
        return "Generative RM"
    return f"rmbench {kind}"


def rb2_items(folder: RunFolder, task: TaskResult, options: ExportOptions) -> list[Rb2Item]:
    """The task's prompts in data order, with the run's rewards (ConfigError if one is missing)."""
    config = folder.record.config
    data = reload_task(task, config.limit, options.data, config.limit_sampling)
    rewards = aligned_rewards(folder, task.name, data.groups)
    items, at = [], 0
    for g in data.groups:
        n = len(g.responses)
        scores = tuple(float(x) for x in rewards[at:at + n])
        at += n
        correct = sum(u == 1 for u in g.utilities)
        if tuple(g.utilities) != (1,) * correct + (0,) * (n - correct):
            raise ConfigError(f"task {task.name!r}, prompt {g.id!r}: its completions are not the correct ones "
                              f"first (utilities {list(g.utilities)}), as RewardBench 2's files order them")
        if not all(math.isfinite(s) for s in scores):
            raise ConfigError(f"task {task.name!r}, prompt {g.id!r}: the run has no finite reward for every "
                              f"completion, which RewardBench 2's scores file needs")
        subset = TIES if task.official == TIES_LAYOUT else str(g.subset)
        items.append(Rb2Item(g.id, subset, tuple(g.responses), scores, correct))
    return items


def _subset_score(task: TaskResult, subset: str) -> float:
    """rmbench's score of ``subset`` (as run_v2 computes it: rmbench's tests check it against that code)."""
    layout = task.official
    assert layout is not None
    want = None if layout == TIES_LAYOUT else subset
    for m in task.metrics:
        if m.metric == layout.metric and m.subset == want and m.shift is None and math.isfinite(m.value):
            return float(m.value)
    raise ConfigError(f"task {task.name!r} has no score for subset {subset!r}")


def summary(record: RunRecord, task: TaskResult, items: Sequence[Rb2Item], model: str) -> dict:
    """``results_grouped`` of run_v2.py: the model's fields and each subset present with its score."""
    out: dict = {"model": model, "model_type": model_type(record.model.kind), "chat_template": "rmbench"}
    for subset in np.unique([i.subset for i in items]).tolist():  # run_v2: np.unique(subsets)
        out[subset] = _subset_score(task, subset)
    return out


def scores_dict(record: RunRecord, items: Sequence[Rb2Item], model: str) -> dict:
    """``scores_dict`` of run_v2.py: ``out_dataset.to_dict()`` plus the model's fields."""
    results = [i.result for i in items]
    if any(isinstance(r, float) for r in results):  # pandas makes the column float64 once one is
        results = [float(r) for r in results]
    return {"text": [list(i.texts) for i in items], "scores": [list(i.scores) for i in items],
            "results": results, "subset": [i.subset for i in items], "id": [i.id for i in items],
            "num_correct": [i.num_correct for i in items],
            "model": model, "model_type": model_type(record.model.kind), "chat_template": "rmbench"}


def dumped(d: dict) -> str:
    """As ``rewardbench.utils.save_to_hub`` writes a dict."""
    return json.dumps(d, indent=4, sort_keys=True, allow_nan=False)


def _newest_per_model(folders: Sequence[RunFolder], skipped: list[str]) -> list[tuple[RunFolder, TaskResult]]:
    chosen: dict[tuple[str, str], tuple[RunFolder, TaskResult]] = {}
    for f in sorted(folders, key=lambda f: (f.record.created, str(f.path))):
        task = rb2_task(f.record)
        if task is None:
            skipped.append(f"{f.path}: no RewardBench 2 task (rewardbench2, or ties on allenai/reward-bench-2) "
                           f"that succeeded; left out of the RewardBench 2 results")
            continue
        key = (f.record.model.name, f.record.model.fingerprint)
        old = chosen.get(key)
        if old is not None and old[1].official == RB2_LAYOUT and task.official != RB2_LAYOUT:
            skipped.append(f"{f.path}: its ties task is in {old[0].path}'s rewardbench2 task; left out")
            continue
        if old is not None:
            skipped.append(f"{old[0].path}: {f.path} is a newer run of {key[0]!r}; the older is left out")
        chosen[key] = (f, task)
    return list(chosen.values())


def not_rewardbench2_data(record: RunRecord, task: TaskResult) -> str | None:
    """Why the run's ``task`` is not RewardBench 2's whole data (None: it is): a ``--limit``
    sample, or a local copy (``--data``) that is not the ``rewardbench2`` task's :data:`RB2_ROWS` rows."""
    if record.config.limit is not None:
        return f"a --limit {record.config.limit} sample of {task.counts.groups} prompts"
    path = task.args.get("path")
    if path is None:
        return None
    if task.official == RB2_LAYOUT and task.counts.groups == RB2_ROWS:
        return None
    return (f"scored on a local copy ({PurePosixPath(str(path)).name}: {task.counts.groups} prompts, not "
            f"RewardBench 2's {RB2_ROWS})" if task.official == RB2_LAYOUT else
            f"its ties task scored on a local copy ({PurePosixPath(str(path)).name}), not RewardBench 2's data")


def rb2_results_export(folders: Sequence[RunFolder], options: ExportOptions) -> Export:
    """Per model: its summary and its scores file (module docstring)."""
    skipped: list[str] = []
    picked = _newest_per_model(folders, skipped)
    options.one_model(len(picked))
    if not picked:
        raise ConfigError("none of these runs holds a whole RewardBench 2 run (task rewardbench2, or ties on "
                          "allenai/reward-bench-2)" + (f": {skipped[0]}" if skipped else ""))
    files = []
    repos = [model_repo(f.record, options.name) for f, _ in picked]
    for (folder, task), (org, name) in zip(picked, repos):
        if repos.count((org, name)) > 1:
            name = f"{name}-{folder.record.model.fingerprint[:12] or 'nofp'}"
        why = not_rewardbench2_data(folder.record, task)
        if why is not None and not options.force:
            raise ConfigError(f"{folder.path}: {why}; RewardBench 2's submission files hold its whole data, so "
                              f"nothing was written (--force writes them with this note inside)")
        items = rb2_items(folder, task, options)
        model = f"{org}/{name}"
        note = {} if why is None else {NOTE_KEY: f"not a RewardBench 2 submission: {why} (rmbench export --force)"}
        files.append(ExportFile(safe_parts(SUMMARY_DIR, org, name + ".json"),
                                dumped({**summary(folder.record, task, items, model), **note})))
        files.append(ExportFile(safe_parts(SCORES_DIR, org, name + ".json"),
                                dumped({**scores_dict(folder.record, items, model), **note})))
    return Export(tuple(files), tuple(skipped))
