r"""LaTeX leaderboard (``--format latex``, ``.tex``): booktabs tables to ``\input`` in a paper.

What the document needs: ``\usepackage{booktabs,graphicx}``, nothing else (``±`` and ``σ`` are
written as ``$\pm$`` and ``$\sigma$``; text is escaped, so pdflatex, xelatex and lualatex all take
it). A name in a script other than Latin (CJK, Cyrillic) needs xelatex or lualatex with a font that
has it::

    \documentclass{article}
    \usepackage{booktabs,graphicx}
    \begin{document}
    \input{leaderboard.tex}
    \end{document}

One ``table`` float per section, in the order of
:meth:`~rmbench.results.publishing.leaderboard.Leaderboard.sections`: a ``\caption`` with the section's title
where it is shown, the table in ``\small`` (``\toprule``, ``\midrule``, ``\bottomrule``; key columns
left, numbers right), then a table note in ``\footnotesize``: the runs of the table's tasks that
failed (one line each: ``MODEL (run folder F): failed: ERROR``; a table whose every run failed is
these lines alone, no ``tabular``), the section's caption and what bold means. After the last
headline table's float, as text (a float cannot run over pages), the legend (what each task name
is) and the notes.

Every table fits the text width (:mod:`rmbench.results.publishing.latex_fit`): a long model label
wraps in a column of 30% of ``\linewidth``, a long header wraps at its spaces, a table too wide for
one line of columns is cut into several ``tabular`` of its columns one under the other (each with
the model column), and each is shrunk to ``\linewidth`` only where it is still wider. Notes break
after ``/ _ + :`` too, so that run-folder names never run into the margin.

A cell is ``0.712`` over ``[0.69, 0.73]`` in ``\scriptsize`` (option ``ci=brackets``, the default)
or ``0.712 $\pm$ 0.02`` on one line (``ci=pm``: half the CI's width): the value to 3 decimals, the
CI to 2; ``--`` where there is no value. The best value of each column is bold (``\textbf``), by the
direction its metric declares (the column's ``higher_is_better``, from the run's record of it), compared as printed
(3 decimals), ties all bold. Not ranked: a column with fewer than two values, the length-bias
metrics (0 is ideal, either sign a bias: their declared direction is nominal), and the tables whose
rows are not one per model (the original-vs-shifted table: its rows mix tasks and shifts). Every
text (model and task names, headers, captions, notes) is escaped: ``\ & % $ # _ { } ~ ^ < > | [ ]``,
and the few non-ASCII signs rmbench writes (``σ ± – — × ≤ ≥ …``) and Greek letters become LaTeX.

Registered in :mod:`rmbench.results.publishing.formats` (one line); nothing else knows of it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rmbench.core.metric_registry import metric_def
from rmbench.results.publishing.formats import RenderContext
from rmbench.results.publishing.latex_fit import (
    BREAK_AFTER,
    FIT_MACRO,
    FLOAT_PT,
    KEY_MAX_EN,
    KEY_SHARE,
    LINE_EN,
    LINE_PT,
    SCRIPT_PT,
    chunks,
    lines_of,
    short_labels,
    text_en,
    wrap_words,
)
from rmbench.results.publishing.leaderboard import Leaderboard
from rmbench.results.publishing.leaderboard_tables import Section, Table
from rmbench.results.storage.record import Estimate

DIGITS = 3
"""Decimals of a value (and of the comparison that makes it bold)."""
CI_DIGITS = 2
"""Decimals of a CI bound or half-width."""
NOT_RANKED = ("length_correlation", "length_bias_gap")
"""Metrics never bold: 0 is ideal and either sign is a bias (their reading says so)."""
SCRIPT = 7 / 9
"""``\\scriptsize`` against ``\\small``: the scale of a CI under its value."""

_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}", "[": "{[}", "]": "{]}", "\n": " ", "\t": " ",
    "σ": r"$\sigma$", "±": r"$\pm$", "–": "--", "—": "---", "−": "--", "×": r"$\times$", "≤": r"$\leq$",
    "≥": r"$\geq$", "…": r"\ldots{}",
}
_GREEK_CAPITALS = {"GAMMA", "DELTA", "THETA", "LAMDA", "XI", "PI", "SIGMA", "UPSILON", "PHI", "PSI", "OMEGA"}


def escape(text: str, breakable: bool = False) -> str:
    """``text`` as LaTeX text: every special character escaped (see the module's docstring);
    ``breakable``: a line may break after each of :data:`~rmbench.results.publishing.latex_fit.BREAK_AFTER`
    inside a word."""
    out = []
    for i, ch in enumerate(text):
        out.append(_ESCAPES.get(ch) or _greek(ch) or ch)
        if breakable and ch in BREAK_AFTER and text[i + 1:i + 2] not in ("", " "):
            out.append(r"\allowbreak{}")
    return "".join(out)


def _greek(ch: str) -> str:
    """A Greek letter as ``$\\alpha$``, where LaTeX has a command for it; else ""."""
    if not "\u0391" <= ch <= "\u03c9":
        return ""
    name = unicodedata.name(ch, "")
    letter = name.rpartition(" ")[2]
    command = "lambda" if letter == "LAMDA" else letter.lower()
    if name.startswith("GREEK SMALL LETTER ") and command and command != "omicron":
        return f"$\\{command}$"
    if name.startswith("GREEK CAPITAL LETTER ") and letter in _GREEK_CAPITALS:
        return f"$\\{command.capitalize()}$"
    return ""


def _parts(cell: Estimate | None, ci: str) -> tuple[str, str]:
    """A cell's value and CI as printed (``ci=pm``: ``± h``), "" where it has none; ``--`` for no value."""
    if cell is None or not cell.defined:
        return "--", ""
    value = f"{cell.value:.{DIGITS}f}"
    if cell.ci_low is None or cell.ci_high is None:
        return value, ""
    if ci == "pm":
        return value, f"± {(cell.ci_high - cell.ci_low) / 2:.{CI_DIGITS}f}"
    return value, f"[{cell.ci_low:.{CI_DIGITS}f}, {cell.ci_high:.{CI_DIGITS}f}]"


def format_cell(cell: Estimate | None, ci: str = "brackets", bold: bool = False) -> str:
    """A cell's LaTeX: the value (bold where it is the column's best) and its CI as ``ci`` says:
    ``brackets``, under the value in ``\\scriptsize``; ``pm``, beside it."""
    value, interval = _parts(cell, ci)
    value = f"\\textbf{{{value}}}" if bold else value
    if not interval:
        return value
    if ci == "pm":
        return f"{value} {escape(interval)}"
    return f"\\begin{{tabular}}[t]{{@{{}}r@{{}}}}{value}\\\\\\scriptsize {escape(interval)}\\end{{tabular}}"


def cell_en(cell: Estimate | None, ci: str = "brackets", bold: bool = False) -> float:
    """The estimated width of :func:`format_cell`'s cell, in en (see :mod:`~rmbench.results.publishing.latex_fit`)."""
    value, interval = _parts(cell, ci)
    width = text_en(value, 1.1 if bold else 1.0)
    if not interval:
        return width
    return width + text_en(" " + interval) if ci == "pm" else max(width, text_en(interval, SCRIPT))


def best_rows(table: Table) -> list[set[int]]:
    """Per column of ``table``, the rows whose value is its best as printed (ties: all of them);
    empty where the column is not ranked (see the module's docstring)."""
    out: list[set[int]] = [set() for _ in table.columns]
    if len(table.key_headers) != 1:
        return out
    for j, col in enumerate(table.columns):
        if col.metric in NOT_RANKED:
            continue
        column = [(i, cells[j]) for i, (_, cells) in enumerate(table.rows)]
        values = [(i, round(cell.value, DIGITS)) for i, cell in column if cell is not None and cell.defined]
        if len(values) < 2:
            continue
        higher = col.higher_is_better if col.higher_is_better is not None else metric_def(col.metric).higher_is_better
        pick = max if higher else min
        best = pick(v for _, v in values)
        out[j] = {i for i, v in values if v == best}
    return out


def _header(lines: Sequence[str]) -> str:
    """A column header of one line, or of several (wrapped at its spaces) in a nested tabular."""
    if len(lines) == 1:
        return escape(lines[0])
    joined = "\\\\".join(escape(line) for line in lines)
    return f"\\begin{{tabular}}[b]{{@{{}}r@{{}}}}{joined}\\end{{tabular}}"


def _key_widths(table: Table, shown: Sequence[Sequence[str]]) -> tuple[list[float], list[float]]:
    r"""The estimated width of each key column (``shown``: the key texts as printed) and the share of
    ``\linewidth`` of each that wraps (a ``p`` column; 0 for one that does not): the first's
    :data:`~rmbench.results.publishing.latex_fit.KEY_SHARE`, or half the line shared out where
    several are too wide."""
    widths = [max([text_en(h)] + [text_en(keys[i]) for keys in shown]) for i, h in enumerate(table.key_headers)]
    wide = [w > KEY_MAX_EN for w in widths]
    share = min(KEY_SHARE, 0.5 / max(sum(wide), 1))
    shares = [share if w else 0.0 for w in wide]
    return [KEY_MAX_EN * share / KEY_SHARE if w else x for w, x in zip(wide, widths)], shares


@dataclass(frozen=True)
class Piece:
    """One ``tabular`` (or ``longtable``) of a table: a chunk of its columns, its column spec, its
    header and rows as LaTeX lines, and its estimated height in pt."""

    spec: str
    head: str
    rows: tuple[str, ...]
    height: float

    def tabular(self) -> list[str]:
        return [f"\\rmbenchfit{{\\begin{{tabular}}{{{self.spec}}}", r"\toprule", self.head, r"\midrule", *self.rows,
                r"\bottomrule", r"\end{tabular}}"]

    def longtable(self, caption: str, continued: bool) -> list[str]:
        """A ``longtable`` (``caption``: the section's title, or "" for none), its header repeated
        on each page under a ``(continued)`` caption."""
        first = [f"\\caption{{{caption}}}\\\\" if not continued else f"\\caption[]{{{caption} (continued)}}\\\\"]
        again = [f"\\caption[]{{{caption} (continued)}}\\\\"]
        head = [r"\toprule", self.head, r"\midrule"]
        return [f"\\begin{{longtable}}{{{self.spec}}}", *(first if caption else []), *head, r"\endfirsthead",
                *(again if caption else []), *head, r"\endhead", r"\bottomrule", r"\endfoot", *self.rows,
                r"\end{longtable}"]


def tabular(table: Table, ci: str, labels: Mapping[str, str] | None = None) -> list[Piece]:
    """The table as pieces that each fit the text width (see the module's docstring): key columns
    left-aligned (the first a wrapping ``p`` column where its labels are long; ``labels``: the
    short form of some labels, :func:`~rmbench.results.publishing.latex_fit.short_labels`), metric
    columns right-aligned, one piece per chunk of columns."""
    labels = labels or {}
    bold = best_rows(table)
    cells = [[format_cell(c, ci, i in bold[j]) for j, c in enumerate(row)] for i, (_, row) in enumerate(table.rows)]
    widths = [max([cell_en(c, ci, i in bold[j]) for i, (_, row) in enumerate(table.rows) for c in (row[j],)] + [1.0])
              for j in range(len(table.columns))]
    headers = [wrap_words(col.header, max(widths[j], 6.0)) for j, col in enumerate(table.columns)]
    widths = [max([w] + [text_en(line) for line in lines]) for w, lines in zip(widths, headers)]
    shown = [(labels.get(row_keys[0], row_keys[0]),) + tuple(row_keys[1:]) for row_keys, _ in table.rows]
    key_en, shares = _key_widths(table, shown)
    spec_keys = "".join(f"p{{{share:g}\\linewidth}}" if share else "l" for share in shares)
    keys = [[(r"\raggedright " if shares[k] else "") + escape(text, breakable=bool(shares[k]))
             for k, text in enumerate(row_keys)] for row_keys in shown]
    stacked = ci != "pm" and any(c is not None and c.ci_low is not None for _, row in table.rows for c in row)
    row_pt = sum(LINE_PT * max(lines_of(text, key_en[k]) if shares[k] else 1 for k, text in enumerate(row_keys))
                 + (SCRIPT_PT if stacked else 0.0) for row_keys in shown)
    out: list[Piece] = []
    for chunk in chunks(sum(key_en) + 2 * max(len(key_en) - 1, 0), widths, LINE_EN):
        head = [escape(h) for h in table.key_headers] + [_header(headers[j]) for j in chunk]
        header_pt = LINE_PT * (2 + max(len(headers[j]) for j in chunk))
        rows = tuple(" & ".join(keys[i] + [cells[i][j] for j in chunk]) + r" \\" for i in range(len(table.rows)))
        out.append(Piece(spec_keys + "r" * len(chunk), " & ".join(head) + r" \\", rows, header_pt + row_pt + LINE_PT))
    return out


def _paragraphs(label: str, lines: Sequence[str]) -> list[str]:
    return [(f"\\textit{{{label}:}} " if i == 0 else "") + escape(line, breakable=True) + r"\par"
            for i, line in enumerate(lines)]


def table_note(section: Section, ci: str = "brackets") -> list[str]:
    """The note under a section's table, inside its float: its failed runs, its caption (with
    ``ci=pm``, what ± is) and what bold means."""
    pm = r" (shown as value $\pm$ half its width)" if ci == "pm" and "CI" in section.caption else ""
    said = [escape(section.caption, breakable=True) + pm + "."] if section.caption else []
    if any(best_rows(section.table)):
        said.append(r"Bold: the best value of its column.")
    lines = _paragraphs("Failed", section.table.failed_lines())
    lines += [" ".join(said) + r"\par"] if said else []
    if not lines:
        return []
    return [r"\par\smallskip", r"{\raggedright\footnotesize", *lines, "}"]


def legend_and_notes(lb: Leaderboard, runs: Sequence[str] = ()) -> list[str]:
    """The legend (what each task name is), the runs that short labels stand for, and the notes,
    as text after the last headline table's float (outside it: they may run over pages, which a
    float cannot)."""
    lines = _paragraphs("Tasks", lb.legend) + _paragraphs("Runs", runs) + _paragraphs("Notes", lb.notes)
    return [r"{\raggedright\footnotesize", *lines, "}"] if lines else []


def _section(lb: Leaderboard, section: Section, ci: str, labels: Mapping[str, str], runs: Sequence[str]) -> str:
    """A section as one float, or, where its tables are taller than a float may be, as a
    ``longtable`` per chunk of columns on a new page (``\\clearpage`` sets the floats before it
    first, so the tables keep their order); its note under it, the legend and notes after it
    where the section says so."""
    title = escape(section.table.title) if section.heading else ""
    pieces = tabular(section.table, ci, labels) if section.table.rows or not section.table.failed else []
    size = [r"\small\setlength{\tabcolsep}{4pt}"] if pieces else []
    if sum(p.height for p in pieces) <= FLOAT_PT:
        body = [line for k, p in enumerate(pieces) for line in ([r"\par\medskip"] if k else []) + p.tabular()]
        lines = [r"\begin{table}[htbp]", r"\centering", *([f"\\caption{{{title}}}"] if title else []), *size, *body,
                 *table_note(section, ci), r"\end{table}"]
    else:
        long = [line for k, p in enumerate(pieces) for line in p.longtable(title, k > 0)]
        lines = [r"\clearpage", "{" + size[0], *long, "}", *table_note(section, ci)]
    return "\n".join(lines + (legend_and_notes(lb, runs) if section.notes_after else []))


def render_latex(lb: Leaderboard, context: RenderContext | None = None) -> str:
    """Every section of ``lb`` as booktabs tables (see the module's docstring)."""
    ci = str((context or RenderContext()).options.get("ci", "brackets"))  # one of its Option's words
    sections = lb.sections()
    labels, runs = short_labels([keys[0] for s in sections for keys, _ in s.table.rows])
    parts = [r"% rmbench leaderboard: \input{} this file in a document with \usepackage{booktabs,graphicx,longtable}"
             "\n" + FIT_MACRO]
    parts += [_section(lb, section, ci, labels, runs) for section in sections]
    return "\n\n".join(parts) + "\n"
