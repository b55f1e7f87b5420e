"""Image shift: a multimodal task's groups beside copies whose images are perturbed without
changing what they show (the pixel analogue of token-level shift, arXiv 2507.07981).

``kind: image_shift`` wraps any task kind whose prompts carry images (``base: vl_rewardbench``,
the default; every other argument is the base's: ``path``, ``dataset``, ...). Every group of the
base is kept as it is (the original) and followed by one copy per perturbation
(:mod:`rmbench.tasks.image_perturbations`): every image of its prompt perturbed, the responses
and utilities the same, ``shift`` the perturbation's label and ``source_id`` the original's id,
exactly as :mod:`rmbench.tasks.shift` pairs a paraphrase with its original. What the run then
reports comes from the one shift mechanism every shift task uses: D, accuracy and the other
metrics per shift slice beside the originals (the ``none`` slice), and each metric's
``_shift_gap`` (shifted minus original) with a paired bootstrap CI, an original and its copies
resampling together (in the base's own bootstrap unit, where it has one).

One score is the task's own: **image_specificity**, Spec across perturbations of one image. A
response j of an original group and the same response in each of its k copies are one tie set:
the same text answering the same question about the same picture, so they should get one reward.
Over the pairs (a, b) of a tie set, with y = |r(a) - r(b)| and eps = ``spec_eps`` x sigma (sigma
the sample standard deviation, ddof 1, of every reward of the task, as the run's sigma-scaled eps),

    image_specificity = 1 - #w(y > eps) / #w,

#w counting each pair as often as its source is drawn. The record with no subset pools every pair
of the k + 1 renderings (C(k+1, 2) per response); the record whose subset is a perturbation's
label, the pairs (original, that copy). An RM that ignores pixels scores exactly 1.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np

from rmbench.core import metrics as M
from rmbench.core.canonical import canonical_json
from rmbench.core.metric_def import Counted, MetricDef
from rmbench.core.prompts import prompt_images
from rmbench.core.types import ComparisonGroup, split_by_group
from rmbench.errors import ConfigError, DataError
from rmbench.tasks.base import Task, TaskScores, units_by_source
from rmbench.tasks.image_perturbations import Perturbation, parse_perturbation
from rmbench.tasks.image_store import perturb_prompt

IMAGE_SPEC_METRIC = "image_specificity"
IMAGE_SPEC = MetricDef(
    IMAGE_SPEC_METRIC, "Spec img", True, False, Counted.SPECIFICITY_PAIRS,
    "Spec across meaning-preserving perturbations of the prompt's images: 1 - #(|r(a) - r(b)| > eps) / #pairs "
    "over the pairs of one response under two renderings of its image (eps = the task's spec_eps x sigma); "
    "subset: one perturbation against the original")

DEFAULT_PERTURBATIONS = ("jpeg:75", "png", "resize:0.75", "crop:0.1", "jitter:0.1")
"""One of each kind, at moderate settings."""


class ImageShiftTask(Task):
    """A multimodal task's groups, each beside copies whose images are perturbed (module doc).

    ``base``: the task kind wrapped (its other arguments are this task's remaining ones);
    ``perturbations``: labels (``jpeg:75``, ``png``, ``resize:0.75``, ``crop:0.1``,
    ``jitter:0.1``) or mappings (``{kind: jpeg, quality: 75}``); ``seed``: what the drawn
    perturbations (a crop's offset, jitter factors) start from, with each group's id;
    ``spec_eps``: the eps of ``image_specificity``, in units of sigma.
    """

    description = "a multimodal task beside perturbed-image copies: D under image shift, Spec across perturbations"
    headline = ("pairwise_accuracy", "discrimination", IMAGE_SPEC_METRIC)
    scores = (IMAGE_SPEC,)
    score_args = ("spec_eps",)
    reads_folder = True  # --data image_shift=FOLDER goes to the base (VL-RewardBench's folder of data.jsonl and images)

    def __init__(self, base: str = "vl_rewardbench", perturbations: Sequence[Any] = DEFAULT_PERTURBATIONS,
                 seed: int = 0, spec_eps: float = 0.1, **base_args: Any) -> None:
        if not isinstance(base, str) or not base or base == "image_shift":
            raise ConfigError(f"image_shift: base must name another task kind (vl_rewardbench ...), got {base!r}")
        if isinstance(perturbations, (str, dict)):
            perturbations = [perturbations]
        self.perturbations: tuple[Perturbation, ...] = tuple(parse_perturbation(p) for p in perturbations)
        if not self.perturbations:
            raise ConfigError("image_shift: give at least one perturbation")
        labels = [p.label for p in self.perturbations]
        if len(set(labels)) != len(labels):
            raise ConfigError(f"image_shift: a perturbation is given twice ({', '.join(labels)})")
        if isinstance(seed, bool) or not isinstance(seed, int):
            raise ConfigError(f"image_shift: seed must be an integer, got {seed!r}")
        if isinstance(spec_eps, bool) or not isinstance(spec_eps, (int, float)) or not 0 <= spec_eps < float("inf"):
            raise ConfigError(f"image_shift: spec_eps must be a number >= 0, got {spec_eps!r}")
        self.base_kind, self.base_args = base, dict(base_args)
        self.seed, self.spec_eps = int(seed), float(spec_eps)
        self.base = self._build_base()

    def _build_base(self) -> Task:
        from rmbench.core.specs import TaskSpec
        from rmbench.registry.factories import check_arguments
        from rmbench.tasks import TASK_KINDS, build_task

        if ":" not in self.base_kind and self.base_kind in TASK_KINDS:
            check_arguments(TASK_KINDS.get(self.base_kind), self.base_args, what="task", name="image_shift",
                            kind=self.base_kind)
        task = build_task(TaskSpec.make(name=f"image_shift/{self.base_kind}", kind=self.base_kind,
                                        args=self.base_args))
        if task.steps:
            raise ConfigError(f"image_shift: base {self.base_kind!r} is a step-level task; image shift needs "
                              f"comparison groups")
        return task

    def groups(self) -> Iterator[ComparisonGroup]:
        with_images = 0
        for g in self.base.groups():
            if g.shift is not None or g.source_id is not None:
                raise DataError(f"image_shift: group {g.id!r} of base {self.base_kind!r} is already a shifted copy "
                                f"({g.shift}); image shift wraps a task of originals")
            yield g
            if not prompt_images(g.prompt):
                continue  # nothing to perturb: the group is an original with no copies
            with_images += 1
            for p in self.perturbations:
                prompt, applied = perturb_prompt(g.prompt, p, self.seed, g.id)
                meta = canonical_json({**g.meta_dict, "image_shift": [a.to_json() for a in applied]})
                yield dataclasses.replace(g, id=f"{g.id}@{p.label}", prompt=prompt, source_id=g.id, shift=p.label,
                                          meta=meta)
        if not with_images:
            raise DataError(f"image_shift: no prompt of base {self.base_kind!r} carries an image, so there is "
                            f"nothing to perturb")

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        """The base's units of the originals (each its own, for VL-RewardBench), each copy in its
        original's: an original and its perturbed copies resample together."""
        originals = [g for g in groups if g.source_id is None]
        base_units = np.asarray(self.base.bootstrap_units(originals), dtype=np.int64)
        unit_of = {g.id: int(u) for g, u in zip(originals, base_units)}
        keys = [unit_of.get(g.source_id or g.id, -1) for g in groups]
        if -1 in keys:  # a copy without its original (never from groups()): pair it with its source id alone
            return units_by_source(groups)
        return np.unique(np.asarray(keys, dtype=np.int64), return_inverse=True)[1].astype(np.int64)

    def extra_metrics(self, groups: Sequence[ComparisonGroup], rewards: np.ndarray) -> TaskScores:
        """``image_specificity`` pooled over every tie set's pairs, and per perturbation (module doc)."""
        return image_specificity(groups, rewards, self.bootstrap_units(groups), [p.label for p in self.perturbations],
                                 self.spec_eps)


def image_specificity(groups: Sequence[ComparisonGroup], rewards: np.ndarray, units: np.ndarray,
                      labels: Sequence[str], spec_eps: float) -> TaskScores:
    """``image_specificity`` of ``groups`` (originals and their copies, ``source_id``) scored with
    ``rewards`` (one per response), as task scores of resampled ``units`` (each group's unit):
    pooled over every tie set's pairs (subset None), then against the original for each
    perturbation label in ``labels`` (module doc; eps = ``spec_eps`` x sigma of ``rewards``)."""
    rewards = np.asarray(rewards, dtype=np.float64)
    eps = spec_eps * M.reward_sigma(rewards)
    pairs = tie_pairs(groups, split_by_group(groups, rewards), units)
    selections = [np.ones(len(pairs.gap), dtype=bool)] + [pairs.against == label for label in labels]
    n_units = int(np.max(units)) + 1 if len(units) else 0
    above = pairs.gap > eps

    def statistic(drawn: np.ndarray) -> np.ndarray:
        w = np.bincount(drawn, minlength=n_units).astype(np.float64)[pairs.unit]
        return np.array([specificity(above[s], w[s]) for s in selections], dtype=np.float64)

    names = ((IMAGE_SPEC_METRIC, None), *((IMAGE_SPEC_METRIC, label) for label in labels))
    return TaskScores(tuple(names), statistic, tuple(int(s.sum()) for s in selections))


@dataclasses.dataclass(frozen=True)
class TiePairs:
    """Every pair of one response under two renderings of its prompt's images: |r(a) - r(b)|,
    the bootstrap unit of its source, and the perturbation of its other member when one member is
    the original (``""`` for a pair of two copies)."""

    gap: np.ndarray
    unit: np.ndarray
    against: np.ndarray


def tie_pairs(groups: Sequence[ComparisonGroup], rewards: Sequence[np.ndarray], units: np.ndarray) -> TiePairs:
    """The tie sets' pairs: for each original group with copies and each response j, the pairs of
    (original j, copy_1 j, ..., copy_k j), the original first and the copies in the task's order."""
    position = {g.id: i for i, g in enumerate(groups)}
    copies: dict[int, list[int]] = {}
    for i, g in enumerate(groups):
        if g.source_id is not None and g.source_id in position:
            copies.setdefault(position[g.source_id], []).append(i)
    gap: list[float] = []
    unit: list[int] = []
    against: list[str] = []
    for o, members in copies.items():
        rows = [o, *members]
        labels = ["", *(groups[i].shift or "" for i in members)]
        table = np.stack([rewards[i] for i in rows])  # renderings x responses
        for a in range(len(rows)):
            for b in range(a + 1, len(rows)):
                gap += np.abs(table[a] - table[b]).tolist()
                unit += [int(units[o])] * table.shape[1]
                against += [labels[b] if a == 0 else ""] * table.shape[1]
    return TiePairs(np.asarray(gap, dtype=np.float64), np.asarray(unit, dtype=np.int64),
                    np.asarray(against, dtype=object))


def specificity(above: np.ndarray, weights: np.ndarray) -> float:
    """1 - sum(w over pairs with y > eps) / sum(w); nan with no pair drawn."""
    total = float(weights.sum())
    return float("nan") if total == 0 else 1.0 - float(weights[above].sum()) / total
