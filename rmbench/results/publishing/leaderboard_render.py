"""Rendering a :class:`~rmbench.results.publishing.leaderboard.Leaderboard`: Markdown, CSV, JSON and a sortable
HTML page (every text escaped; with matplotlib installed, the D-Spec curves embedded as SVG).

Each is the render function of a format registered in :mod:`rmbench.results.publishing.formats`
(``render(lb, context) -> str``), and walks the leaderboard's sections
(:meth:`~rmbench.results.publishing.leaderboard.Leaderboard.sections`). A run whose task failed
is a line under its table (:meth:`~rmbench.results.publishing.leaderboard_tables.Table.failed_lines`),
and a table whose every run failed is those lines alone, never headers without rows; the CSV
gives such a run a row with its ``failed`` error and the JSON a ``failed`` list per table."""

from __future__ import annotations

import base64
import html
import json
import math

import pandas as pd

from rmbench.results.publishing.formats import RenderContext, render
from rmbench.results.publishing.leaderboard import Leaderboard, Table
from rmbench.results.storage.record import Estimate

__all__ = ["format_cell", "html_tables", "legend_lines", "render", "render_csv", "render_html", "render_json",
           "render_md", "to_frame"]  # render: formats.render, here for its callers of before the registry


def format_cell(cell: Estimate | None) -> str:
    return "–" if cell is None else cell.format()


def to_frame(table: Table, wide_ci: bool = False) -> pd.DataFrame:
    """Rows of ``table``. ``wide_ci``: value, ci_low and ci_high in separate numeric columns."""
    records = []
    for keys, cells in table.rows:
        row: dict = dict(zip(table.key_headers, keys))
        for col, cell in zip(table.columns, cells):
            if wide_ci:
                row[col.header] = None if cell is None or not cell.defined else cell.value
                row[f"{col.header} ci_low"] = None if cell is None else cell.ci_low
                row[f"{col.header} ci_high"] = None if cell is None else cell.ci_high
            else:
                row[col.header] = format_cell(cell)
        records.append(row)
    return pd.DataFrame.from_records(records, columns=None if records else list(table.key_headers))


def legend_lines(lb: Leaderboard) -> list[str]:
    """What each task name in the tables is (kind, version, data, metric version, eps, key)."""
    return list(lb.legend)


def render_md(lb: Leaderboard, context: RenderContext | None = None) -> str:
    """The sections in their order: the headline tables (one, or one per task), each with its
    failed runs listed under it, then what their names mean and the notes, then the official
    layouts and the shifts table."""
    parts = []
    for section in lb.sections():
        table = section.table
        head = f"### {table.title}\n\n" if section.heading else ""
        body = to_frame(table).to_markdown(index=False) + "\n" if table.rows or not table.failed else ""
        failed = "".join(f"* {line}\n" for line in table.failed_lines())
        caption = f"\n{section.caption}.\n" if section.caption else ""
        parts.append(head + body + ("\n" if body and failed else "") + failed + caption)
        if section.notes_after:
            parts[-1] += "\nTasks:\n\n" + "".join(f"* {line}\n" for line in legend_lines(lb))
            if lb.notes:
                parts[-1] += "\nNotes:\n\n" + "".join(f"* {n}\n" for n in lb.notes)
    return "\n".join(parts)


def _value(x: float | None) -> float | None:
    return None if x is None or not math.isfinite(x) else x


def render_json(lb: Leaderboard, context: RenderContext | None = None) -> str:
    """Every section's cells, one object per cell, and its failed runs (``failed``: model, run
    folder, task, its name and the error); the legend (``tasks``), the column groups' names
    (``task_names``: ``ties#2`` -> ``ties (limit 10)``) and the notes beside."""
    tables = []
    for section in lb.sections():
        table = section.table
        rows = []
        for keys, cells in table.rows:
            for col, cell in zip(table.columns, cells):
                if cell is None:
                    continue
                rows.append({**dict(zip(table.key_headers, keys)), "task": col.task or keys[-2], "metric": col.metric,
                             "subset": col.subset, "eps": col.eps, "eps_unit": col.eps_unit, "header": col.header,
                             "value": _value(cell.value), "ci_low": cell.ci_low, "ci_high": cell.ci_high})
        failed = [{"model": f.model, "folder": f.folder, "task": f.task, "task_name": f.task_name, "error": f.error}
                  for f in table.failed]
        tables.append({"title": table.title, "columns": [c.header for c in table.columns], "rows": rows,
                       "caption": section.caption, **({"failed": failed} if failed else {})})
    return json.dumps({"tables": tables, "eps": {t: {"eps": e, "unit": u} for t, (e, u) in lb.eps.items()},
                       "task_keys": lb.keys, "task_names": lb.names, "tasks": legend_lines(lb),
                       "notes": list(lb.notes)}, indent=2, ensure_ascii=False) + "\n"


CSV_KEYS = ("model", "task", "shift", "table", "failed")
"""The CSV's first columns, where present: what names a row (``failed``: a failed run's error)."""


def _with_failed(table: Table, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` and a row per failed run of ``table``: its model (and run folder), task and error."""
    if not table.failed:
        return frame
    rows = pd.DataFrame.from_records([{table.key_headers[0]: f.model + (f" ({f.folder})" if f.folder else ""),
                                       "task": f.task, "failed": f.error} for f in table.failed])
    return pd.concat([frame, rows], ignore_index=True, sort=False) if len(frame) else rows


def _keys_first(frame: pd.DataFrame) -> pd.DataFrame:
    keys = [c for c in CSV_KEYS if c in frame.columns]
    return frame[keys + [c for c in frame.columns if c not in keys]]


def render_csv(lb: Leaderboard, context: RenderContext | None = None) -> str:
    """One numeric column per value and CI bound. A lone table as it is; several sections' rows
    one under the other, in their order, each with a ``table`` column (its title) and a ``task``
    column where its columns are of one task (a table per task, an official layout). A failed run
    is a row with its ``task`` and its error in ``failed``, and no values."""
    found = lb.sections()
    if len(found) == 1:
        table = found[0].table
        return _keys_first(_with_failed(table, to_frame(table, wide_ci=True))).to_csv(index=False)
    frames = []
    for section in found:
        table = section.table
        frame = to_frame(table, wide_ci=True)
        tasks = {c.task for c in table.columns if c.task} | {f.task for f in table.failed}
        if "task" not in frame.columns and len(tasks) == 1:
            frame.insert(len(table.key_headers), "task", tasks.pop())
        frame = _with_failed(table, frame)
        frame.insert(len(table.key_headers) + ("task" in frame.columns), "table", table.title)
        frames.append(frame)
    return _keys_first(pd.concat(frames, ignore_index=True, sort=False)).to_csv(index=False)


SORT_JS = """
document.querySelectorAll('th').forEach(function (th) {
  th.addEventListener('click', function () {
    var col = th.cellIndex;
    var body = th.closest('table').tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    var asc = th.getAttribute('data-dir') !== 'asc';
    th.parentNode.querySelectorAll('th').forEach(function (h) { h.removeAttribute('data-dir'); });
    th.setAttribute('data-dir', asc ? 'asc' : 'desc');
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute('data-v'), y = b.cells[col].getAttribute('data-v');
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (isNaN(nx) || isNaN(ny)) ? String(x).localeCompare(String(y)) : nx - ny;
      return asc ? c : -c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  });
});
"""


def html_table(table: Table, heading: bool = True, caption: str = "") -> str:
    """A sortable table; the key columns (model, task, shift), headers and cells, left-aligned;
    its failed runs in a list under it (the list alone where every run failed)."""
    e = html.escape
    title = f"<h2>{e(table.title)}</h2>" if heading else ""
    lines = table.failed_lines()
    failed = f'<ul class="failed">{"".join(f"<li>{e(line)}</li>" for line in lines)}</ul>' if lines else ""
    if not table.rows and failed:
        return title + failed + (f"<p>{e(caption)}</p>" if caption else "")
    head = "".join([f'<th class="key">{e(h)}</th>' for h in table.key_headers]
                   + [f"<th>{e(c.header)}</th>" for c in table.columns])
    body = []
    for keys, cells in table.rows:
        tds = [f'<td class="key" data-v="{e(k)}">{e(k)}</td>' for k in keys]
        for cell in cells:
            v = "" if cell is None or not cell.defined else repr(cell.value)
            tds.append(f'<td data-v="{e(v)}">{e(format_cell(cell))}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    return (f'{title}<div class="frame"><table><thead><tr>{head}</tr></thead><tbody>{"".join(body)}</tbody></table>'
            "</div>" + failed
            + (f"<p>{e(caption)}</p>" if caption else ""))


def html_notes(lb: Leaderboard) -> str:
    """What the Markdown prints under its headline tables: what each task name is (data, metric
    version, eps, key), then the notes (runs that cannot share cells, missing eps, failed tasks...)."""
    e = html.escape
    notes = f"<p>Notes:</p><ul>{''.join(f'<li>{e(n)}</li>' for n in lb.notes)}</ul>" if lb.notes else ""
    return f"<p>Tasks:</p><ul>{''.join(f'<li>{e(n)}</li>' for n in legend_lines(lb))}</ul>{notes}"


def html_tables(lb: Leaderboard, said: str = "") -> list[str]:
    """Every section of ``lb``, the legend and notes under the headline tables; ``said``: the
    caption the page gives in its introduction (no table repeats it)."""
    return [html_table(s.table, heading=s.heading, caption=f"{s.caption}." if s.caption else "")
            + (html_notes(lb) if s.notes_after else "") for s in lb.sections(said)]


_STYLE = ("body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
          ".frame{max-width:100%;overflow-x:auto;margin-bottom:.5em}"
          "th,td{border:1px solid #ccc;padding:4px 8px;text-align:right;white-space:nowrap}"
          "th{cursor:pointer;background:#f4f4f4}th.key,td.key{text-align:left}"
          "td.key{white-space:normal;overflow-wrap:anywhere;min-width:8em;max-width:24em}"
          "li,p{overflow-wrap:anywhere}th[data-dir=asc]::after{content:' \\25B2'}"
          "th[data-dir=desc]::after{content:' \\25BC'}figure{display:inline-block;margin:1em}")
"""What fits a page of any width: a table wider than the window scrolls inside its frame, a long
model label or run folder wraps (at most 24em wide), as do the notes."""


def render_html(lb: Leaderboard, context: RenderContext | None = None) -> str:
    """The sections in their order, with the notes under the headline tables; the page says once,
    at its top, what a cell is; the context's figures (task -> inline SVG: the D-Spec curves)
    embedded after the tables."""
    e = html.escape
    figures = (context or RenderContext()).figures()
    # An SVG in an <img> is inert: names in its legend can never run as script.
    figs = "".join(f'<figure><figcaption>{e(task)}: discrimination vs specificity</figcaption>'
                   f'<img alt="{e(task)} D-Spec curve" src="data:image/svg+xml;base64,'
                   f'{base64.b64encode(svg.encode("utf-8")).decode("ascii")}"></figure>'
                   for task, svg in (figures or {}).items())
    tables = html_tables(lb, said=lb.main.caption)
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rmbench leaderboard</title>"
        f"<style>{_STYLE}</style></head><body><h1>rmbench leaderboard</h1>"
        f"<p>Cells: {e(lb.main.caption)}; cells are shared by comparable runs only. "
        "Click a header to sort.</p>"
        + "".join(tables) + figs + f"<script>{SORT_JS}</script></body></html>\n")
