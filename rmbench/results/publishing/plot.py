"""Figures of stored runs: the D(eps)-Spec(eps) curve of a task, and original-vs-shifted bars.

The curve is the one of arXiv 2606.21795 ("Discretizing Reward Models"): as eps grows from 0
the reward model calls more pairs "equal", so specificity Spec(eps) rises and discrimination
D(eps) falls; a run is one curve in the (Spec, D) square and the ideal is the corner (1, 1).
The curve is recomputed densely from the run's rewards over the task's pairs (the task's data
is reloaded, no model is loaded; see :mod:`rmbench.results.storage.reload`), and the points the run *recorded*
(its D and Spec metric records, at eps = 0 and 0.1 sigma by default) are marked on it. When the
data can no longer be reloaded, only the recorded points are drawn, with a note saying so.

matplotlib is optional (``pip install 'rmbench[plot]'``); it is imported inside the functions
and drawn with the Agg canvas (pyplot and its global backend are never touched). Files are
written atomically; SVG output is deterministic (fixed hash salt, no date).
"""

from __future__ import annotations

import io
import math
import os
import sys
import textwrap
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rmbench.core.metric_registry import metric_def
from rmbench.errors import ConfigError, DataError
from rmbench.files import atomic_write_bytes
from rmbench.paths import user_cache_dir
from rmbench.results.publishing.plot_marks import (
    LabelRoom,
    annotate_recorded,
    data_notes,
    eps_label,
    identical_notes,
    identical_to,
    linestyle,
    marker,
)
from rmbench.results.publishing.plot_steps import draw_steps, training_series
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import TaskResult

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

GRID_POINTS = 200
"""Points of the eps grid: this many evenly spaced, and as many at quantiles of the |gaps|."""
DEFAULT_FORMATS = ("png", "svg")
SVG_HASH_SALT = "rmbench"
_RC = {"svg.hashsalt": SVG_HASH_SALT, "svg.fonttype": "path"}
_METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "ps": {"CreationDate": None}}
_MISSING = "rmbench plot needs matplotlib: pip install 'rmbench[plot]'"


@dataclass(frozen=True, eq=False)
class CurveData:
    """One run's D-Spec curve on one task.

    ``eps`` is in the run's ``eps_unit`` (sigma or raw), sorted ascending; ``spec[i]`` and
    ``d[i]`` are Spec and D at ``eps[i]``. ``recorded``: ``(eps, spec, d)`` of every eps the run
    reported both metrics at, taken from its metric records. ``note``: why the curve is not the
    dense one (data not reloadable) or not defined (no pairs of a kind), else None. ``dense``:
    False when the curve is only the recorded points joined up.
    """

    label: str
    task: str
    eps_unit: str
    eps: np.ndarray
    spec: np.ndarray
    d: np.ndarray
    recorded: tuple[tuple[float, float, float], ...]
    note: str | None = None
    dense: bool = True

    @property
    def defined(self) -> bool:
        """Whether any point of the curve has both a Spec and a D value."""
        return bool(np.any(~np.isnan(self.spec) & ~np.isnan(self.d)))


def _matplotlib() -> Any:
    if "matplotlib" not in sys.modules and not os.environ.get("MPLCONFIGDIR"):
        # matplotlib caches its font list; keep it in rmbench's cache, not beside other tools' files
        os.environ["MPLCONFIGDIR"] = str(user_cache_dir() / "matplotlib")
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise ConfigError(_MISSING) from None
    return matplotlib


def _recorded_points(result: TaskResult) -> tuple[tuple[float, float, float], ...]:
    """(eps, Spec, D) from the run's overall D and Spec records at each of its eps."""
    out = []
    for e in sorted(result.eps):
        s, d = result.metric("specificity", eps=e), result.metric("discrimination", eps=e)
        if s is not None and d is not None and s.estimate.defined and d.estimate.defined:
            out.append((float(e), s.value, d.value))
    return tuple(out)


def _eps_grid(diff: np.ndarray, eq_abs: np.ndarray, unit: str, sigma: float,
              recorded_eps: Sequence[float]) -> np.ndarray:
    """eps values (run unit) from 0 to past the largest |gap|, so that D reaches 0 and Spec 1."""
    gaps = np.concatenate([diff[diff > 0], eq_abs[eq_abs > 0]])
    scale = sigma if unit == "sigma" else 1.0
    parts = [np.array([0.0]), np.asarray(recorded_eps, dtype=np.float64)]
    if gaps.size and scale > 0:
        top = float(gaps.max()) / scale
        # Evenly spaced, plus at quantiles of the gaps (dense where the curve moves), plus a
        # point just past the largest gap (its rounding in the unit must not leave one pair out).
        parts += [np.linspace(0.0, top, GRID_POINTS), np.quantile(gaps / scale, np.linspace(0, 1, GRID_POINTS)),
                  np.array([np.nextafter(top, np.inf) * (1 + 1e-9)])]
    return np.unique(np.concatenate(parts))


def _dense_curve(diff: np.ndarray, eq: np.ndarray, grid: np.ndarray, unit: str,
                 sigma: float) -> tuple[np.ndarray, np.ndarray]:
    """Spec and D at every eps of ``grid``, with the arithmetic of :mod:`rmbench.core.metrics`
    (D = #(gap > eps) / n, Spec = 1 - #(|gap| > eps) / m, eps raw = eps * sigma), so the
    curve passes exactly through the recorded points."""
    raw = grid * float(sigma) if unit == "sigma" else grid.astype(np.float64)
    d_sorted, e_sorted = np.sort(diff), np.sort(np.abs(eq))
    if d_sorted.size:
        d = (d_sorted.size - np.searchsorted(d_sorted, raw, side="right")) / d_sorted.size
    else:
        d = np.full(grid.size, np.nan)
    if e_sorted.size:
        spec = 1.0 - (e_sorted.size - np.searchsorted(e_sorted, raw, side="right")) / e_sorted.size
    else:
        spec = np.full(grid.size, np.nan)
    return spec.astype(np.float64), d.astype(np.float64)


def curve_data(folder: RunFolder, task: str, label: str | None = None) -> CurveData:
    """The D-Spec curve of ``folder``'s run on ``task`` (``label``: default the model name).

    Dense when the task's data reloads (rmbench.results.storage.reload.task_rewards): eps on a grid in the
    run's eps unit from 0 to past the largest |gap|, the recorded eps included. Otherwise
    (DataError/ConfigError) only the recorded points, with a note saying why.
    """
    from rmbench.core import metrics as M
    from rmbench.core.types import PairIndex
    from rmbench.results.storage.reload import task_rewards
    from rmbench.results.storage.rewards_file import RewardsFileError

    result = folder.record.task(task)
    label = label or folder.record.model_name
    recorded = _recorded_points(result)
    try:
        td, rewards = task_rewards(folder, task)
    except RewardsFileError:  # a damaged rewards.jsonl is refused, never drawn around
        raise
    except (DataError, ConfigError) as exc:
        eps = np.array([p[0] for p in recorded], dtype=np.float64)
        spec = np.array([p[1] for p in recorded], dtype=np.float64)
        d = np.array([p[2] for p in recorded], dtype=np.float64)
        why = f"{label}: only the recorded points (the task's data could not be reloaded: {exc})"
        return CurveData(label, task, result.eps_unit, eps, spec, d, recorded, why, dense=False)
    rewards = M.check_reward_range(rewards)
    index = PairIndex.from_groups(td.groups)
    diff = rewards[index.diff_better] - rewards[index.diff_worse]
    eq = rewards[index.eq_a] - rewards[index.eq_b]
    sigma = M.reward_sigma(rewards)
    grid = _eps_grid(diff, np.abs(eq), result.eps_unit, sigma, result.eps)
    spec, d = _dense_curve(diff, eq, grid, result.eps_unit, sigma)
    note = None
    if diff.size == 0 or eq.size == 0:
        kind = "discrimination" if diff.size == 0 else "specificity"
        note = f"{label}: the task has no {kind} pairs, so the D-Spec curve is not defined"
    return CurveData(label, task, result.eps_unit, grid, spec, d, recorded, note)


def run_labels(folders: Sequence[RunFolder]) -> list[str]:
    """Model names; a name two runs share gets the run folder's name appended."""
    names = [f.record.model_name for f in folders]
    count = Counter(names)
    return [n if count[n] == 1 else f"{n} ({f.path.name})" for n, f in zip(names, folders)]


def run_styles(folders: Sequence[RunFolder]) -> dict[int, int]:
    """Each run's style index (colour, line, marker) by its place among ``folders``, keyed by
    ``id(folder)``: a build passes all its runs to every figure, so a run looks the same in each."""
    return {id(f): i for i, f in enumerate(folders)}


def _with_task(folders: Sequence[RunFolder], task: str) -> list[RunFolder]:
    out = [f for f in folders if f.record.has_task(task)]
    if not out:
        raise ConfigError(f"no run has task {task!r}")
    return out


def _new_figure(width: float, height: float) -> Figure:
    _matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=120)
    FigureCanvasAgg(fig)
    return fig


def _colour(i: int) -> Any:
    import matplotlib

    return matplotlib.colormaps["tab10"](i % 10)


def _add_notes(fig: Figure, notes: Sequence[str]) -> None:
    """Notes under the axes, wrapped, in small grey type (the bottom margin grows with them)."""
    width = max(40, int(fig.get_figwidth() * 19))  # characters of 6.5 pt type across the figure
    lines = [line for n in notes for line in textwrap.wrap(n if len(n) <= 300 else n[:297] + "...", width)]
    if not lines:
        return
    fig.subplots_adjust(bottom=min(0.5, fig.subplotpars.bottom + 0.022 * len(lines)))
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=6.5, color="0.35", va="bottom", ha="left")


def ds_figure(folders: Sequence[RunFolder], task: str) -> tuple[Figure, list[str]]:
    """The D-Spec figure of ``task`` for the runs that have it, and the notes drawn under it. A
    run's colour, line and marker follow its place among all ``folders`` (:func:`run_styles`), so
    it keeps them in every figure and page of one build, whichever runs have the task."""
    style = run_styles(folders)
    folders = _with_task(folders, task)
    curves = [curve_data(f, task, label) for f, label in zip(folders, run_labels(folders))]
    fig = _new_figure(6.4, 6.2)
    fig.subplots_adjust(left=0.11, right=0.97, top=0.93, bottom=0.1)
    ax = fig.add_subplot(1, 1, 1)
    same, room = identical_to(curves), LabelRoom()
    for n, c in enumerate(curves):
        i = style[id(folders[n])]  # the run's place in the whole build: its colour, line and marker
        colour = _colour(i)
        ok = ~np.isnan(c.spec) & ~np.isnan(c.d)
        auc = folders[n].record.task(task).metric("ds_auc")
        legend = c.label + (f"  (ds_auc {auc.value:.3f})" if auc is not None and auc.estimate.defined else "")
        if not c.dense:
            legend += "  [recorded points only]"
        if (j := same[n]) is not None:
            legend += f"  = {curves[j].label}"
        if ok.any():  # a style per run (dashed when only the recorded points): identical curves stay visible
            ax.plot(c.spec[ok], c.d[ok], color=colour, linewidth=1.8, linestyle=linestyle(i) if c.dense else "--",
                    drawstyle="default", label=legend, zorder=3 + 0.01 * n)
        # the eps labels of a curve identical to an earlier one would only repeat its labels
        annotate_recorded(ax, c, colour, marker(i), room, labels=same[n] is None)
    ax.plot([1.0], [1.0], marker="*", markersize=12, color="0.6", linestyle="none", zorder=2)
    ax.annotate("ideal", (1.0, 1.0), xytext=(-9, 5), textcoords="offset points", ha="right", va="bottom",
                fontsize=7.5, color="0.45")
    ax.set_xlim(-0.02, 1.04)
    ax.set_ylim(-0.02, 1.04)
    ax.set_aspect("equal")
    ax.grid(True, color="0.9", linewidth=0.8)
    ax.set_xlabel(f"{metric_def('specificity').label}(eps): P(|r(a) - r(b)| <= eps | u(a) = u(b))")
    ax.set_ylabel(f"{metric_def('discrimination').label}(eps): P(r(a) > r(b) + eps | u(a) > u(b))")
    ax.set_title(f"{task}: discrimination vs specificity")
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="best", fontsize=8, framealpha=0.9)
    notes = [c.note for c in curves if c.note] + identical_notes(curves, same)
    notes += data_notes(folders, task, [c.label for c in curves])
    if not any(c.defined for c in curves):
        ax.text(0.5, 0.5, "no curve: no run has both discrimination\nand specificity pairs on this task",
                ha="center", va="center", fontsize=10, color="0.4", transform=ax.transAxes)
    _add_notes(fig, notes)
    return fig, notes


def _bar_ci(rec: Any) -> tuple[float, float] | None:
    if rec is None or not rec.estimate.has_ci or not rec.estimate.defined:
        return None
    return max(0.0, rec.value - rec.ci_low), max(0.0, rec.ci_high - rec.value)


def _gap_text(gap: Any) -> str | None:
    if gap is None or not gap.estimate.defined:
        return None
    text = f"Δ {gap.value:+.3f}"
    if gap.estimate.has_ci:
        text += f"\n[{gap.ci_low:+.2f}, {gap.ci_high:+.2f}]"
    return text


def shift_figure(folders: Sequence[RunFolder], task: str) -> Figure:
    """Grouped bars of pairwise accuracy per shift (95% CI), one colour per run, with the paired
    gaps (shifted - original) written above the shifted bars."""
    style = run_styles(folders)
    folders = [f for f in _with_task(folders, task) if f.record.task(task).shifts]
    if not folders:
        raise ConfigError(f"task {task!r} has no shifts in these runs (no original-vs-shifted bars to draw)")
    shifts = list(dict.fromkeys(s for f in folders for s in f.record.task(task).shifts))
    shifts.sort(key=lambda s: s != "none")  # the originals first, then the shifts in record order
    labels = run_labels(folders)
    fig = _new_figure(max(6.4, 1.6 + len(shifts) * max(1.8, 0.75 * len(folders))), 4.8)
    fig.subplots_adjust(left=0.8 / fig.get_figwidth(), right=0.98, top=0.9, bottom=0.12)
    ax = fig.add_subplot(1, 1, 1)
    width = min(0.8 / len(folders), 0.32)
    x = np.arange(len(shifts), dtype=np.float64)
    for i, (folder, label) in enumerate(zip(folders, labels)):
        result = folder.record.task(task)
        xs = x - width * len(folders) / 2 + width * (i + 0.5)
        for j, shift in enumerate(shifts):
            rec = result.metric("pairwise_accuracy", shift=shift)
            if rec is None or not rec.estimate.defined:
                continue
            ci = _bar_ci(rec)
            ax.bar(xs[j], rec.value, width * 0.92, color=_colour(style[id(folder)]), label=label,
                   yerr=None if ci is None else [[ci[0]], [ci[1]]], capsize=3, ecolor="0.2", zorder=3)
            text = _gap_text(result.metric("pairwise_accuracy_shift_gap", shift=shift)) if shift != "none" else None
            if text:
                top = rec.value + (ci[1] if ci else 0.0)
                ax.text(xs[j], top + 0.015, text, ha="center", va="bottom", fontsize=6.5, color="0.15", zorder=4)
    handles, names = ax.get_legend_handles_labels()
    unique = dict(zip(names, handles))
    ax.axhline(0.5, color="0.5", linewidth=0.8, linestyle=":", zorder=2)
    ax.set_xticks(x, ["original" if s == "none" else s for s in shifts])
    columns = min(4, len(folders))
    ax.set_ylim(0.0, 1.2 + 0.07 * math.ceil(len(folders) / columns))  # room for the gaps and the legend
    ax.set_yticks(np.linspace(0.0, 1.0, 6))
    ax.set_ylabel("pairwise accuracy (95% CI)")
    ax.set_title(f"{task}: pairwise accuracy by shift")
    ax.grid(True, axis="y", color="0.9", linewidth=0.8, zorder=0)
    ax.legend(unique.values(), unique.keys(), loc="upper left", ncol=columns, fontsize=8, framealpha=0.9)
    _add_notes(fig, ["Δ: paired gap of pairwise accuracy, shifted minus original groups, with its 95% "
                     "paired-bootstrap CI; dotted line: chance (0.5)"])
    return fig


def _render(fig: Figure, fmt: str) -> bytes:
    """The figure as ``fmt`` bytes, deterministic for SVG (fixed hash salt, no date)."""
    matplotlib = _matplotlib()
    supported = fig.canvas.get_supported_filetypes()
    if fmt not in supported:
        raise ConfigError(f"figure format {fmt!r}: use one of {', '.join(sorted(supported))}")
    buf = io.BytesIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format=fmt, metadata=_METADATA.get(fmt))
    return buf.getvalue()


def _save(fig: Figure, out_stem: Path, formats: Sequence[str]) -> list[Path]:
    """Write ``out_stem.FMT`` for each format, atomically (all rendered before any is written)."""
    if not formats:
        raise ConfigError("no figure formats given (use png and/or svg)")
    data = [(Path(f"{out_stem}.{fmt}"), _render(fig, fmt)) for fmt in formats]
    for path, blob in data:
        atomic_write_bytes(path, blob)
    return [path for path, _ in data]


def plot_ds_curves(folders: Sequence[RunFolder], task: str, out_stem: Path,
                   formats: Sequence[str] = DEFAULT_FORMATS,
                   warn: Callable[[str], None] | None = None) -> list[Path]:
    """The D-Spec curves of ``task`` (one per run that has it) as ``out_stem.png`` etc.

    Returns the paths written. ``warn`` receives each note (a run drawn from its recorded
    points only, a curve not defined); the notes are printed under the figure too.
    """
    with _rc():
        fig, notes = ds_figure(folders, task)
        paths = _save(fig, Path(out_stem), formats)
    for note in notes:
        (warn or _warn)(note)
    return paths


def plot_shift_bars(folders: Sequence[RunFolder], task: str, out_stem: Path,
                    formats: Sequence[str] = DEFAULT_FORMATS) -> list[Path]:
    """Original-vs-shifted pairwise accuracy bars of ``task`` as ``out_stem.png`` etc.;
    ConfigError when no run has shifts on the task."""
    with _rc():
        return _save(shift_figure(folders, task), Path(out_stem), formats)


def ds_curve_svg(folders: Sequence[RunFolder], task: str) -> str:
    """The D-Spec curve figure of ``task`` as inline SVG text (no XML prolog or doctype), for
    embedding in an HTML page. Deterministic: the same runs give the same text."""
    with _rc():
        fig, _ = ds_figure(folders, task)
        text = _render(fig, "svg").decode("utf-8")
    start = text.find("<svg")
    if start < 0:  # pragma: no cover - matplotlib always writes an <svg> element
        raise ConfigError("matplotlib wrote no <svg> element")
    return text[start:]


def plot_runs(folders: Sequence[RunFolder], out_dir: Path, formats: Sequence[str] = DEFAULT_FORMATS,
              tasks: Sequence[str] | None = None, warn: Callable[[str], None] | None = None) -> list[Path]:
    """Every figure of the runs, in ``out_dir``: ``{task}_ds_curve.{fmt}`` for each task (all
    tasks of the runs, or ``tasks``), ``{task}_shift.{fmt}`` for tasks with shifts and
    ``{task}_steps.{fmt}`` where the runs are two or more evaluated steps of one training
    (:mod:`rmbench.results.publishing.plot_steps`).

    A task on which no run has a D-Spec curve (no specificity pairs, as in paired shift tasks)
    gets no curve file; ``warn`` (default: :func:`warnings.warn`) says so. Returns the paths written.
    """
    _matplotlib()
    warn = warn or _warn
    names = list(dict.fromkeys(t for f in folders for t in f.record.task_names))
    if tasks is not None:
        unknown = [t for t in tasks if t not in names]
        if unknown:
            raise ConfigError(f"no run has task {unknown[0]!r} (the runs have {', '.join(names) or 'no tasks'})")
        names = list(dict.fromkeys(tasks))
    out_dir = Path(out_dir)
    paths: list[Path] = []
    with _rc():
        for task in names:
            if any(_has_curve(f, task) for f in _with_task(folders, task)):
                fig, notes = ds_figure(folders, task)
                paths += _save(fig, out_dir / f"{task}_ds_curve", formats)
                for note in notes:
                    warn(note)
            else:
                warn(f"task {task!r}: no D-Spec curve (no run has both discrimination and specificity pairs)")
            if any(f.record.task(task).shifts for f in _with_task(folders, task)):
                paths += _save(shift_figure(folders, task), out_dir / f"{task}_shift", formats)
            series = [s for s in training_series(folders) if len(s.with_task(task)) > 1]
            if series:
                fig = _new_figure(8.0, 4.4)
                draw_steps(fig, series, task, _colour)
                paths += _save(fig, out_dir / f"{task}_steps", formats)
    return paths


def _has_curve(folder: RunFolder, task: str) -> bool:
    """Whether the run has (or recorded) both kinds of pairs on ``task``."""
    c = folder.record.task(task).counts
    return (c.discrimination_pairs > 0 and c.specificity_pairs > 0) or bool(_recorded_points(folder.record.task(task)))


def _rc() -> Any:
    return _matplotlib().rc_context(_RC)


def _warn(message: str) -> None:
    warnings.warn(message, stacklevel=3)


__all__ = ["CurveData", "curve_data", "ds_curve_svg", "ds_figure", "eps_label", "plot_ds_curves", "plot_runs",
           "plot_shift_bars", "run_labels", "shift_figure"]
