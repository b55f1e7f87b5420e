"""Figures of stored runs: the D(eps)-Spec(eps) curve of a task, and original-vs-shifted bars.

The curve is the one of arXiv 2606.21795 ("Discretizing Reward Models"): as eps grows from 0
the reward model calls more pairs "equal", so specificity Spec(eps) rises and discrimination
D(eps) falls; a run is one curve in the (Spec, D) square and the ideal is the corner (1, 1).
The curve is recomputed densely from the run's rewards (:mod:`~rmbench.results.publishing.plot_curve`),
and the points the run *recorded* (its D and Spec metric records, at eps = 0 and 0.1 sigma by
default) are marked on it (:mod:`~rmbench.results.publishing.plot_marks`). When the data can no
longer be reloaded, only the recorded points are drawn, with a note saying so.

matplotlib is optional (``pip install 'rmbench[plot]'``): imported on first use and drawn on
the Agg canvas (:mod:`~rmbench.results.publishing.plot_canvas`). Files are written atomically;
SVG output is deterministic (fixed hash salt, no date).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from rmbench.core.metric_registry import metric_def
from rmbench.errors import ConfigError
from rmbench.results.publishing.plot_canvas import (
    add_notes,
    colour,
    load_matplotlib,
    new_figure,
    rc_context,
    render_figure,
    save_figure,
)
from rmbench.results.publishing.plot_curve import CurveData, curve_data, recorded_points
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

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

DEFAULT_FORMATS = ("png", "svg")


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


def ds_figure(folders: Sequence[RunFolder], task: str) -> tuple[Figure, list[str]]:
    """The D-Spec figure of ``task`` for the runs that have it, and the notes drawn under it. A
    run's colour, line and marker follow its place among all ``folders`` (:func:`run_styles`), so
    it keeps them in every figure and page of one build, whichever runs have the task."""
    style = run_styles(folders)
    folders = _with_task(folders, task)
    curves = [curve_data(f, task, label) for f, label in zip(folders, run_labels(folders))]
    fig = new_figure(6.4, 6.2)
    fig.subplots_adjust(left=0.11, right=0.97, top=0.93, bottom=0.1)
    ax = fig.add_subplot(1, 1, 1)
    same, room = identical_to(curves), LabelRoom()
    for n, c in enumerate(curves):
        i = style[id(folders[n])]  # the run's place in the whole build: its colour, line and marker
        shade = colour(i)
        ok = ~np.isnan(c.spec) & ~np.isnan(c.d)
        auc = folders[n].record.task(task).metric("ds_auc")
        legend = c.label + (f"  (ds_auc {auc.value:.3f})" if auc is not None and auc.estimate.defined else "")
        if not c.dense:
            legend += "  [recorded points only]"
        if (j := same[n]) is not None:
            legend += f"  = {curves[j].label}"
        if ok.any():  # a style per run (dashed when only the recorded points): identical curves stay visible
            ax.plot(c.spec[ok], c.d[ok], color=shade, linewidth=1.8, linestyle=linestyle(i) if c.dense else "--",
                    drawstyle="default", label=legend, zorder=3 + 0.01 * n)
        # the eps labels of a curve identical to an earlier one would only repeat its labels
        annotate_recorded(ax, c, shade, marker(i), room, labels=same[n] is None)
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
    add_notes(fig, notes)
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
    fig = new_figure(max(6.4, 1.6 + len(shifts) * max(1.8, 0.75 * len(folders))), 4.8)
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
            ax.bar(xs[j], rec.value, width * 0.92, color=colour(style[id(folder)]), label=label,
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
    add_notes(fig, ["Δ: paired gap of pairwise accuracy, shifted minus original groups, with its 95% "
                     "paired-bootstrap CI; dotted line: chance (0.5)"])
    return fig


def plot_ds_curves(folders: Sequence[RunFolder], task: str, out_stem: Path,
                   formats: Sequence[str] = DEFAULT_FORMATS,
                   warn: Callable[[str], None] | None = None) -> list[Path]:
    """The D-Spec curves of ``task`` (one per run that has it) as ``out_stem.png`` etc.

    Returns the paths written. ``warn`` receives each note (a run drawn from its recorded
    points only, a curve not defined); the notes are printed under the figure too.
    """
    with rc_context():
        fig, notes = ds_figure(folders, task)
        paths = save_figure(fig, Path(out_stem), formats)
    for note in notes:
        (warn or _warn)(note)
    return paths


def plot_shift_bars(folders: Sequence[RunFolder], task: str, out_stem: Path,
                    formats: Sequence[str] = DEFAULT_FORMATS) -> list[Path]:
    """Original-vs-shifted pairwise accuracy bars of ``task`` as ``out_stem.png`` etc.;
    ConfigError when no run has shifts on the task."""
    with rc_context():
        return save_figure(shift_figure(folders, task), Path(out_stem), formats)


def ds_curve_svg(folders: Sequence[RunFolder], task: str) -> str:
    """The D-Spec curve figure of ``task`` as inline SVG text (no XML prolog or doctype), for
    embedding in an HTML page. Deterministic: the same runs give the same text."""
    with rc_context():
        fig, _ = ds_figure(folders, task)
        text = render_figure(fig, "svg").decode("utf-8")
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
    load_matplotlib()
    warn = warn or _warn
    names = list(dict.fromkeys(t for f in folders for t in f.record.task_names))
    if tasks is not None:
        unknown = [t for t in tasks if t not in names]
        if unknown:
            raise ConfigError(f"no run has task {unknown[0]!r} (the runs have {', '.join(names) or 'no tasks'})")
        names = list(dict.fromkeys(tasks))
    out_dir = Path(out_dir)
    paths: list[Path] = []
    with rc_context():
        for task in names:
            if any(_has_curve(f, task) for f in _with_task(folders, task)):
                fig, notes = ds_figure(folders, task)
                paths += save_figure(fig, out_dir / f"{task}_ds_curve", formats)
                for note in notes:
                    warn(note)
            else:
                warn(f"task {task!r}: no D-Spec curve (no run has both discrimination and specificity pairs)")
            if any(f.record.task(task).shifts for f in _with_task(folders, task)):
                paths += save_figure(shift_figure(folders, task), out_dir / f"{task}_shift", formats)
            series = [s for s in training_series(folders) if len(s.with_task(task)) > 1]
            if series:
                fig = new_figure(8.0, 4.4)
                draw_steps(fig, series, task, colour)
                paths += save_figure(fig, out_dir / f"{task}_steps", formats)
    return paths


def _has_curve(folder: RunFolder, task: str) -> bool:
    """Whether the run has (or recorded) both kinds of pairs on ``task``."""
    c = folder.record.task(task).counts
    return (c.discrimination_pairs > 0 and c.specificity_pairs > 0) or bool(recorded_points(folder.record.task(task)))


def _warn(message: str) -> None:
    warnings.warn(message, stacklevel=3)


__all__ = ["CurveData", "curve_data", "ds_curve_svg", "ds_figure", "eps_label", "plot_ds_curves", "plot_runs",
           "plot_shift_bars", "run_labels", "shift_figure"]
