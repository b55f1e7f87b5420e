"""Rewrite invariance: does an RM give the same reward to the same answer written differently?

Reads the paired shift format (the paper's ``orig_chosen``/``orig_rejected``/``chosen``/
``rejected``/``orig_index`` files, and rmbench's own shift sets from ``rmbench shift``; see
:mod:`rmbench.tasks.shift`). Each source pair and each rewrite kind of it becomes one group of
four responses: the original chosen and rejected answers, and their rewrites,

    responses = (chosen, rejected, chosen', rejected'), utilities = (1, 0, 1, 0),
    forms = ("original", "original", KIND, KIND), rewrite_of = (0, 1, 0, 1),

with ``shift = KIND`` (so every metric is also reported per rewrite kind) and both utility
levels equivalence classes. A rewrite keeps the answer's meaning, so its utility by
construction; the pairs then ask:

* specificity pairs = an answer against its own rewrite: ``rewrite_specificity`` (Spec(eps)
  across forms; an RM that leans on surface tokens scores low);
* discrimination pairs within a form (chosen vs rejected, chosen' vs rejected'):
  ``within_form_discrimination``; across forms (chosen vs rejected', chosen' vs rejected):
  ``cross_form_discrimination``, whether the preference survives a change of surface; their
  difference ``cross_form_gap`` (cross - within), with a paired CI (one bootstrap draw gives
  both);
* ``preference_flip_rate``: the share of rewritten pairs whose preference (the sign of
  r(chosen') - r(rejected')) differs from the original pair's.

A source pair's groups (one per rewrite kind) resample together in the bootstrap. A
translation does not keep utility for a prompt in another language (an English prompt answered
in French is a worse answer), so translations are refused unless ``allow_translation`` is set;
the task's arguments, and so the run record, then say that they were accepted.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from rmbench.core.types import ORIGINAL, ComparisonGroup
from rmbench.errors import DataError
from rmbench.tasks.base import Task, units_by_source
from rmbench.tasks.shift import PairedShiftTask

HEADLINE = ("ds_auc", "rewrite_specificity", "within_form_discrimination", "cross_form_discrimination",
            "cross_form_gap", "preference_flip_rate", "length_correlation")
"""ds_auc first (leaderboards sort by it): a constant RM is perfectly invariant and useless."""


class RewriteInvarianceTask(Task):
    """Original pairs and their meaning-preserving rewrites, one group of four per pair and kind.

    ``paths``: rewrite kind -> file in the paired shift format (or ``path`` with ``shift``);
    ``dataset``/``revision``/``split``: a hub dataset in that format. A row's own ``shift``
    (or ``lang``) field names its kind, as in :class:`~rmbench.tasks.shift.PairedShiftTask`.
    ``allow_translation``: accept ``translation:*`` rows as equal utility (off by default).
    """

    description = "each answer beside its meaning-preserving rewrite: specificity across forms, D within and across"
    headline = HEADLINE

    def __init__(self, paths: Mapping[str, str] | None = None, path: str | None = None, shift: str = "paraphrase",
                 dataset: str | None = None, revision: str | None = None, split: str = "train",
                 allow_translation: bool = False) -> None:
        self.pairs = PairedShiftTask(paths=paths, path=path, shift=shift, dataset=dataset, revision=revision,
                                     split=split)
        self.allow_translation = bool(allow_translation)

    def groups(self) -> Iterator[ComparisonGroup]:
        originals: dict[str, ComparisonGroup] = {}
        for g in self.pairs.groups():
            if g.shift is None:
                originals[g.id] = g
                continue
            if g.shift.startswith("translation") and not self.allow_translation:
                raise DataError(f"rewrite {g.id!r} is a translation ({g.shift}): an answer in another language than "
                                f"its prompt is not of equal utility, so rewrite_invariance refuses translations "
                                f"unless the task sets allow_translation: true",
                                path=", ".join(str(s.get("path") or s.get("dataset"))
                                               for s in self.pairs.sources.values()))
            assert g.source_id is not None  # PairedShiftTask's rewrites point at their original
            orig = originals[g.source_id]
            yield ComparisonGroup(id=g.id, prompt=orig.prompt, responses=orig.responses + g.responses,
                                  utilities=(1, 0, 1, 0), source_id=orig.id, shift=g.shift,
                                  forms=(ORIGINAL, ORIGINAL, g.shift, g.shift), rewrite_of=(0, 1, 0, 1),
                                  subset=orig.subset)

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        return units_by_source(groups)  # the kinds of one source pair resample together
