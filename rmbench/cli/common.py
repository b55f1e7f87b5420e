"""What every ``rmbench`` command shares: the typer apps, the consoles, one-line user errors,
progress columns and the leaderboard tables on the terminal.

Help is plain text (``rich_markup_mode=None``): with typer's default rich markup, every
``[...]`` in a help text (``'rmbench[ray]'``, ``[default: ...]``) would be read as a style and
vanish, and flags would show a ``<bool>`` type. Usage lines name arguments as click does
(``RUNS...``), not as typer 0.29 does (``{runs}...``).
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager

import typer
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    ProgressColumn,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column
from rich.text import Text
from typer.core import TyperCommand

from rmbench.cli.tables import Grid, OutputConsole, print_grid
from rmbench.errors import WRITE_ERRNOS, RMBenchError, write_error_text
from rmbench.registry import RegistryError


class _Command(TyperCommand):
    """A typer command whose usage line names its arguments as click does: ``RUNS...`` when
    required, ``[NAME]`` when not (typer 0.29 writes ``{runs}...``)."""

    def collect_usage_pieces(self, ctx) -> list[str]:
        pieces = [self.options_metavar] if self.options_metavar else []
        for param in self.get_params(ctx):
            if param.param_type_name == "argument":
                name = (param.metavar or param.name).upper()
                pieces.append((name if param.required else f"[{name}]") + ("..." if param.nargs != 1 else ""))
        return pieces


class _Typer(typer.Typer):
    """``typer.Typer`` with plain-text help and :class:`_Command` commands (see the module's docstring)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(rich_markup_mode=None, **kwargs)

    def command(self, name: str | None = None, *, cls: type[TyperCommand] | None = None, **kwargs):
        return super().command(name, cls=cls or _Command, **kwargs)


app = _Typer(help="rmbench: benchmark reward models on discrimination and specificity.",
             no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
tasks_app = _Typer(help="Inspect the task registry.", no_args_is_help=True)
models_app = _Typer(help="Inspect the model registry.", no_args_is_help=True)
leaderboard_app = _Typer(help="Build leaderboards from run folders.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
app.add_typer(models_app, name="models")
app.add_typer(leaderboard_app, name="leaderboard")

console = OutputConsole()
"""Results (stdout); as wide as the terminal, or unlimited when piped (see :mod:`rmbench.cli.tables`)."""
err_console = OutputConsole(stderr=True)
"""Progress, warnings and errors (stderr)."""


def _version(value: bool) -> None:
    if value:
        from rmbench import __version__

        console.print(f"rmbench {__version__}", markup=False, highlight=False)
        raise typer.Exit()


@app.callback()
def _top_level(
    version: bool = typer.Option(False, "--version", is_eager=True, callback=_version,
                                 help="Print rmbench's version and exit."),
    show_traceback: bool = typer.Option(False, "--traceback", help="On an error from your own code (a python: "
                                        "reward function, a plugin), show its traceback (your frames) before the "
                                        "error line; also RMBENCH_DEBUG=1."),
) -> None:
    # no docstring: the app's help stays the one given to _Typer above
    from rmbench.cli import debug

    debug.state.traceback = show_traceback


@contextmanager
def user_errors() -> Iterator[None]:
    """A user's mistake is one clear line on stderr and exit code 2, never a traceback (so is a
    write the machine refuses: a full disk, a read-only folder, :data:`~rmbench.errors.WRITE_ERRNOS`); with
    ``--traceback`` or ``RMBENCH_DEBUG=1`` the traceback of the user's own code comes first
    (:mod:`rmbench.cli.debug`), and without it an error from the user's code says how to see it."""
    try:
        yield
    except (RMBenchError, RegistryError) as exc:
        from rmbench.cli import debug

        hint = ""
        if debug.debug_on():
            err_console.print(debug.user_traceback(exc), markup=False, highlight=False, soft_wrap=True)
        elif debug.has_user_frames(exc):
            hint = " (rmbench --traceback ... or RMBENCH_DEBUG=1 shows where in your code)"
        err_console.print(f"[bold red]error:[/] {escape(str(exc) + hint)}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None
    except OSError as exc:
        if exc.errno not in WRITE_ERRNOS:
            raise
        # a full disk, a read-only or forbidden folder met outside rmbench's own writer (a lock
        # file, a folder made, a library's file): the file and the cause, as a WriteError says them
        where = f"{exc.filename}: " if exc.filename else ""
        err_console.print(f"[bold red]error:[/] {escape(where + write_error_text(exc))}", highlight=False,
                          soft_wrap=True)
        raise typer.Exit(2) from None


def _parse_model_args(items: list[str], option: str = "--model-arg") -> tuple:
    """``KEY=VALUE`` items -> (key, value) pairs, the value read as YAML (0.1, true, text)."""
    import yaml

    from rmbench.errors import ConfigError

    out = []
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"{option} {item!r}: expected KEY=VALUE")
        try:
            out.append((key.strip(), yaml.safe_load(value)))  # 0.1 -> float, true -> bool, text -> str
        except yaml.YAMLError:
            out.append((key.strip(), value))
    return tuple(out)


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises KeyboardInterrupt (:func:`sigterm_as_interrupt`): the
    same unwinding (the cache's open batch rolled back, the run folder's lock released), the same
    line, and exit code 143 instead of 130."""


@contextmanager
def sigterm_as_interrupt() -> Iterator[None]:
    """While the block runs, SIGTERM (``kill``, a scheduler, ``timeout``) stops the command as
    Ctrl-C does rather than ending the process where it stands."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def terminated(_signum, _frame):
        raise Terminated()

    previous = signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def interrupt_exit_code(exc: KeyboardInterrupt) -> int:
    """The shell's code for the signal that stopped the command: 143 (SIGTERM) or 130 (SIGINT)."""
    return 143 if isinstance(exc, Terminated) else 130


def _warn(message: str) -> None:
    """Something the user must know about a run that still goes on (skipped rows, truncation)."""
    err_console.print(f"[bold yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


class _UnitColumn(ProgressColumn):
    """What a task counts: its own ``unit`` field, else the display's."""

    def __init__(self, unit: str) -> None:
        super().__init__()
        self.unit = unit

    def render(self, task) -> Text:
        return Text(str(task.fields.get("unit", self.unit)))


class _RateColumn(ProgressColumn):
    """Items per second of a task, in the task's own ``unit`` field when it has one: rich's
    estimate, else (a task done in one step, such as a fully cached run) items completed over
    the time elapsed; "–" until an item is done."""

    def __init__(self, digits: int = 1) -> None:
        super().__init__()
        self.digits = digits

    def render(self, task) -> Text:
        return Text(rate_text(task.finished_speed or task.speed, task.completed,
                              task.finished_time if task.finished else task.elapsed,
                              task.fields.get("unit", "items"), self.digits),
                    style="progress.data.speed")


def rate_text(speed: float | None, completed: float, elapsed: float | None, unit: str = "items",
              digits: int = 1) -> str:
    """``1,234.5 items/s`` from ``speed``, else from ``completed / elapsed``; "–" when neither is known."""
    if not speed and completed and elapsed:
        speed = completed / elapsed
    return f"{speed:,.{digits}f} {unit}/s" if speed else "–"


FULL_PROGRESS_WIDTH = 110
"""Below this width a progress line drops its bar and eta (the counts say as much)."""


def progress_columns(unit: str, width: int) -> tuple[ProgressColumn, ...]:
    """Columns of a progress line counting ``unit`` (e.g. "responses") on a console ``width``
    columns wide: the description wraps instead of being cut; counts, rate and times stay whole."""
    description = TextColumn("{task.description}", style="progress.description", markup=False,
                             table_column=Column(overflow="fold"))
    counts = (MofNCompleteColumn(), _UnitColumn(unit), _RateColumn(), TimeElapsedColumn())
    if width < FULL_PROGRESS_WIDTH:
        return (description, *counts)
    bar = BarColumn(bar_width=None, table_column=Column(max_width=40))
    return (description, bar, *counts, TextColumn("eta"), TimeRemainingColumn())


def plain_line(line: str) -> None:
    """One plain progress line on stderr (:mod:`rmbench.cli.progress`)."""
    err_console.print(line, markup=False, highlight=False, soft_wrap=True)


def progress_display(columns: tuple[ProgressColumn, ...], unit: str, eta=None):
    """Rich bars of ``columns`` on a terminal; plain lines every ``RMBENCH_PROGRESS_EVERY``
    seconds on a pipe or a log file (:class:`rmbench.cli.progress.PlainProgress`), where rich
    would show nothing until the end."""
    if err_console.is_terminal:
        return Progress(*columns, console=err_console)
    from rmbench.cli.progress import PlainProgress

    return PlainProgress(plain_line, unit=unit, eta=eta)


@contextmanager
def progress_bars(unit: str) -> Iterator:
    """A progress factory (``factory(description, total, unit=None)`` -> ``advance(n)``; ``unit``:
    what this bar counts, ``unit`` by default) drawing on stderr that starts with its first bar,
    so a command that fails before any work prints its one error line and nothing else (a
    started display ends with a line of its own)."""
    progress = progress_display(progress_columns(unit, err_console.width), unit)
    started, default_unit = False, unit

    def factory(description: str, total: int | None, unit: str | None = None):
        nonlocal started
        if not started:
            progress.start()
            started = True
        task_id = progress.add_task(description, total=total, unit=unit or default_unit)
        return lambda n: progress.advance(task_id, n)

    try:
        yield factory
    finally:
        if started:
            progress.stop()


def leaderboard_grid(section) -> Grid:
    """A :class:`rmbench.results.publishing.leaderboard_tables.Section` as a grid: rows of runs, one column per
    metric, always titled (a terminal has no document title), its caption by the sections' rule."""
    from rmbench.results.publishing.leaderboard_render import format_cell

    table = section.table
    return Grid(headers=tuple(table.key_headers) + tuple(col.header for col in table.columns),
                rows=tuple(tuple(keys) + tuple(format_cell(c) for c in cells) for keys, cells in table.rows),
                keys=len(table.key_headers), transpose=True, title=table.title, caption=section.caption)


def _print_leaderboard(lb) -> None:
    """The terminal's rendering: the sections of ``lb`` in their order (``lb.sections()``), each
    fitted to the console's width with its failed runs a line each under it (a table of failed
    runs only is its title and those lines), what the task names are and the notes after the
    headline tables."""
    for section in lb.sections():
        table = section.table
        if table.rows or not table.failed:
            print_grid(console, leaderboard_grid(section))
        else:  # every run of this table failed: its title, then a line per run, never an empty grid
            console.print(table.title, markup=False, highlight=False)
        for line in table.failed_lines():
            console.print(f"  {line}", markup=False, highlight=False)
        if section.notes_after:
            for line in lb.legend:
                console.print(f"legend: {line}", markup=False, highlight=False)
            for note in lb.notes:
                console.print(f"note: {note}", markup=False, highlight=False)
