"""Token-level shift (arXiv 2507.07981): preference pairs and their paraphrased or translated copies.

Loads the paper's format: each row holds a shifted pair (``chosen``, ``rejected``; the prompt
is kept as it is) and the original it was made from (``orig_chosen``, ``orig_rejected``,
``orig_index``). Every original becomes a group ``orig:K``; every shifted copy a group
``SHIFT:K`` with ``source_id = "orig:K"`` and ``shift = SHIFT`` (``paraphrase``,
``translation:fr``...), so each shifted result pairs with its original. Files of several shifts
can be combined in one task: originals that appear in several must agree. A row may name its
own shift with a ``shift`` field (``translation:de``) or a ``lang`` field (``de``, read as
``translation:de``); it wins over the file's label.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence

import numpy as np

from rmbench.core.types import ComparisonGroup
from rmbench.errors import DataError
from rmbench.tasks.base import Task, units_by_source
from rmbench.tasks.language import guess_language, language_name
from rmbench.tasks.rows import RowReader
from rmbench.tasks.schemas import PAIRED_SHIFT
from rmbench.tasks.sources import iter_rows

LANGUAGE_CODE = re.compile(r"^[A-Za-z][A-Za-z_-]*$")
"""A language code as a ``translation:LANG`` shift label takes it (``de``, ``pt-BR``, ``fra_Latn``)."""
SHIFT_LABEL = re.compile(r"^(paraphrase|translation(:[A-Za-z][A-Za-z_-]*)?|[a-z][a-z_]*:[A-Za-z0-9][A-Za-z0-9_-]*)$")


class PairedShiftTask(Task):
    """Original pairs and their shifted copies, paired by ``orig_index``.

    ``paths``: shift name -> file in the paper's format (``path`` + ``shift`` for a single one).
    ``dataset``/``revision``/``split``: a hub dataset in the same format, with ``shift`` naming it.
    """

    description = "original vs shifted (paraphrased / translated) preference pairs, paired"
    row_schemas = (PAIRED_SHIFT,)

    def __init__(self, paths: Mapping[str, str] | None = None, path: str | None = None, shift: str = "paraphrase",
                 dataset: str | None = None, revision: str | None = None, split: str = "train") -> None:
        sources: dict[str, dict] = {}
        for name, p in (paths or {}).items():
            sources[name] = {"path": p}
        if path is not None or dataset is not None:
            sources = {shift: {"path": path, "dataset": dataset, "revision": revision, "split": split}}
        if not sources:
            raise ValueError("give paths (shift -> file), a path and its shift name, or a dataset")
        self.sources = sources

    def groups(self) -> Iterator[ComparisonGroup]:
        originals: dict[int, tuple[ComparisonGroup, str]] = {}
        shifted: dict[int, list[ComparisonGroup]] = {}
        for shift, source in self.sources.items():
            seen: set[int] = set()
            for location, line, row in iter_rows(**source):
                r = RowReader(row, location, line, PAIRED_SHIFT)
                with r.skippable():
                    k = self._orig_index(r)
                    if k in seen:
                        raise r.error("orig_index", f"duplicate orig_index {k} in this file")
                    prompt = r.prompt()
                    row_shift = self._row_shift(r) or shift
                    orig = r.group(id=f"orig:{k}", prompt=prompt,
                                   responses=(r.string("orig_chosen"), r.string("orig_rejected")), utilities=(1, 0))
                    if k in originals and originals[k][0] != orig:
                        raise r.error("orig_chosen", f"original pair {k} differs from the one in {originals[k][1]}")
                    copy = r.group(id=f"{row_shift}:{k}", prompt=prompt, utilities=(1, 0), source_id=f"orig:{k}",
                                   responses=(r.string("chosen"), r.string("rejected")), shift=row_shift)
                    check_same_language(r, row_shift, orig.responses, copy.responses)
                    # Only a row that passed every check is kept.
                    seen.add(k)
                    originals.setdefault(k, (orig, f"{location}, line {line}"))
                    shifted.setdefault(k, []).append(copy)
        if not originals:
            raise DataError("no rows",
                            path=", ".join(str(s.get("path") or s.get("dataset")) for s in self.sources.values()))
        for k in sorted(originals):  # each original followed by its shifted copies
            yield originals[k][0]
            yield from shifted[k]

    @staticmethod
    def _orig_index(r: RowReader) -> int:
        """``orig_index``: an integer, or a string of digits (the paper's Arrow files store ``"0"``)."""
        value = r.get("orig_index", None)
        if isinstance(value, str) and value.strip().isdigit():
            return int(value)
        return r.integer("orig_index")

    @staticmethod
    def _row_shift(r: RowReader) -> str | None:
        if r.get("shift", None) is not None:
            label = r.string("shift")
            if not SHIFT_LABEL.match(label):
                raise r.error("shift", f"{label!r} is not a shift label (paraphrase, translation:LANG, KIND:NAME)")
            return label
        if r.get("lang", None) is not None:
            lang = r.string("lang")
            if not LANGUAGE_CODE.match(lang):
                raise r.error("lang", f"{lang!r} is not a language code such as de or pt-BR")
            return f"translation:{lang}"
        return None

    def bootstrap_units(self, groups: Sequence[ComparisonGroup]) -> np.ndarray:
        return units_by_source(groups)  # an original and its shifted copies resample together


def check_same_language(r: RowReader, shift: str, originals: Sequence[str], rewrites: Sequence[str]) -> None:
    """Refuse a rewrite that is not labelled a translation but is in another language than its
    original answers (:func:`rmbench.tasks.language.guess_language`, which names a language only
    when the evidence is clear): a French file given as a paraphrase would otherwise be scored and
    reported as one."""
    if shift.startswith("translation"):
        return
    before, after = guess_language("\n".join(originals)), guess_language("\n".join(rewrites))
    if before is None or after is None or before == after:
        return
    raise r.error("chosen", f"the rewrite is in {language_name(after)} but its original answers are in "
                  f"{language_name(before)}: a translation, labelled {shift!r}; label it translation:"
                  f"{after if len(after) == 2 else 'LANG'} (a 'shift' or 'lang' field, or --data "
                  f"TASK=translation:LANG=FILE)")

