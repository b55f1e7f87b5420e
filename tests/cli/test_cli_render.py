"""What the command line prints: help texts whole, tables that fit the width without cutting a
name, full-width output when piped, a meaningful rate column, runnable next steps of new-task."""

import io
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import pytest
import typer
from rich.console import Console
from rich.progress import Progress
from typer.testing import CliRunner

from rmbench.catalog import load_catalog
from rmbench.cli.app import app
from rmbench.cli.common import _RateColumn, rate_text
from rmbench.cli.tables import PIPE_WIDTH, Grid, OutputConsole, render_grid
from rmbench.results.publishing.leaderboard import build_leaderboard
from rmbench.results.storage.folder import find_runs
from rmbench.tasks import TASK_KINDS

runner = CliRunner()
WIDTHS = ("200", "80")


def _commands(command, path=()):
    """(argv prefix, command) of every command and subcommand of the click tree."""
    yield list(path), command
    for name, sub in sorted(getattr(command, "commands", {}).items()):
        yield from _commands(sub, (*path, name))


def _flat(text: str) -> str:
    """Help text with its line breaks undone (click wraps at spaces)."""
    return " ".join(text.split())


@pytest.mark.parametrize("columns", WIDTHS)
def test_help_of_every_command_keeps_brackets_defaults_and_no_bool(columns):
    commands = list(_commands(typer.main.get_command(app)))
    assert len(commands) >= 12 and ["leaderboard", "build"] in [p for p, _ in commands]
    for path, command in commands:
        result = runner.invoke(app, [*path, "--help"], env={"COLUMNS": columns})
        assert result.exit_code == 0, (path, result.output)
        out = result.output
        assert "<bool>" not in out and "…" not in out, (path, out)
        usage = [line for line in out.splitlines() if line.startswith("Usage:")]
        assert len(usage) == 1 and not re.search(r"[{}]", usage[0]), (path, usage)
        flat = _flat(out)
        for param in command.params:  # every help text whole, brackets included
            if getattr(param, "help", None):
                assert _flat(param.help) in flat, (path, param.help, out)
        if command.help:
            assert _flat(command.help.split("\n\n")[0]) in flat, path
    eval_help = _flat(runner.invoke(app, ["eval", "--help"], env={"COLUMNS": columns}).output)
    for text in ("pip install 'rmbench[ray]'", "(default: runs/<name>__<tasks>, then __limitN", "[default: 0,0.1]",
                 "(default: $XDG_CACHE_HOME/rmbench/scores)", "[default: smollm2-135m]", "[default: 1000]"):
        assert text in eval_help, text
    build = runner.invoke(app, ["leaderboard", "build", "--help"], env={"COLUMNS": columns}).output
    assert "[OPTIONS] RUNS..." in build


def _first_cells(output: str) -> set[str]:
    """The first word of every line, without table borders: the names a table or block starts with."""
    return {words[0] for words in (line.strip(" │┃").split() for line in output.splitlines()) if words}


def _task_names() -> list[str]:
    catalog = load_catalog([])
    return sorted(set(catalog.tasks) | set(catalog.groups) | set(TASK_KINDS.names()))


def _assert_fits(output: str, width: int) -> None:
    """No "…" and no line wider than ``width``, but for a line that is one path (written whole, to copy)."""
    assert "…" not in output, output
    long = [line for line in output.splitlines() if len(line) > width and not Path(line.strip()).exists()]
    assert not long, long


def _rmbench() -> list[str]:
    script = Path(sys.executable).with_name("rmbench")
    return [str(script)] if script.is_file() else [sys.executable, "-m", "rmbench"]


@pytest.mark.parametrize("columns", ["80", "120"])
def test_tasks_list_keeps_every_name_whole_at_the_width(columns):
    names = _task_names()
    result = runner.invoke(app, ["tasks", "list"], env={"COLUMNS": columns})
    assert result.exit_code == 0, result.output
    _assert_fits(result.output, int(columns))
    assert set(names) <= _first_cells(result.output), set(names) - _first_cells(result.output)
    piped = subprocess.run([*_rmbench(), "tasks", "list"], capture_output=True, text=True,
                           env={**os.environ, "COLUMNS": columns}, timeout=300)
    assert piped.returncode == 0, piped.stderr
    _assert_fits(piped.stdout, int(columns))
    assert set(names) <= _first_cells(piped.stdout)


def test_piped_prose_wraps_at_a_sane_width_and_loses_nothing():
    """A piped ``tasks list`` (issue 32): descriptions wrap at 120 columns, never cut."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    piped = subprocess.run([*_rmbench(), "tasks", "list"], capture_output=True, text=True,
                           env=env, timeout=300)
    assert piped.returncode == 0, piped.stderr
    assert "…" not in piped.stdout
    catalog = load_catalog([])
    lines = piped.stdout.splitlines()
    flat = " ".join(" ".join(lines).split())
    for name, description in ((n, catalog.descriptions[("task", n)]) for n in catalog.tasks):
        assert any(line.strip() == name or line.startswith(name + " ") for line in lines), name
        assert " ".join(description.split()) in flat, name  # wrapped, whole
    assert max(map(len, lines)) <= 120


@pytest.fixture(scope="module")
def eval_run(tmp_path_factory):
    """Two models on ties_sample and the token_shift_sample group, printed at 80 and 120 columns."""
    out = tmp_path_factory.mktemp("render") / "runs"
    argv = ["eval", "--model", "length,oracle", "--tasks", "ties_sample,token_shift_sample", "--limit", "3",
            "--bootstrap", "50",
            "--out", str(out)]
    printed = {}
    for columns in ("80", "120"):
        result = runner.invoke(app, argv, env={"COLUMNS": columns})
        assert result.exit_code == 0, result.output
        printed[int(columns)] = result
    return out, printed


def _headers(out: Path) -> list[str]:
    lb = build_leaderboard(find_runs([out]))
    return [c.header for table in lb.tables for c in table.columns]


@pytest.mark.parametrize("width", [80, 120])
def test_eval_output_fits_the_width_and_keeps_every_header(eval_run, width):
    out, printed = eval_run
    result = printed[width]
    _assert_fits(result.stdout, width)
    assert "…" not in result.output  # the progress lines on stderr too
    for header in _headers(out) + ["length", "oracle"]:
        assert header in result.stdout, (header, result.stdout)


def test_piped_leaderboard_without_columns_is_one_table(eval_run):
    out, _ = eval_run
    result = runner.invoke(app, ["leaderboard", "build", str(out)], env={"COLUMNS": None})
    assert result.exit_code == 0, result.output
    lb = build_leaderboard(find_runs([out]))
    main_headers = [c.header for c in lb.main.columns]
    header_line = next(line for line in result.stdout.splitlines() if main_headers[0] in line)
    assert all(h in header_line for h in main_headers)  # every column side by side, none cut
    assert "…" not in result.stdout


def _render(grid: Grid, width: int) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width, color_system=None).print(render_grid(grid, width))
    return buffer.getvalue()


@pytest.mark.parametrize("width", [40, 50, 80, 120, 400])
def test_grids_fit_any_width_and_never_cut_a_name(width):
    values = ("0.912 [0.874, 0.951]", "–", "-0.010 [-0.010, 0.000]")
    headers = ("model",) + tuple(f"task_{i}_long_name D@0.1σ" for i in range(6))
    board = Grid(headers=headers, rows=tuple((f"model-{r}",) + values * 2 for r in range(3)), transpose=True,
                 title="leaderboard", caption="value [95% CI]")
    nested = Grid(headers=("model", "task", "shift", "acc", "gap (shifted - original)"),
                  rows=tuple((m, t, s, values[0], values[2]) for m in ("a", "b") for t in ("t1", "t2")
                             for s in ("none", "translation:fr")), keys=3)
    prose = Grid(headers=("name", "kind", "description"), numeric=False, prose=frozenset({2}),
                 rows=(("paraphrase_shift_sample", "paired_shift", "64 preference pairs vs their paraphrases " * 3),))
    for grid in (board, nested, prose):
        text = _render(grid, width)
        names = set(grid.headers[grid.keys:]) | {row[i] for row in grid.rows for i in range(grid.keys)}
        for name in names:
            assert name in text, (name, text)
        _assert_fits(text, width)
    wide = _render(board, 400)
    assert any(all(h in line for h in headers) for line in wide.splitlines())  # fits: one table


def test_console_width_follows_columns_else_is_unlimited_when_piped(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert OutputConsole(file=io.StringIO()).width == PIPE_WIDTH
    console = OutputConsole(file=io.StringIO())
    assert console.width == PIPE_WIDTH
    monkeypatch.setenv("COLUMNS", "57")  # read at each print, not once when the console is made
    assert console.width == 57 and OutputConsole(file=io.StringIO()).width == 57


def test_rate_column_is_never_blank():
    assert rate_text(None, 0, 0.5) == "–"
    assert rate_text(None, 44, 2.0) == "22.0 items/s"
    assert rate_text(1234.5, 44, 2.0) == "1,234.5 items/s"
    progress = Progress(console=Console(file=io.StringIO()))
    task_id = progress.add_task("persona", total=10)
    assert _RateColumn().render(progress.tasks[0]).plain == "–"
    time.sleep(0.01)
    progress.advance(task_id, 10)  # done in one step: rich has no speed estimate
    assert progress.tasks[0].speed is None
    assert _RateColumn().render(progress.tasks[0]).plain.endswith(" items/s")


@pytest.mark.slow
def test_new_task_prints_commands_that_work_outside_the_virtualenv(tmp_path):
    result = runner.invoke(app, ["new-task", "my_pairs", "--dir", str(tmp_path / "a dir")])
    assert result.exit_code == 0, result.output
    lines = {line.split(":", 1)[0]: line.split(":", 1)[1].strip() for line in result.output.splitlines()[1:]}
    assert set(lines) == {"Try", "Test"}
    for command in lines.values():
        assert shlex.split(command)[0] == sys.executable  # the interpreter that has rmbench
    env = {**os.environ, "PATH": "/usr/bin:/bin"}  # no virtualenv on the PATH
    env.pop("VIRTUAL_ENV", None)
    test = subprocess.run(lines["Test"] + " -q -p no:cacheprovider", shell=True, cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert test.returncode == 0 and "2 passed" in test.stdout, test.stdout + test.stderr
    tried = subprocess.run(lines["Try"] + " --bootstrap 10", shell=True, cwd=tmp_path, env=env, capture_output=True,
                           text=True, timeout=600)
    assert tried.returncode == 0, tried.stdout + tried.stderr


def test_a_piped_prose_listing_wraps_at_a_sane_width(monkeypatch):
    """``rmbench tasks list | less``: descriptions wrap at 120 columns instead of 1,300-character
    lines; COLUMNS still decides where set."""
    from typer.testing import CliRunner

    from rmbench.cli.app import app
    from rmbench.cli.tables import PROSE_PIPE_WIDTH

    monkeypatch.delenv("COLUMNS", raising=False)
    out = CliRunner().invoke(app, ["tasks", "list"]).output
    assert max(len(line) for line in out.splitlines()) <= PROSE_PIPE_WIDTH and "domain_shift" in out
    monkeypatch.setenv("COLUMNS", "300")
    out = CliRunner().invoke(app, ["tasks", "list"]).output
    assert max(len(line) for line in out.splitlines()) > PROSE_PIPE_WIDTH
