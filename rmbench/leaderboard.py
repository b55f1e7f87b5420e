"""Leaderboards: run records -> one table (rows = models, columns per task) -> md/csv/json/html.

Only runs with the same comparability key for a task share that task's columns; a mix is
refused with a message that says what differs. Every number carries its 95% bootstrap CI.
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from rmbench.errors import ConfigError
from rmbench.record import LoadedRun

FORMATS = ("md", "csv", "json", "html")
BASE_COLUMNS = ("pairwise_accuracy", "discrimination", "specificity", "ds_auc")
EXTRA_COLUMNS = ("ties_score",)
SHIFT_COLUMNS = ("pairwise_accuracy", "discrimination", "specificity", "reward_margin", "pairwise_accuracy_shift_gap")
SHIFT_HEADERS = ("acc", "D", "Spec", "margin", "acc gap (shifted - original)")
EPS_METRICS = ("discrimination", "specificity")
SHORT = {"pairwise_accuracy": "acc", "discrimination": "D", "specificity": "Spec", "ds_auc": "ds_auc",
         "ties_score": "ties_score"}
DEFAULT_EPS = 0.1


@dataclass(frozen=True)
class Cell:
    value: float
    ci_low: float | None
    ci_high: float | None


@dataclass(frozen=True)
class Leaderboard:
    """One row per model, one column per (task, metric); a cell is a :class:`Cell` or None (not run)."""

    columns: tuple[tuple[str, str], ...]
    rows: tuple[tuple[str, tuple[Cell | None, ...]], ...]
    eps: dict[str, tuple[float, str]]  # task -> (eps, unit) used for its D/Spec columns
    keys: dict[str, str]  # task -> comparability key
    shift_rows: tuple[tuple[str, str, str, tuple[Cell | None, ...]], ...] = ()
    """(model, task, shift, cells of SHIFT_COLUMNS): original ("none") vs shifted slices."""
    notes: tuple[str, ...] = ()
    """Footnotes on what a number rests on: rows left out by --skip-bad-rows, truncated texts."""

    def header(self, task: str, metric: str) -> str:
        if metric in EPS_METRICS:
            e, unit = self.eps[task]
            return f"{task} {SHORT[metric]}@{e:g}{'σ' if unit == 'sigma' else ''}"
        return f"{task} {SHORT[metric]}"


def _describe_key_difference(a: dict, b: dict) -> str:
    diffs = []
    if a.get("version") != b.get("version"):
        diffs.append(f"task version {a.get('version')} vs {b.get('version')}")
    if a.get("data_fingerprint") != b.get("data_fingerprint"):
        diffs.append(f"data fingerprint {a.get('data_fingerprint', '')[:12]} vs {b.get('data_fingerprint', '')[:12]}")
    return ", ".join(diffs) or "metric version or eps spec"


def run_notes(run: LoadedRun) -> list[str]:
    """Footnotes for a run: its tasks' skipped bad rows and truncated texts, where non-zero."""
    notes = []
    engine = run.results.get("engine", {}).get("model") or {}
    for t in run.results["tasks"]:
        skipped = (t.get("skipped_rows") or {}).get("count") or 0
        if skipped:
            notes.append(f"{run.model_name} on {t['name']}: {skipped} bad data row{'s' * (skipped != 1)} skipped "
                         f"(--skip-bad-rows); scored on the {t['counts']['groups']} groups kept")
        truncated = t.get("truncated_texts") or 0
        if truncated:
            how = (f" to {engine['max_length']} tokens on the {engine.get('truncation', 'left')}"
                   if engine.get("max_length") else "")
            notes.append(f"{run.model_name} on {t['name']}: {truncated} of {t['counts']['responses']} texts "
                         f"truncated{how} (--max-length)")
    return notes


def _pick_eps(task: str, run: LoadedRun, wanted: float | None) -> tuple[float, str]:
    recs = [m for m in run.metrics if m.task == task and m.metric == "discrimination" and m.subset is None
            and m.shift is None]
    available = sorted({m.eps for m in recs})
    unit = recs[0].eps_unit if recs else "sigma"
    if wanted is not None:
        if not any(math.isclose(wanted, e) for e in available):
            raise ConfigError(f"{run.path}: task {task!r} has no D/Spec at eps={wanted:g} (it has {available})")
        return wanted, unit
    if any(math.isclose(DEFAULT_EPS, e) for e in available):
        return DEFAULT_EPS, unit
    nonzero = [e for e in available if e > 0]
    return (nonzero or available or [0.0])[0], unit


def build_leaderboard(runs: Sequence[LoadedRun], eps: float | None = None) -> Leaderboard:
    if not runs:
        raise ConfigError("no runs given")
    task_order: list[str] = []
    keys: dict[str, tuple[str, LoadedRun, dict]] = {}
    for run in runs:
        for t in run.results["tasks"]:
            name = t["name"]
            if name not in keys:
                task_order.append(name)
                keys[name] = (t["comparability_key"], run, t)
            elif keys[name][0] != t["comparability_key"]:
                _, first, ft = keys[name]
                raise ConfigError(
                    f"task {name!r}: {run.path} is not comparable with {first.path} "
                    f"({_describe_key_difference(ft, t)}; comparability keys {t['comparability_key'][:12]} vs "
                    f"{ft['comparability_key'][:12]}). Build separate leaderboards, or rerun with the same "
                    f"task version, data and --eps.")
    eps_by_task = {name: _pick_eps(name, keys[name][1], eps) for name in task_order}
    columns = []
    for name in task_order:
        has_extra = {m.metric for r in runs for m in r.metrics if m.task == name}
        columns += [(name, m) for m in BASE_COLUMNS] + [(name, m) for m in EXTRA_COLUMNS if m in has_extra]

    by_model: dict[str, dict[tuple[str, str], Cell]] = {}
    seen: dict[tuple[str, str], str] = {}
    for run in runs:
        cells = by_model.setdefault(run.model_name, {})
        for t in run.results["tasks"]:
            if (run.model_name, t["name"]) in seen:
                raise ConfigError(f"model {run.model_name!r} has two runs of task {t['name']!r}: "
                                  f"{seen[(run.model_name, t['name'])]} and {run.path}")
            seen[(run.model_name, t["name"])] = str(run.path)
        for m in run.metrics:
            if m.subset is not None or m.shift is not None or (m.task, m.metric) not in columns:
                continue
            if m.metric in EPS_METRICS and not math.isclose(m.eps, eps_by_task[m.task][0]):
                continue
            cells[(m.task, m.metric)] = Cell(m.value, m.ci_low, m.ci_high)
    rows = [(model, tuple(cells.get(c) for c in columns)) for model, cells in by_model.items()]

    def sort_key(row):  # best first on the first column; missing cells last
        cell = row[1][0]
        return (cell is None or math.isnan(cell.value), -(cell.value if cell and not math.isnan(cell.value) else 0))

    rows.sort(key=sort_key)
    order = {model: i for i, (model, _) in enumerate(rows)}
    shift_cells: dict[tuple[str, str, str], dict[str, Cell]] = {}
    for run in runs:
        for m in run.metrics:
            if m.shift is None or m.subset is not None or m.metric not in SHIFT_COLUMNS:
                continue
            if m.metric.startswith(EPS_METRICS) and not math.isclose(m.eps, eps_by_task[m.task][0]):
                continue
            shift_cells.setdefault((run.model_name, m.task, m.shift), {})[m.metric] = Cell(m.value, m.ci_low, m.ci_high)
    shift_rows = tuple((model, task, shift, tuple(cells.get(c) for c in SHIFT_COLUMNS))
                       for (model, task, shift), cells in sorted(
                           shift_cells.items(), key=lambda kv: (order[kv[0][0]], task_order.index(kv[0][1]),
                                                                kv[0][2] != "none", kv[0][2])))
    notes = tuple(n for run in sorted(runs, key=lambda r: order.get(r.model_name, 0)) for n in run_notes(run))
    return Leaderboard(tuple(columns), tuple(rows), eps_by_task, {k: v[0] for k, v in keys.items()}, shift_rows,
                       notes)


def shift_frame(lb: Leaderboard) -> pd.DataFrame:
    """Original-vs-shifted rows: one per (model, task, shift), with the paired gap and its CI."""
    records = []
    for model, task, shift, cells in lb.shift_rows:
        e, unit = lb.eps[task]
        row = {"model": model, "task": task, "shift": shift}
        for head, cell in zip(SHIFT_HEADERS, cells):
            label = f"{head}@{e:g}{'σ' if unit == 'sigma' else ''}" if head in ("D", "Spec") else head
            row[label] = format_cell(cell)
        records.append(row)
    return pd.DataFrame.from_records(records)


def format_cell(cell: Cell | None) -> str:
    if cell is None or math.isnan(cell.value):
        return "–"
    if cell.ci_low is None:
        return f"{cell.value:.3f}"
    return f"{cell.value:.3f} [{cell.ci_low:.3f}, {cell.ci_high:.3f}]"


def to_frame(lb: Leaderboard, wide_ci: bool = False) -> pd.DataFrame:
    """Rows = models. ``wide_ci``: value, ci_low and ci_high in separate numeric columns."""
    records = []
    for model, cells in lb.rows:
        row: dict = {"model": model}
        for (task, metric), cell in zip(lb.columns, cells):
            head = lb.header(task, metric)
            if wide_ci:
                row[head] = None if cell is None or math.isnan(cell.value) else cell.value
                row[f"{head} ci_low"] = None if cell is None else cell.ci_low
                row[f"{head} ci_high"] = None if cell is None else cell.ci_high
            else:
                row[head] = format_cell(cell)
        records.append(row)
    return pd.DataFrame.from_records(records)


def render(lb: Leaderboard, fmt: str) -> str:
    if fmt == "md":
        note = ("Cells: value [95% bootstrap CI over groups]. D/Spec eps in "
                + ", ".join(f"{t}: {e:g} {u}" for t, (e, u) in lb.eps.items())
                + ". Comparability keys: " + ", ".join(f"{t}: {k[:12]}" for t, k in lb.keys.items()) + ".")
        text = to_frame(lb).to_markdown(index=False) + "\n\n" + note + "\n"
        if lb.notes:
            text += "\nNotes:\n\n" + "".join(f"* {n}\n" for n in lb.notes)
        if lb.shift_rows:
            text += ("\n### Original vs shifted\n\n" + shift_frame(lb).to_markdown(index=False)
                     + "\n\nThe gap pairs each shifted group with its original (paired bootstrap 95% CI).\n")
        return text
    if fmt == "csv":
        return to_frame(lb, wide_ci=True).to_csv(index=False)
    if fmt == "json":
        rows = []
        for model, cells in lb.rows:
            for (task, metric), cell in zip(lb.columns, cells):
                if cell is None:
                    continue
                e, unit = lb.eps[task] if metric in EPS_METRICS else (None, None)
                rows.append({"model": model, "task": task, "metric": metric, "eps": e, "eps_unit": unit,
                             "value": None if math.isnan(cell.value) else cell.value,
                             "ci_low": cell.ci_low, "ci_high": cell.ci_high,
                             "comparability_key": lb.keys[task]})
        shift_rows = [{"model": model, "task": task, "shift": shift, "metric": metric,
                       "value": None if cell is None or math.isnan(cell.value) else cell.value,
                       "ci_low": None if cell is None else cell.ci_low, "ci_high": None if cell is None else cell.ci_high}
                      for model, task, shift, cells in lb.shift_rows for metric, cell in zip(SHIFT_COLUMNS, cells)
                      if cell is not None]
        return json.dumps({"columns": [lb.header(t, m) for t, m in lb.columns], "rows": rows,
                           "shift_rows": shift_rows, "notes": list(lb.notes)}, indent=2) + "\n"
    if fmt == "html":
        return _html(lb)
    raise ConfigError(f"unknown leaderboard format {fmt!r}; use one of {', '.join(FORMATS)}")


_SORT_JS = """
document.querySelectorAll('th').forEach(function (th, col) {
  th.addEventListener('click', function () {
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


def _html(lb: Leaderboard) -> str:
    e = html.escape
    head = "".join(f"<th>{e(h)}</th>" for h in ["model"] + [lb.header(t, m) for t, m in lb.columns])
    body = []
    for model, cells in lb.rows:
        tds = [f'<td data-v="{e(model)}">{e(model)}</td>']
        for cell in cells:
            v = "" if cell is None or math.isnan(cell.value) else repr(cell.value)
            tds.append(f'<td data-v="{e(v)}">{e(format_cell(cell))}</td>')
        body.append("<tr>" + "".join(tds) + "</tr>")
    eps_note = ", ".join(f"{t}: {g:g} {u}" for t, (g, u) in lb.eps.items())
    shift_html = ""
    if lb.shift_rows:
        frame = shift_frame(lb)
        shead = "".join(f"<th>{e(str(c))}</th>" for c in frame.columns)
        sbody = "".join("<tr>" + "".join(f'<td data-v="{e(str(v))}">{e(str(v))}</td>' for v in row) + "</tr>"
                        for row in frame.itertuples(index=False))
        shift_html = (f"<h2>Original vs shifted</h2><p>gap = shifted - original, paired bootstrap 95% CI.</p>"
                      f"<table><thead><tr>{shead}</tr></thead><tbody>{sbody}</tbody></table>")
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>rmbench leaderboard</title>"
        "<style>body{font-family:system-ui,sans-serif;margin:2em}table{border-collapse:collapse}"
        "th,td{border:1px solid #ccc;padding:4px 8px;text-align:right}th{cursor:pointer;background:#f4f4f4}"
        "td:first-child{text-align:left}th[data-dir=asc]::after{content:' \\25B2'}"
        "th[data-dir=desc]::after{content:' \\25BC'}</style></head><body>"
        "<h1>rmbench leaderboard</h1>"
        f"<p>Cells: value [95% bootstrap CI over groups]. D/Spec eps: {e(eps_note)}. Click a header to sort.</p>"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>"
        + (f"<p>Notes:</p><ul>{''.join(f'<li>{e(n)}</li>' for n in lb.notes)}</ul>" if lb.notes else "")
        + f"{shift_html}"
        f"<script>{_SORT_JS}</script></body></html>\n"
    )
