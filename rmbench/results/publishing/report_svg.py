"""The report's small figures as inline SVG written by hand (no matplotlib needed): bars with
95% CIs per slice, and the length-bias scatter. Every label is escaped."""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass

from rmbench.results.publishing.examples import LengthPoints

COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f")


@dataclass(frozen=True)
class Bar:
    """One bar: a slice label, the run it belongs to (its colour), value and CI (None when absent)."""

    label: str
    run: int
    value: float
    ci_low: float | None
    ci_high: float | None


def _e(s: str) -> str:
    return html.escape(s, quote=True)


def _svg_open(width: float, height: float) -> str:
    """An SVG drawn on a ``width`` x ``height`` canvas that scales to its container's width."""
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:g} {height:g}" width="100%" '
            f'preserveAspectRatio="xMinYMin meet" role="img">')


def bars_svg(title: str, bars: Sequence[Bar], run_names: Sequence[str]) -> str:
    """Horizontal bars on [0, 1], one row per bar, whiskers for the CI, a legend of runs."""
    row, left, width = 16, 220, 300
    legend = 18 * len(run_names) if len(run_names) > 1 else 0
    height = 30 + row * len(bars) + legend + 20
    out = [_svg_open(left + width + 80, height),
           f'<text x="4" y="16" font-size="13" font-weight="bold">{_e(title)}</text>']
    x0 = left
    # [0, 1] for rates; [-1, 1] where a value or CI is negative (gaps, correlations)
    lo = -1.0 if any(v is not None and v < 0 for b in bars for v in (b.value, b.ci_low)) else 0.0

    def x(v: float) -> float:
        return x0 + width * (min(max(v, lo), 1.0) - lo) / (1.0 - lo)

    for k, b in enumerate(bars):
        y = 26 + row * k
        colour = COLOURS[b.run % len(COLOURS)]
        out.append(f'<text x="{left - 6}" y="{y + 11}" font-size="11" text-anchor="end">{_e(b.label)}</text>')
        if not math.isfinite(b.value):
            out.append(f'<text x="{x0 + 4}" y="{y + 11}" font-size="11">undefined</text>')
            continue
        start, end = sorted((x(0.0), x(b.value)))
        out.append(f'<rect x="{start:.1f}" y="{y + 2}" width="{end - start:.1f}" height="{row - 4}" fill="{colour}" '
                   f'opacity="0.8"><title>{_e(f"{b.label}: {b.value:.3f}")}</title></rect>')
        if b.ci_low is not None and b.ci_high is not None:
            cy = y + row / 2
            out.append(f'<line x1="{x(b.ci_low):.1f}" x2="{x(b.ci_high):.1f}" y1="{cy}" y2="{cy}" stroke="#000"/>')
        out.append(f'<text x="{left + width + 6}" y="{y + 11}" font-size="10">{b.value:.3f}</text>')
    base = 26 + row * len(bars)
    out.append(f'<line x1="{x0}" x2="{x0 + width}" y1="{base + 2}" y2="{base + 2}" stroke="#888"/>')
    for t in ((-1, 0, 1) if lo < 0 else (0, 0.5, 1)):
        out.append(f'<text x="{x(t)}" y="{base + 14}" font-size="10" text-anchor="middle">{t:g}</text>')
    if len(run_names) > 1:
        for i, name in enumerate(run_names):
            y = base + 20 + 18 * i
            out.append(f'<rect x="{x0}" y="{y}" width="10" height="10" fill="{COLOURS[i % len(COLOURS)]}"/>'
                       f'<text x="{x0 + 14}" y="{y + 9}" font-size="11">{_e(name)}</text>')
    out.append("</svg>")
    return "".join(out)


def scatter_svg(title: str, points: Sequence[tuple[int, LengthPoints]], run_names: Sequence[str]) -> str:
    """Reward difference (sigma) against length difference (chars) of specificity pairs, per run."""
    w, h, pad = 520, 300, 40
    xs = [v for _, p in points for v in p.length_diff] or [0.0]
    ys = [v for _, p in points for v in p.reward_diff] or [0.0]
    xm = max(1.0, max(abs(v) for v in xs))
    ym = max(1e-9, max(abs(v) for v in ys if math.isfinite(v)) if any(math.isfinite(v) for v in ys) else 1.0)
    out = [_svg_open(w, h + 40 + 14 * len(points)),
           f'<text x="4" y="14" font-size="13" font-weight="bold">{_e(title)}</text>',
           f'<line x1="{pad}" x2="{w - 10}" y1="{pad + (h - pad) / 2}" y2="{pad + (h - pad) / 2}" stroke="#bbb"/>',
           f'<line x1="{pad + (w - pad - 10) / 2}" x2="{pad + (w - pad - 10) / 2}" y1="{pad - 10}" y2="{h}" '
           'stroke="#bbb"/>']
    for run, p in points:
        colour = COLOURS[run % len(COLOURS)]
        for lx, ry in zip(p.length_diff, p.reward_diff):
            if not math.isfinite(ry):
                continue
            cx = pad + (w - pad - 10) * (lx / xm + 1) / 2
            cy = pad + (h - pad) * (1 - (ry / ym + 1) / 2)
            out.append(f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="2.5" fill="{colour}" opacity="0.6"/>')
    out.append(f'<text x="{w / 2}" y="{h + 16}" font-size="11" text-anchor="middle">length difference a - b '
               f'(chars, ±{xm:g})</text>')
    out.append(f'<text x="10" y="{pad + (h - pad) / 2}" font-size="11" transform="rotate(-90 10 '
               f'{pad + (h - pad) / 2})" '
               f'text-anchor="middle">reward difference (sigma, ±{ym:.2g})</text>')
    for i, (run, p) in enumerate(points):  # below the axis label, never over the points
        rho = "–" if not math.isfinite(p.correlation) else f"{p.correlation:.3f}"
        out.append(f'<text x="{pad}" y="{h + 34 + 14 * i}" font-size="11" fill="{COLOURS[run % len(COLOURS)]}">'
                   f'{_e(run_names[run])}: rho = {rho} (n = {p.total})</text>')
    out.append("</svg>")
    return "".join(out)
