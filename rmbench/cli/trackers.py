"""Experiment trackers on the command line: ``rmbench eval --log-to`` (its options and the step after
the runs are written) and ``rmbench log RUN... --to TRACKER`` (runs already written; registered by
:mod:`rmbench.cli.app` after the results commands, the order of ``--help``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import typer
from rich.markup import escape

from rmbench.cli.common import console, err_console, user_errors
from rmbench.results.trackers.registry import trackers_help

LOG_TO_HELP = (f"Also log each run to an experiment tracker: {trackers_help()} (repeatable). Each needs its extra "
               "(pip install 'rmbench[wandb]'), checked before any scoring; settings come from the tracker's own "
               "environment (WANDB_MODE, WANDB_PROJECT, MLFLOW_TRACKING_URI, TRACKIO_DIR ...) or --log-arg. A "
               "tracker that fails after the run is written is one error line (exit 1); the run stays written.")
LOG_ARG_HELP = ("A tracker's option, TRACKER.KEY=VALUE (repeatable): wandb.project=rm-evals, "
                "mlflow.tracking_uri=http://host:5000, tensorboard.logdir=tb; API keys only from the environment.")


def open_log_to(log_to: Sequence[str], log_arg: Sequence[str], flag: str = "--log-to") -> tuple:
    """The chosen trackers, checked (a missing extra: one error line); () without --log-to.
    ``flag``: the option that named them (``--to`` for ``rmbench log``), as messages say it."""
    if not log_to and not log_arg:
        return ()
    from rmbench.results.trackers.registry import open_trackers

    return open_trackers(log_to, log_arg, flag)


def log_to_trackers(trackers: Sequence, run_dirs: Sequence[Path], step: int = 0) -> list[str]:
    """Log each written run (read back from its folder) to each tracker, printing where each went;
    returns the failures' lines."""
    if not trackers:
        return []
    from rmbench.results.storage.folder import load_run
    from rmbench.results.trackers.send import log_runs

    failures = log_runs([load_run(d) for d in run_dirs], trackers, step,
                        said=lambda logged: console.print(logged.line(), markup=False, highlight=False,
                                                          soft_wrap=True))
    return [f.line() for f in failures]


def print_errors(lines: Sequence[str]) -> None:
    for line in lines:
        err_console.print("[bold red]error:[/] " + escape(line), highlight=False, soft_wrap=True)


def log_command(
    runs: list[Path] = typer.Argument(..., help="Run folders written by 'rmbench eval', or folders to search for "
                                      "them (every run under the folder)."),
    to: list[str] = typer.Option(..., "--to", metavar="TRACKER", help=f"The tracker: {trackers_help()} "
                                 "(repeatable)."),
    log_arg: list[str] = typer.Option([], "--log-arg", metavar="TRACKER.KEY=VALUE", help=LOG_ARG_HELP),
    step: int = typer.Option(0, "--step", help="The step the metrics are logged at."),
) -> None:
    """Log runs already written to experiment trackers: config, headline metrics with CIs, leaderboard, report."""
    from rmbench.results.storage.folder import find_runs

    with user_errors():
        trackers = open_log_to(to, log_arg, "--to")
        folders = find_runs(runs)
        failures = log_to_trackers(trackers, [f.path for f in folders], step)
    if failures:
        print_errors(failures)
        raise typer.Exit(1)
