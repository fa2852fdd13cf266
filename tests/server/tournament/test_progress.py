"""A run's progress stays true with slow entrants (issue 42): built-in pairs end by the
thousand a second, then the games with submissions take minutes; the time left is
reckoned for each kind of game from its own games (littlestone/server/tournament/
progress.py), and said unknown rather than guessed. Times are given, never measured."""

from __future__ import annotations

from littlestone.server.tournament.progress import (
    BUILT_IN,
    STALL_SECONDS,
    SUBMITTED,
    TIMED,
    Estimate,
)
from littlestone.server.tournament.run import _Progress


def _run(builtins: int, submitted: int) -> _Progress:
    """A run of ``builtins`` built-in games, all ended at 1,000 a second, and
    ``submitted`` games with submissions, about to begin at t = 1 s."""
    progress = _Progress("class", 0, builtins + submitted, False,
                         {BUILT_IN: builtins, SUBMITTED: submitted})
    t0 = progress.started
    progress.estimate.begin(BUILT_IN, t0)
    for k in range(builtins):
        progress.estimate.ended(BUILT_IN, t0 + (k + 1) / 1000)
        progress.done += 1
    progress.estimate.begin(SUBMITTED, t0 + 1)
    return progress


def test_the_built_ins_rate_never_times_the_submissions():
    """The run of the issue: the built-ins' rate said "about 3 s left" for the seven
    minutes the submissions took. Before a submission's game has ended, the time is
    unknown; once some have, it is theirs."""
    progress = _run(1000, 400)
    t0 = progress.started
    line = progress.line(t0 + 2)
    assert "400 left" in line and "about" not in line
    assert "time left unknown (400 with submissions not timed yet)" in line
    for k in range(20):  # one every half second
        progress.estimate.ended(SUBMITTED, t0 + 1 + (k + 1) / 2)
        progress.done += 1
    line = progress.line(t0 + 11)
    assert "380 left" in line and line.endswith("about 3 min left")  # 380 at 2 a second


def test_a_kind_whose_games_stop_ending_has_no_time_left():
    """The last games of a slow entrant: none has ended for much longer than the usual
    gap, so the time left is unknown, and how long it has been is said."""
    progress = _run(0, 100)
    t0 = progress.started
    for k in range(90):
        progress.estimate.ended(SUBMITTED, t0 + 1 + (k + 1) / 10)
        progress.done += 1
    assert progress.estimate.seconds_left(t0 + 11) is not None
    quiet = t0 + 10 + STALL_SECONDS + 60
    line = progress.line(quiet)
    assert "10 left" in line and "no game has ended for" in line and "about" not in line


def test_an_estimate_sums_the_kinds_left_each_at_its_own_rate():
    estimate = Estimate({BUILT_IN: 100, SUBMITTED: 10}, now=0.0)
    estimate.begin(BUILT_IN, 0.0)
    estimate.begin(SUBMITTED, 0.0)
    for k in range(TIMED):
        estimate.ended(BUILT_IN, (k + 1) / 100)  # 100 a second
        estimate.ended(SUBMITTED, k + 1.0)  # 1 a second
    left = estimate.seconds_left(float(TIMED))
    assert left is not None
    # 95 built-ins over their rate (5 over 5 s: 1 a second, the wait since the last
    # one counted) and 5 submitted over theirs (1 a second)
    assert round(left) == 95 + 5
    assert estimate.left() == 100 and estimate.untimed() == {}
