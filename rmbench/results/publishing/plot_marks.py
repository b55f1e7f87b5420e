"""How the D-Spec figure tells its curves apart: a line style and marker per run, curves identical
to an earlier one named as such (they would hide under it), and eps labels thinned where points
crowd (many runs end near Spec = 1, D = 0, where every label would sit on the others).

Helpers over arrays and points, and the recorded points drawn on a matplotlib axis;
:mod:`rmbench.results.publishing.plot` draws the figure with them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np

if TYPE_CHECKING:
    from rmbench.results.storage.folder import RunFolder

LINESTYLES = ("-", "--", "-.", ":")
MARKERS = ("o", "s", "^", "D", "v", "P")
LABEL_ROOM = 0.06
"""An eps label is left out when its point is this close (in the unit square) to a labelled one."""


class Curve(Protocol):
    """What these helpers read of a curve; read-only, so a frozen dataclass has it."""

    @property
    def label(self) -> str: ...
    @property
    def eps_unit(self) -> str: ...
    @property
    def spec(self) -> np.ndarray: ...
    @property
    def d(self) -> np.ndarray: ...
    @property
    def recorded(self) -> tuple[tuple[float, float, float], ...]: ...


def linestyle(i: int) -> str:
    return LINESTYLES[i % len(LINESTYLES)]


def marker(i: int) -> str:
    return MARKERS[i % len(MARKERS)]


def _same(a: Curve, b: Curve) -> bool:
    return (a.spec.shape == b.spec.shape and np.array_equal(a.spec, b.spec, equal_nan=True)
            and np.array_equal(a.d, b.d, equal_nan=True) and a.recorded == b.recorded)


def identical_to(curves: Sequence[Curve]) -> list[int | None]:
    """For each curve, the index of the first earlier curve it is identical to (same points, same
    recorded points), else None."""
    out: list[int | None] = []
    for i, c in enumerate(curves):
        out.append(next((j for j in range(i) if out[j] is None and _same(curves[j], c)), None))
    return out


def identical_notes(curves: Sequence[Curve], same: Sequence[int | None]) -> list[str]:
    """One note per curve drawn over an identical one."""
    return [f"{c.label}: identical to {curves[j].label} (drawn {linestyle(i)!r} over it)"
            for i, (c, j) in enumerate(zip(curves, same)) if j is not None]


class LabelRoom:
    """Points already labelled on the figure; :meth:`take` says whether a new label has room."""

    def __init__(self, room: float = LABEL_ROOM) -> None:
        self.room = room
        self.taken: list[tuple[float, float]] = []

    def take(self, s: float, d: float) -> bool:
        if any(math.hypot(s - a, d - b) < self.room for a, b in self.taken):
            return False
        self.taken.append((s, d))
        return True


def eps_label(eps: float, unit: str) -> str:
    """``eps=0``, ``eps=0.1σ`` (sigma units) or ``eps=0.5`` (raw reward units)."""
    if eps == 0:
        return "eps=0"
    return f"eps={eps:g}σ" if unit == "sigma" else f"eps={eps:g}"


def annotate_recorded(ax: Any, c: Curve, colour: Any, shape: str = "o", room: LabelRoom | None = None,
                       labels: bool = True) -> None:
    """Mark the recorded points; points that coincide share one label ("eps=0, 0.1σ"); a label
    whose point is too close to one already labelled (``room``) is left out, and all of them
    without ``labels``."""
    at: dict[tuple[float, float], list[float]] = {}
    for e, s, d in c.recorded:
        at.setdefault((s, d), []).append(e)
    for (s, d), eps in at.items():
        ax.plot([s], [d], marker=shape, markersize=7, markerfacecolor=colour, markeredgecolor="black",
                markeredgewidth=0.8, linestyle="none", zorder=4)
        if not labels or (room is not None and not room.take(s, d)):
            continue
        text = eps_label(eps[0], c.eps_unit) + "".join(", " + eps_label(e, c.eps_unit)[4:] for e in eps[1:])
        right, top = s > 0.88, d > 0.93  # keep the label inside the square
        ax.annotate(text, (s, d), xytext=(-7 if right else 7, -8 if top else 7), textcoords="offset points",
                    ha="right" if right else "left", va="top" if top else "bottom", fontsize=7.5, color=colour,
                    zorder=5, bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.75})


def data_notes(folders: Sequence[RunFolder], task: str, labels: Sequence[str]) -> list[str]:
    """A note where the curves of one figure come from runs of ``task`` on other data (another
    task key: data, version, metric version or eps unit), naming each run's data: the curves
    are drawn apart, never merged, but they do not measure the same thing."""
    results = [f.record.task(task) for f in folders]
    if len({r.task_key for r in results}) < 2:
        return []
    first = results[0]
    differ = list(dict.fromkeys(d for r in results[1:] for d in first.differences(r)))
    runs = ", ".join(f"{label}: data {r.data_fingerprint[:12]} ({r.counts.groups} groups)"
                     for label, r in zip(labels, results))
    return [f"{task}: these runs are on other data or settings ({'; '.join(differ)}), so their curves are not "
            f"comparable: {runs}"]
