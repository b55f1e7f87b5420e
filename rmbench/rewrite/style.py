"""Deterministic, offline style rewriters: ``rmbench shift --rewriter style:NAME``.

Each style is a pure function ``str -> str`` that changes how a response looks, never what it
says: its words (runs of letters and digits, case aside) stay, in order; only markup, whitespace
and the fixed phrases listed below come or go. This mirrors RM-Bench's style-substance split
(concise / detailed plain / detailed markdown) and the format transformations of reWordBench,
without an LLM. Common rules:

* fenced code blocks (a line opening with at least three backticks or tildes, up to the line
  closing it, or the end of the text) are never changed; only line endings are, by ``whitespace``;
* a style never empties a text: where the result would be blank, the text is kept as it was;
* a text with nothing to rewrite comes back unchanged (``rmbench shift`` counts these).

``markdown-to-plain`` (markdown -> plain text), line by line outside code:
    1. rule lines (``---``, ``***``, ``___``, ``===``, three or more) become blank lines;
    2. leading block markup goes, repeatedly: ATX headers ``#`` .. ``######`` (and closing
       ``#``s), block quotes ``>``, list markers ``-``/``*``/``+`` and ``N.``/``N)`` (N of 1-3
       digits; the number goes with the marker) with the indentation before them;
    3. links ``[text](url)`` and images ``![text](url)`` become ``text (url)`` (``url`` alone
       when the text is empty or the url); autolinks ``<url>`` become ``url``; links with a
       title, and links touching a letter or digit outside, are left as they are;
    4. emphasis markers go: ``**x**``, ``__x__``, ``*x*``, ``_x_``, where ``x`` starts and ends
       with a non-space and the markers touch no letter, digit or marker character outside
       (``snake_case``, ``2*3*4``, ``a * b`` and intraword ``**x**y`` stay);
    5. inline code loses its backticks when its content has no markup character
       (``* [ ] < > # \\ ~``, an underscore at a word's edge, a leading block marker) and the
       span touches no letter or digit outside; otherwise the span stays whole.
    Code, urls and backslash escapes are never rewritten by 3-4. The rules repeat until nothing
    changes, so the style is idempotent. Tables, strikethrough (``~~x~~``: deleted text) and HTML
    are left as they are.
``plain-to-markdown`` (plain text -> markdown), by paragraph (run of non-blank lines) outside
code; a paragraph with markdown already (a header, quote, list item, rule, table row, a line
starting with ``**`` or indented by four spaces or a tab) is left as it is. A paragraph's items
are its lines, or its sentences when it is one line (:func:`sentences`).
    1. lead: if the text's first paragraph is eligible and its first item has at most 12 words,
       that item becomes a bold line ``**item**``, then a blank line and the rest;
    2. every eligible paragraph with two or more (remaining) items becomes a bullet list,
       ``- item`` per item; a single item stays a plain line.
``bullets-to-prose``: every list (item lines ``-``/``*``/``+``/``N.``/``N)`` at any indentation,
their indented continuation lines, single blank lines between two bullet or two numbered items)
becomes one line: the items' texts joined by spaces, each with a capital first letter (when its
first word is lower-case ``a``-``z``) and end punctuation (a trailing ``,``/``;`` becomes ``.``;
``.`` is added unless it ends in ``. ! ? :``, closing ``* _ ` " ' ) ]`` aside). A list right
after a line ending in ``:`` joins that line. List numbers go with their markers.
``whitespace``: line endings become ``\\n``; outside code, Unicode spaces (no-break, thin, ...)
become spaces, trailing spaces and tabs go, runs of spaces/tabs after a line's first non-space
become one space (indentation stays), runs of blank lines become one, and blank lines at the
start and end go. Idempotent.
``spacious``: the reverse of ``whitespace``, outside code: a single space after ``.``/``!``/``?``
before a capital (or a quote or bracket) becomes two, and every run of blank lines between two
paragraphs becomes two blank lines. So ``whitespace(spacious(t)) == whitespace(t)``.
``polite``: :data:`PREAMBLE` and a blank line before, a blank line and :data:`CLOSING` after the
text (stripped), each unless the text already starts / ends with it. Idempotent.
``plain``: the reverse of ``polite``: removes, case-insensitively and repeatedly, the whole
phrases of :data:`OPENERS` at the start and of :data:`CLOSINGS` at the end of the text (a
phrase must be followed / preceded by whitespace or the text's edge), then strips the text.
``ascii-punctuation``: outside code, typographic punctuation becomes ASCII (:data:`ASCII`):
curly quotes to ``'``/``"``, en dash and minus sign to ``-``, em dash to ``--``, ellipsis to
``...``, no-break and thin spaces to spaces.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from itertools import groupby

from rmbench.errors import ConfigError, did_you_mean

VERSION = 1  # bump when any rule changes: recorded in OUT.meta.json as rewriter_version

PREAMBLE = "Sure! Here is my answer."
CLOSING = "I hope this helps!"
OPENERS = (PREAMBLE, "Here is my answer.", "Here is my answer:", "Here's my answer.", "Here's my answer:",
           "Sure!", "Sure.", "Certainly!", "Certainly.", "Of course!", "Of course.", "Absolutely!",
           "Great question!", "Good question!", "What a great question!", "Happy to help!",
           "I'd be happy to help!", "I'd be happy to help.", "I'd be glad to help!", "I'd be glad to help.")
CLOSINGS = (CLOSING, "I hope this helps.", "Hope this helps!", "Hope this helps.", "I hope that helps!",
            "I hope that helps.", "Let me know if you have any other questions.",
            "Let me know if you have any other questions!", "Let me know if you have any questions.",
            "Let me know if you have any questions!", "Let me know if you need anything else.",
            "Let me know if you need anything else!", "Feel free to ask if you have any other questions.",
            "Happy to help!", "Good luck!", "Happy coding!")
ASCII = {"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u201c": '"', "\u201d": '"',
         "\u201e": '"', "\u201f": '"', "\u2013": "-", "\u2212": "-", "\u2014": "--", "\u2026": "...",
         "\u00a0": " ", "\u2009": " ", "\u202f": " "}

_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_RULE = re.compile(r"^\s*(?:(?:[-*_]\s*){3,}|={3,}\s*)$")
_HEADER = re.compile(r"^\s{0,3}#{1,6}(?:\s+|$)")
_QUOTE = re.compile(r"^\s{0,3}>\s?")
_ITEM = re.compile(r"^\s*(?:[-*+]|\d{1,3}[.)])\s+")
_TABLE = re.compile(r"^\s*\|")
_SPACES = re.compile(r"[\u00a0\u1680\u2000-\u200a\u202f\u205f\u3000]")
_TOKEN = re.compile("\ue000(\\d+)\ue001")
_NW, _NA = r"(?<![^\W_]|\ue001)", r"(?![^\W_]|\ue000)"  # not touching a letter, digit or set-aside token


def _blocks(text: str) -> list[tuple[bool, list[str]]]:
    """``text`` cut into line blocks: (True, fenced code lines) and (False, prose lines)."""
    blocks: list[tuple[bool, list[str]]] = []
    fence = ""
    for line in text.split("\n"):
        opening = _FENCE.match(line)
        if fence:
            blocks[-1][1].append(line)
            close = line.strip()
            fence = "" if close and set(close) == {fence[0]} and len(close) >= len(fence) else fence
        elif opening:
            fence = opening.group(1)
            blocks.append((True, [line]))
        elif blocks and not blocks[-1][0]:
            blocks[-1][1].append(line)
        else:
            blocks.append((False, [line]))
    return blocks


def _on_prose(text: str, fn: Callable[[list[str]], list[str]]) -> str:
    """Apply ``fn`` to each run of prose lines (code blocks kept) and join the lines again."""
    return "\n".join(line for code, lines in _blocks(text) for line in (lines if code else fn(lines)))


# -- markdown-to-plain -------------------------------------------------------------------------

def _strip_block(line: str) -> str:
    """Rule 2: leading headers, quotes and list markers, as many as there are."""
    if _RULE.match(line):
        return ""
    while True:
        if m := _HEADER.match(line):
            line = re.sub(r"\s+#+\s*$", "", line[m.end():])
        elif m := (_QUOTE.match(line) or _ITEM.match(line)):
            line = line[m.end():]
        else:
            return line


def _code_is_safe(content: str) -> bool:
    unsafe = r"[*\[\]<>#\\~`]|(?<![^\W_])_|_(?![^\W_])"
    return not re.search(unsafe, content) and _strip_block(content) == content


def _strip_inline(line: str) -> str:
    """Rules 3-5 on one line; code, urls and escapes are set aside as tokens while the rest runs."""
    if "\ue000" in line or "\ue001" in line:  # the tokens' own characters: such a line is left as it is
        return line
    saved: list[str] = []

    def keep(text: str) -> str:
        saved.append(text)
        return f"\ue000{len(saved) - 1}\ue001"

    def code(m: re.Match) -> str:
        body = m.group(2)
        if len(body) > 2 and body.startswith(" ") and body.endswith(" ") and body.strip():
            body = body[1:-1]
        edges = m.string[max(m.start() - 1, 0):m.start()] + m.string[m.end():m.end() + 1]
        return keep(body) if _code_is_safe(body) and not re.search(r"[^\W_]", edges) else keep(m.group(0))

    def link(m: re.Match) -> str:
        text, url = m.group(1).strip(), m.group(2)
        return keep(url) if not text or text == url else f"{text} ({keep(url)})"

    line = re.sub(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", code, line)
    line = re.sub(r"\\[!-/:-@\[-`{-~]", lambda m: keep(m.group(0)), line)
    line = re.sub(_NW + r"!?\[([^\[\]]*)\]\(\s*<?([^\s()<>]+)>?\s*\)" + _NA, link, line)
    line = re.sub(_NW + r"<((?:https?|ftp)://[^\s<>]+|mailto:[^\s<>]+)>" + _NA, lambda m: keep(m.group(1)), line)
    line = re.sub(r"(?:https?|ftp)://[^\s<>()]+", lambda m: keep(m.group(0)), line)
    # emphasis: markers touching a letter, a digit, a set-aside token or a marker character stay
    for mark, inner in ((r"\*\*", r"\S"), ("__", r"\S"), (r"\*", r"[^\s*]"), ("_", r"[^\s_]")):
        c = mark[-1]
        line = re.sub(rf"(?<![^\W_]|[\ue001{c}]){mark}(?={inner})(.+?)(?<={inner}){mark}(?![^\W_]|[\ue000{c}])",
                      r"\1", line)
    while _TOKEN.search(line):
        line = _TOKEN.sub(lambda m: saved[int(m.group(1))], line)
    return line


def _fixpoint(fn: Callable[[str], str], text: str) -> str:
    """``fn`` applied until the text stops changing (so the style is idempotent; each change
    shortens the text or replaces a character, so this ends long before 100 rounds)."""
    for _ in range(100):
        new = fn(text)
        if new == text:
            break
        text = new
    return text


def markdown_to_plain(text: str) -> str:
    """Markdown markup removed, words and code kept (rules in the module docstring)."""
    return _fixpoint(lambda t: _on_prose(t, lambda lines: [_strip_inline(_strip_block(s)) for s in lines]), text)


# -- plain-to-markdown -------------------------------------------------------------------------

_ABBREV = re.compile(r"\b(?:[Ee]\.g|[Ii]\.e|etc|vs|cf|Mr|Mrs|Ms|Dr|Prof|St|Jr|Sr|No|Fig|[A-Z])\.$")


def sentences(line: str) -> list[str]:
    """One line's sentences: split at spaces after ``.``/``!``/``?`` (and a closing quote or
    bracket) before a capital, a digit, a quote or a bracket, never after a listed abbreviation
    or an initial."""
    parts = re.split(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]]))\s+(?=[\"'(\[]?[A-Z0-9])", line.strip())
    out: list[str] = []
    for part in parts:
        if out and _ABBREV.search(out[-1]):
            out[-1] += " " + part
        else:
            out.append(part)
    return [p for p in out if p]


def _is_markdown(lines: list[str]) -> bool:
    return any(_HEADER.match(s) or _QUOTE.match(s) or _ITEM.match(s) or _RULE.match(s) or _TABLE.match(s)
               or s.lstrip().startswith("**") or s.startswith("    ") or s.startswith("\t") for s in lines)


def _runs(lines: list[str]) -> list[list[str]]:
    """Lines grouped into runs of non-blank lines (paragraphs) and runs of blank lines, in order."""
    return [list(run) for _, run in groupby(lines, key=lambda s: bool(s.strip()))]


def plain_to_markdown(text: str) -> str:
    """A bold lead line and bullet lists made from plain paragraphs (rules in the module docstring)."""
    first = not _FENCE.match(text.strip())  # the lead is only for the text's first paragraph

    def convert(lines: list[str]) -> list[str]:
        nonlocal first
        out: list[str] = []
        for para in _runs(lines):
            if not para[0].strip():
                out += para
                continue
            lead_allowed, first = first, False
            if _is_markdown(para):
                out += para
                continue
            items = [s.strip() for s in para] if len(para) > 1 else sentences(para[0])
            if lead_allowed and len(re.findall(r"[^\W_]+", items[0])) <= 12:
                out += [f"**{items[0]}**"] + ([""] if len(items) > 1 else [])
                items = items[1:]
            out += [f"- {item}" for item in items] if len(items) > 1 else items
        return out

    return _on_prose(text, convert)


# -- bullets-to-prose --------------------------------------------------------------------------

def _as_sentence(item: str) -> str:
    item = item.strip()
    if re.match(r"[a-z]", item):
        item = item[0].upper() + item[1:]
    core = item.rstrip("*_`\"')]")
    if core.endswith((",", ";")):
        return core[:-1] + "." + item[len(core):]
    return item if core.endswith((".", "!", "?", ":")) else item + "."


def _numbered(line: str) -> bool:
    return line.lstrip()[:1].isdigit()


def bullets_to_prose(text: str) -> str:
    """Every list joined into one line of sentences (rules in the module docstring)."""
    def convert(lines: list[str]) -> list[str]:
        out: list[str] = []
        i = 0
        while i < len(lines):
            if not _ITEM.match(lines[i]) or _RULE.match(lines[i]):
                out.append(lines[i])
                i += 1
                continue
            items: list[str] = []
            start = i
            while i < len(lines):
                line = lines[i]
                if _ITEM.match(line) and not _RULE.match(line):
                    while m := _ITEM.match(line):  # "- 1. x": a list inside an item's first line
                        line = line[m.end():]
                    items.append(line)
                elif line.strip() and line[:1].isspace() and items:
                    items[-1] += " " + line.strip()
                elif not line.strip() and i + 1 < len(lines) and _ITEM.match(lines[i + 1]) \
                        and _numbered(lines[i + 1]) == _numbered(lines[start]):
                    pass  # a blank line between two items of one kind (bullets, or numbers)
                else:
                    break
                i += 1
            prose = " ".join(_as_sentence(t) for t in items if t.strip())
            if out and out[-1].rstrip().endswith(":"):
                out[-1] = out[-1].rstrip() + " " + prose
            elif prose:
                out.append(prose)
        return out

    return _on_prose(text, convert)


# -- whitespace, spacious, ascii-punctuation -----------------------------------------------------

def _tidy(text: str) -> str:
    def tidy(lines: list[str]) -> list[str]:
        lines = [re.sub(r"(?<=\S)[ \t]+", " ", _SPACES.sub(" ", s)).rstrip() for s in lines]
        return [s for run in _runs(lines) for s in (run if run[0] else [""])]

    return _on_prose(text.replace("\r\n", "\n").replace("\r", "\n"), tidy).strip("\n")


def whitespace(text: str) -> str:
    """Whitespace normalised (rules in the module docstring)."""
    return _fixpoint(_tidy, text)


def spacious(text: str) -> str:
    """Two spaces between sentences, two blank lines between paragraphs (outside code)."""
    def widen(lines: list[str]) -> list[str]:
        runs = _runs(lines)
        return [re.sub(r"(?<=[.!?]) (?=[\"'(\[]?[A-Z])", "  ", s) if s.strip() else s
                for k, run in enumerate(runs)  # blank runs between paragraphs become two blank lines
                for s in (["", ""] if not run[0].strip() and 0 < k < len(runs) - 1 else run)]

    return _on_prose(text, widen)


def ascii_punctuation(text: str) -> str:
    """Typographic quotes, dashes, ellipses and spaces as ASCII (outside code)."""
    table = str.maketrans(ASCII)
    return _on_prose(text, lambda lines: [s.translate(table) for s in lines])


# -- polite, plain -------------------------------------------------------------------------------

def _phrase(phrase: str) -> str:
    return r"\s+".join(re.escape(w) for w in phrase.split())


_OPEN = re.compile(r"^\s*(?:" + "|".join(_phrase(p) for p in OPENERS) + r")(?=\s|$)", re.I)
_CLOSE = re.compile(r"(?:^|(?<=\s))(?:" + "|".join(_phrase(p) for p in CLOSINGS) + r")\s*$", re.I)


def polite(text: str) -> str:
    """:data:`PREAMBLE` and :data:`CLOSING` around the text, each unless already there."""
    body = text.strip()
    if not body:
        return text
    head = "" if body.lower().startswith(PREAMBLE.lower()) else PREAMBLE + "\n\n"
    tail = "" if body.lower().endswith(CLOSING.lower()) else "\n\n" + CLOSING
    return head + body + tail


def plain(text: str) -> str:
    """Pleasantries of :data:`OPENERS` / :data:`CLOSINGS` removed from the start and end."""
    body = text
    while (m := _OPEN.match(body)) or (m := _CLOSE.search(body)):
        body = body[:m.start()] + body[m.end():]
    body = body.strip()
    return body if body else text


# -- the registry --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Style:
    """One style: its name (``style:NAME``), its function and a one-line summary."""

    name: str
    fn: Callable[[str], str]
    summary: str
    version: int = VERSION


STYLES = {s.name: s for s in (
    Style("markdown-to-plain", markdown_to_plain, "markdown markup removed (headers, emphasis, lists, links, code)"),
    Style("plain-to-markdown", plain_to_markdown, "a bold lead line and bullet lists from plain paragraphs"),
    Style("bullets-to-prose", bullets_to_prose, "lists joined into sentences of one paragraph"),
    Style("whitespace", whitespace, "whitespace normalised: single spaces, at most one blank line"),
    Style("spacious", spacious, "two spaces between sentences, two blank lines between paragraphs"),
    Style("polite", polite, f"{PREAMBLE!r} before and {CLOSING!r} after"),
    Style("plain", plain, "pleasantries removed from the start and end"),
    Style("ascii-punctuation", ascii_punctuation, "typographic quotes, dashes and ellipses as ASCII"),
)}


def get_style(name: str) -> Style:
    """The style called ``name``, or a one-line :class:`ConfigError` naming the known ones."""
    if name not in STYLES:
        raise ConfigError(f"unknown style {name!r}{did_you_mean(name, STYLES)} "
                          f"(known: {', '.join(STYLES)})")
    return STYLES[name]


def apply_style(style: Style, text: str) -> str:
    """``style`` on one text; the text itself where the result would be blank."""
    out = style.fn(text)
    return out if out.strip() else text


def style_rewriter(name: str) -> Callable[[list[str]], list[str]]:
    """The batch rewriter of ``style:NAME`` (``list[str] -> list[str]``) for ``write_shifted``."""
    style = get_style(name)
    return lambda texts: [apply_style(style, t) for t in texts]
