"""A leaderboard format: Org-mode tables (``--format org``, ``.org``)."""

from rmbench.plugins import Estimate, Leaderboard, OutputFormat, RenderContext


def cell(estimate: Estimate | None) -> str:
    return estimate.format() if estimate is not None else ""


def row(cells) -> str:
    return "| " + " | ".join(str(c).replace("|", "/") for c in cells) + " |"


def render_org(lb: Leaderboard, context: RenderContext) -> str:
    out = []
    for section in lb.sections():  # every table, in the one order, with its caption by the one rule
        table = section.table
        if section.heading:
            out.append(f"* {table.title}")
        if table.rows or not table.failed:  # a table of failed runs only has no columns
            out.append(row([*table.key_headers, *(c.header for c in table.columns)]))
            out.append("|-")
            out += [row([*keys, *map(cell, cells)]) for keys, cells in table.rows]
        out += [f"- {line}" for line in table.failed_lines()]
        if section.caption:
            out.append(section.caption + ".")
        if section.notes_after:  # the legend and the notes come after the last headline table
            out += ["Tasks:", *(f"- {line}" for line in lb.legend)]
            out += ["Notes:", *(f"- {note}" for note in lb.notes)] if lb.notes else []
    return "\n".join(out) + "\n"


ORG = OutputFormat("org", ".org", "Org-mode tables", render_org)
