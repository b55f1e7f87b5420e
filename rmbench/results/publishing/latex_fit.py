r"""Fitting a LaTeX leaderboard table to the text width: width estimates, wrapped labels and
headers, and the column chunks a wide table is split into.

A table is typeset in ``\small`` with ``\tabcolsep`` 4pt. Widths are estimated in *en* (half an
em of that font, 4.5pt: a digit's width in Computer Modern), from the printed text, character by
character (:func:`text_en`). :data:`LINE_EN` is the width a table may take: an ``article``'s
text width (345pt) less a margin for the estimate's error.

* The model column wraps: where its longest label is wider than :data:`KEY_MAX_EN`, it is a
  ``p`` column of :data:`KEY_SHARE` of ``\linewidth``, and its labels may break after ``/ _ + :``
  (``\allowbreak``), so that run-folder names and paths wrap instead of widening the
  table.
* A header wider than its column's cells wraps at its spaces (a nested right-aligned tabular).
* The metric columns are cut, in order, into chunks whose estimated width fits :data:`LINE_EN`
  beside the key columns (:func:`chunks`); each chunk is a ``tabular`` of its own, one under the
  other in the same float, each with the key columns.
* A table taller than a float may be (:data:`FLOAT_PT`, an ``article``'s text height less room
  for a caption and a note: a float cannot run over pages) is a ``longtable`` instead (one per
  chunk of columns), which starts a page and runs over pages with its header repeated under a
  ``(continued)`` caption.
* A label of the form ``MODEL (RUN FOLDERS)`` (a model with several runs) too long for one line
  is shown as ``MODEL (run N)``, N numbered over the whole file, and the runs are named in full in
  the notes (:func:`short_labels`).
* Each ``tabular`` is set in ``\rmbenchfit``, which shrinks it to ``\linewidth`` only where it is
  still wider (a narrower column, as a two-column paper's, or an estimate short of the truth):
  ``\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{...}`` (graphicx). A document
  may define ``\rmbenchfit`` itself before ``\input`` (``\providecommand`` leaves it alone).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

FIT_MACRO = (r"\providecommand{\rmbenchfit}[1]{\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{#1}}")
"""The guard every ``tabular`` is set in (see the module's docstring)."""
LINE_EN = 70.0
"""The width a table may take, in en of ``\\small`` (345pt / 4.5pt = 76.7, less a margin for the estimate)."""
COLSEP_EN = 8 / 4.5
"""The space between two columns (2 x ``\\tabcolsep`` of 4pt), in en."""
KEY_SHARE = 0.3
"""The share of ``\\linewidth`` a wrapped model column takes."""
KEY_MAX_EN = KEY_SHARE * 76.7
"""The widest model column kept on one line, in en."""
BREAK_AFTER = frozenset("/_+:")
"""Characters after which a label or a note may break its line (paths, run-folder names)."""

LINE_PT = 11.0
"""The height of a line of ``\\small`` text (its baselineskip), in pt."""
SCRIPT_PT = 9.0
"""What a ``\\scriptsize`` CI under a value adds to a row, in pt."""
FLOAT_PT = 430.0
"""The height a float's tables may take, in pt (an ``article``'s 550pt text height, less a
caption, a note and the space between floats)."""

_NARROW = frozenset("iljtf.,:;'|!()[]{}` ")
_WIDE = frozenset("mwMW@%")


def text_en(text: str, scale: float = 1.0) -> float:
    """The estimated printed width of ``text`` in en: a digit or a lower-case letter 1, a capital
    1.4, a narrow sign or space 0.6, ``m``/``w``/``%`` 1.6, anything else 1; times ``scale`` (a
    smaller font: ``\\scriptsize`` is 7/9 of ``\\small``, bold 1.1)."""
    total = 0.0
    for ch in text:
        if ch in _NARROW:
            total += 0.6
        elif ch in _WIDE:
            total += 1.6
        elif ch.isupper():
            total += 1.4
        else:
            total += 1.0
    return total * scale


def wrap_words(text: str, width: float) -> list[str]:
    """``text`` in lines no wider than ``width`` en, broken at spaces (a word wider than ``width``
    is a line of its own)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and text_en(lines[-1] + " " + word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines or [""]


def chunks(key_en: float, column_en: Sequence[float], line_en: float = LINE_EN) -> list[list[int]]:
    """The metric columns (their indices, in order) cut into runs that fit ``line_en`` beside the
    key columns (``key_en``, their separators included); a column wider than what is left is a
    chunk alone."""
    out: list[list[int]] = []
    used = line_en
    for j, width in enumerate(column_en):
        if out and used + COLSEP_EN + width <= line_en:
            out[-1].append(j)
            used += COLSEP_EN + width
        else:
            out.append([j])
            used = key_en + COLSEP_EN + width
    return out


def lines_of(text: str, width: float) -> int:
    """The estimated lines ``text`` takes in a column of ``width`` en (breaks are only at some
    signs, so a line holds a fifth less than the width)."""
    return max(1, math.ceil(text_en(text) / (0.8 * width)))



_LABEL = re.compile(r"^(?P<model>.+?) \((?P<where>.+)\)$")


def short_labels(labels: Sequence[str]) -> tuple[dict[str, str], list[str]]:
    """Each label too wide for one line (wider than :data:`KEY_MAX_EN`) that names its run folders,
    ``MODEL (FOLDERS)``, as ``MODEL (run N)``, N by first appearance in ``labels``; and the lines that
    say which run is which (``run N: FOLDERS``)."""
    runs: dict[str, int] = {}
    short: dict[str, str] = {}
    for label in labels:
        found = _LABEL.match(label)
        if label in short or found is None or text_en(label) <= KEY_MAX_EN:
            continue
        n = runs.setdefault(found["where"], len(runs) + 1)
        short[label] = f"{found['model']} (run {n})"
    return short, [f"run {n}: {where}" for where, n in runs.items()]
