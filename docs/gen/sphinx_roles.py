"""A griffe extension (mkdocs.yml: mkdocstrings' python ``extensions``) that makes the Sphinx
roles of rmbench's docstrings render on the site.

rmbench's docstrings cross-reference with Sphinx roles (``:class:`~rmbench.tasks.rows.RowReader```,
``:func:`load_pins```, ``:mod:`rmbench.tasks.downloads```), which mkdocstrings prints
literally. Before the docstrings are parsed, each role becomes a mkdocstrings cross-reference
``[`RowReader`][rmbench.tasks.rows.RowReader]`` when its target is documented on the site (an
object named by a ``::: IDENTIFIER`` line of a docs page, or one of its public members), and
plain code (```RowReader```) otherwise, so that ``mkdocs build --strict`` has no unresolved
reference. A name is resolved in the scope of the docstring's object (its module's imports and
members), as Sphinx resolves it; a leading ``~`` shows the last part only.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import griffe

DOCS = Path(__file__).resolve().parents[1]
ROLE = re.compile(r":(?:py:)?(?P<role>class|func|meth|mod|attr|data|exc|obj|const|type):`(?P<body>[^`]+)`")
_DIRECTIVE = re.compile(r"^:::\s*(\S+)", re.MULTILINE)


def documented_identifiers() -> list[str]:
    """The identifiers the docs pages render with ``::: IDENTIFIER``."""
    return sorted({m.group(1) for page in DOCS.rglob("*.md") for m in _DIRECTIVE.finditer(page.read_text("utf-8"))})


def _public_members(obj: Any) -> list[Any]:
    try:
        return [m for name, m in obj.members.items() if not name.startswith("_")]
    except Exception:  # an alias whose target is outside the loaded packages
        return []


def _final_path(obj: Any) -> str:
    try:
        return obj.final_target.path if obj.is_alias else obj.path
    except Exception:
        return obj.path


def rewrite(text: str, resolve: Any, targets: dict[str, str]) -> str:
    """``text`` with each Sphinx role replaced by a cross-reference to a documented target (by
    its canonical path in ``targets``) or by plain code. ``resolve(name)`` is the full path of
    ``name`` in the docstring's scope (or raises)."""

    def one(match: re.Match[str]) -> str:
        body = match.group("body").strip()
        title, _, explicit = body.partition("<")
        if explicit.endswith(">"):
            name, shown = explicit[:-1].strip(), title.strip()
        else:
            name = body.lstrip("~").lstrip(".")
            shown = name.rsplit(".", 1)[-1] if body.startswith("~") else name
        if match.group("role") in ("func", "meth") and not shown.endswith(")"):
            shown += "()"
        head, _, rest = name.partition(".")
        candidates = [name]
        try:
            full = resolve(head)
            candidates.insert(0, f"{full}.{rest}" if rest else full)
        except Exception:
            pass
        for candidate in candidates:
            if candidate in targets:
                return f"[`{shown}`][{targets[candidate]}]"
        return f"`{shown}`"

    return ROLE.sub(one, text)


class SphinxRoles(griffe.Extension):
    """Rewrites every docstring of a loaded package (module doc)."""

    def on_package(self, *, pkg: griffe.Module, **kwargs: Any) -> None:
        targets: dict[str, str] = {}
        for ident in documented_identifiers():
            root, _, rest = ident.partition(".")
            if root != pkg.name:
                continue
            try:
                obj = pkg[rest] if rest else pkg
            except Exception:
                continue
            for o, shown in [(obj, ident)] + [(m, f"{ident}.{m.name}") for m in _public_members(obj)]:
                targets.setdefault(shown, shown)
                targets.setdefault(_final_path(o), shown)
        self._walk(pkg, targets, set())

    def _walk(self, obj: Any, targets: dict[str, str], seen: set[str]) -> None:
        if obj.path in seen:
            return
        seen.add(obj.path)
        if obj.docstring is not None and ":" in obj.docstring.value:
            obj.docstring.value = rewrite(obj.docstring.value, obj.resolve, targets)
        for member in obj.members.values():
            if not member.is_alias:
                self._walk(member, targets, seen)
