"""What every ``rmbench`` command shares: the typer apps, the consoles, one-line user errors,
progress columns and the leaderboard tables on the terminal."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Iterator

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import Progress, ProgressColumn
from rich.text import Text
from rich.table import Table

from rmbench.errors import RMBenchError
from rmbench.registry import RegistryError

app = typer.Typer(help="rmbench: benchmark reward models on discrimination and specificity.",
                  no_args_is_help=True, add_completion=False, pretty_exceptions_enable=False)
tasks_app = typer.Typer(help="Inspect the task registry.", no_args_is_help=True)
models_app = typer.Typer(help="Inspect the model registry.", no_args_is_help=True)
leaderboard_app = typer.Typer(help="Build leaderboards from run folders.", no_args_is_help=True)
app.add_typer(tasks_app, name="tasks")
app.add_typer(models_app, name="models")
app.add_typer(leaderboard_app, name="leaderboard")

console = Console()
err_console = Console(stderr=True)


@contextmanager
def user_errors() -> Iterator[None]:
    """A user's mistake is one clear line on stderr and exit code 2, never a traceback."""
    try:
        yield
    except (RMBenchError, RegistryError) as exc:
        err_console.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, soft_wrap=True)
        raise typer.Exit(2) from None


def _warn(message: str) -> None:
    """Something the user must know about a run that still goes on (skipped rows, truncation)."""
    err_console.print(f"[bold yellow]warning:[/] {escape(message)}", highlight=False, soft_wrap=True)


class _RateColumn(ProgressColumn):
    """Items per second of a task (blank until rich has a speed estimate)."""

    def render(self, task) -> Text:
        return Text(f"{task.speed:,.1f} items/s" if task.speed else "", style="progress.data.speed")


def _progress_factory(progress: Progress):
    def factory(description: str, total: int):
        task_id = progress.add_task(description, total=total)
        return lambda n: progress.advance(task_id, n)
    return factory


def _rich_table(table) -> Table:
    from rmbench.leaderboard_render import format_cell

    out = Table(title=table.title, caption=table.caption)
    for i, head in enumerate(table.key_headers):
        out.add_column(head, style="bold" if i == 0 else None, no_wrap=True)
    for col in table.columns:
        out.add_column(col.header, justify="right")
    for keys, cells in table.rows:
        out.add_row(*keys, *[format_cell(c) for c in cells])
    return out


def _print_leaderboard(lb) -> None:
    console.print(_rich_table(lb.main))
    for note in lb.notes:
        console.print(f"note: {note}", markup=False, highlight=False, soft_wrap=True)
    for table in lb.tables[1:]:
        console.print(_rich_table(table))
