r"""LaTeX leaderboard (``--format latex``, ``.tex``): booktabs tables to ``\input`` in a paper.

What the document needs: ``\usepackage{booktabs}``, nothing else (``±`` and ``σ`` are written as
``$\pm$`` and ``$\sigma$``; text is escaped, so pdflatex, xelatex and lualatex all take it). A
name in a script other than Latin (CJK, Cyrillic) needs xelatex or lualatex with a font that has it::

    \documentclass{article}
    \usepackage{booktabs}
    \begin{document}
    \input{leaderboard.tex}
    \end{document}

One ``table`` float per section, in the order of
:meth:`~rmbench.results.publishing.leaderboard.Leaderboard.sections`: a ``\caption`` with the section's title
where it is shown, a ``tabular`` (``\toprule``, ``\midrule``, ``\bottomrule``; key columns left,
numbers right), then a table note in ``\footnotesize``: the runs of the table's tasks that failed
(one line each: ``MODEL (run folder F): failed: ERROR``; a table whose every run failed is these
lines alone, no ``tabular``), the section's caption, what bold means and, under the last headline
table, the legend (what each task name is) and the notes.

A cell is ``0.712 [0.69, 0.73]`` (option ``ci=brackets``, the default) or ``0.712 $\pm$ 0.02``
(``ci=pm``: half the CI's width): the value to 3 decimals, the CI to 2; ``--`` where there is no
value. The best value of each column is bold (``\textbf``), by the direction its metric declares
(:func:`rmbench.core.metric_registry.metric_def`), compared as printed (3 decimals), ties all bold.
Not ranked: a column with fewer than two values, the length-bias metrics (0 is ideal, either
sign a bias: their declared direction is nominal), and the tables whose rows are not one per
model (the original-vs-shifted table: its rows mix tasks and shifts). Every text (model and task
names, headers, captions, notes) is escaped: ``\ & % $ # _ { } ~ ^ < > | [ ]``, and the few
non-ASCII signs rmbench writes (``σ ± – — × ≤ ≥ …``) and Greek letters become LaTeX.

Registered in :mod:`rmbench.results.publishing.formats` (one line); nothing else knows of it.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from rmbench.core.metric_registry import metric_def
from rmbench.results.publishing.formats import RenderContext
from rmbench.results.publishing.leaderboard import Leaderboard
from rmbench.results.publishing.leaderboard_tables import Section, Table
from rmbench.results.storage.record import Estimate

DIGITS = 3
"""Decimals of a value (and of the comparison that makes it bold)."""
CI_DIGITS = 2
"""Decimals of a CI bound or half-width."""
NOT_RANKED = ("length_correlation", "length_bias_gap")
"""Metrics never bold: 0 is ideal and either sign is a bias (their reading says so)."""

_ESCAPES = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}", "[": "{[}", "]": "{]}", "\n": " ", "\t": " ",
    "σ": r"$\sigma$", "±": r"$\pm$", "–": "--", "—": "---", "−": "--", "×": r"$\times$", "≤": r"$\leq$",
    "≥": r"$\geq$", "…": r"\ldots{}",
}
_GREEK_CAPITALS = {"GAMMA", "DELTA", "THETA", "LAMDA", "XI", "PI", "SIGMA", "UPSILON", "PHI", "PSI", "OMEGA"}


def escape(text: str) -> str:
    """``text`` as LaTeX text: every special character escaped (see the module's docstring)."""
    return "".join(_ESCAPES.get(ch) or _greek(ch) or ch for ch in text)


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


def format_cell(cell: Estimate | None, ci: str = "brackets", bold: bool = False) -> str:
    """A cell's LaTeX: the value (bold where it is the column's best) and its CI as ``ci`` says."""
    if cell is None or not cell.defined:
        return "--"
    value = f"{cell.value:.{DIGITS}f}"
    value = f"\\textbf{{{value}}}" if bold else value
    if cell.ci_low is None or cell.ci_high is None:
        return value
    if ci == "pm":
        return f"{value} $\\pm$ {(cell.ci_high - cell.ci_low) / 2:.{CI_DIGITS}f}"
    return f"{value} [{cell.ci_low:.{CI_DIGITS}f}, {cell.ci_high:.{CI_DIGITS}f}]"


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
        pick = max if metric_def(col.metric).higher_is_better else min
        best = pick(v for _, v in values)
        out[j] = {i for i, v in values if v == best}
    return out


def tabular(table: Table, ci: str) -> list[str]:
    """The ``tabular`` of ``table``: key columns left-aligned, metric columns right-aligned."""
    bold = best_rows(table)
    spec = "l" * len(table.key_headers) + "r" * len(table.columns)
    head = [escape(h) for h in table.key_headers] + [escape(c.header) for c in table.columns]
    rows = [" & ".join([escape(k) for k in keys] + [format_cell(c, ci, i in bold[j]) for j, c in enumerate(cells)])
            + r" \\" for i, (keys, cells) in enumerate(table.rows)]
    return [f"\\begin{{tabular}}{{{spec}}}", r"\toprule", " & ".join(head) + r" \\", r"\midrule", *rows,
            r"\bottomrule", r"\end{tabular}"]


def _paragraphs(label: str, lines: Sequence[str]) -> list[str]:
    return [(f"\\textit{{{label}:}} " if i == 0 else "") + escape(line) + r"\par" for i, line in enumerate(lines)]


def table_note(lb: Leaderboard, section: Section, ci: str = "brackets") -> list[str]:
    """The note under a section's table: its failed runs, its caption (with ``ci=pm``, what ± is),
    what bold means, and (after the last headline table) the legend and the notes."""
    pm = r" (shown as value $\pm$ half its width)" if ci == "pm" and "CI" in section.caption else ""
    said = [escape(section.caption) + pm + "."] if section.caption else []
    if any(best_rows(section.table)):
        said.append(r"Bold: the best value of its column.")
    lines = _paragraphs("Failed", section.table.failed_lines())
    lines += [" ".join(said) + r"\par"] if said else []
    if section.notes_after:
        lines += _paragraphs("Tasks", lb.legend) + _paragraphs("Notes", lb.notes)
    if not lines:
        return []
    return [r"\par\smallskip", r"{\raggedright\footnotesize", *lines, "}"]


def render_latex(lb: Leaderboard, context: RenderContext | None = None) -> str:
    """Every section of ``lb`` as a booktabs ``table`` float (see the module's docstring)."""
    ci = (context or RenderContext()).options.get("ci", "brackets")
    parts = [r"% rmbench leaderboard: \input{} this file in a document with \usepackage{booktabs}"]
    for section in lb.sections():
        caption = [f"\\caption{{{escape(section.table.title)}}}"] if section.heading else []
        table = tabular(section.table, ci) if section.table.rows or not section.table.failed else []
        parts.append("\n".join([r"\begin{table}[htbp]", r"\centering", *caption, *table,
                                *table_note(lb, section, ci), r"\end{table}"]))
    return "\n\n".join(parts) + "\n"
