"""The page and the charts as they were rendered before the templates (issue 24): f-strings
with a hand-written ``escape()`` at every value, kept verbatim as the baseline of
:mod:`benchmarks.pages`. Nothing else uses it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import Any
from urllib.parse import quote

from littlestone.charts import HEAT_WORST, SCALE_NOTE, heat_color, nice_ticks
from littlestone.server.tournament.ranking import RULES


def heat_legend() -> str:
    """A row of swatches: the scale's colours at 0, 1, 1.5, 2 and 3+."""
    cells = "".join(f"<span class='swatch' style='background:{heat_color(v)};padding:0 .6em;"
                    f"margin-right:2px'>{label}</span>"
                    for v, label in ((0.0, "0"), (1.0, "1.0 minimax"), (1.5, "1.5"),
                                     (2.0, "2"), (HEAT_WORST, f"{HEAT_WORST:g}+")))
    return f"<p class='legend'>{cells}<br><small>{escape(SCALE_NOTE)}</small></p>"


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
               f'{escape(ylabel)}</text>')
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
                   f'<text x="{left + 18}" y="{ly}">{escape(text[:60])}</text>')
    out.append("</svg>")
    return "".join(out)


def _num(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}"
    return escape(str(value))


def page(title: str, body: str, viewer: str | None, kind: str = "index",
         data: dict[str, str] | None = None) -> str:
    """The frame of every page: its title, the static files, the navigation."""
    attributes = "".join(f' data-{k}="{escape(v)}"' for k, v in (data or {}).items())
    who = (f"<span class='who'>viewing as {escape(viewer)} · <a href='/logout'>log out</a>"
           "</span>" if viewer and viewer != "public" else
           "<span class='who'>public read-only view</span>" if viewer else "")
    return ("<!doctype html><html lang='en'><head><meta charset='utf-8'>"
            "<meta name='viewport' content='width=device-width, initial-scale=1'>"
            f"<title>{escape(title)} · littlestone</title>"
            "<link rel='stylesheet' href='/static/uPlot.min.css'>"
            "<link rel='stylesheet' href='/static/littlestone.css'>"
            "<script src='/static/uPlot.iife.min.js' defer></script>"
            "<script src='/static/littlestone.js' defer></script></head>"
            f"<body data-page='{kind}'{attributes}><header><a class='home' href='/'>"
            f"littlestone</a> <a href='/#games'>games</a> <a href='/#tournaments'>tournaments"
            f"</a>{who}</header><main><h1>{escape(title)}</h1>{body}</main></body></html>")


def games_table(rows: list[dict[str, Any]]) -> str:
    """Running and recent games: learner, adversary, class, round, mistakes, regret,
    status (each row links to its game)."""
    out = ["<table class='games' id='games-table'><thead><tr><th>game</th><th>learner</th>"
           "<th>adversary</th><th>class</th><th>round</th><th>mistakes</th><th>regret</th>"
           "<th>status</th></tr></thead><tbody>"]
    for row in rows:
        link = f"/games/{quote(row['game_id'])}"
        what = row.get("class") or (f"{row.get('experts')} experts" if row.get("experts")
                                    else "")
        horizon = f" / {row['horizon']}" if row.get("horizon") else ""
        status = escape(row["status"].split(":")[0])
        out.append(f"<tr data-game-id='{escape(row['game_id'])}' class='{status}'>"
                   f"<td><a href=\"{escape(link)}\">{escape(row['game_id'])}</a></td>"
                   f"<td class='learner'>{escape(row['learner'])}</td>"
                   f"<td class='adversary'>{escape(row['adversary'])}</td>"
                   f"<td>{escape(str(what))}</td>"
                   f"<td class='round'>{_num(row.get('round'))}{horizon}</td>"
                   f"<td class='mistakes'>{_num(row.get('mistakes'))}</td>"
                   f"<td class='regret'>{_num(row.get('regret'))}</td>"
                   f"<td class='status'>{escape(row['status'])}</td></tr>")
    if not rows:
        out.append("<tr><td colspan='8'>no games yet</td></tr>")
    out.append("</tbody></table>")
    return "".join(out)


def index_page(games: list[dict[str, Any]], tournaments: list[dict[str, Any]],
               viewer: str | None) -> str:
    items = "".join(f"<li><a href=\"/tournaments/{escape(quote(t['name']))}\">"
                    f"{escape(t['name'])}</a> ({t['games']} games, started "
                    f"{escape(t['started'])})</li>" for t in tournaments)
    body = (f"<section id='games'><h2>Games</h2><div data-refresh='/?part=games'>"
            f"{games_table(games)}</div></section>"
            f"<section id='tournaments'><h2>Tournaments</h2>"
            f"<ul>{items or '<li>none yet</li>'}</ul></section>")
    return page("Games", body, viewer)


def _curve_section(game: dict[str, Any], curve: dict[str, Any] | None) -> str:
    kind = "regret" if game["game"] == "experts" else "mistakes"
    svg = ""
    if curve and curve["t"]:
        svg = curve_svg(curve["t"], curve["value"], curve["expected"], game["bound"],
                        game["bound_name"], kind, width=640, height=260)
    bound = (f"bound {game['bound']:.4g}: {escape(game['bound_name'])}"
             if game.get("bound") is not None else "no bound known for this learner")
    return (f"<section><h2>Cumulative {kind}</h2><p class='note'>{bound}</p>"
            f"<div id='curve' data-kind='{kind}'>{svg or '<p>no rounds yet</p>'}</div>"
            "</section>")


def _replay_section(game: dict[str, Any], records: dict[str, Any] | None) -> str:
    if records is None:
        return "<section><h2>Replay</h2><p>the game's log is not readable here</p></section>"
    experts = game["game"] == "experts"
    last = "weights" if experts else "version space |V|"
    rows = []
    for r in records["records"]:
        tail = (_num(", ".join(f"{w:.3g}" for w in r["weights"]) if r.get("weights")
                     else "-") if experts else _num(r.get("version_space")))
        rows.append(f"<tr data-t='{r['t']}'><td>{r['t']}</td><td>{escape(str(r['x']))}</td>"
                    f"<td>{_num(r.get('p'))}</td><td>{_num(r.get('prediction', r.get('drawn')))}"
                    f"</td><td>{_num(r.get('y'))}</td>"
                    f"<td>{_num(r.get('mistakes', r.get('regret')))}</td><td>{tail}</td></tr>")
    start, n, total = records["start"], len(records["records"]), records["rounds"]
    link = f"/games/{quote(game['game_id'])}"
    nav = []
    if start > 1:
        nav.append(f"<a rel='prev' href='{link}?start={max(1, start - 20)}#replay'>"
                   "earlier rounds</a>")
    if start + n <= total:
        nav.append(f"<a rel='next' href='{link}?start={start + n}#replay'>later rounds</a>")
    shown = f"rounds {start}-{start + n - 1} of {total}" if n else f"no rounds ({total} logged)"
    return (f"<section id='replay'><h2>Replay</h2><div id='stepper' data-rounds='{total}'>"
            "</div><table class='replay'><thead><tr><th>t</th><th>instance</th><th>p</th>"
            f"<th>prediction</th><th>label</th><th>{'regret' if experts else 'mistakes'}</th>"
            f"<th>{last}</th></tr></thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p class='nav'>{shown} {' · '.join(nav)}</p></section>")


def game_page(game: dict[str, Any], curve: dict[str, Any] | None,
              records: dict[str, Any] | None, viewer: str | None) -> str:
    """A game: its summary, its curve against the bound, the shattered tree (when its
    adversary walks one), and its rounds one by one."""
    summary = "".join(
        f"<tr><th>{escape(k)}</th><td class='{escape(k)}'>{_num(game.get(k))}</td></tr>"
        for k in ("learner", "adversary", "game", "class", "experts", "horizon", "round",
                  "mistakes", "expected_mistakes", "regret", "expected_regret", "status",
                  "seed", "tournament", "started", "finished"))
    tree = ("<section><h2>The shattered tree</h2><p class='note'>The adversary walks "
            "down a shattered tree of depth Ldim(H): each node's instance splits the "
            "version space; the path lights up as the game descends.</p><div id='tree'>"
            "<p>(drawn with JavaScript)</p></div></section>" if game.get("tree") else "")
    data = {"game-id": game["game_id"], "game": game["game"], "status": game["status"],
            "live": "1" if game.get("live") else "0", "class": str(game.get("class") or ""),
            "tree": "1" if game.get("tree") else "0",
            "bound": "" if game.get("bound") is None else repr(game["bound"]),
            "bound-name": str(game.get("bound_name") or "")}
    body = (f"<table class='summary' id='summary'>{summary}</table>"
            f"{_curve_section(game, curve)}{tree}{_replay_section(game, records)}")
    return page(f"Game {game['game_id']}", body, viewer, "game", data)


def leaderboard(board: dict[str, Any]) -> str:
    """A tournament's leaderboards, payoff heatmap (theoretical scale) and failures."""
    def position(row: dict[str, Any]) -> str:
        return "-" if row["rank"] is None else f"{row['rank']}{'=' if row['tied_with'] else ''}"

    def failures(row: dict[str, Any]) -> str:
        return f"{row['failed']} {escape(', '.join(row['failures']))}".strip()

    out = [f"<p class='note'>{board['games']} games recorded.</p>",
           "<h2>Learners</h2><table class='leaderboard' id='learners'><thead><tr><th>rank"
           "</th><th>learner</th><th>worst</th><th>median</th><th>games</th><th>failed</th>"
           "</tr></thead><tbody>"]
    for row in board["learners"]:
        out.append(f"<tr><td>{position(row)}</td><td class='name'>{escape(row['learner'])}</td>"
                   f"<td>{_num(row['worst'])}</td><td>{_num(row['median'])}</td>"
                   f"<td>{row['games']}</td><td>{failures(row)}</td></tr>")
    out.append("</tbody></table><h2>Adversaries</h2><table class='leaderboard' "
               "id='adversaries'><thead><tr><th>rank</th><th>adversary</th><th>forcing</th>"
               "<th>games</th><th>failed</th></tr></thead><tbody>")
    for row in board["adversaries"]:
        out.append(f"<tr><td>{position(row)}</td><td class='name'>"
                   f"{escape(row['adversary'])}</td><td>{_num(row['forcing'])}</td>"
                   f"<td>{row['games']}</td><td>{failures(row)}</td></tr>")
    adversaries = sorted({a for cells in board["payoff"].values() for a in cells})
    out.append("</tbody></table><h2>Payoff heatmap</h2><table class='heatmap' id='heatmap'>"
               "<thead><tr><th>learner \\ adversary</th>"
               + "".join(f"<th>{escape(a)}</th>" for a in adversaries) + "</tr></thead><tbody>")
    for learner, cells in board["payoff"].items():
        out.append(f"<tr><th>{escape(learner)}</th>" + "".join(
            f"<td style='background:{heat_color(cells.get(a))}' title='{escape(SCALE_NOTE)}'>"
            f"{_num(cells.get(a))}</td>" for a in adversaries) + "</tr>")
    out.append("</tbody></table>" + heat_legend())
    failed = board["failed"]
    if failed:
        out.append("<h2>Failed games</h2><ul class='failed'>" + "".join(
            f"<li>{escape(g['learner'])} vs {escape(g['adversary'])} on "
            f"{escape(str(g.get('class')))}: {escape(g['status'])}</li>" for g in failed[:100])
            + "</ul>")
    out.append(f"<p class='note'>{escape(RULES)}</p>")
    return "".join(out)


def tournament_page(name: str, board: dict[str, Any] | None, viewer: str | None) -> str:
    """A tournament's standings, refreshed as its games end (``board`` None: it has
    recorded nothing yet, and the page waits for its first game)."""
    shown = (leaderboard(board) if board is not None else
             "<p class='note'>No game of this tournament is recorded yet: the leaderboard "
             "appears here as its games end.</p>")
    body = (f"<div data-refresh='/tournaments/{escape(quote(name))}?part=board'>"
            f"{shown}</div>")
    return page(f"Tournament {name}", body, viewer, "tournament", {"tournament": name})


def login_page(message: str = "") -> str:
    note = f"<p class='error'>{escape(message)}</p>" if message else ""
    body = (f"{note}<p>This server shows its games to holders of a token "
            "(<code>littlestone token add NAME</code>), or to anyone when its operator "
            "runs <code>serve --public</code>.</p><form id='login' method='get' "
            "action='/login'><label>token <input type='password' name='token' "
            "autocomplete='off' required></label> <button>log in</button></form>")
    return page("Log in", body, None, "login")
