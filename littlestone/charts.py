"""Charts, as the tournament's report and the web page draw them: a game's curve (SVG,
with axes, a legend and the bound's name) and the payoff heatmap's colours, on the
theoretical scale; and the Jinja2 environment both draw their pages with.

A learner's score is its mistakes / Ldim(H) (mistake-bound game) or its regret /
sqrt(T ln d) (experts game) (:mod:`.ranking`), so **1.0 is the minimax value**: the
mistakes the hardest adversary (a shattered tree) forces on the best deterministic
learner, and the order of the best learner's worst-case regret (sqrt((T/2) ln d)
asymptotically). A cell at or below 1.0 is green; above, it turns yellow and then red,
fully red from :data:`HEAT_WORST` on, whatever the tournament's own maximum.

The geometry is computed here (:func:`curve_chart`); the markup is a template
(``templates/curve.svg``, ``templates/legend.html``) in an :func:`environment` that
escapes every value: no value is escaped by hand.

Imports nothing of ours.

>>> heat_color(1.0) == heat_color(0.5) != heat_color(1.5)
True
>>> svg = curve_svg([1, 2, 3], [1, 1, 2], bound=3.0, bound_name="Ldim(H) <b>")
>>> svg.startswith("<svg") and "Ldim(H) &lt;b&gt;" in svg and "rounds" in svg
True
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from markupsafe import Markup

# jinja2 is imported when a page is first drawn (:func:`environment`): the command line
# and a sandboxed submission start without it
if TYPE_CHECKING:
    import jinja2

__all__ = ["HEAT_WORST", "LEGEND_CHARS", "SCALE_NOTE", "CurveChart", "Tick", "curve_chart",
           "curve_svg", "environment", "heat_color", "heat_legend", "nice_ticks"]

#: Scores from this value on are fully red (3 times the minimax value).
HEAT_WORST = 3.0

#: The heatmap's scale in one sentence, under every heatmap.
SCALE_NOTE = ("Colours on the theoretical scale: 1.0 is the minimax value (Ldim(H) "
              "mistakes; regret of order sqrt(T ln d)); green at or below it, yellow to red "
              f"above it, fully red from {HEAT_WORST:g}; grey where nothing was scored.")

#: Longest legend entry a curve shows (a bound's name is cut there).
LEGEND_CHARS = 60


def environment(package: str) -> jinja2.Environment:
    """A Jinja2 environment over the ``templates/`` folder shipped in ``package``, as
    the page, the report and the charts share it: every value escaped (``autoescape``
    on for HTML, SVG and any other template: a value becomes markup only as a chart's
    :class:`~markupsafe.Markup`), a name the template does not get is an error, not an
    empty string, and the charts are at hand (``curve_svg``, ``heat_color``,
    ``heat_legend``).

    >>> template = environment("littlestone").from_string("<p>{{ name }}</p>")
    >>> template.render(name="<script>alert(1)</script>")
    '<p>&lt;script&gt;alert(1)&lt;/script&gt;</p>'
    """
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.PackageLoader(package, "templates"),
        autoescape=jinja2.select_autoescape(["html", "svg"], default_for_string=True,
                                            default=True),
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        auto_reload=False)
    env.globals.update(curve_svg=curve_svg, heat_color=heat_color, heat_legend=heat_legend)
    return env


@functools.cache
def _charts() -> jinja2.Environment:
    return environment("littlestone")


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


#: The legend's swatches: a score and its label.
_SWATCHES = ((0.0, "0"), (1.0, "1.0 minimax"), (1.5, "1.5"), (2.0, "2"),
             (HEAT_WORST, f"{HEAT_WORST:g}+"))


def heat_legend() -> Markup:
    """A row of swatches: the scale's colours at 0, 1, 1.5, 2 and 3+, and the scale
    in one sentence (:data:`SCALE_NOTE`).

    >>> str(heat_legend()).count("class=\\"swatch\\""), "minimax value" in heat_legend()
    (5, True)
    """
    swatches = [(heat_color(value), label) for value, label in _SWATCHES]
    return Markup(_charts().get_template("legend.html").render(
        swatches=swatches, note=SCALE_NOTE))


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


@dataclass(frozen=True)
class Tick:
    """A tick of an axis: where it is drawn (pixels along the axis) and its label."""

    at: float
    label: str


@dataclass(frozen=True)
class Line:
    """A series of the chart: its colour, dash pattern and legend text, and its points
    (``"x,y x,y ..."`` in pixels; empty for the bound, a horizontal line at ``y``)."""

    colour: str
    dash: str
    text: str
    points: str = ""
    y: float | None = None
    width: float = 1.5


@dataclass(frozen=True)
class CurveChart:
    """A cumulative curve laid out in pixels: the plot's box, the ticks on both axes,
    the series (realised, expected, the bound) and the axis label. ``templates/curve.svg``
    draws it.

    >>> chart = curve_chart([1, 2, 3], [0, 1, 1], bound=2.0, bound_name="Ldim(H)")
    >>> [t.label for t in chart.y_ticks], [line.text for line in chart.lines]
    (['0', '0.5', '1', '1.5', '2'], ['mistakes', 'bound 2: Ldim(H)'])
    """

    width: int
    height: int
    left: int
    top: int
    plot_width: int
    plot_height: int
    x_ticks: tuple[Tick, ...]
    y_ticks: tuple[Tick, ...]
    lines: tuple[Line, ...]
    ylabel: str

    @property
    def bottom(self) -> int:
        """The x axis's height in pixels, from the top."""
        return self.top + self.plot_height


def curve_chart(ts: Sequence[float], ys: Sequence[float],
                expected: Sequence[float] | None = None, bound: float | None = None,
                bound_name: str = "", ylabel: str = "mistakes", width: int = 300,
                height: int = 150, points: int = 300) -> CurveChart:
    """The layout of a cumulative curve (realised, and expected over the coin when
    given) against the rounds, with the bound as a dashed line named in the legend; at
    most about ``points`` points a series."""
    has_bound = bound is not None and math.isfinite(bound)
    has_expected = expected is not None and len(expected) == len(ts)
    left, right, top = 42, 8, 8
    entries = 1 + has_bound + has_expected
    bottom = 26 + 11 * entries
    height += 11 * entries
    plot_width, plot_height = width - left - right, height - top - bottom
    t_max = max(max(ts, default=1), 1)
    values = [*ys, *(expected or []), *([bound] if bound is not None else []), 1.0]
    y_values = nice_ticks(max(v for v in values if math.isfinite(v)))
    y_top = y_values[-1] or 1.0
    x_values = nice_ticks(t_max, 3)
    x_top = x_values[-1] or 1.0

    def x(t: float) -> float:
        return left + plot_width * t / x_top

    def y(v: float) -> float:
        return top + plot_height * (1 - min(max(v, min(0.0, v)), y_top) / y_top)

    step = max(1, len(ts) // points)
    keep = [i for i in range(len(ts)) if i % step == 0 or i == len(ts) - 1]

    def polyline(series: Sequence[float]) -> str:
        return " ".join(f"{x(ts[i]):.1f},{y(series[i]):.1f}" for i in keep)

    lines = [Line("#1f3a93", "", ylabel, polyline(ys) if ts else "")]
    if has_bound:
        assert bound is not None
        lines.append(Line("crimson", "4,3", f"bound {bound:.4g}: {bound_name}",
                          y=y(bound), width=1.0))
    if has_expected:
        assert expected is not None
        lines.append(Line("#6c8ed8", "2,2", f"expected {ylabel} (over the coin)",
                          polyline(expected), width=1.0))
    return CurveChart(width, height, left, top, plot_width, plot_height,
                      tuple(Tick(x(v), _label(v)) for v in x_values),
                      tuple(Tick(y(v), _label(v)) for v in y_values), tuple(lines), ylabel)


def curve_svg(ts: Sequence[float], ys: Sequence[float], expected: Sequence[float] | None = None,
              bound: float | None = None, bound_name: str = "", ylabel: str = "mistakes",
              width: int = 300, height: int = 150, points: int = 300) -> Markup:
    """A cumulative curve as SVG markup (:func:`curve_chart`, drawn by
    ``templates/curve.svg``)."""
    chart = curve_chart(ts, ys, expected, bound, bound_name, ylabel, width, height, points)
    return Markup(_charts().get_template("curve.svg").render(
        chart=chart, legend_chars=LEGEND_CHARS))
