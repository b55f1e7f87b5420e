"""Tables on the terminal that never cut a name, at any width.

A :class:`Grid` (a table as plain strings) is drawn by :func:`render_grid` in the first of these
layouts that fits the width:

1. a table, every cell on one line (prose columns, such as descriptions, may wrap);
2. for a grid that allows it (a leaderboard), the same table transposed: one column per row;
3. stacked: one block per value of the first key column (a model, a task), holding the rest of
   the grid laid out the same way, indented; with a single key column, one block per row, whose
   lines are ``header  value``.

Names (key cells, headers) are never truncated and never wrapped; only prose values wrap.

How wide the output is (:class:`OutputConsole`): ``COLUMNS`` when it is set; else the terminal's
width when the output is a terminal; else (piped, redirected to a file) :data:`PIPE_WIDTH`, so
that nothing written to a file or read by another program is cut or wrapped at 80 columns.
"""

from __future__ import annotations

import os
import textwrap
from dataclasses import dataclass, replace
from typing import Any

from rich import box
from rich.cells import cell_len
from rich.console import Console, ConsoleDimensions, ConsoleOptions, Group, RenderableType, RenderResult
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

PIPE_WIDTH = 10_000
"""Width of output that is not a terminal (and no ``COLUMNS``): wide enough never to cut a table."""
WRAP_MIN = 24
"""A prose column may wrap down to this width (or its longest value, if shorter) before a table
counts as not fitting."""
INDENT = 2


class OutputConsole(Console):
    """A rich console whose width follows where its output goes, looked up at every print:
    ``COLUMNS`` when set, the terminal's width on a terminal, else :data:`PIPE_WIDTH` (where
    rich itself would use 80, or the width ``COLUMNS`` had when the console was made)."""

    @property
    def size(self) -> ConsoleDimensions:
        size = super().size
        columns = os.environ.get("COLUMNS", "").strip()
        if columns.isdigit() and int(columns) > 0:
            return ConsoleDimensions(int(columns), size.height)
        return size if _is_tty(self.file) else ConsoleDimensions(PIPE_WIDTH, size.height)

    @size.setter
    def size(self, new_size: tuple[int, int]) -> None:
        Console.size.fset(self, new_size)  # type: ignore[attr-defined]  # mypy reads a property on its class as its getter


def _is_tty(file) -> bool:
    try:
        return bool(file.isatty())
    except (AttributeError, ValueError):  # no isatty, or a closed file
        return False


@dataclass(frozen=True)
class Grid:
    """A table as plain strings (no markup): ``headers`` and ``rows`` of the same length.

    The first ``keys`` columns name a row (left-aligned, never wrapped); ``prose`` holds the
    indices of columns of free text that may wrap; the other columns are right-aligned when
    ``numeric``, else left-aligned. ``transpose``: the table may be drawn with rows as columns.
    """

    headers: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    keys: int = 1
    prose: frozenset[int] = frozenset()
    numeric: bool = True
    transpose: bool = False
    title: str = ""
    caption: str = ""


PROSE_PIPE_WIDTH = 120
"""Width of a table with prose columns (``tasks list``, ``models list``) printed where the output
is not a terminal and ``COLUMNS`` is unset: its descriptions wrap instead of making lines of a
thousand characters (tables of numbers keep :data:`PIPE_WIDTH`, so a piped leaderboard is never cut)."""


def print_grid(console: Console, grid: Grid) -> None:
    """Print ``grid`` in the first layout that fits ``console``'s width (:data:`PROSE_PIPE_WIDTH`
    for a table with prose printed to a pipe or file)."""
    width = console.width
    if grid.prose and width == PIPE_WIDTH:  # what OutputConsole gives a pipe or file without COLUMNS
        width = PROSE_PIPE_WIDTH
    console.print(render_grid(grid, width), width=width)


def render_grid(grid: Grid, width: int) -> RenderableType:
    """``grid`` as a renderable of at most ``width`` columns (see the module's docstring)."""
    fitting = _fitting_table(grid, width, compact=False)
    if fitting is not None:
        return fitting
    parts: list[RenderableType] = []
    if grid.title:
        parts.append(Text(grid.title, style="table.title"))
    parts += _stacked(grid, width)
    if grid.caption:
        parts.append(Text(grid.caption, style="table.caption"))
    return Group(*parts)


def _cell_width(text: str) -> int:
    return max((cell_len(line) for line in text.split("\n")), default=0)


def _column_widths(grid: Grid) -> list[int]:
    return [max([_cell_width(head)] + [_cell_width(row[i]) for row in grid.rows])
            for i, head in enumerate(grid.headers)]


def table_width(grid: Grid, compact: bool) -> int:
    """Columns the table of ``grid`` needs, prose columns wrapped down to :data:`WRAP_MIN`: the
    default box draws a border and a space on both sides of every cell; the compact one (nested
    blocks) only a space and a blank rule between cells."""
    widths = [min(w, WRAP_MIN) if i in grid.prose else w for i, w in enumerate(_column_widths(grid))]
    n = len(widths)
    return sum(widths) + (3 * (n - 1) if compact else 3 * n + 1)


def _fitting_table(grid: Grid, width: int, compact: bool) -> Table | None:
    """The table of ``grid``, or of ``grid`` transposed, if one fits ``width``; else None."""
    candidates = [grid] + ([_transposed(grid)] if grid.transpose and grid.keys == 1 and grid.rows else [])
    for candidate in candidates:
        if table_width(candidate, compact) <= width:
            return _table(candidate, compact)
    return None


def _table(grid: Grid, compact: bool) -> Table:
    style: dict[str, Any] = dict(box=box.SIMPLE_HEAD, show_edge=False, pad_edge=False) if compact else {}
    table = Table(title=Text(grid.title) if grid.title else None,
                  caption=Text(grid.caption) if grid.caption else None, **style)
    for i, head in enumerate(grid.headers):
        left = i < grid.keys or i in grid.prose or not grid.numeric
        table.add_column(Text(head), justify="left" if left else "right", no_wrap=i not in grid.prose,
                         overflow="fold", style="bold" if i == 0 and grid.keys else None)  # fold: never "…"
    for row in grid.rows:
        table.add_row(*(Text(cell) for cell in row))
    return table


def _transposed(grid: Grid) -> Grid:
    """One row per value column, one column per row (named by its key)."""
    headers = (grid.headers[0],) + tuple(row[0] for row in grid.rows)
    rows = tuple((grid.headers[j],) + tuple(row[j] for row in grid.rows) for j in range(1, len(grid.headers)))
    return replace(grid, headers=headers, rows=rows, keys=1, prose=frozenset(), transpose=False)


def _stacked(grid: Grid, width: int) -> list[RenderableType]:
    """Blocks per value of the first key (several key columns), else per row."""
    if grid.keys >= 2:
        return _grouped(grid, width)
    labels = grid.headers[grid.keys:]
    label_width = max((cell_len(label) for label in labels), default=0)
    out: list[RenderableType] = []
    for row in grid.rows:
        if grid.keys:
            out.append(_heading(row[0]))
        out += [_field(label, value, label_width, width, wrap=grid.keys + j in grid.prose)
                for j, (label, value) in enumerate(zip(labels, row[grid.keys:])) if value]
    return out


def _grouped(grid: Grid, width: int) -> list[RenderableType]:
    """One block per value of the first key column (in order of first appearance), holding the
    grid of the other columns: a compact table (or transposed table) if it fits, else stacked again."""
    groups: dict[str, list[tuple[str, ...]]] = {}
    for row in grid.rows:
        groups.setdefault(row[0], []).append(row[1:])
    out: list[RenderableType] = []
    for key, rows in groups.items():
        sub = Grid(headers=grid.headers[1:], rows=tuple(rows), keys=grid.keys - 1, numeric=grid.numeric,
                   prose=frozenset(i - 1 for i in grid.prose if i > 0), transpose=grid.transpose)
        inner = width - INDENT
        table = _fitting_table(sub, inner, compact=True)
        out.append(_heading(key))
        out += [Indented(part, INDENT) for part in ([table] if table is not None else _stacked(sub, inner))]
    return out


def _heading(name: str) -> Text:
    return Text(name, style="bold", overflow="fold")


def _wrap(value: str, width: int, wrap: bool) -> list[str]:
    """Lines of ``value``: prose wrapped at spaces to ``width``; other values kept whole unless
    longer than ``width`` (then folded: nothing is ever cut)."""
    lines = []
    for line in value.split("\n"):
        if cell_len(line) <= width or not line:
            lines.append(line)
        else:
            lines += textwrap.wrap(line, max(width, 1), break_long_words=True, break_on_hyphens=False) \
                if wrap else [line[i:i + max(width, 1)] for i in range(0, len(line), max(width, 1))]
    return lines or [""]


def _field(label: str, value: str, label_width: int, width: int, wrap: bool) -> Text:
    """``  label  value`` (value wrapped under itself); the value on the next lines if the room
    beside the label is narrower than both the value and :data:`WRAP_MIN`."""
    room = width - INDENT - label_width - 2
    text = Text(" " * INDENT)
    text.append(label, style="table.header")
    if cell_len(value) <= room or room >= WRAP_MIN:
        lines = _wrap(value, room, wrap)
        text.append(" " * (label_width - cell_len(label) + 2) + lines[0])
        text.append("".join("\n" + " " * (INDENT + label_width + 2) + line for line in lines[1:]))
    else:
        text.append("".join("\n" + " " * (2 * INDENT) + line for line in _wrap(value, width - 2 * INDENT, wrap)))
    return text


class Indented:
    """A renderable drawn ``indent`` columns in from the left (without padding to the right)."""

    def __init__(self, renderable: RenderableType, indent: int) -> None:
        self.renderable, self.indent = renderable, indent

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        inner = options.update_width(max(options.max_width - self.indent, 1))
        for line in console.render_lines(self.renderable, inner, pad=False):
            yield Segment(" " * self.indent)
            yield from line
            yield Segment.line()

