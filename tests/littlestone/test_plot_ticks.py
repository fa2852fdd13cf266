"""A game's plot as a newcomer reads it (issue 44): rounds are whole numbers."""

from __future__ import annotations

import pytest

import littlestone as ls

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


def test_a_game_s_plot_ticks_whole_rounds_only():
    """``game.plot()`` of a 20-round game had ticks at 2.5, 7.5, ..."""
    game = ls.play("halving", "shattered-tree", "thresholds:n=63", rounds=20)
    ax = game.plot()
    ticks = list(ax.get_xticks())
    assert ticks and all(float(t).is_integer() for t in ticks), ticks
