"""The matplotlib side of rmbench's figures: matplotlib imported on first use (it is optional:
``pip install 'rmbench[plot]'``), figures on the Agg canvas (pyplot and its global backend are
never touched), a colour per run, notes under the axes, and the figure as bytes or files:
written atomically, SVG deterministic (fixed hash salt, no date).
"""

from __future__ import annotations

import io
import os
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rmbench.errors import ConfigError
from rmbench.files import atomic_write_bytes
from rmbench.paths import user_cache_dir

if TYPE_CHECKING:  # pragma: no cover
    from matplotlib.figure import Figure

SVG_HASH_SALT = "rmbench"
_RC = {"svg.hashsalt": SVG_HASH_SALT, "svg.fonttype": "path"}
_METADATA = {"svg": {"Date": None}, "pdf": {"CreationDate": None}, "ps": {"CreationDate": None}}
_MISSING = "rmbench plot needs matplotlib: pip install 'rmbench[plot]'"


def load_matplotlib() -> Any:
    """matplotlib, imported (its font cache in rmbench's cache folder); a ConfigError saying how to
    install it where it is missing."""
    if "matplotlib" not in sys.modules and not os.environ.get("MPLCONFIGDIR"):
        # matplotlib caches its font list; keep it in rmbench's cache, not beside other tools' files
        os.environ["MPLCONFIGDIR"] = str(user_cache_dir() / "matplotlib")
    try:
        import matplotlib
        from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
        from matplotlib.figure import Figure  # noqa: F401
    except ImportError:
        raise ConfigError(_MISSING) from None
    return matplotlib


def rc_context() -> Any:
    """matplotlib's settings for deterministic SVG (fixed hash salt, text as paths), as a context."""
    return load_matplotlib().rc_context(_RC)


def new_figure(width: float, height: float) -> Figure:
    """An empty figure of ``width`` x ``height`` inches on its own Agg canvas (no pyplot)."""
    load_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), dpi=120)
    FigureCanvasAgg(fig)
    return fig


def colour(i: int) -> Any:
    """The colour of the run in place ``i`` of a build (tab10, cycling)."""
    import matplotlib

    return matplotlib.colormaps["tab10"](i % 10)


def add_notes(fig: Figure, notes: Sequence[str]) -> None:
    """Notes under the axes, wrapped, in small grey type (the bottom margin grows with them)."""
    width = max(40, int(fig.get_figwidth() * 19))  # characters of 6.5 pt type across the figure
    lines = [line for n in notes for line in textwrap.wrap(n if len(n) <= 300 else n[:297] + "...", width)]
    if not lines:
        return
    fig.subplots_adjust(bottom=min(0.5, fig.subplotpars.bottom + 0.022 * len(lines)))
    fig.text(0.01, 0.01, "\n".join(lines), fontsize=6.5, color="0.35", va="bottom", ha="left")


def render_figure(fig: Figure, fmt: str) -> bytes:
    """The figure as ``fmt`` bytes, deterministic for SVG (fixed hash salt, no date)."""
    matplotlib = load_matplotlib()
    supported = fig.canvas.get_supported_filetypes()
    if fmt not in supported:
        raise ConfigError(f"figure format {fmt!r}: use one of {', '.join(sorted(supported))}")
    buf = io.BytesIO()
    with matplotlib.rc_context(_RC):
        fig.savefig(buf, format=fmt, metadata=_METADATA.get(fmt))
    return buf.getvalue()


def save_figure(fig: Figure, out_stem: Path, formats: Sequence[str]) -> list[Path]:
    """Write ``out_stem.FMT`` for each format, atomically (all rendered before any is written)."""
    if not formats:
        raise ConfigError("no figure formats given (use png and/or svg)")
    data = [(Path(f"{out_stem}.{fmt}"), render_figure(fig, fmt)) for fmt in formats]
    for path, blob in data:
        atomic_write_bytes(path, blob)
    return [path for path, _ in data]
