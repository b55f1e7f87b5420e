"""The ``rmbench`` command line: parses options and calls the library; nothing else lives here.

``rmbench train`` is in :mod:`rmbench.cli.train`; commands on results already written
(leaderboard, compare, plot, export) are in :mod:`rmbench.cli.results`; what all commands share is in
:mod:`rmbench.cli.common`.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import cast

import typer
from rich.markup import escape

from rmbench.cli.common import (
    _parse_model_args,
    _print_leaderboard,
    _warn,
    app,
    console,
    err_console,
    interrupt_exit_code,
    models_app,
    progress_bars,
    sigterm_as_interrupt,
    tasks_app,
    user_errors,
)
from rmbench.cli.tables import Grid, print_grid
from rmbench.cli.trackers import LOG_ARG_HELP, LOG_TO_HELP, log_command, log_to_trackers, open_log_to, print_errors
from rmbench.core.choices import DEVICES, DTYPE_ALIASES, DTYPES, EPS_UNITS, TRUNCATION_SIDES, DType
from rmbench.core.options import OptionValue, split_assignment
from rmbench.scoring.engines import engine_options_help, engines_help


def _details_grid(record) -> Grid:
    """Every overall metric of one run, one row per (task, metric, eps)."""
    from rmbench.results.storage.record import eps_display

    rows = []
    for m in record.records():
        if m.subset is not None or m.shift is not None:
            continue
        eps = "" if m.eps is None else eps_display(m.eps, m.eps_unit)
        value = "–" if not m.estimate.defined else f"{m.value:.4f}"
        ci = "" if not m.estimate.has_ci else f"[{m.ci_low:.4f}, {m.ci_high:.4f}]"
        rows.append((m.task, m.metric, eps, value, ci, str(m.n)))
    if record.config.n_bootstrap == 0:  # no CIs: no column that promises them
        return Grid(headers=("task", "metric", "eps", "value", "n"), rows=tuple(r[:4] + r[5:] for r in rows), keys=2,
                    title=f"{record.model.name}: all metrics (overall; no CIs: --bootstrap 0)")
    return Grid(headers=("task", "metric", "eps", "value", "95% CI", "n"), rows=tuple(rows), keys=2,
                title=f"{record.model.name}: all metrics (overall)")


def _models(model: str | None, model_list: Path | None) -> tuple[list[str], list[str | None]]:
    """The models of ``--model`` (comma-separated; None: not given) and then of ``--model-list``,
    and the name each list line gives (``NAME=SPEC``; None elsewhere)."""
    from rmbench.models.model_list import read_model_list

    models = [m.strip() for m in (model or "").split(",") if m.strip()]
    names: list[str | None] = [None] * len(models)
    if model_list is not None:
        listed = read_model_list(model_list)
        models += [m.spec for m in listed]
        names += [m.name for m in listed]
    return models, names


def _names(text: str | None, models: list[str], listed: list[str | None] | None = None) -> list[str | None]:
    """``--name a,b``: one display name per model; without --name, the names the model list gives
    (None for every model without one)."""
    from rmbench.errors import ConfigError

    if text is None:
        given = [n for n in listed or () if n is not None]
        if len(set(given)) != len(given):
            raise ConfigError(f"--model-list gives the name {next(n for n in given if given.count(n) > 1)!r} twice")
        return list(listed or [None] * len(models))
    names: list[str | None] = [n.strip() for n in text.split(",")]
    if len(names) != len(models) or not all(names):
        raise ConfigError(f"--name {text!r}: give one non-empty name per --model ({len(models)}, comma-separated)")
    if len(set(names)) != len(names):
        raise ConfigError(f"--name {text!r} gives a name twice")
    return names


@app.command("eval")
def eval_command(
    ctx: typer.Context,
    model: str = typer.Option("smollm2-135m", "--model", "-m", help="Model spec, or several separated by commas: a "
                              "name (rmbench models list) or KIND:TARGET such as python:my_rm.py:score."),
    model_list: Path | None = typer.Option(None, "--model-list", metavar="FILE", help="A file of model specs, one "
                                           "per line, SPEC or NAME=SPEC (# starts a comment line; never split at "
                                           "commas), scored after "
                                           "those --model names (without --model: instead of its default)."),
    tasks: str = typer.Option("ties_sample", "--tasks", "-t", help="Comma-separated task names."),
    data: list[str] = typer.Option([], "--data", metavar="TASK=[PART=]PATH",
                                   help="Read TASK's data from a local file (or URL#sha256=HEX). Repeatable; tasks "
                                   "that read several files take one --data each, PART naming what the file is "
                                   "(a shift task's shift, domain_shift's domain, rm_bench's domain: "
                                   "--data rm_bench=chat=chat.json --data rm_bench=code=code.json); an rm_bench "
                                   "domain may be several files, its PART repeated (safety: its two upstream files)."),
    eps: str = typer.Option("0,0.1", "--eps", help="Comma-separated eps values for D(eps) and Spec(eps)."),
    eps_unit: str = typer.Option("sigma", "--eps-unit", help=f"{' or '.join(EPS_UNITS)}: eps times the std of the "
                                 "rewards, or in reward units."),
    limit: int | None = typer.Option(None, "--limit", help="Score a sample of N groups of each task: the same "
                                        "N every time (by a hash of the group ids), spread over every slice (subset, "
                                        "shift, domain) in proportion, paired groups kept together; a larger N keeps "
                                        "every group a smaller one did. results.json records the rule."),
    skip_bad_rows: bool = typer.Option(False, "--skip-bad-rows", help="Leave out data rows that cannot be read "
                                       "(counted and quoted in results.json, with a warning) instead of failing."),
    max_length: int | None = typer.Option(None, "--max-length", help="Truncate texts to N tokens (transformers "
                                             "models); truncated texts are counted per task."),
    truncation: str = typer.Option("left", "--truncation", help="Side texts longer than --max-length lose tokens "
                                   f"from: {' or '.join(TRUNCATION_SIDES)} (left: drop the prompt's start, keep the "
                                   "response)."),
    out: Path | None = typer.Option(None, "--out", "-o", help="Run folder (default: runs/<name>__<tasks>, then "
                                       "__limitN and a --dtype other than auto: runs/length__ties_sample__limit4__"
                                       "bfloat16); with several models, the parent of one folder per model (default: "
                                       "runs)."),
    name: str | None = typer.Option(None, "--name", help="The model's display name in tables and results.json, "
                                       "and its run folder's: runs/NAME__<tasks> (default: the --model text, and "
                                       "a folder named by its last path parts). Comma-separated, one per --model."),
    overwrite: bool = typer.Option(False, "--overwrite", help="Replace a run folder that holds another run (other "
                                   "model, tasks, data or eps); without it such a folder is refused."),
    include: list[Path] = typer.Option([], "--include", metavar="DIR",
                                       help="Folder of extra task/model entry files. Repeatable."),
    bootstrap: int = typer.Option(1000, "--bootstrap", help="Bootstrap resamples for the 95% CIs (0: none)."),
    seed: int = typer.Option(0, "--seed", help="Seed of the bootstrap."),
    model_arg: list[str] = typer.Option([], "--model-arg", metavar="KEY=VALUE",
                                        help="KEY=VALUE overriding an argument of the model "
                                        "(e.g. beta=0.1, T=8). Repeatable."),
    task_arg: list[str] = typer.Option([], "--task-arg", metavar="[TASK.]KEY=VALUE", help="Set an argument of "
                                       "the tasks (or of TASK only), e.g. languages=fra_Latn,deu_Latn. Repeatable."),
    dtype: str = typer.Option("auto", "--dtype", help=f"{', '.join(DTYPES)} (or {', '.join(DTYPE_ALIASES)}); auto: "
                              "bf16 on a GPU that has it and where the CPU has bf16 units, else float32 (float16 on "
                              "a GPU without bf16)."),
    device: str = typer.Option("auto", "--device", help=f"{', '.join(DEVICES)}, or cuda:N (one GPU of several)."),
    token_budget: int | None = typer.Option(None, "--token-budget", min=1, help="Padded tokens per batch "
                                               "(default: 8192 on a CPU; on CUDA from the free memory after the "
                                               "weights load, recorded in results.json)."),
    threads: int | None = typer.Option(None, "--threads", help="CPU threads for the model (default: the CPUs this "
                                          "process may use, less those other processes keep busy, before each batch)."),
    cache_dir: Path | None = typer.Option(None, "--cache-dir",
                                          help="Score cache (default: $XDG_CACHE_HOME/rmbench/scores)."),
    no_cache: bool = typer.Option(False, "--no-cache", help="Neither read nor write the score cache "
                                  "(a judge: its call cache)."),
    trust_remote_code: bool = typer.Option(False, "--trust-remote-code",
                                           help="Allow model repositories to run their own code."),
    allow_pickle: bool = typer.Option(False, "--allow-pickle", help="Allow weights in pickle files (pytorch_model.bin, "
                                      ".pt), which can run code when loaded; default: safetensors or GGUF only."),
    engine: str = typer.Option("local", "--engine", help=f"Where batches run: {engines_help()}."),
    engine_arg: list[str] = typer.Option([], "--engine-arg", metavar="KEY=VALUE", help="An option of the --engine "
                                         f"(repeatable), checked against those it declares: {engine_options_help()}."),
    workers: int | None = typer.Option(None, "--workers", help="Deprecated: --engine-arg workers=N."),
    ray_address: str | None = typer.Option(None, "--ray-address", help="Deprecated: --engine-arg ray_address=ADDRESS."),
    worker_cpus: float | None = typer.Option(None, "--worker-cpus", help="Deprecated: --engine-arg worker_cpus=N."),
    worker_gpus: float | None = typer.Option(None, "--worker-gpus", help="Deprecated: --engine-arg worker_gpus=N."),
    score_timeout: float | None = typer.Option(None, "--score-timeout", metavar="SECONDS", help="Stop the run "
                                                  "when one batch takes longer (--engine local; default: no limit); "
                                                  "the batches before it stay in the score cache."),
    report: bool = typer.Option(False, "--report", help="Also write report.html (rmbench report) in each run folder."),
    log_to: list[str] = typer.Option([], "--log-to", metavar="TRACKER", help=LOG_TO_HELP),
    log_arg: list[str] = typer.Option([], "--log-arg", metavar="TRACKER.KEY=VALUE", help=LOG_ARG_HELP),
    metrics: str = typer.Option("", "--metrics", metavar="NAME,...", help="More leaderboard columns, after each "
                                "task's headline (recorded in results.json): any declared metric the task reports "
                                "(docs/reference/metrics.md), e.g. length_bias_gap,reward_margin."),
) -> None:
    """Score models on tasks; write results.json, rewards.jsonl and a leaderboard; print the leaderboard."""
    from rmbench.core.choices import EpsUnit, TruncationSide
    from rmbench.models import Runtime
    from rmbench.scoring.config import EvalConfig, ExecutionSettings, RunSpec
    from rmbench.scoring.runner import parse_eps
    from rmbench.scoring.suite import evaluate_models
    from rmbench.tasks.loading import parse_data_overrides

    with user_errors():
        source = ctx.get_parameter_source("model")
        given = source is not None and source.name != "DEFAULT"  # typer's click or click's own enum
        models, listed = _models(model if given or model_list is None else None, model_list)
        names = _names(name, models, listed)
        runtime = Runtime(dtype=cast(DType, dtype), device=device, trust_remote_code=trust_remote_code,
                          token_budget=token_budget, allow_pickle=allow_pickle, threads=threads)
        measured = [RunSpec(model=m, tasks=tuple(t.strip() for t in tasks.split(",") if t.strip()),
                            data=parse_data_overrides(data, several=True), eps=parse_eps(eps),
                            eps_unit=cast(EpsUnit, eps_unit),  # checked by RunSpec
                            limit=limit, include=tuple(str(p) for p in include), n_bootstrap=bootstrap, seed=seed,
                            model_args=_parse_model_args(model_arg),
                            task_args=_parse_model_args(task_arg, "--task-arg"),
                            skip_bad_rows=skip_bad_rows, max_length=max_length,
                            truncation=cast(TruncationSide, truncation),  # checked by RunSpec
                            name=n, metrics=tuple(dict.fromkeys(x.strip() for x in metrics.split(",") if x.strip())))
                    for m, n in zip(models, names)]
        old_flags: dict[str, OptionValue] = {"workers": workers, "ray_address": ray_address,
                                             "worker_cpus": worker_cpus, "worker_gpus": worker_gpus}
        execution = ExecutionSettings(runtime=runtime, cache_dir=str(cache_dir) if cache_dir else None,
                                      use_cache=not no_cache, engine=engine,
                                      engine_args=_engine_args(engine_arg, old_flags), score_timeout=score_timeout)
        configs = [EvalConfig(m, execution) for m in measured]
        trackers = open_log_to(log_to, log_arg)  # a missing extra: one line, before any scoring
        main = execution.engine_kind.is_main()
        try:
            with sigterm_as_interrupt(), progress_bars("responses") as progress:
                suite = evaluate_models(configs, out, overwrite, progress=progress, warn=_warn, write=main)
        except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM (Terminated)
            _interrupted(no_cache, interrupt_exit_code(exc), judge=getattr(exc, "judge_calls", False))
        if not main:  # accelerate: rank 0 writes and prints
            return
        if len(suite.records) == 1:
            print_grid(console, _details_grid(suite.records[0]))
        _print_leaderboard(suite.leaderboard)
        for record in suite.records:
            _say_resumed(record)
        paths = "".join(f"\n  {p}" for p in (*suite.plan.run_dirs, suite.plan.leaderboard))
        console.print(f"Wrote run folder{'s' * (len(suite.records) > 1)} and leaderboard:{paths}", markup=False,
                      highlight=False, soft_wrap=True)  # a path on a line of its own, never broken, to copy
        if report:
            with user_errors():  # a full disk: one line (the runs are written)
                _write_reports(suite.plan.run_dirs)
        not_logged = log_to_trackers(trackers, suite.plan.run_dirs)  # after the runs are written: never loses them
        failed = [f"{r.model.name} on {t.name}: {t.error}" for r in suite.records for t in r.tasks
                  if t.status != "success"]
        print_errors(["; ".join(failed)] if failed else [])
        print_errors(not_logged)
        if failed or not_logged:
            raise typer.Exit(1)


def _engine_args(words: list[str], old_flags: dict[str, OptionValue]) -> tuple[tuple[str, OptionValue], ...]:
    """``--engine-arg KEY=VALUE`` words as (KEY, VALUE) pairs, then each deprecated Ray flag given
    (``--workers 8``) as its engine option, with a note saying the ``--engine-arg`` form."""
    pairs: list[tuple[str, OptionValue]] = [split_assignment(w, "--engine-arg", "workers=8") for w in words]
    for key, value in old_flags.items():
        if value is not None:
            _warn(f"--{key.replace('_', '-')} is deprecated: use --engine-arg {key}={value}")
            pairs.append((key, value))
    return tuple(pairs)


def _write_reports(run_dirs) -> None:
    """eval --report: report.html beside each run's results.json (replacing the last one written there)."""
    from rmbench.results.publishing.report import write_report
    from rmbench.results.storage.folder import load_run

    for run_dir in run_dirs:
        path = write_report([load_run(run_dir)], Path(run_dir) / "report.html", overwrite=True, warn=_warn)
        console.print(f"Wrote {path}", markup=False, highlight=False, soft_wrap=True)


def _interrupted(no_cache: bool, code: int = 130, judge: bool = False) -> None:
    """Ctrl-C or SIGTERM while scoring or writing: say what was kept (a judge's answered calls are
    in the judge call cache, other models' scored batches in the score cache), exit ``code`` (the
    shell's code for the signal: 130 for SIGINT, 143 for SIGTERM)."""
    kept = ("nothing was kept (--no-cache)" if no_cache else
            "every call the judge answered so far is in the judge call cache, so the same command resumes from "
            "it without making those calls again" if judge else
            "every batch scored so far is in the score cache, so the same command resumes from it")
    err_console.print(f"[bold yellow]interrupted:[/] no run folder was left half-written (runs that had finished "
                      f"are complete); {kept}",
                      highlight=False, soft_wrap=True)
    raise typer.Exit(code)


def _say_resumed(record) -> None:
    """A run that reused scores an earlier (interrupted) run left in the cache says so."""
    stats = record.execution.stats
    cached, computed = (stats.cached, stats.computed) if stats is not None else (0, 0)
    if cached and computed:
        err_console.print(f"{escape(record.model.name)}: resumed from the score cache: {cached} responses cached, "
                          f"{computed} computed", highlight=False, soft_wrap=True)


@tasks_app.command("list")
def tasks_list(include: list[Path] = typer.Option([], "--include", metavar="DIR", help="Extra entry folders.")) -> None:
    """List named tasks and task kinds."""
    from rmbench.catalog import load_catalog
    from rmbench.tasks import TASK_KINDS
    from rmbench.tasks.sources import data_status

    with user_errors():
        catalog = load_catalog(include)
        rows = [(name, spec.kind, str(spec.version), catalog.descriptions[("task", name)],
                 data_status(spec.args_dict), catalog.origins[("task", name)])
                for name, spec in sorted(catalog.tasks.items())]
        rows += [(name, "(group)", "", f"{catalog.descriptions[('group', name)]} = {', '.join(members)}", "",
                  catalog.origins[("group", name)]) for name, members in sorted(catalog.groups.items())]
        rows += [(kind, "(kind)", "", desc, "", origin) if broken is None
                 else (kind, "(broken kind)", "", f"BROKEN: {broken}", "", origin) for kind in TASK_KINDS.names()
                 for (desc, origin), broken in [(TASK_KINDS.describe(kind), TASK_KINDS.load_error(kind))]]
        print_grid(console, Grid(headers=("name", "kind", "version", "description", "data", "source"),
                                 rows=tuple(rows), prose=frozenset({3, 4, 5}), numeric=False,
                                 title="tasks (named entries, then kinds usable as tasks with default arguments)"))


@tasks_app.command("show")
def tasks_show(name: str = typer.Argument(..., help="A named task (ties_sample), or a task kind used as a task."),
               include: list[Path] = typer.Option([], "--include", metavar="DIR", help="Extra entry folders.")
               ) -> None:
    """Show a task's row format, an example row, its official layout, headline metrics and data source.

    \b
    rmbench tasks show ties_sample     # its schema, its first row, where its file is
    rmbench tasks show prmbench        # PRMBench's fields, the paper's table, the hub dataset
    """
    from rmbench.catalog import load_catalog
    from rmbench.tasks.describe import render_task_info, task_info

    with user_errors():
        catalog = load_catalog(include)
        spec = catalog.task_spec(name)
        info = task_info(spec, catalog.descriptions.get(("task", name), ""), catalog.headlines.get(name))
        for line in render_task_info(info):
            console.print(line, markup=False, highlight=False, soft_wrap=True)


@models_app.command("list")
def models_list(include: list[Path] = typer.Option([], "--include", metavar="DIR",
                                                   help="Extra entry folders.")) -> None:
    """List named models and model kinds."""
    from rmbench.catalog import load_catalog
    from rmbench.models import MODEL_KINDS
    from rmbench.models.judge.judge_protocol import listing as judge_protocols

    with user_errors():
        catalog = load_catalog(include)
        rows = [(name, spec.kind, catalog.descriptions[("model", name)], catalog.origins[("model", name)])
                for name, spec in sorted(catalog.models.items())]
        rows += [(kind, "(kind)", desc, origin) if broken is None
                 else (kind, "(broken kind)", f"BROKEN: {broken}", origin) for kind in MODEL_KINDS.names()
                 for (desc, origin), broken in [(MODEL_KINDS.describe(kind), MODEL_KINDS.load_error(kind))]]
        rows += [(key, "(judge protocol)", description, origin) for key, description, origin in judge_protocols()]
        print_grid(console, Grid(headers=("name", "kind", "description", "source"), rows=tuple(rows),
                                 prose=frozenset({2, 3}), numeric=False,
                                 title="models (named entries, kinds, then the judge's protocols: judge:MODEL "
                                       "--model-arg mode=MODE --model-arg prompt=NAME)"))


@models_app.command("export")
def models_export(name: str = typer.Argument(..., help="An embedded model (smollm2-135m-instruct)."),
                  out: Path = typer.Option(..., "--out", "-o", help="The folder to write (replaced if it exists).")
                  ) -> None:
    """Write an embedded model as a folder an inference server loads offline.

    \b
    transformers serve and vllm serve take the folder as the model:
      rmbench models export smollm2-135m-instruct --out runs/SmolLM2-135M-Instruct
      transformers serve runs/SmolLM2-135M-Instruct --host 127.0.0.1 --port 8765 --device cpu
    """
    from rmbench.models.embedded import export_servable

    with user_errors():
        folder = export_servable(name, out)
        console.print(f"Wrote {folder} (serve it by this path: the served model's name is the path given)",
                      markup=False, highlight=False)


@app.command("shift")
def shift_command(
    data: str = typer.Option(..., "--data", help="Preference pairs: a JSON Lines file (prompt, chosen, rejected) "
                             "or a hub dataset id."),
    split: str = typer.Option("train", "--split", help="Split of a hub dataset."),
    rewriter: str = typer.Option(..., "--rewriter", help="python:FILE.py:FUNC, openai:BASE_URL:MODEL, "
                                 "lmeval:LM:MODEL_ARGS or style:NAME (an offline style rewriter, listed below)."),
    shift: str | None = typer.Option(None, "--shift", help="The copies' shift label: paraphrase, translation:fr, "
                                        "KIND:NAME, ... (default: style:NAME for a style rewriter, else paraphrase)."),
    out: Path = typer.Option(..., "--out", "-o", help="Output file in the paper's format (paired_shift reads it)."),
    prompt_template: str | None = typer.Option(None, "--prompt-template", help="Rewriter prompt with {text} "
                                                  "(openai and lmeval rewriters; style rewriters take none)."),
    limit: int | None = typer.Option(None, "--limit", help="Only the first N pairs."),
) -> None:
    """Write a shifted copy of a preference dataset (paraphrased, translated or restyled), paired with its
    originals.

    \b
    Style rewriters, --rewriter style:NAME (offline, no prompt template):
      markdown-to-plain  plain-to-markdown  bullets-to-prose  whitespace
      spacious  polite  plain  ascii-punctuation
    """
    import json

    from rmbench.rewrite.shift import resolve_shift, write_shifted

    with user_errors():
        label = resolve_shift(rewriter, shift, prompt_template)[0]
        with progress_bars("texts") as progress:
            source = Path(data)
            n_pairs = sum(1 for line in source.open(encoding="utf-8") if line.strip()) if source.is_file() else None
            total = 2 * min(n_pairs, limit or n_pairs) if n_pairs is not None else None
            path = write_shifted(data, out, rewriter, shift, prompt_template, limit,
                                 progress=progress(label if label == rewriter else f"{label} with {rewriter}", total),
                                 split=split)
        meta = json.loads(path.with_name(path.name + ".meta.json").read_text(encoding="utf-8"))
        same = f" ({meta['unchanged_texts']} of {2 * meta['rows']} texts unchanged)" if meta["unchanged_texts"] else ""
        console.print(f"Wrote {path} and {path}.meta.json{same}. Evaluate it with: rmbench eval --tasks "
                      f"paraphrase_invariance --data paraphrase_invariance={path} (each answer beside its rewrite), "
                      f"or --tasks paraphrase_shift --data paraphrase_shift={path} (original vs shifted pairs)",
                      markup=False, highlight=False)


@app.command("new-task")
def new_task_command(
    name: str = typer.Argument(..., help="Task name: lower-case letters, digits, underscores."),
    directory: Path = typer.Option(Path("."), "--dir", help="Parent folder of the new task folder."),
) -> None:
    """Write a working task plugin skeleton: YAML entry, loader, example data and a test."""
    from rmbench.tasks.scaffold import new_task, next_steps

    with user_errors():
        folder = new_task(name, directory)
        console.print(f"Wrote {folder}/ ({name}.yaml, {name}_task.py, {name}.jsonl, test_{name}.py).\n"
                      + next_steps(name, folder, sys.executable), markup=False, highlight=False,
                      soft_wrap=True)  # the commands stay whole lines, to copy


# The train and results commands register on the same app, after the ones above (the order of --help).
from rmbench.cli import train as cli_train  # noqa: E402,F401

# isort: split
from rmbench.cli import results as cli_results  # noqa: E402,F401

app.command("log")(log_command)  # runs already written, to trackers: after the results commands in --help


def main() -> None:  # console-script entry point
    from rmbench.models.threads import mark_start

    mark_start()  # the start-up then measures how busy the machine is (rmbench.models.threads)
    app()


if __name__ == "__main__":
    main()
