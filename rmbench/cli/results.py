"""``rmbench`` commands on results already written: leaderboard build, compare, verify, plot,
export, report. They read run folders; only ``verify --against MODEL`` scores a model (on the
run's tasks, through :mod:`rmbench.scoring.rerun`)."""

from __future__ import annotations

from pathlib import Path

import typer

from rmbench.cli.common import _print_leaderboard, app, console, err_console, leaderboard_app, user_errors
from rmbench.cli.tables import Grid, print_grid
from rmbench.errors import RMBenchError
from rmbench.results.publishing.export_formats import export_formats_help
from rmbench.results.publishing.formats import formats_help, options_help


@leaderboard_app.command("build")
def leaderboard_build(
    runs: list[Path] = typer.Argument(..., help="Run folders written by 'rmbench eval', or folders to search for "
                                      "them (every run under the folder)."),
    fmt: str | None = typer.Option(None, "--format", "-f", help=f"{formats_help()}; or a plugin's (entry "
                                      "points rmbench.formats). Default: the one whose suffix --out has, else md. "
                                      "Without --out, the text is printed (without --format: the tables)."),
    format_option: list[str] = typer.Option([], "--format-option", metavar="K=V", help="An option of the "
                                            f"format, NAME=VALUE (repeatable): {options_help()}."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Write the leaderboard here (the terminal shows "
                                       "its tables)."),
    eps: float | None = typer.Option(None, "--eps", help="eps of the D/Spec columns (default: 0.1 if every run "
                                        "has it, else the smallest eps they share)."),
    layout: str = typer.Option("auto", "--layout", help="one (a single table of every task's metrics), per-task "
                               "(a table per task) or auto (per task when one table would have more than 10 "
                               "metric columns)."),
    metrics: str = typer.Option("", "--metrics", metavar="NAME,...", help="More metric columns, after each task's "
                                "headline: any metric the runs report for a task (docs/reference/metrics.md), e.g. "
                                "length_bias_gap,reward_margin."),
) -> None:
    """Merge runs into one leaderboard (main table, official layouts, shifts); cells are shared by comparable runs."""
    from rmbench.files import atomic_write_text
    from rmbench.results.publishing.formats import RenderContext, format_for_path, output_format, render
    from rmbench.results.publishing.leaderboard import build_leaderboard
    from rmbench.results.storage.folder import find_runs

    with user_errors():
        name = fmt if fmt is not None else format_for_path(out) if out is not None else "md"
        options = output_format(name).resolve_options(format_option)  # a bad name or option: before any work
        folders = find_runs(runs)
        lb = build_leaderboard(folders, eps=eps, layout=layout, metrics=_metric_names(metrics))
        if out is None and fmt is None:
            _print_leaderboard(lb)
            return
        text = render(lb, name, RenderContext(options, lambda: _curve_figures(folders, lb, err_console)))
        if out is None:
            typer.echo(text, nl=False)
            return
        atomic_write_text(out, text)
        _print_leaderboard(lb)
        err_console.print(f"Wrote {out}", markup=False, highlight=False)


def _curve_figures(folders, lb, console_) -> dict[str, str]:
    """The D-Spec curve of each task as inline SVG, when matplotlib is installed."""
    from rmbench.results.storage.rewards_file import RewardsFileError

    try:
        from rmbench.results.publishing.plot import ds_curve_svg
    except ImportError:
        return {}
    figures = {}
    for task in lb.eps:
        if "#" in task:  # a column group of runs on other data: its curve would mix them with the first
            continue
        try:
            figures[task] = ds_curve_svg(folders, task)
        except RewardsFileError:  # a damaged rewards.jsonl: refused (one line), not a page without curves
            raise
        except RMBenchError as exc:  # matplotlib missing: the page has the tables only
            console_.print(f"note: no curves in the page: {exc}", markup=False, highlight=False)
            return {}
    return figures


@app.command("compare")
def compare_command(
    run_a: Path = typer.Argument(..., help="Run folder of model A."),
    run_b: Path = typer.Argument(..., help="Run folder of model B."),
    task: list[str] = typer.Option([], "--task", metavar="TASK",
                                   help="Compare only these tasks (default: all shared). Repeatable."),
    data: list[str] = typer.Option([], "--data", metavar="TASK=PATH",
                                   help="TASK=PATH: the file the runs were scored on, if moved."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Paired bootstrap resamples."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
) -> None:
    """A - B on every metric of the shared tasks at the eps both runs have, with paired bootstrap 95% CIs."""
    from rmbench.results.statistics.compare import compare_runs
    from rmbench.results.storage.folder import load_run
    from rmbench.tasks.loading import parse_data_overrides

    with user_errors():
        a, b = load_run(run_a), load_run(run_b)
        rows = compare_runs(a, b, task, {d.task: d for d in parse_data_overrides(data)}, bootstrap, seed)
        print_grid(console, _compare_grid(a.record.model.name, b.record.model.name, rows))


def _compare_grid(name_a: str, name_b: str, rows) -> Grid:
    """One row per compared (task, metric, subset, eps); nan prints as a dash."""
    from rmbench.results.storage.record import eps_display

    def fmt(v: float) -> str:
        return "–" if v != v else f"{v:.4f}"

    cells = []
    for r in rows:
        eps = "" if r.eps is None else eps_display(r.eps, r.eps_unit)
        ci = "" if r.ci_low != r.ci_low else f"[{r.ci_low:.4f}, {r.ci_high:.4f}]"
        star = "*" if r.ci_low == r.ci_low and (r.ci_low > 0 or r.ci_high < 0) else ""
        cells.append((r.task, r.shift or "", r.metric, r.subset or "", eps, fmt(r.value_a), fmt(r.value_b),
                      fmt(r.diff), ci, star))
    return Grid(headers=("task", "shift", "metric", "subset", "eps", "A", "B", "A - B", "95% CI", ""),
                rows=tuple(cells), keys=3, title=f"{name_a} (A) vs {name_b} (B)",
                caption="A - B with a paired bootstrap 95% CI over groups; * = CI excludes 0; shift: a slice of a "
                        "shift task ('none' = the originals; blank = the whole task); pairwise_accuracy_shift_gap = "
                        "the slice's accuracy minus the originals', per model (A's gap - B's gap)")


@app.command("plot")
def plot_command(
    runs: list[Path] = typer.Argument(..., help="Run folders (or folders holding them)."),
    out: Path = typer.Option(Path("plots"), "--out", "-o", help="Folder for the figures."),
    fmt: str = typer.Option("png,svg", "--format", "-f", help="Comma-separated: png, svg."),
    task: list[str] = typer.Option([], "--task", metavar="TASK",
                                   help="Only these tasks (default: every task of the runs)."),
) -> None:
    """D(eps)-Spec(eps) curves per task (one curve per run) and original-vs-shifted bars for shift tasks."""
    from rmbench.errors import ConfigError
    from rmbench.results.publishing.plot import plot_runs
    from rmbench.results.storage.folder import find_runs

    with user_errors():
        formats = tuple(f.strip() for f in fmt.split(",") if f.strip())
        bad = [f for f in formats if f not in ("png", "svg")]
        if bad or not formats:
            raise ConfigError(f"--format {fmt!r}: use png, svg or png,svg")
        paths = plot_runs(find_runs(runs), out, formats, tuple(task) or None,
                         warn=lambda m: err_console.print(f"note: {m}", markup=False, highlight=False))
        for path in paths:
            console.print(f"Wrote {path}", markup=False, highlight=False)


@app.command("export")
def export_command(
    runs: list[Path] = typer.Argument(..., help="Run folders (or folders holding them)."),
    fmt: str = typer.Option("every-eval-ever", "--format", "-f", help=f"{export_formats_help()}."),
    out: Path = typer.Option(Path("export"), "--out", "-o", help="Folder for the exported files."),
    force: bool = typer.Option(False, "--force", help="Replace exported files already in --out whose content "
                               "differs (without it the export stops and writes nothing); rewardbench2-results: "
                               "write files of a local copy or --limit run, with a note inside."),
    source_url: str | None = typer.Option(None, "--source-url", metavar="URL", help="hf-eval-results: where the "
                                          "runs can be seen (a repo or page), written as each entry's source."),
    data: list[str] = typer.Option([], "--data", metavar="TASK=PATH",
                                   help="TASK=PATH: the file the runs were scored on, if moved (formats with "
                                   "per-item files reload it)."),
    name: str | None = typer.Option(None, "--name", metavar="ORG/NAME", help="The model's Hub id (runs of one "
                                    "model; NAME alone: local/NAME), checked as the Hub checks it; default its "
                                    "weights' Hub id, or the model a published file records, else local/NAME."),
) -> None:
    """Export runs to a community results format (Every Eval Ever, the Hub's eval results, RewardBench 2's
    results layout)."""
    from rmbench.results.publishing.export import export_runs
    from rmbench.results.publishing.export_formats import ExportOptions
    from rmbench.results.storage.folder import find_runs
    from rmbench.tasks.loading import parse_data_overrides

    with user_errors():
        options = ExportOptions(source_url=source_url, data={d.task: d for d in parse_data_overrides(data)},
                                name=name, force=force)
        export_runs(find_runs(runs), out, fmt, overwrite=force, options=options,
                    warn=lambda m: err_console.print(f"note: {m}", markup=False, highlight=False),
                    said=lambda path, written: console.print(
                        f"{'Wrote' if written else 'Unchanged (already this content)'} {path}", markup=False,
                        highlight=False))


@app.command("report")
def report_command(
    runs: list[Path] = typer.Argument(..., help="Run folders (or folders holding them) of one task set."),
    out: Path = typer.Option(..., "--out", "-o", help="The HTML file to write (self-contained; opens offline)."),
    top: int = typer.Option(20, "--top", help="Examples per table (the page says how many there are in all)."),
    max_chars: int = typer.Option(2000, "--max-chars", help="Cut prompts and answers longer than this (visibly)."),
    data: list[str] = typer.Option([], "--data", metavar="TASK=PATH",
                                   help="TASK=PATH: the file the runs were scored on, if moved."),
    force: bool = typer.Option(False, "--force", help="Replace --out if it exists."),
) -> None:
    """One HTML page: headline and official tables with CIs, D-Spec curves, per-slice bars, the most
    oversensitive equal-utility pairs, the worst discrimination failures, length bias and rewrite flips."""
    from rmbench.results.publishing.report import ReportOptions, write_report
    from rmbench.results.storage.folder import find_runs
    from rmbench.tasks.loading import parse_data_overrides

    with user_errors():
        options = ReportOptions(top=top, max_chars=max_chars, data={d.task: d for d in parse_data_overrides(data)})
        path = write_report(find_runs(runs), out, options, overwrite=force,
                            warn=lambda m: err_console.print(f"note: {m}", markup=False, highlight=False))
        console.print(f"Wrote {path}", markup=False, highlight=False)


@app.command("verify")
def verify_command(
    run: Path = typer.Argument(..., help="Run folder to verify (written by 'rmbench eval')."),
    against: str = typer.Option(..., "--against", metavar="SPEC", help="The reference: another run folder, or any "
                                "--model spec of 'rmbench eval', scored on exactly RUN's tasks, data, --limit sample "
                                "and eps into a run folder (--out) through the score cache."),
    task: list[str] = typer.Option([], "--task", metavar="TASK",
                                   help="Verify only these tasks (default: every task of RUN). Repeatable."),
    data: list[str] = typer.Option([], "--data", metavar="TASK=PATH",
                                   help="TASK=PATH: the file RUN was scored on, if moved."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Where a model SPEC's run goes (default: beside "
                                       "RUN, RUN__vs__<model>)."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace --out if it holds another run."),
    model_arg: list[str] = typer.Option([], "--model-arg", metavar="KEY=VALUE",
                                        help="KEY=VALUE overriding an argument of a model SPEC. Repeatable."),
    tolerance: float = typer.Option(1e-6, "--tolerance", help="Two rewards (or scores) a and b are equal when "
                                    "|a - b| <= tolerance x max(1, |a|, |b|)."),
    top: int = typer.Option(5, "--top", help="Items listed per task (largest reward differences; items whose "
                            "correctness disagrees)."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Paired bootstrap resamples of the score differences."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    json_out: Path | None = typer.Option(None, "--json", metavar="FILE", help="Also write the verification as "
                                            "JSON here."),
    force: bool = typer.Option(False, "--force", help="Replace --json FILE if it exists."),
    device: str = typer.Option("auto", "--device", help="A model SPEC's device: cpu, cuda, mps, cuda:N or auto."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir",
                                          help="Score cache (default: $XDG_CACHE_HOME/rmbench/scores)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the score cache "
                                  "(a judge: its call cache)."),
) -> None:
    """Does RUN reproduce a reference? Per-item agreement, score differences with paired 95% CIs, and a verdict:
    equal, within noise or different (exit status 1)."""
    import json

    from rmbench.cli.common import _parse_model_args, _warn, progress_bars
    from rmbench.errors import ConfigError
    from rmbench.files import atomic_write_text
    from rmbench.models.trained import is_trained_folder
    from rmbench.results.statistics.verify import verify_runs
    from rmbench.results.storage.folder import load_run
    from rmbench.tasks.loading import parse_data_overrides

    with user_errors():
        overrides = {d.task: d for d in parse_data_overrides(data)}
        args = _parse_model_args(model_arg)
        if json_out is not None and json_out.exists() and not force:
            raise ConfigError(f"--json {json_out} exists; pass --force to replace it")
        folder = load_run(run)
        reference_path = Path(against).expanduser()
        _check_against(against, reference_path)
        if reference_path.is_dir() and not is_trained_folder(against):  # a trained model folder is a model SPEC
            if model_arg or out is not None:
                raise ConfigError(f"--against {against} is a run folder: --model-arg and --out are for a model SPEC")
            reference = load_run(reference_path)
        else:
            reference = _reference_run(folder, against, out, tuple(task), overrides, args, overwrite, device,
                                       cache_dir, no_cache, progress_bars, _warn)
        result = verify_runs(folder, reference, task, overrides, bootstrap, seed, tolerance, top)
        _print_verification(result)
        if json_out is not None:
            atomic_write_text(json_out, json.dumps(result.to_json(), indent=1, ensure_ascii=False) + "\n")
            err_console.print(f"Wrote {json_out}", markup=False, highlight=False)
    if result.verdict == "different":
        raise typer.Exit(1)


def _check_against(against: str, path: Path) -> None:
    """``--against`` as a folder: a missing folder, or one that holds neither a run nor a trained
    model, is one error line saying so (never an unknown model's list of model kinds)."""
    from rmbench.errors import ConfigError
    from rmbench.models.trained import MODEL_ENTRY

    looks_like_path = ":" not in against and ("/" in against or "\\" in against or against.startswith((".", "~")))
    if looks_like_path and not path.exists():
        raise ConfigError(f"--against {against}: no such folder (give a run folder, a folder written by rmbench "
                          f"train, or a model SPEC such as python:my_rm.py:score)")
    if path.is_dir() and not (path / "results.json").is_file() and not (path / MODEL_ENTRY).is_file():
        raise ConfigError(f"--against {against}: the folder holds neither a run (results.json) nor a trained model "
                          f"({MODEL_ENTRY})")


def _reference_run(folder, spec, out, tasks, data, model_args, overwrite, device, cache_dir, no_cache, bars, warn):
    """``spec`` (a model) scored on ``folder``'s tasks, its run folder (one error line for an unknown model)."""
    from rmbench.models import Runtime
    from rmbench.scoring.config import ExecutionSettings
    from rmbench.scoring.rerun import evaluate_on_run_tasks

    execution = ExecutionSettings(runtime=Runtime(device=device), cache_dir=str(cache_dir) if cache_dir else None,
                                  use_cache=not no_cache)
    with bars("responses") as progress:
        reference = evaluate_on_run_tasks(folder, spec, out, tasks, data, model_args, execution, overwrite, progress,
                                          warn)
    err_console.print(f"Wrote the reference run {reference.path}", markup=False, highlight=False, soft_wrap=True)
    return reference


def _print_verification(result) -> None:
    """The agreement table, the score differences, the items named, then a verdict line per task and overall."""
    def num(v: float) -> str:
        return "–" if v != v else f"{v:.4g}"

    agreement = [(t.task, str(t.n_items), f"{t.correctness_agrees}/{t.n_judged}", f"{t.order_agrees}/{t.n_items}",
                  f"{t.rewards_equal}/{t.n_responses}", num(t.max_abs_diff), t.verdict) for t in result.tasks]
    print_grid(console, Grid(
        headers=("task", "items", "correctness agrees", "order agrees", "rewards equal", "max |Δr|", "verdict"),
        rows=tuple(agreement), title=f"{result.model_run} (run) vs {result.model_reference} (reference)",
        caption=f"per item: correct = every better response outscores every worse one; order = every pair of its "
                f"responses ranked alike (blind to reward scales); rewards equal within {result.tolerance:g} "
                f"(relative above 1); |Δr| = |r_run - r_ref| in raw reward units, which two different models "
                f"need not share"))
    scores = []
    for t in result.tasks:
        for s in t.scores:
            c = s.comparison
            ci = "" if not c.difference.has_ci else f"[{c.ci_low:.4f}, {c.ci_high:.4f}]"
            scores.append((t.task, s.slice_name, c.metric, _score(c.value_a), _score(c.value_b), _score(c.diff), ci,
                           "" if s.covers_zero else "*"))
    if scores:
        print_grid(console, Grid(headers=("task", "slice", "score", "run", "reference", "run - ref", "95% CI", ""),
                                 rows=tuple(scores), keys=3, title="score differences",
                                 caption="paired bootstrap 95% CI over the task's units; * = CI excludes 0"))
    items = []
    for t in result.tasks:
        for why, listed in (("correctness", t.disagreeing), ("largest |Δr|", t.largest)):
            for i in listed:
                items.append((t.task, why, i.item, i.subset or "", num(i.max_abs_diff), _yes(i.correct_run),
                              _yes(i.correct_reference), _yes(i.order_agrees)))
    if items:
        print_grid(console, Grid(headers=("task", "listed for", "item", "subset", "max |Δr|", "correct (run)",
                                          "correct (ref)", "order agrees"),
                                 rows=tuple(items), keys=4, title="items",
                                 caption="per task, at most --top of each: correctness = items whose correctness "
                                         "disagrees (largest |Δr| first); largest |Δr| = the items whose rewards "
                                         "differ most"))
    for t in result.tasks:
        console.print(f"{t.task}: {t.summary}", markup=False, highlight=False, soft_wrap=True)
    for line in result.plugins:  # the two runs' numbers were computed by other plugin code
        console.print(f"the runs differ in {line}", markup=False, highlight=False, soft_wrap=True)
    console.print(f"verdict: {result.verdict}", markup=False, highlight=False)


def _score(v: float) -> str:
    return "–" if v != v else f"{v:.4f}"


def _yes(flag: bool | None) -> str:
    return "–" if flag is None else "yes" if flag else "no"


def _metric_names(text: str) -> tuple[str, ...]:
    """``--metrics a,b``: the names, each once, in order."""
    return tuple(dict.fromkeys(m.strip() for m in text.split(",") if m.strip()))
