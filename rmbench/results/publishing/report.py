"""``rmbench report``: one self-contained HTML page for one run or several runs of one task set.

:func:`build_report` assembles a :class:`Report` from run folders: the leaderboard tables (with
CIs), the D-Spec curves, per-slice bars, and per task and run the example pairs of
:mod:`rmbench.results.publishing.examples` (from the reloaded groups and the aligned rewards; a task whose
data cannot be reloaded keeps its aggregate parts and says why). :func:`write_report` renders it
(:mod:`rmbench.results.publishing.report_html`) and writes it atomically. An example whose prompt
carries images shows their thumbnails (:mod:`rmbench.results.publishing.thumbnails`), made from
the reloaded data's image bytes and known by content hash, never by path.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from rmbench.core.images import Image
from rmbench.errors import ConfigError, RMBenchError
from rmbench.files import atomic_write_text
from rmbench.results.publishing.examples import (
    FlipExample,
    LengthPoints,
    PairExample,
    Selection,
    annotate,
    discrimination_failures,
    length_points,
    oversensitive_pairs,
    preference_flips,
)
from rmbench.results.publishing.leaderboard import Leaderboard, build_leaderboard
from rmbench.results.publishing.report_svg import Bar, bars_svg, scatter_svg
from rmbench.results.publishing.thumbnails import Thumbnail, thumbnails
from rmbench.results.storage.folder import RunFolder
from rmbench.results.storage.record import TaskResult
from rmbench.results.storage.reload import task_scored
from rmbench.results.storage.rewards_file import RewardsFileError
from rmbench.tasks.loading import DataOverride


@dataclass(frozen=True)
class ReportOptions:
    """``top``: examples per table; ``max_chars``: an answer or prompt longer than this is cut
    (visibly); ``points``: most points per run in the length scatter; ``data``: task -> moved data file."""

    top: int = 20
    max_chars: int = 2000
    points: int = 1500
    data: Mapping[str, DataOverride | str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.top < 1:
            raise ConfigError(f"--top {self.top}: give at least 1")
        if self.max_chars < 1:
            raise ConfigError(f"--max-chars {self.max_chars}: give at least 1")


@dataclass(frozen=True)
class RunExamples:
    """One run's example tables on one task (``flips`` only for tasks of rewrites)."""

    run: int
    oversensitive: Selection
    failures: Selection
    length: LengthPoints
    flips: Selection | None = None


@dataclass(frozen=True)
class TaskSection:
    """What the page shows of one task: bar figures, the length scatter, examples per run, notes."""

    name: str
    bars: tuple[str, ...]
    scatter: str | None
    examples: tuple[RunExamples, ...]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Report:
    run_names: tuple[str, ...]
    leaderboard: Leaderboard
    curves: Mapping[str, str]
    tasks: tuple[TaskSection, ...]
    options: ReportOptions
    notes: tuple[str, ...] = ()
    thumbnails: Mapping[str, Thumbnail] = field(default_factory=dict)
    """sha256 -> the thumbnail (or the note why none) of each image an example's prompt carries."""


def _task_names(folders: Sequence[RunFolder]) -> list[str]:
    names: list[str] = []
    for f in folders:
        names.extend(t.name for t in f.record.tasks if t.name not in names)
    return names


def _bars(name: str, results: Sequence[tuple[int, TaskResult]], eps: float | None,
          run_names: Sequence[str]) -> tuple[str, ...]:
    """One figure per headline metric: overall, then each subset and shift, one bar per run."""
    first = results[0][1]
    figures = []
    for metric in first.headline:
        bars = []
        for run, result in results:
            for rec in result.metrics:
                if rec.metric != metric or (rec.eps is not None and eps is not None and rec.eps != eps):
                    continue
                label = (f"subset {rec.subset}" if rec.subset else f"shift {rec.shift}" if rec.shift else "all")
                bars.append(Bar(label, run, rec.value, rec.ci_low, rec.ci_high))
        if bars:
            bars.sort(key=lambda b: (b.label != "all", b.label, b.run))
            unit = f" at eps {eps:g} {first.eps_unit}" if eps is not None and any(
                r.eps is not None for r in first.metrics if r.metric == metric) else ""
            figures.append(bars_svg(f"{name}: {metric}{unit}", bars, run_names))
    return tuple(figures)


def _run_examples(run: int, folder: RunFolder, name: str, options: ReportOptions) -> RunExamples:
    td, scored = task_scored(folder, name, options.data)
    rewards = scored.rewards
    sigma = folder.record.task(name).sigma
    groups = td.groups
    has_forms = any(g.forms is not None for g in groups)
    judged = judgment_texts(folder.judgments(), name)

    def shown(sel: Selection) -> Selection:
        return annotate(sel, scored.moved, judged)

    return RunExamples(
        run, shown(oversensitive_pairs(name, groups, rewards, options.top, sigma)),
        shown(discrimination_failures(name, groups, rewards, options.top, sigma)),
        length_points(groups, rewards, options.points, sigma),
        shown(preference_flips(name, groups, rewards, options.top, sigma)) if has_forms else None)


def judgment_texts(rows: Sequence[dict], task: str, max_chars: int = 600) -> dict[tuple[str, int], str]:
    """(group id, response index) -> what the judge answered about that response on ``task``:
    each call's parsed value and text (a pairwise judge's two games, in order)."""
    out: dict[tuple[str, int], list[str]] = {}
    for j in rows:
        if j.get("task") != task:
            continue
        where = " ".join(f"{k} {j[k]}" for k in ("order", "slot", "sample", "attempt") if k in j)
        parsed = "unparsed" if j.get("parsed") is None else f"parsed {j['parsed']}"
        text = str(j.get("text") or "")
        text = text if len(text) <= max_chars else text[:max_chars] + " […]"
        out.setdefault((str(j.get("group_id")), int(j.get("response_index", -1))), []).append(
            f"[{(where + ', ') if where else ''}{parsed}] {text}")
    return {k: "\n".join(v) for k, v in out.items()}


def _task_section(name: str, folders: Sequence[RunFolder], lb: Leaderboard, run_names: Sequence[str],
                  options: ReportOptions) -> TaskSection:
    results = [(i, f.record.task(name)) for i, f in enumerate(folders) if f.record.has_task(name)]
    notes, examples = [], []
    for run, result in results:
        if result.status == "error":
            notes.append(f"{run_names[run]}: the task failed ({result.error}); no examples")
            continue
        try:
            examples.append(_run_examples(run, folders[run], name, options))
        except RewardsFileError:  # a damaged rewards.jsonl is refused, never a note
            raise
        except RMBenchError as exc:
            notes.append(f"{run_names[run]}: the task's data cannot be reloaded ({exc}); aggregate parts only")
    scatter = (scatter_svg(f"{name}: length bias over equal-utility pairs",
                           [(x.run, x.length) for x in examples], run_names) if examples else None)
    eps = lb.eps.get(name)
    return TaskSection(name, _bars(name, results, eps[0] if eps else None, run_names), scatter, tuple(examples),
                       tuple(notes))


def _curves(folders: Sequence[RunFolder], lb: Leaderboard, warn: Callable[[str], None]) -> dict[str, str]:
    try:
        from rmbench.results.publishing.plot import ds_curve_svg
    except ImportError:  # pragma: no cover - plot imports matplotlib lazily
        return {}
    curves = {}
    for task in lb.eps:
        if "#" in task:  # a column group of runs on other data
            continue
        try:
            curves[task] = ds_curve_svg(folders, task)
        except RewardsFileError:
            raise
        except RMBenchError as exc:
            warn(f"no D-Spec curves in the report: {exc}")
            return {}
    return curves


def build_report(folders: Sequence[RunFolder], options: ReportOptions | None = None,
                 warn: Callable[[str], None] = lambda m: None) -> Report:
    """The report of ``folders`` (one run, or several on one task set)."""
    if not folders:
        raise ConfigError("no runs to report on")
    options = options or ReportOptions()
    names = [f.record.model.name for f in folders]
    run_names = tuple(n if names.count(n) == 1 else f"{n} ({f.label})" for n, f in zip(names, folders))
    lb = build_leaderboard(folders)
    tasks = tuple(_task_section(t, folders, lb, run_names, options) for t in _task_names(folders))
    return Report(run_names, lb, _curves(folders, lb, warn), tasks, options,
                  thumbnails=thumbnails(_shown_images(tasks)))


def _shown_images(tasks: Sequence[TaskSection]) -> list[Image]:
    """Every image an example's prompt carries, in the page's order (repeats included)."""
    out: list[Image] = []
    for t in tasks:
        for x in t.examples:
            for sel in (x.oversensitive, x.failures, x.flips):
                for e in (sel.examples if sel is not None else ()):
                    pairs = (e.original, e.rewritten) if isinstance(e, FlipExample) else (e,)
                    out.extend(image for p in pairs if isinstance(p, PairExample) for image in p.images)
    return out


def write_report(folders: Sequence[RunFolder], out: str | Path, options: ReportOptions | None = None,
                 overwrite: bool = False, warn: Callable[[str], None] = lambda m: None) -> Path:
    """Build, render and atomically write the report to ``out``; an existing file is kept unless ``overwrite``."""
    from rmbench.results.publishing.report_html import render_report

    out = Path(out)
    if out.exists() and not overwrite:
        raise ConfigError(f"{out} exists; pass --force to replace it")
    if out.is_dir():
        raise ConfigError(f"{out} is a folder; give a file name such as {out / 'report.html'}")
    text = render_report(build_report(folders, options, warn))
    atomic_write_text(out, text)
    return out
