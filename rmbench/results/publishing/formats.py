"""The leaderboard's output formats, in one registry, and its sections, in one order.

A format is one registration (:class:`OutputFormat`): a name (``--format NAME``), the suffix of
its files (``--out board.tex`` picks ``latex`` when no ``--format`` is given), a one-line
description (the CLI's help) and a render function ``render(lb, context) -> str``, given lazily
as ``"module:function"`` so that nothing heavy (pandas) is imported to list or check formats.
The built-in formats are registered at the end of this module, one line each; a format may
declare options (:class:`~rmbench.core.options.Option`, also named ``FormatOption``:
``--format-option ci=pm``), the one option record engines and trackers declare theirs with.

Every renderer (Markdown, CSV, JSON, HTML, LaTeX, the terminal's tables in :mod:`rmbench.cli`)
walks :func:`~rmbench.results.publishing.leaderboard_tables.sections` (``lb.sections()``): the
leaderboard's tables in one order, each with whether its title is shown, its caption by one
rule, and where the legend and notes go.

A third-party package adds a format through the ``rmbench.formats`` entry-point group, loaded on
first use: the entry point names an :class:`OutputFormat` (``my_pkg.board:TYPST``) whose
``name`` is the entry point's; in one process, :func:`register_format` does the same.
Adding a built-in format is one module (its render function) and one registration here: see
:mod:`rmbench.results.publishing.latex`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from rmbench.core.options import Option, OptionValue, resolve_options, split_assignment
from rmbench.errors import ConfigError, did_you_mean
from rmbench.registry import Registry, import_target

if TYPE_CHECKING:  # light at run time (no numpy): the CLI imports this module for its help text
    from rmbench.results.publishing.leaderboard import Leaderboard

ENTRY_POINT_GROUP = "rmbench.formats"


# --- the registry -------------------------------------------------------------------------------

def _no_figures() -> Mapping[str, str]:
    return {}


@dataclass(frozen=True)
class RenderContext:
    """What a render function gets besides the leaderboard: its format's options (every declared
    option, defaults filled in) and ``figures()``, the D-Spec curves as inline SVG by task,
    computed only when a format asks for them (the HTML page embeds them)."""

    options: Mapping[str, OptionValue] = field(default_factory=dict)
    """The format's options by name, as given with ``--format-option`` or their defaults."""
    figures: Callable[[], Mapping[str, str]] = _no_figures
    """Task -> its D-Spec curves as inline SVG, computed on the call."""


Render = Callable[["Leaderboard", RenderContext], str]


@dataclass(frozen=True)
class OutputFormat:
    """A leaderboard output format: ``render`` is a function or a lazy ``"module:function"``."""

    name: str
    """What ``--format`` names."""
    suffix: str
    """The suffix of the file it writes (``.tex``)."""
    description: str
    """One line for ``--format``'s help."""
    render: Render | str
    """``render(leaderboard, context) -> text``, or a lazy ``"module:function"`` naming it."""
    options: tuple[Option, ...] = ()
    """``--format-option NAME=VALUE``: e.g. ``Option("ci", ("brackets", "pm"), help)``, one of the
    words (the first is the default)."""

    def renderer(self) -> Render:
        """The render function, imported on first use where ``render`` is a lazy string."""
        if isinstance(self.render, str):
            loaded: Render = import_target(self.render)
            return loaded
        return self.render

    def resolve_options(self, given: Mapping[str, object] | Sequence[str] = ()) -> dict[str, OptionValue]:
        """Every option of the format: ``given`` (a mapping, or ``NAME=VALUE`` words) checked
        against the declared options, the defaults for the rest."""
        pairs = (given.items() if isinstance(given, Mapping) else
                 [split_assignment(w, "format option", "ci=pm") for w in given])
        return resolve_options(self.options, pairs, f"format {self.name!r}")


FORMATS: Registry[OutputFormat] = Registry("leaderboard format", entry_point_group=ENTRY_POINT_GROUP,
                                           kind=OutputFormat, key=lambda f: f.name)
_BUILTIN: list[str] = []


def register_format(name: str | OutputFormat, fmt: OutputFormat | str | None = None, *, description: str = "") -> None:
    """Register the leaderboard format ``name`` in this process: an :class:`OutputFormat` of that
    name, or a lazy ``"module:attr"`` naming one (a name already registered is a RegistryError); an
    installed package uses the ``rmbench.formats`` entry points instead. ``register_format(fmt)``,
    the older form, takes the name from the format."""
    name, fmt = FORMATS.named(name, fmt, "register_format")
    FORMATS.register(name, fmt, origin=f"register_format({name!r})",
                     description=description or (fmt.description if isinstance(fmt, OutputFormat) else ""))


def format_names() -> list[str]:
    """The built-in formats in their order (``md`` first, the default), then plugins' by name."""
    return _BUILTIN + [name for name in FORMATS.names() if name not in _BUILTIN]


def output_format(name: str) -> OutputFormat:
    """The registered format ``name``; an unknown name is one line listing every format."""
    if name not in FORMATS:
        names = format_names()
        raise ConfigError(f"unknown leaderboard format {name!r}: use one of {', '.join(names)}"
                          f"{did_you_mean(name, names)}")
    return FORMATS.get(name)  # one that is not an OutputFormat of its name: a RegistryError naming its origin


def format_for_path(path: Path | str, default: str = "md") -> str:
    """The format whose suffix ``path`` has (built-ins first), else ``default``."""
    suffix = Path(path).suffix.lower()
    for name in format_names():
        if output_format(name).suffix == suffix:
            return name
    return default


def render(lb: Leaderboard, fmt: str, context: RenderContext | None = None) -> str:
    """``lb`` in the format ``fmt``, its options checked and completed with their defaults."""
    spec = output_format(fmt)
    context = context or RenderContext()
    context = RenderContext(spec.resolve_options(context.options), context.figures)
    return spec.renderer()(lb, context)


def formats_help() -> str:
    """The built-in formats as the CLI's help says them."""
    return "; ".join(f"{name} ({FORMATS.describe(name)[0]})" for name in _BUILTIN)


def options_help() -> str:
    """The built-in formats' options as the CLI's help says them."""
    return "; ".join(f"{name}: {o.line}" for name in _BUILTIN for o in output_format(name).options)


# --- the built-in formats: one registration each -----------------------------------------------

_RENDER = "rmbench.results.publishing.leaderboard_render:"

for _fmt in (
    OutputFormat("md", ".md", "Markdown tables", _RENDER + "render_md"),
    OutputFormat("csv", ".csv", "every table's rows, a value and CI bounds per column", _RENDER + "render_csv"),
    OutputFormat("json", ".json", "every cell with its task, metric, eps and CI", _RENDER + "render_json"),
    OutputFormat("html", ".html", "a sortable page with the D-Spec curves", _RENDER + "render_html"),
    OutputFormat("latex", ".tex", "booktabs tables for a paper", "rmbench.results.publishing.latex:render_latex",
                 (Option("ci", ("brackets", "pm"), "CIs as 0.712 over [0.69, 0.73] or 0.712 ± 0.02"),)),
):
    FORMATS.register(_fmt.name, _fmt, description=_fmt.description)
    _BUILTIN.append(_fmt.name)
