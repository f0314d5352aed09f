"""A line plot over ticks as inline SVG, written directly: lines with a legend, shaded spans,
marked ticks with labels, axes with ticks and a grid. Made for report.html, where importing
and running matplotlib for three small plots cost ~0.8 s of every episode."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

import numpy as np

WIDTH, HEIGHT = 1100, 280
LEFT, RIGHT, TOP, BOTTOM = 56, 16, 28, 40  # margins around the axes, px
COLOURS = (  # matplotlib's tab10, so the report reads as before
    '#1f77b4',
    '#ff7f0e',
    '#2ca02c',
    '#d62728',
    '#9467bd',
    '#8c564b',
    '#e377c2',
    '#7f7f7f',
    '#bcbd22',
    '#17becf',
)
MAX_POINTS = 2000  # longer lines are thinned to this many points (the page stays small)


@dataclass
class Mark:
    """A vertical line at `x`, with an optional label written along it."""

    x: float
    colour: str
    label: str = ''
    dashed: bool = False


@dataclass
class Plot:
    """What one plot shows; `svg()` draws it."""

    title: str
    x: np.ndarray
    lines: list[tuple[str, np.ndarray]]  # (legend label, y per x)
    xlabel: str = 'tick'
    ylim: tuple[float, float] | None = None
    spans: list[tuple[float, float, str]] = field(default_factory=list)  # (start, end, fill)
    marks: list[Mark] = field(default_factory=list)
    notes: list[tuple[float, str]] = field(default_factory=list)  # small labels at the bottom

    def svg(self) -> str:
        x = np.asarray(self.x, dtype=float)
        finite_x = x[np.isfinite(x)]
        x0, x1 = (float(finite_x.min()), float(finite_x.max())) if finite_x.size else (0.0, 1.0)
        x1 = x1 if x1 > x0 else x0 + 1.0
        if self.ylim is not None:
            y0, y1 = self.ylim
        else:
            every = np.concatenate([np.asarray(v, float).ravel() for _, v in self.lines] or [[0]])
            every = every[np.isfinite(every)]  # a NaN or inf is not drawn (nor scaled to)
            y0, y1 = (float(every.min()), float(every.max())) if every.size else (0.0, 1.0)
            pad = max((y1 - y0) * 0.05, 1e-3)
            y0, y1 = y0 - pad, y1 + pad
        plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

        def px(v: float) -> float:
            return LEFT + (v - x0) / (x1 - x0) * plot_w

        def py(v: float) -> float:
            return TOP + (y1 - v) / (y1 - y0) * plot_h

        out = [
            f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
            f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" role="img">',
            f'<title>{escape(self.title)}</title>',
            f'<text x="{WIDTH / 2}" y="16" font-size="13" text-anchor="middle">'
            f'{escape(self.title)}</text>',
        ]
        for start, end, fill in self.spans:
            a, b = px(max(start, x0)), px(min(end, x1))
            if b > a:
                out.append(
                    f'<rect x="{a:.1f}" y="{TOP}" width="{b - a:.1f}" height="{plot_h}" '
                    f'fill="{fill}"/>'
                )
        if not (math.isfinite(y0) and math.isfinite(y1)) or y1 <= y0:
            y0, y1 = 0.0, 1.0
        for value in _ticks(y0, y1):
            y = py(value)
            out.append(_hline(y, LEFT, LEFT + plot_w) + _label(LEFT - 6, y + 4, value, 'end'))
        for value in _ticks(x0, x1):
            xx = px(value)
            out.append(
                _vline(xx, TOP, TOP + plot_h, '#000', 0.12)
                + _label(xx, TOP + plot_h + 14, value, 'middle')
            )
        for k, (_label_text, values) in enumerate(self.lines):
            points = _thin(x, np.asarray(values, dtype=float))
            path = ' '.join(
                f'{px(a):.1f},{py(b):.1f}'
                for a, b in points
                if math.isfinite(a) and math.isfinite(b)
            )
            out.append(
                f'<polyline points="{path}" fill="none" stroke="{COLOURS[k % len(COLOURS)]}" '
                'stroke-width="1.4"/>'
            )
        for mark in self.marks:
            xx = px(mark.x)
            dash = ' stroke-dasharray="4 3"' if mark.dashed else ''
            out.append(
                f'<line x1="{xx:.1f}" y1="{TOP}" x2="{xx:.1f}" y2="{TOP + plot_h}" '
                f'stroke="{mark.colour}" stroke-width="1.4"{dash}/>'
            )
            if mark.label:
                out.append(
                    f'<text transform="translate({xx + 3:.1f},{TOP + 4}) rotate(90)" '
                    f'font-size="8" fill="{mark.colour}">{escape(str(mark.label))}</text>'
                )
        for where, text in self.notes:
            out.append(
                f'<text x="{px(where):.1f}" y="{TOP + plot_h - 4}" font-size="7" fill="#666" '
                f'text-anchor="middle">{escape(str(text))}</text>'
            )
        out.append(
            f'<rect x="{LEFT}" y="{TOP}" width="{plot_w}" height="{plot_h}" fill="none" '
            'stroke="#000" stroke-width="0.8"/>'
        )
        out.append(
            f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 6}" font-size="10" '
            f'text-anchor="middle">{escape(self.xlabel)}</text>'
        )
        out.append(self._legend(LEFT + plot_w))
        out.append('</svg>')
        return '\n'.join(out)

    def _legend(self, right: float) -> str:
        """One row at the top right: a swatch and the label of each line."""
        items, x = [], right - 8
        for k, (label, _) in reversed(list(enumerate(self.lines))):
            width = 22 + 6 * len(label)
            x -= width
            colour = COLOURS[k % len(COLOURS)]
            items.append(
                f'<line x1="{x:.1f}" y1="{TOP + 10}" x2="{x + 14:.1f}" y2="{TOP + 10}" '
                f'stroke="{colour}" stroke-width="2"/>'
                f'<text x="{x + 17:.1f}" y="{TOP + 13}" font-size="9">{escape(str(label))}</text>'
            )
        if not items:
            return ''
        return (
            f'<rect x="{x - 6:.1f}" y="{TOP + 3}" width="{right - x:.1f}" height="15" '
            'fill="#fff" fill-opacity="0.8" stroke="#ccc"/>' + ''.join(items)
        )


def _ticks(low: float, high: float, target: int = 6) -> list[float]:
    """Round values between low and high, about `target` of them (1, 2, 5 x 10^n apart)."""
    span = high - low
    if not math.isfinite(span) or span <= 0:
        return [low]
    raw = span / target
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    return [round(first + k * step, 10) for k in range(int((high - first) / step) + 1)]


def _thin(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    pairs = np.column_stack([x, y])
    if len(pairs) <= MAX_POINTS:
        return pairs
    return pairs[np.linspace(0, len(pairs) - 1, MAX_POINTS).astype(int)]


def _hline(y: float, a: float, b: float) -> str:
    return (
        f'<line x1="{a}" y1="{y:.1f}" x2="{b}" y2="{y:.1f}" stroke="#000" stroke-opacity="0.12"/>'
    )


def _vline(x: float, a: float, b: float, colour: str, opacity: float) -> str:
    return (
        f'<line x1="{x:.1f}" y1="{a}" x2="{x:.1f}" y2="{b}" stroke="{colour}" '
        f'stroke-opacity="{opacity}"/>'
    )


def _label(x: float, y: float, value: float, anchor: str) -> str:
    text = f'{value:g}'
    return f'<text x="{x:.1f}" y="{y:.1f}" font-size="9" text-anchor="{anchor}">{text}</text>'
