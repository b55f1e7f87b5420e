"""``published:SOURCE:REF``: another tool's published per-item scores, replayed as rewards.

* ``published:rewardbench2:ORG/MODEL``: the model's file ``eval-set-scores/ORG/MODEL.json`` of
  RewardBench 2's results dataset ``allenai/reward-bench-2-results`` (:data:`RB2_RESULTS_DATASET`),
  fetched through huggingface_hub at ``revision`` (a model argument, default ``main``; give a
  commit to pin it: the commit read is recorded either way) into the hub cache; ``HF_ENDPOINT``
  points it at a mirror, and an unreachable hub reads the hub cache only (:mod:`rmbench.hub`).
  ``--model-arg path=FILE`` reads a local copy instead.
* ``published:judgebench:FILE``: a JudgeBench output file (``outputs/*.jsonl``).
* ``published:rmb:FILE``: an RMB result file (``eval/result/*_result.json``).

The layouts, and what the rewards are, are in :mod:`rmbench.models.published_files`.

The rewards bind to the task's responses by the file's item ids (the task's group ids) and its
completion order, checked against the task's data (:func:`bind_rewards`): every group of the
run must be in the file with as many scores as responses, the same correct responses, subset
and (where the file records them) response texts; otherwise the run fails with one line saying
how many groups matched and the first that did not. Items of the file that the run does not
score (``--limit``, another split) are left unread: the file is streamed, each row checked and
only the rows of the run's groups kept (:mod:`rmbench.models.published_files`).

The model's label (its display name and run folder, unless ``--name`` gives one:
:func:`published_label`) is the model the file records: JudgeBench's ``judge_model``,
RewardBench 2's ``model`` (or the ``ORG/MODEL`` read from the hub), RMB's ``{model}_result.json``
name; a file that records none is labelled ``published:SOURCE:<its file name>``, never by its path.

The model's identity is the file's content (sha256), never its name or location: the same file
fetched from the hub or read from disk is the same model. A JudgeBench file
(:class:`PublishedJudgeBenchRM`, a :class:`~rmbench.models.base.PairVerdictModel`) of two games, or
one read as verdicts, gives pair verdicts (:meth:`PublishedJudgeBenchRM.gives_pair_verdicts`): the
judgebench task scores it by its games' combined verdict (``single_game: false``); a file of one
game read as scores is a reward model scored by one game's rule (the task's default, a tie is
B>A). Either way the official score equals JudgeBench's ``compute_final_metrics`` on the file.
Which reading gave the rewards is recorded (``describe()``: ``rewards`` and the sentence
``reading``), and the run's notes say it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from rmbench.core.types import ComparisonGroup
from rmbench.errors import ConfigError, DataError
from rmbench.models.base import PairVerdictModel, RewardModel, ScoreRequest
from rmbench.models.published_files import (
    READERS,
    PublishedItem,
    PublishedScores,
    read_published,
    recorded_model,
    verdict_rewards,
)

RB2_RESULTS_DATASET = "allenai/reward-bench-2-results"
"""RewardBench 2's results dataset on the hub: ``eval-set-scores/{org}/{model}.json`` per model."""
RB2_RESULTS_REVISION = "main"
"""The revision read when none is given (the commit it resolves to is recorded in the run)."""
SOURCES = tuple(READERS.in_order())


class PublishedRM(RewardModel):
    """A published file's per-item scores as a reward model (module doc)."""

    kind = "published"
    reads_images = True  # replays rewards: reads no prompt
    description = "published:SOURCE:REF, another tool's per-item scores replayed (rewardbench2, judgebench, rmb)"
    target_arg = "target"
    max_batch = 1 << 16  # nothing is computed per request: one batch
    preferred_batch = 1 << 16

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        """A JudgeBench file is a :class:`PublishedJudgeBenchRM` (the capability is its source's)."""
        target = args[0] if args else kwargs.get("target", "")
        if cls is PublishedRM and str(target).partition(":")[0] == "judgebench":
            cls = PublishedJudgeBenchRM
        return super().__new__(cls, *args, **kwargs)

    def __init__(self, target: str, path: str | None = None, revision: str = RB2_RESULTS_REVISION) -> None:
        source, _, ref = str(target).partition(":")
        if source not in READERS:
            raise ConfigError(f"published:{target}: the source must be one of {', '.join(SOURCES)} "
                              f"(published:SOURCE:REF)")
        self.source, self.commit = source, None
        if path is not None:
            location: str | Path = Path(path).expanduser()
        elif not ref:
            what = "ORG/MODEL (a model of the results dataset)" if source == "rewardbench2" else "FILE"
            raise ConfigError(f"published:{source} needs {what}: published:{source}:{what.split()[0]}, or "
                              f"--model-arg path=FILE")
        elif source == "rewardbench2":
            location, self.commit = rb2_results_file(ref, revision)
        else:
            location = Path(ref).expanduser()
        self.published: PublishedScores = read_published(source, location)

    def score(self, batch: Sequence[ScoreRequest]) -> np.ndarray:
        # The file's rewards bind to whole groups in postprocess: a (prompt, response) request
        # alone cannot say which item it belongs to (the engine scores a shared response once).
        return np.zeros(len(batch))

    def lengths(self, batch: Sequence[ScoreRequest]) -> list[int]:
        return [1] * len(batch)

    def check_groups(self, groups: Sequence[ComparisonGroup]) -> None:
        """The file's rewards bind to ``groups`` (:func:`bind_rewards`), checked before scoring."""
        bind_rewards(self.published, groups)

    def postprocess(self, groups: Sequence[ComparisonGroup], raw: np.ndarray) -> np.ndarray:
        return bind_rewards(self.published, groups)

    def identity(self) -> dict[str, Any]:
        """The source and the file's content hash (not its name, location or revision)."""
        return {"kind": self.kind_name(), "source": self.source, "sha256": self.published.sha256}

    def describe(self) -> dict[str, Any]:
        p = self.published
        out: dict[str, Any] = {"source": p.source, "file": p.location, "sha256": p.sha256, "rewards": p.rewards_are,
                               "reading": p.reading, "items": len(p.items)}
        if p.model is not None:
            out["published_model"] = p.model
        if p.games is not None:
            out["games"] = p.games
        if self.commit is not None:
            out["dataset"], out["revision"] = RB2_RESULTS_DATASET, self.commit
        return out


class PublishedJudgeBenchRM(PublishedRM, PairVerdictModel):
    """``published:judgebench:FILE``: its pairs are scored by the verdicts of the games the file
    holds (the judgebench task's ``single_game: false``), so it declares
    :class:`~rmbench.models.base.PairVerdictModel`; :class:`PublishedRM` builds it for that source."""

    def gives_pair_verdicts(self) -> bool:
        """Whether tasks score this file by its pairs' combined verdicts (a task's
        ``verdict_args``): yes, unless it is one game read as scores (module docstring)."""
        return not self.published.single_game


def published_label(model: str, model_args: Mapping[str, Any] | None = None) -> str | None:
    """The label of a ``published:`` model spec (None for any other model): the model its file
    records (JudgeBench's ``judge_model``, RewardBench 2's ``model`` or ``ORG/MODEL``, RMB's file
    name), else ``published:SOURCE:<file name>``; never a local path (module doc)."""
    kind, _, target = model.strip().partition(":")
    if kind != PublishedRM.kind or not target:
        return None
    source, _, ref = target.partition(":")
    path = (model_args or {}).get("path")
    if source not in READERS or (path is None and not ref):
        return None
    if source == "rewardbench2" and path is None:
        return ref.strip("/")
    location = Path(str(path if path is not None else ref)).expanduser()
    recorded = recorded_model(source, location)
    if recorded is not None and recorded.startswith(("/", "~")):  # a judge served from a local folder
        recorded = Path(recorded.rstrip("/")).name or None
    return recorded or f"published:{source}:{location.name}"


def bind_rewards(published: PublishedScores, groups: Sequence[ComparisonGroup]) -> np.ndarray:
    """The file's rewards of every response of ``groups``, flattened in group order; a
    ValueError (one line) when a group is missing from the file or does not match it: how many
    groups matched, and the first that did not, with why."""
    out: list[float] = []
    matched, first = 0, None
    items = published.select(g.id for g in groups)  # only these are read from the file
    for g in groups:
        item = items.get(g.id)
        rewards, why = _rewards_for(item, g)
        if why is not None:
            first = first or f"group {g.id!r}{f' ({g.subset})' if g.subset else ''}: {why}"
            continue
        assert rewards is not None
        matched += 1
        out.extend(rewards)
    if first is not None:
        raise ValueError(f"the published {published.source} file {published.location} matches {matched} of "
                         f"{len(groups)} items of the task's data; the first that does not: {first}")
    return np.asarray(out, dtype=np.float64)


def _rewards_for(item: PublishedItem | None, g: ComparisonGroup) -> tuple[tuple[float, ...] | None, str | None]:
    """(rewards, None) when ``item`` matches group ``g``, else (None, why not)."""
    if item is None:
        return None, "not in the file"
    n = len(g.responses)
    if item.subset is not None and g.subset is not None and item.subset != g.subset:
        return None, f"subset {item.subset!r} in the file, {g.subset!r} in the task"
    rewards = item.rewards
    if rewards is None:  # a verdict row: its official credit, over the task's responses
        k = sum(u == 1 for u in g.utilities)
        if g.utilities != (1,) * k + (0,) * (n - k) or item.credit is None:
            return None, "the file gives only a result, and the task's correct responses do not come first"
        try:
            rewards = verdict_rewards(item.credit, k, n)
        except ValueError as exc:
            return None, str(exc)
    if len(rewards) != n:
        return None, f"the file has {len(rewards)} scores, the task {n} responses"
    if item.utilities is not None and item.utilities != g.utilities:
        return None, (f"the file's correct responses are {_correct(item.utilities)}, the task's "
                      f"{_correct(g.utilities)}")
    if item.responses is not None and item.responses != g.responses:
        which = next(i for i, (a, b) in enumerate(zip(item.responses, g.responses)) if a != b)
        return None, f"response {which}'s text differs from the task's"
    return rewards, None


def _correct(utilities: Sequence[int]) -> str:
    return "[" + ", ".join(str(i) for i, u in enumerate(utilities) if u == max(utilities)) + "]"


def rb2_results_file(model: str, revision: str = RB2_RESULTS_REVISION) -> tuple[Path, str | None]:
    """The local copy of ``eval-set-scores/{model}.json`` of the RB2 results dataset at
    ``revision``, and the commit it is from: from the hub cache, or downloaded now (the hub
    cache only when the hub does not answer). One :class:`DataError` when it cannot be had."""
    from huggingface_hub import hf_hub_download
    from huggingface_hub.errors import EntryNotFoundError, HfHubHTTPError, LocalEntryNotFoundError

    from rmbench import hub

    filename = f"eval-set-scores/{model.strip('/')}.json"
    why_offline = hub.unreachable()
    try:
        local = Path(hf_hub_download(RB2_RESULTS_DATASET, filename, repo_type="dataset", revision=revision,
                                     cache_dir=hub.cache_dir(), local_files_only=why_offline is not None))
    except (EntryNotFoundError, LocalEntryNotFoundError, HfHubHTTPError, OSError, ValueError) as exc:
        reason = f"the hub is unreachable ({why_offline}) and the hub cache does not hold it" if why_offline \
            else str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DataError(f"cannot get {filename} of the dataset {RB2_RESULTS_DATASET} at {revision}: {reason}; "
                        f"download it (hf download {RB2_RESULTS_DATASET} {filename} --repo-type dataset) or pass "
                        f"--model-arg path=FILE", path=f"published:rewardbench2:{model}") from None
    parts = local.parts
    commit = parts[parts.index("snapshots") + 1] if "snapshots" in parts else None
    return local, commit


__all__ = ["RB2_RESULTS_DATASET", "RB2_RESULTS_REVISION", "PublishedJudgeBenchRM", "PublishedRM", "bind_rewards",
           "published_label", "rb2_results_file"]
