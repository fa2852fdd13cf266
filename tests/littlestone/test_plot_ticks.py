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


def test_a_game_s_expected_mistakes_are_steps_not_a_diagonal():
    game = ls.play("halving", "shattered-tree", "thresholds:n=63", rounds=20)
    ax = game.plot()
    expected = next(line for line in ax.get_lines()
                    if line.get_label() == "expected mistakes")
    assert expected.get_drawstyle() == "steps-post"


def test_a_comparison_shows_equal_curves_and_a_far_bound_as_such():
    """The first-learner notebook: four learners' equal curves hid one another, and
    consistent's bound of 63 squashed curves of 6 to the axis's foot."""
    comparison = ls.compare(["halving", "soa", "consistent"], "shattered-tree",
                            "thresholds:n=63", rounds=20, seeds=[0])
    ax = comparison.plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "soa (= halving)" in labels and "consistent (= halving)" in labels, labels
    assert "consistent's bound 63: above the axis" in labels, labels
    assert not [line for line in ax.get_lines() if list(line.get_ydata()) == [63, 63]]
    assert ax.get_ylim()[1] < 20
