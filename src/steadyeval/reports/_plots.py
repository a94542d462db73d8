"""Figures as inline SVG, drawn here (no plotting library, no network, no script).

Every piece of text that reaches the SVG (labels come from conditions and model names,
which are user data) is escaped; the functions return :class:`markupsafe.Markup`.
"""

from __future__ import annotations

import math

from markupsafe import Markup, escape

from ..document import BarChart, Heatmap, LineChart, format_cell

__all__ = ["PALETTE", "bar_chart_svg", "heatmap_svg", "line_chart_svg"]

#: Okabe–Ito colours (distinguishable with the common colour-vision deficiencies).
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")
_FONT = 'font-family="system-ui, -apple-system, Segoe UI, Roboto, sans-serif"'
_LABEL_CHARS = 30


def _e(text: object) -> str:
    return str(escape(str(text)))


def _short(label: str, n: int = _LABEL_CHARS) -> str:
    return label if len(label) <= n else label[: n - 1] + "…"


def _num(x: float) -> str:
    return f"{x:.2f}".rstrip("0").rstrip(".")


def _ok(x: float | None) -> bool:
    return x is not None and not math.isnan(x)


def bar_chart_svg(chart: BarChart) -> Markup:
    """Horizontal bars (0–100%) with interval whiskers and the value written at the end."""
    label_w, plot_w, right_w, row_h, top, bottom = 200, 380, 150, 24, 10, 34
    width = label_w + plot_w + right_w
    height = top + row_h * max(1, len(chart.bars)) + bottom

    def x(v: float) -> float:
        return label_w + plot_w * min(1.0, max(0.0, v))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" {_FONT} '
        f'font-size="12"><title>{_e(chart.title)}</title>'
    ]
    axis_y = top + row_h * max(1, len(chart.bars))
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        parts.append(
            f'<line x1="{x(t):.1f}" y1="{top}" x2="{x(t):.1f}" y2="{axis_y}" stroke="#ddd"/>'
            f'<text x="{x(t):.1f}" y="{axis_y + 14}" text-anchor="middle" fill="#555">'
            f"{int(t * 100)}%</text>"
        )
    parts.append(
        f'<text x="{label_w + plot_w / 2:.1f}" y="{axis_y + 29}" text-anchor="middle" '
        f'fill="#333">{_e(chart.value_label)}</text>'
    )
    for i, bar in enumerate(chart.bars):
        y = top + i * row_h
        mid = y + row_h / 2
        parts.append(
            f'<g class="bar"><title>{_e(bar.label)}: '
            f"{_e(format_cell((bar.estimate, bar.low, bar.high), 'pct_ci'))}"
            f"{_e(f' (n={bar.n})' if bar.n is not None else '')}</title>"
            f'<text x="{label_w - 8}" y="{mid + 4:.1f}" text-anchor="end" fill="#222">'
            f"{_e(_short(bar.label))}</text>"
        )
        if _ok(bar.estimate):
            parts.append(
                f'<rect x="{label_w}" y="{y + 5}" width="{x(bar.estimate) - label_w:.1f}" '
                f'height="{row_h - 10}" fill="{PALETTE[0]}" fill-opacity="0.75"/>'
            )
        if _ok(bar.low) and _ok(bar.high):
            lo, hi = x(bar.low), x(bar.high)
            parts.append(
                f'<line x1="{lo:.1f}" y1="{mid:.1f}" x2="{hi:.1f}" y2="{mid:.1f}" '
                f'stroke="#111" stroke-width="1.5"/>'
                f'<line x1="{lo:.1f}" y1="{mid - 5:.1f}" x2="{lo:.1f}" y2="{mid + 5:.1f}" '
                f'stroke="#111" stroke-width="1.5"/>'
                f'<line x1="{hi:.1f}" y1="{mid - 5:.1f}" x2="{hi:.1f}" y2="{mid + 5:.1f}" '
                f'stroke="#111" stroke-width="1.5"/>'
            )
        parts.append(
            f'<text x="{label_w + plot_w + 8}" y="{mid + 4:.1f}" fill="#222">'
            f"{_e(format_cell((bar.estimate, bar.low, bar.high), 'pct_ci'))}</text></g>"
        )
    for ref in chart.reference:
        rx = x(ref.value)
        parts.append(
            f'<line x1="{rx:.1f}" y1="{top}" x2="{rx:.1f}" y2="{axis_y}" stroke="#D55E00" '
            f'stroke-dasharray="4 3"/><text x="{rx + 3:.1f}" y="{top + 10}" fill="#D55E00">'
            f"{_e(ref.label)}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))


def _blend(value: float, top: float) -> str:
    """White → dark blue by ``value / top``."""
    t = 0.0 if top <= 0 or not _ok(value) else min(1.0, value / top)
    lo, hi = (247, 251, 255), (8, 69, 148)
    r, g, b = (round(a + (c - a) * t) for a, c in zip(lo, hi, strict=True))
    return f"#{r:02x}{g:02x}{b:02x}"


def heatmap_svg(hm: Heatmap) -> Markup:
    """A square matrix: colour by value, two lines of text per cell, optional outlines."""
    k_rows, k_cols = len(hm.row_labels), len(hm.col_labels)
    cell_w = 76 if k_cols <= 8 else 58
    cell_h = 40
    label_w = 190
    longest = max((len(_short(c, 22)) for c in hm.col_labels), default=4)
    reach = 6.2 * longest  # rotated column labels run up and to the right
    head_h = int(24 + 0.65 * reach)
    width = int(label_w + cell_w * k_cols + 0.77 * reach + 10)
    height = head_h + cell_h * k_rows + 10
    finite = [v for row in hm.values for v in row if _ok(v)]
    top = max(finite) if finite else 1.0
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart heatmap" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" {_FONT} '
        f'font-size="11"><title>{_e(hm.title)}</title>'
    ]
    for j, lab in enumerate(hm.col_labels):
        cx = label_w + j * cell_w + cell_w / 2
        parts.append(
            f'<text transform="translate({cx:.1f},{head_h - 6}) rotate(-40)" fill="#222">'
            f"<title>{_e(lab)}</title>{_e(_short(lab, 22))}</text>"
        )
    for i, lab in enumerate(hm.row_labels):
        y = head_h + i * cell_h
        parts.append(
            f'<text x="{label_w - 8}" y="{y + cell_h / 2 + 4:.1f}" text-anchor="end" '
            f'fill="#222"><title>{_e(lab)}</title>{_e(_short(lab, 26))}</text>'
        )
        for j in range(k_cols):
            v = hm.values[i][j]
            x = label_w + j * cell_w
            fill = _blend(v, top) if _ok(v) else "#f2f2f2"
            dark = _ok(v) and top > 0 and v / top > 0.55
            mark = bool(hm.marked) and hm.marked[i][j]
            stroke = 'stroke="#D55E00" stroke-width="3"' if mark else 'stroke="#fff"'
            lines = hm.text[i][j].split("\n")
            parts.append(
                f'<g class="cell"><title>{_e(hm.row_labels[i])} vs {_e(hm.col_labels[j])}: '
                f"{_e(' '.join(lines))}</title>"
                f'<rect x="{x + 1}" y="{y + 1}" width="{cell_w - 2}" height="{cell_h - 2}" '
                f'fill="{fill}" {stroke}/>'
            )
            color = "#fff" if dark else "#111"
            for n, line in enumerate(lines[:2]):
                ty = y + (cell_h / 2 + 4 if len(lines) == 1 else 16 + 13 * n)
                parts.append(
                    f'<text x="{x + cell_w / 2:.1f}" y="{ty:.1f}" text-anchor="middle" '
                    f'fill="{color}">{_e(line)}</text>'
                )
            parts.append("</g>")
    parts.append("</svg>")
    return Markup("".join(parts))


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(s * mag for s in (1, 2, 2.5, 5, 10) if s * mag >= raw)
    start = math.ceil(lo / step) * step
    out = []
    v = start
    while v <= hi + 1e-9:
        out.append(round(v, 10))
        v += step
    return out


def line_chart_svg(chart: LineChart) -> Markup:
    """Lines with point whiskers; optional y = x diagonal; a legend on the right."""
    left, plot_w, plot_h, top, legend_w = 56, 420, 260, 14, 220
    width = left + plot_w + 20 + legend_w
    height = top + plot_h + 46
    xs = [p.x for s in chart.series for p in s.points]
    if chart.x_range is not None:
        x_lo, x_hi = chart.x_range
    else:
        x_lo, x_hi = (min(xs), max(xs)) if xs else (0.0, 1.0)
        if x_hi == x_lo:
            x_lo, x_hi = x_lo - 1, x_hi + 1
    y_lo, y_hi = chart.y_range

    def px(v: float) -> float:
        return left + plot_w * (v - x_lo) / (x_hi - x_lo)

    def py(v: float) -> float:
        return top + plot_h * (1 - (min(y_hi, max(y_lo, v)) - y_lo) / (y_hi - y_lo))

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart" role="img" '
        f'viewBox="0 0 {width} {height}" width="{width}" height="{height}" {_FONT} '
        f'font-size="12"><title>{_e(chart.title)}</title>'
        f'<rect x="{left}" y="{top}" width="{plot_w}" height="{plot_h}" fill="none" '
        f'stroke="#bbb"/>'
    ]
    for t in _ticks(y_lo, y_hi, 4):
        parts.append(
            f'<line x1="{left}" y1="{py(t):.1f}" x2="{left + plot_w}" y2="{py(t):.1f}" '
            f'stroke="#eee"/><text x="{left - 6}" y="{py(t) + 4:.1f}" text-anchor="end" '
            f'fill="#555">{round(t * 100)}%</text>'
        )
    x_ticks = _ticks(x_lo, x_hi, 5)
    if not chart.x_is_share and all(float(v).is_integer() for v in xs):
        x_ticks = sorted({float(v) for v in xs}) if len(set(xs)) <= 12 else x_ticks
    for t in x_ticks:
        label = f"{round(t * 100)}%" if chart.x_is_share else _num(t)
        parts.append(
            f'<text x="{px(t):.1f}" y="{top + plot_h + 16}" text-anchor="middle" '
            f'fill="#555">{_e(label)}</text>'
        )
    parts.append(
        f'<text x="{left + plot_w / 2}" y="{top + plot_h + 36}" text-anchor="middle" '
        f'fill="#333">{_e(chart.x_label)}</text>'
        f'<text transform="translate(14,{top + plot_h / 2}) rotate(-90)" text-anchor="middle" '
        f'fill="#333">{_e(chart.y_label)}</text>'
    )
    if chart.diagonal:
        parts.append(
            f'<line x1="{px(max(x_lo, y_lo)):.1f}" y1="{py(max(x_lo, y_lo)):.1f}" '
            f'x2="{px(min(x_hi, y_hi)):.1f}" y2="{py(min(x_hi, y_hi)):.1f}" stroke="#999" '
            f'stroke-dasharray="5 4"/>'
        )
    for k, s in enumerate(chart.series):
        color = PALETTE[k % len(PALETTE)]
        pts = [p for p in s.points if _ok(p.y)]
        if len(pts) > 1:
            path = " ".join(f"{px(p.x):.1f},{py(p.y):.1f}" for p in pts)
            parts.append(
                f'<polyline points="{path}" fill="none" stroke="{color}" stroke-width="2"/>'
            )
        for p in pts:
            tip = f"{s.name}: x={_num(p.x)}, {format_cell((p.y, p.low, p.high), 'pct_ci')}"
            if p.n is not None:
                tip += f", n={p.n}"
            parts.append(f"<g><title>{_e(tip)}</title>")
            if _ok(p.low) and _ok(p.high):
                parts.append(
                    f'<line x1="{px(p.x):.1f}" y1="{py(p.low):.1f}" x2="{px(p.x):.1f}" '
                    f'y2="{py(p.high):.1f}" stroke="{color}" stroke-width="1.2"/>'
                )
            parts.append(
                f'<circle cx="{px(p.x):.1f}" cy="{py(p.y):.1f}" r="3.5" fill="{color}"/></g>'
            )
        ly = top + 8 + 18 * k
        lx = left + plot_w + 20
        parts.append(
            f'<rect x="{lx}" y="{ly - 8}" width="12" height="12" fill="{color}"/>'
            f'<text x="{lx + 18}" y="{ly + 2}" fill="#222"><title>{_e(s.name)}</title>'
            f"{_e(_short(s.name, 28))}</text>"
        )
    parts.append("</svg>")
    return Markup("".join(parts))
