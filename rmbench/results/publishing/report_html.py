"""The report page (:func:`render_report`): HTML, CSS and plain JS, all inline, no network resource.

Every text from a run (answers, prompts, names, notes) goes through :func:`html.escape`; the
D-Spec curves (matplotlib SVG) are embedded as ``<img>`` data URIs, where no script can run, and so
are the PNG thumbnails of a prompt's images (:mod:`rmbench.results.publishing.thumbnails`), each
titled by its sha256; an image without a thumbnail is its hash and the note why.
Example tables sort on a header click and filter by task, subset, shift and gap.
"""

from __future__ import annotations

import base64
import html
import math
from collections.abc import Mapping, Sequence

from rmbench.core.images import Image
from rmbench.results.publishing.examples import PER_PROMPT, Answer, FlipExample, PairExample, Selection
from rmbench.results.publishing.leaderboard_render import SORT_JS, html_tables
from rmbench.results.publishing.thumbnails import Thumbnail

_STYLE = """
body{font-family:system-ui,sans-serif;margin:1.5em;max-width:1400px}
table{border-collapse:collapse;margin:.5em 0}th,td{border:1px solid #ccc;padding:4px 8px;vertical-align:top}
th{cursor:pointer;background:#f4f4f4}td.num{text-align:right;white-space:nowrap}
th[data-dir=asc]::after{content:' \\25B2'}th[data-dir=desc]::after{content:' \\25BC'}
figure{display:inline-block;vertical-align:top;width:calc(50% - 1.2em);min-width:380px;margin:.5em 1em .5em 0}\
figure img{width:100%}.pair{display:flex;gap:8px}
.ans{flex:1;min-width:0;border:1px solid #ddd;padding:4px;background:#fafafa}
.txt{white-space:pre-wrap;word-break:break-word;font-family:ui-monospace,monospace;font-size:12px;margin:0}
.prompt{white-space:pre-wrap;font-size:12px;color:#333;margin:0 0 4px 0}.cut{color:#b00;font-style:italic}
del{background:#fdd}ins{background:#dfd;text-decoration:none}.note{color:#a40}
.filter input{margin-right:1em}.meta{font-size:12px;color:#555}
.thumbs{display:flex;flex-wrap:wrap;gap:6px;margin:0 0 4px 0}
.thumbs img{border:1px solid #ccc;max-width:96px;max-height:96px}
"""

_FILTER_JS = """
document.querySelectorAll('.filter').forEach(function (f) {
  var table = document.getElementById(f.getAttribute('data-for'));
  function apply() {
    var q = f.querySelector('input[name=q]').value.toLowerCase();
    var g = parseFloat(f.querySelector('input[name=gap]').value);
    Array.prototype.forEach.call(table.tBodies[0].rows, function (r) {
      var keys = [0, 1, 2].map(function (i) { return r.cells[i].getAttribute('data-v'); }).join(' ').toLowerCase();
      var gap = Math.abs(parseFloat(r.cells[3].getAttribute('data-v')));
      r.style.display = (keys.indexOf(q) >= 0 && (isNaN(g) || gap >= g)) ? '' : 'none';
    });
  }
  f.querySelectorAll('input').forEach(function (i) { i.addEventListener('input', apply); });
});
"""


def _e(s: object) -> str:
    return html.escape(str(s), quote=True)


def _cut(text: str, max_chars: int) -> str:
    if len(text) <= max_chars:
        return _e(text)
    return f'{_e(text[:max_chars])}<span class="cut"> [… {len(text) - max_chars} more characters cut]</span>'


def _num(x: float, digits: int = 3) -> str:
    return "–" if x is None or not math.isfinite(x) else f"{x:.{digits}f}"


def _answer(label: str, a: Answer, max_chars: int) -> str:
    form = f", form {_e(a.form)}" if a.form else ""
    judged = (f'<div class="meta">the judge:</div><pre class="txt judge">{_cut(a.judgment, max_chars)}</pre>'
              if a.judgment else "")
    return (f'<div class="ans"><div class="meta">{_e(label)}: response {a.index}, utility {a.utility}, '
            f'reward {_num(a.reward, 4)}{form}</div><pre class="txt">{_cut(a.text, max_chars)}</pre>{judged}</div>')


def _diff(p: PairExample, max_chars: int) -> str:
    if not p.diff:
        return ""
    tags = {"equal": "span", "delete": "del", "insert": "ins"}
    body, used = [], 0
    for seg in p.diff:
        if used > 2 * max_chars:
            body.append('<span class="cut"> [… diff cut]</span>')
            break
        body.append(f"<{tags[seg.op]}>{_e(seg.text)}</{tags[seg.op]}> ")
        used += len(seg.text)
    return f'<div class="meta">word diff a → b:</div><pre class="txt">{"".join(body)}</pre>'


Thumbs = Mapping[str, Thumbnail]


def _images(images: Sequence[Image], thumbs: Thumbs) -> str:
    """The prompt's images: each its thumbnail (a PNG data URL titled by its sha256), or its
    hash and why there is no thumbnail. Never a path."""
    if not images:
        return ""
    parts = []
    for k, image in enumerate(images, 1):
        t = thumbs.get(image.sha256)
        name = f"image {k} of {len(images)}, sha256 {image.sha256}"
        if t is not None and t.data_url is not None:
            parts.append(f'<img class="thumb" alt="{_e(name)}" title="{_e(name)}" width="{t.width}" '
                         f'height="{t.height}" src="{t.data_url}">')
        else:
            note = t.note if t is not None else "no thumbnail"
            parts.append(f'<span class="meta">{_e(name)}: {_e(note)}</span>')
    return f'<div class="thumbs">{"".join(parts)}</div>'


def _pair_cell(p: PairExample, max_chars: int, labels: tuple[str, str], thumbs: Thumbs) -> str:
    return (f'<td data-v="{_e(p.group_id)}"><div class="meta">group {_e(p.group_id)}</div>'
            f'<pre class="prompt">{_cut(p.prompt, max_chars)}</pre>{_images(p.images, thumbs)}'
            f'<div class="pair">{_answer(labels[0], p.a, max_chars)}{_answer(labels[1], p.b, max_chars)}</div>'
            f'{_diff(p, max_chars)}</td>')


def _key_cells(p: PairExample) -> str:
    return "".join(f'<td data-v="{_e(v or "")}">{_e(v or "")}</td>' for v in (p.task, p.subset, p.shift))


def _gap_cell(x: float) -> str:
    return f'<td class="num" data-v="{"" if not math.isfinite(x) else repr(x)}">{_num(x)}</td>'


def _table(tid: str, title: str, what: str, sel: Selection, rows: list[str], gap_header: str) -> str:
    head = ("<tr><th>task</th><th>subset</th><th>shift</th>"
            f"<th>{_e(gap_header)}</th><th>prompt and answers</th></tr>")
    shown = f"top {len(sel.examples)} of {sel.total} {what}"
    if sel.left_out:
        shown += (f"; at most {PER_PROMPT} per prompt: {sel.left_out} more of prompts already shown "
                  f"{PER_PROMPT} times left out")
    if not rows:
        return f"<h4>{_e(title)}</h4><p>none ({_e(shown)})</p>"
    return (f'<h4>{_e(title)}</h4><p class="meta">{_e(shown)}</p>'
            f'<div class="filter" data-for="{tid}">filter task/subset/shift: <input name="q" type="search"> '
            f'|gap| at least: <input name="gap" type="number" step="0.1"></div>'
            f'<table class="ex" id="{tid}"><thead>{head}</thead><tbody>{"".join(rows)}</tbody></table>')


def _pairs_table(tid: str, title: str, what: str, sel: Selection, max_chars: int, labels: tuple[str, str],
                 thumbs: Thumbs) -> str:
    rows = [f'<tr>{_key_cells(p)}{_gap_cell(p.gap_sigma)}{_pair_cell(p, max_chars, labels, thumbs)}</tr>'
            for p in sel.examples]
    return _table(tid, title, what, sel, rows, "gap (sigma)")


def _flips_table(tid: str, sel: Selection, max_chars: int, thumbs: Thumbs) -> str:
    rows = []
    for f in sel.examples:
        assert isinstance(f, FlipExample)
        cell = (_pair_cell(f.original, max_chars, ("original a", "original b"), thumbs)[:-5]
                + '<div class="meta">rewritten:</div>'
                + f'<div class="pair">{_answer("rewrite of a", f.rewritten.a, max_chars)}'
                f'{_answer("rewrite of b", f.rewritten.b, max_chars)}</div></td>')
        rows.append(f"<tr>{_key_cells(f.rewritten)}{_gap_cell(f.rewritten.gap_sigma)}{cell}</tr>")
    return _table(tid, "Preference flips under rewriting", "flipped rewritten pairs", sel, rows,
                  "rewritten gap (sigma)")


def _task_html(k: int, t, report) -> str:
    mc, thumbs = report.options.max_chars, report.thumbnails
    parts = [f'<section id="task-{k}"><h2>Task {_e(t.name)}</h2>']
    parts += [f'<p class="note">{_e(n)}</p>' for n in t.notes]
    curve = report.curves.get(t.name)
    if curve:
        data = base64.b64encode(curve.encode("utf-8")).decode("ascii")
        parts.append(f'<figure><figcaption>D(eps)-Spec(eps)</figcaption><img alt="{_e(t.name)} D-Spec curve" '
                     f'src="data:image/svg+xml;base64,{data}"></figure>')
    parts += [f"<figure>{svg}</figure>" for svg in t.bars]
    if t.scatter:
        parts.append(f'<figure class="scatter">{t.scatter}</figure>')
    for x in t.examples:
        run = report.run_names[x.run]
        parts.append(f"<h3>{_e(run)}</h3>")
        parts.append(_pairs_table(f"over-{k}-{x.run}", "Most oversensitive equal-utility pairs",
                                  "equal-utility pairs", x.oversensitive, mc, ("a (higher reward)", "b"), thumbs))
        parts.append(_pairs_table(f"fail-{k}-{x.run}", "Worst discrimination failures (lowest margin)",
                                  "discrimination pairs", x.failures, mc, ("better", "worse"), thumbs))
        if x.flips is not None:
            parts.append(_flips_table(f"flip-{k}-{x.run}", x.flips, mc, thumbs))
    parts.append("</section>")
    return "".join(parts)


def render_report(report) -> str:
    """The whole page of a :class:`rmbench.results.publishing.report.Report`."""
    lb = report.leaderboard
    tables = html_tables(lb, said=lb.main.caption)
    nav = "".join(f'<li><a href="#task-{k}">{_e(t.name)}</a></li>' for k, t in enumerate(report.tasks))
    runs = ", ".join(_e(n) for n in report.run_names)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            f"<title>rmbench report: {runs}</title><style>{_STYLE}</style></head><body>"
            f"<h1>rmbench report</h1><p>Runs: {runs}. Cells: {_e(lb.main.caption)}. "
            "Gaps in sigma: reward difference / the run's reward standard deviation. Click a header to sort.</p>"
            f"<h2>Headline</h2>{''.join(tables)}<h2>Tasks</h2><ul>{nav}</ul>"
            + "".join(_task_html(k, t, report) for k, t in enumerate(report.tasks))
            + f"<script>{SORT_JS}{_FILTER_JS}</script></body></html>\n")
