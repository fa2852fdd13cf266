"""Charts, as the tournament's report and the web page draw them: a game's curve (SVG,
with axes, a legend and the bound's name) and the payoff heatmap's colours, on the
theoretical scale.

A learner's score is its mistakes / Ldim(H) (mistake-bound game) or its regret /
sqrt(T ln d) (experts game) (:mod:`.ranking`), so **1.0 is the minimax value**: the
mistakes the hardest adversary (a shattered tree) forces on the best deterministic
learner, and the order of the best learner's worst-case regret (sqrt((T/2) ln d)
asymptotically). A cell at or below 1.0 is green; above, it turns yellow and then red,
fully red from :data:`HEAT_WORST` on, whatever the tournament's own maximum.

Imports nothing of ours.

>>> heat_color(1.0) == heat_color(0.5) != heat_color(1.5)
True
>>> svg = curve_svg([1, 2, 3], [1, 1, 2], bound=3.0, bound_name="Ldim(H)")
>>> svg.startswith("<svg") and "Ldim(H)" in svg and "rounds" in svg
True
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence

__all__ = ["HEAT_WORST", "SCALE_NOTE", "curve_svg", "heat_color", "heat_legend", "nice_ticks"]

#: Scores from this value on are fully red (3 times the minimax value).
HEAT_WORST = 3.0

#: The heatmap's scale in one sentence, under every heatmap.
SCALE_NOTE = ("Colours on the theoretical scale: 1.0 is the minimax value (Ldim(H) "
              "mistakes; regret of order sqrt(T ln d)); green at or below it, yellow to red "
              f"above it, fully red from {HEAT_WORST:g}; grey where nothing was scored.")


def heat_color(value: float | None) -> str:
    """The CSS colour of a payoff cell: green up to 1.0 (the minimax value), then
    from yellow to red at :data:`HEAT_WORST`; grey for no score.

    >>> heat_color(None), heat_color(0.0), heat_color(1.0), heat_color(3.0), heat_color(9.0)
    ('#e6e6e6', 'hsl(120, 55%, 72%)', 'hsl(120, 55%, 72%)', 'hsl(0, 75%, 62%)', 'hsl(0, 75%, 62%)')
    """
    if value is None or math.isnan(value):
        return "#e6e6e6"
    if value <= 1.0:
        return "hsl(120, 55%, 72%)"
    share = min(1.0, (value - 1.0) / (HEAT_WORST - 1.0))
    return f"hsl({round(60 - 60 * share)}, 75%, {round(72 - 10 * share)}%)"


def heat_legend() -> str:
    """A row of swatches: the scale's colours at 0, 1, 1.5, 2 and 3+."""
    cells = "".join(f"<span class='swatch' style='background:{heat_color(v)};padding:0 .6em;"
                    f"margin-right:2px'>{label}</span>"
                    for v, label in ((0.0, "0"), (1.0, "1.0 minimax"), (1.5, "1.5"),
                                     (2.0, "2"), (HEAT_WORST, f"{HEAT_WORST:g}+")))
    return f"<p class='legend'>{cells}<br><small>{html.escape(SCALE_NOTE)}</small></p>"


def nice_ticks(top: float, count: int = 4) -> list[float]:
    """Round tick values from 0 to at least ``top``: steps of 1, 2 or 5 times a power
    of ten.

    >>> nice_ticks(7), nice_ticks(0.9), nice_ticks(1000)
    ([0.0, 2.0, 4.0, 6.0, 8.0], [0.0, 0.5, 1.0], [0.0, 500.0, 1000.0])
    """
    if top <= 0 or not math.isfinite(top):
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw - 1e-12)
    n = math.ceil(top / step - 1e-9)
    return [float(round(i * step, 10)) for i in range(n + 1)]


def _label(value: float) -> str:
    return f"{value:g}" if abs(value) < 1e5 else f"{value:.0e}"


def curve_svg(ts: Sequence[float], ys: Sequence[float], expected: Sequence[float] | None = None,
              bound: float | None = None, bound_name: str = "", ylabel: str = "mistakes",
              width: int = 300, height: int = 150, points: int = 300) -> str:
    """A cumulative curve (realised, and expected over the coin when given) against the
    rounds, with the bound as a dashed line named in the legend; axes with ticks."""
    legend = [("#1f3a93", "", ylabel)]
    if bound is not None and math.isfinite(bound):
        legend.append(("crimson", "4,3", f"bound {bound:.4g}: {bound_name}"))
    if expected is not None and len(expected) == len(ts):
        legend.append(("#6c8ed8", "2,2", f"expected {ylabel} (over the coin)"))
    left, right, top_pad = 42, 8, 8
    bottom = 26 + 11 * len(legend)
    height += 11 * len(legend)
    plot_w, plot_h = width - left - right, height - top_pad - bottom
    t_max = max(max(ts, default=1), 1)
    values = [*ys, *(expected or []), *([bound] if bound is not None else []), 1.0]
    y_ticks = nice_ticks(max(v for v in values if math.isfinite(v)))
    y_top = y_ticks[-1] or 1.0
    x_ticks = nice_ticks(t_max, 3)
    x_top = x_ticks[-1] or 1.0

    def x(t: float) -> float:
        return left + plot_w * t / x_top

    def y(v: float) -> float:
        return top_pad + plot_h * (1 - min(max(v, min(0.0, v)), y_top) / y_top)

    step = max(1, len(ts) // points)
    keep = [i for i in range(len(ts)) if i % step == 0 or i == len(ts) - 1]

    def line(series: Sequence[float], style: str) -> str:
        pts = " ".join(f"{x(ts[i]):.1f},{y(series[i]):.1f}" for i in keep)
        return f'<polyline fill="none" {style} points="{pts}"/>'

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
           f'viewBox="0 0 {width} {height}" class="curve" font-size="9" '
           'font-family="sans-serif">',
           f'<line x1="{left}" y1="{top_pad}" x2="{left}" y2="{top_pad + plot_h}" '
           'stroke="#555"/>',
           f'<line x1="{left}" y1="{top_pad + plot_h}" x2="{left + plot_w}" '
           f'y2="{top_pad + plot_h}" stroke="#555"/>']
    for v in y_ticks:
        out.append(f'<line x1="{left - 3}" x2="{left}" y1="{y(v):.1f}" y2="{y(v):.1f}" '
                   f'stroke="#555"/><text x="{left - 5}" y="{y(v) + 3:.1f}" '
                   f'text-anchor="end">{_label(v)}</text>')
    for v in x_ticks:
        out.append(f'<line x1="{x(v):.1f}" x2="{x(v):.1f}" y1="{top_pad + plot_h}" '
                   f'y2="{top_pad + plot_h + 3}" stroke="#555"/><text x="{x(v):.1f}" '
                   f'y="{top_pad + plot_h + 12}" text-anchor="middle">{_label(v)}</text>')
    out.append(f'<text x="{left + plot_w / 2:.0f}" y="{top_pad + plot_h + 22}" '
               'text-anchor="middle">rounds</text>')
    out.append(f'<text x="10" y="{top_pad + plot_h / 2:.0f}" text-anchor="middle" '
               f'transform="rotate(-90 10 {top_pad + plot_h / 2:.0f})">'
               f'{html.escape(ylabel)}</text>')
    if bound is not None and math.isfinite(bound):
        out.append(f'<line x1="{left}" x2="{left + plot_w}" y1="{y(bound):.1f}" '
                   f'y2="{y(bound):.1f}" stroke="crimson" stroke-dasharray="4,3"/>')
    if expected is not None and len(expected) == len(ts):
        out.append(line(expected, 'stroke="#6c8ed8" stroke-dasharray="2,2"'))
    if ts:
        out.append(line(ys, 'stroke="#1f3a93" stroke-width="1.5"'))
    for i, (color, dash, text) in enumerate(legend):
        ly = top_pad + plot_h + 30 + 11 * i
        out.append(f'<line x1="{left}" x2="{left + 14}" y1="{ly - 3}" y2="{ly - 3}" '
                   f'stroke="{color}" stroke-width="1.5" stroke-dasharray="{dash}"/>'
                   f'<text x="{left + 18}" y="{ly}">{html.escape(text[:60])}</text>')
    out.append("</svg>")
    return "".join(out)
