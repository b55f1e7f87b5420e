"""D and Spec over training steps: the figure of the run folders an evaluation during training
writes (the TRL callback, ``rmbench train --eval-every``: one run per evaluated step).

Those runs record their step in the model spec (``args.step``, with ``args.model``, where the
training writes); the runs of one training are the runs whose spec is the same but for the step
(:func:`training_series`). For each task the figure draws, against the step, D(eps) and Spec(eps)
at every eps the runs recorded and ds_auc, each with its bootstrap 95% CI as a band where the run
has one: the recorded metric records, nothing recomputed. :mod:`rmbench.results.publishing.plot`
writes it as ``{task}_steps.{fmt}`` beside the D-Spec curves (one curve per step) when a training
has two or more evaluated steps.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rmbench.core.metric_registry import metric_def
from rmbench.results.storage.folder import RunFolder

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

LINES = (("discrimination", True), ("specificity", True), ("ds_auc", False))
"""The metrics drawn, and whether each is drawn at every recorded eps."""


@dataclass(frozen=True)
class TrainingSeries:
    """The evaluated steps of one training, in step order."""

    label: str
    steps: tuple[tuple[int, RunFolder], ...]

    def with_task(self, task: str) -> tuple[tuple[int, RunFolder], ...]:
        return tuple((s, f) for s, f in self.steps if f.record.has_task(task))


def _step(folder: RunFolder) -> int | None:
    step = (folder.record.model.spec.get("args") or {}).get("step")
    return step if isinstance(step, int) and not isinstance(step, bool) else None


def _training_key(folder: RunFolder) -> str:
    spec = dict(folder.record.model.spec)
    args = {k: v for k, v in (spec.get("args") or {}).items() if k != "step"}
    return json.dumps({"kind": spec.get("kind"), "args": args}, sort_keys=True, default=str)


def training_series(folders: Sequence[RunFolder]) -> list[TrainingSeries]:
    """The runs of each training among ``folders`` (runs that record a step), in order of first
    appearance; a training's runs sorted by step."""
    groups: dict[str, list[tuple[int, RunFolder]]] = {}
    for f in folders:
        step = _step(f)
        if step is not None:
            groups.setdefault(_training_key(f), []).append((step, f))
    out = []
    for key, runs in groups.items():
        where = str(json.loads(key)["args"].get("model", ""))
        label = "/".join(where.replace("\\", "/").rstrip("/").split("/")[-2:]) or "training"
        out.append(TrainingSeries(label, tuple(sorted(runs, key=lambda r: r[0]))))
    return out


def _points(steps: Sequence[tuple[int, RunFolder]], task: str, metric: str, eps: float | None
            ) -> tuple[list[int], list[float], list[float], list[float]]:
    xs, ys, lo, hi = [], [], [], []
    for step, folder in steps:
        rec = folder.record.task(task).metric(metric, eps)
        if rec is None or rec.value != rec.value:
            continue
        xs.append(step)
        ys.append(rec.value)
        lo.append(rec.ci_low if rec.ci_low is not None else rec.value)
        hi.append(rec.ci_high if rec.ci_high is not None else rec.value)
    return xs, ys, lo, hi


def draw_steps(fig: Figure, series: Sequence[TrainingSeries], task: str, colour: Any) -> None:
    """Draw ``task``'s metrics over steps for each training of ``series`` on ``fig``;
    ``colour(i)`` gives the i-th line colour."""
    from matplotlib.ticker import MaxNLocator

    ax = fig.add_subplot(1, 1, 1)
    fig.subplots_adjust(left=0.1, right=0.74, top=0.86, bottom=0.13)
    styles = ("-", "--", "-.", ":")
    for n, s in enumerate(series):
        steps = s.with_task(task)
        if not steps:
            continue
        first = steps[0][1].record.task(task)
        line = 0
        for metric, by_eps in LINES:
            for eps in (first.eps if by_eps else (None,)):
                xs, ys, lo, hi = _points(steps, task, metric, eps)
                if not xs:
                    continue
                label = metric_def(metric).label + ("" if eps is None else
                                                    f"@{eps:g}{'σ' * (first.eps_unit == 'sigma')}")
                label += f" ({s.label})" if len(series) > 1 else ""
                c = colour(line)
                ax.plot(xs, ys, color=c, linestyle=styles[n % len(styles)], marker="o", markersize=3.5,
                        linewidth=1.6, label=label)
                if lo != ys or hi != ys:
                    ax.fill_between(xs, lo, hi, color=c, alpha=0.12, linewidth=0)
                line += 1
    ax.set_ylim(-0.02, 1.04)
    ax.grid(True, color="0.9", linewidth=0.8)
    ax.set_xlabel("training step")
    ax.set_ylabel("value (band: bootstrap 95% CI)")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_title(f"{task}: discrimination and specificity over training" +
                 (f"\n{series[0].label}" if len(series) == 1 else ""), fontsize=10)
    if ax.get_legend_handles_labels()[0]:
        ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=7.5, framealpha=0.9)


__all__ = ["TrainingSeries", "draw_steps", "training_series"]
