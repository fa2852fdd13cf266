"""The sampled schedule: k games a version, rated by a model with intervals, against the
round robin's exact ranking on a small field of built-in agents."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from littlestone.server.tournament import ConfigError, load_config, run_tournament
from littlestone.server.tournament.ranking import TournamentReport
from littlestone.server.tournament.ratings import kendall_tau

LEARNERS = ["halving", "soa", "consistent", "follow-the-leader", "hedge",
            "weighted-majority", "winnow", "ogd"]
ADVERSARIES = ["random-target", "shattered-tree", "iid", "iid:dist=zipf",
               "randomized-value", "winnow-lower-bound"]


def field(folder: Path, schedule: str, k: int = 48, extra: str = "") -> Path:
    path = folder / f"{schedule}-{k}.toml"
    path.write_text(
        f"learners = {json.dumps(LEARNERS)}\nadversaries = {json.dumps(ADVERSARIES)}\n"
        f'[tournament]\nname = "small"\nrounds = 60\nseeds = 2\nschedule = "{schedule}"\n'
        f"games_per_version = {k}\n{extra}"
        '[[classes]]\nspec = "thresholds:n=15"\n[[classes]]\nspec = "intervals:n=8"\n')
    return path


def run(path: Path, data: Path) -> TournamentReport:
    return run_tournament(load_config(path), data, 1, progress=False)


@pytest.fixture(scope="module")
def round_robin(tmp_path_factory: pytest.TempPathFactory) -> TournamentReport:
    folder = tmp_path_factory.mktemp("round-robin")
    return run(field(folder, "round-robin"), folder / "data")


def order(report: TournamentReport, role: str) -> list[tuple[str, int | None]]:
    entries = report.learners if role == "learner" else report.adversaries
    return [(e[role], e["rank"]) for e in entries]  # type: ignore[literal-required]


def test_a_small_field_sampled_ranks_as_the_round_robin(round_robin, tmp_path):
    # k = 48 games a version is past what a learner of this field can play (6
    # adversaries x 2 classes x 2 seeds = 24): every game is played, and the ranking
    # is the round robin's, with the model's ratings and their intervals beside it
    report = run(field(tmp_path, "sampled"), tmp_path / "data")
    assert len(report.games) == len(round_robin.games) == 8 * 6 * 2 * 2
    for role in ("learner", "adversary"):
        assert order(report, role) == order(round_robin, role)
    for entry in report.learners:  # (every game played: each interval is a point)
        assert entry["rating_low"] == entry["rating"] == entry["rating_high"] \
            == pytest.approx(entry["worst"]), entry
        assert entry["rating_games"] > 0
    for entry in report.adversaries:
        assert entry["rating"] == pytest.approx(entry["forcing"]), entry
    page = (tmp_path / "data" / "reports" / "small.html").read_text()
    assert f"{report.learners[0]['rating_low']:.3g}" in page
    csv = (tmp_path / "data" / "reports" / "small.csv").read_text().splitlines()
    assert csv[0] == "role,rank,entrant,rating,rating_low,rating_high,games"
    assert len(csv) == 1 + 8 + 6


def test_a_sampled_ranking_agrees_with_the_round_robin(round_robin, tmp_path):
    # 16 games a version: two thirds of the field's games, and the same ranking up to
    # a swap (a field this small moves tau by 0.07 a swap: a smaller k swaps more)
    report = run(field(tmp_path, "sampled", 16), tmp_path / "data")
    assert len(report.games) <= len(round_robin.games) * 2 // 3
    for role in ("learner", "adversary"):
        exact, sampled = dict(order(round_robin, role)), dict(order(report, role))
        names = sorted(exact)
        assert kendall_tau([exact[n] or 99 for n in names],
                           [sampled[n] or 99 for n in names]) >= 0.9, (role, exact, sampled)
        assert order(report, role)[0][0] == order(round_robin, role)[0][0]
    counts: dict[str, int] = {}
    for game in report.games:
        for role in ("learner", "adversary"):
            counts[game[role]] = counts.get(game[role], 0) + 1
    assert min(counts.values()) >= 16


def test_a_new_version_plays_its_k_games_against_the_stored_field(tmp_path):
    data = tmp_path / "data"
    first = run(field(tmp_path, "sampled", 6), data)
    path = field(tmp_path, "sampled", 6)
    path.write_text(path.read_text().replace('"ogd"]', '"ogd", "conservative"]', 1))
    again = run(path, data)
    kept = {g["game_id"] for g in first.games}
    new = [g for g in again.games if g["game_id"] not in kept]
    assert {g["game_id"] for g in again.games} >= kept  # (nothing played again)
    assert sum(g["learner"] == "conservative" for g in new) >= 6
    assert len(new) <= 6 + 3  # (its k, and a stage's rounding)
    assert any(e["learner"] == "conservative" and e["rank"] is not None
               for e in again.learners)


@pytest.mark.parametrize(("extra", "message"), [
    ('schedule = "swiss"\n', "tournament.schedule: one of"),
    ("games_per_version = 0\n", "tournament.games_per_version"),
])
def test_a_bad_schedule_is_one_clear_line(tmp_path, extra, message):
    path = tmp_path / "bad.toml"
    path.write_text('learners = ["halving"]\nadversaries = ["random-target"]\n'
                    f'[tournament]\nname = "bad"\nrounds = 5\n{extra}'
                    '[[classes]]\nspec = "thresholds:n=4"\n')
    with pytest.raises(ConfigError, match=message):
        load_config(path)


def test_a_sampled_schedule_refuses_remote_agents(tmp_path):
    path = tmp_path / "remote.toml"
    path.write_text('learners = ["remote:ann"]\nadversaries = ["random-target"]\n'
                    '[tournament]\nname = "r"\nrounds = 5\nschedule = "sampled"\n'
                    '[[classes]]\nspec = "thresholds:n=4"\n')
    with pytest.raises(ConfigError, match="remote agents play only in a round robin"):
        load_config(path)


def test_a_sampled_course_agrees_with_its_round_robin(tmp_path):
    # built-in agents with parameters of their own as students (their games are the
    # same in every run), 6 students, 2 seeds: the round robin's 216 games against a
    # sample of under a third of them, in process
    from benchmarks.course import agreement, make_course

    exact = run(make_course(tmp_path, 6, 8, 30, name="c", schedule="round-robin"),
                tmp_path / "exact")
    sampled = run(make_course(tmp_path, 6, 8, 30, name="c"), tmp_path / "sampled")
    assert len(sampled.games) <= len(exact.games) // 3
    found = agreement(exact, sampled)
    for role, (tau, _, _) in found.items():
        assert tau >= AGREES, (role, found)
    shown = [e for e in sampled.learners + sampled.adversaries if e["rank"] is not None]
    assert shown and all(e["rating_low"] <= e["rating"] <= e["rating_high"] for e in shown)
    assert any(e["rating_low"] < e["rating_high"] for e in shown)  # (some predicted)


#: Kendall's tau-b the sampled course of the test above reaches at least (it measures
#: 0.69 for the learners, 0.83 for the adversaries: the course's ties, such as hedge and
#: randomized weighted majority, which play the same games, are ordered by the sample,
#: and tau-b counts that against it).
AGREES = 0.65


def test_the_pages_leaderboards_show_the_interval_or_say_exact(round_robin, tmp_path):
    # the live page's leaderboards (HTML, no browser): a sampled ranking shows each
    # entrant's figure and its interval, a round robin's says "exact"
    from littlestone.server.web.pages import competition_board, leaderboard

    sampled = run(field(tmp_path, "sampled", 6), tmp_path / "data")
    line = next(e for e in sampled.learners if e["rating_low"] != e["rating_high"])
    for report, shown in ((sampled, f"{line['rating_low']:.4g}, {line['rating_high']:.4g}]"),
                          (round_robin, ">exact<")):
        html = leaderboard({**report.leaderboard(), "colors": {}})
        assert "rating [95% interval]" in html and shown in html
        if report is round_robin:  # (a sampled board without its ratings claims nothing)
            unrated = leaderboard({**report.leaderboard(), "colors": {}, "schedule": "sampled"})
            assert ">exact<" not in unrated
        ranking = [{"role": "learner", "rank": e["rank"], "entrant": e["learner"],
                    "version": None, "score": e["worst"], "median": e["median"],
                    "rating": e.get("rating"), "rating_low": e.get("rating_low"),
                    "rating_high": e.get("rating_high"), "games": e["games"],
                    "failed": e["failed"], "sha256": None, "builtin": True}
                   for e in report.learners]
        board = {"competition": "c", "final": False, "frozen": None, "games": 1,
                 "mode": "last", "closes": None, "versions": [], "ranking": ranking}
        page = competition_board("c", board)
        assert 'class="interval"' in page
        if report is round_robin:
            assert page.count(">exact<") == len(ranking)
        else:
            assert f"{line['rating_low']:.4f}, {line['rating_high']:.4f}]" in page
