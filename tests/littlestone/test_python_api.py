"""The Python API (issue 29): specs and objects interchangeable, results that print,
tabulate and plot, one clear error naming a bad argument, compare, sweeps, tournaments,
replays and remote games from Python."""

from __future__ import annotations

import asyncio
import math
import pickle
import re
import threading
import traceback
from pathlib import Path

import numpy as np
import pytest

import littlestone as ls
from littlestone.adversaries import ADVERSARIES
from littlestone.api import ArgumentError
from littlestone.games.errors import LittlestoneError
from littlestone.games.ldim import verify_shattered
from littlestone.learners import LEARNERS
from littlestone.results import Dimensions, Game, PlayedRounds
from tests.support.servers import running_server

pd = pytest.importorskip("pandas")
matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


class MajorityVote(ls.Learner):
    """Predict what most hypotheses still consistent with the labels say.

    >>> MajorityVote().spec
    'MajorityVote'
    """

    games = frozenset({"mistake-bound"})

    def reset(self, game, seed):
        self.hclass = game.hclass
        self.alive = np.ones(game.hclass.size, dtype=bool)

    def predict(self, x):
        votes = self.hclass.evaluate(x)[self.alive]
        return 1.0 if 2 * votes.sum() >= len(votes) else 0.0

    def update(self, x, y):
        self.alive &= self.hclass.evaluate(x).astype(bool) == bool(y)


# -- the "done when" --------------------------------------------------------------


def test_the_readme_call_prints_tabulates_and_plots():
    game = ls.play("halving", "shattered-tree", "thresholds:n=63", rounds=20)
    assert isinstance(game, Game) and game.status == "complete" and game.mistakes == 6
    printed = str(game)
    assert re.search(r"^mistakes\s+6$", printed, re.M)
    assert re.search(r"^bound_name\s+log2\|H\|", printed, re.M)
    rounds = game.rounds()
    assert list(rounds.index) == list(range(1, 21))
    assert list(rounds.columns) == ["x", "p", "y", "prediction", "mistake", "loss",
                                    "mistakes", "expected_mistakes"]
    assert rounds["mistakes"].iloc[-1] == 6 and rounds["mistake"].sum() == 6
    ax = game.plot()
    bound_lines = [line for line in ax.get_lines() if list(line.get_ydata()) == [6, 6]]
    assert bound_lines and "bound 6" in ax.get_legend().get_texts()[-1].get_text()
    realised = ax.get_lines()[0]
    assert list(realised.get_ydata()) == list(rounds["mistakes"])
    html = game._repr_html_()
    assert "<table" in html and "<svg" in html and "log2|H|" in html


def test_a_user_defined_learner_plays_through_the_same_call_as_a_class_or_an_instance():
    as_class = ls.play(MajorityVote, "shattered-tree", "thresholds:n=63", rounds=20, seed=1)
    instance = MajorityVote()
    as_instance = ls.play(instance, "shattered-tree", "thresholds:n=63", rounds=20, seed=1)
    assert as_class.result == as_instance.result and as_class.mistakes == 6
    assert as_class.learner == "MajorityVote"
    assert instance.alive.sum() >= 1  # the very object played (its state is the game's)


def test_specs_and_objects_are_interchangeable():
    by_spec = ls.play("soa", "random-target", "intervals:n=12", rounds=60, seed=5)
    by_object = ls.play(LEARNERS.make("soa"), ADVERSARIES.make("random-target"),
                        ls.make_class("intervals:n=12"), rounds=60, seed=5)
    by_class = ls.play(type(LEARNERS.make("soa")), type(ADVERSARIES.make("random-target")),
                       "intervals:n=12", rounds=60, seed=5)
    rules = ls.GameSpec("mistake-bound", 60, ls.make_class("intervals:n=12"))
    by_rules = ls.play("soa", "random-target", game=rules, seed=5)
    assert by_spec.result == by_object.result == by_class.result == by_rules.result
    assert by_spec.rounds().equals(by_object.rounds())


def test_kept_rounds_are_the_records_whether_played_in_blocks_or_one_by_one():
    """An oblivious adversary's rounds reach the kept columns a block at a time (the
    runner's fast path); they equal the records handed to on_record one by one."""
    records = []
    slow = ls.play("perceptron", "random-target", "halfspaces:d=5,margin=0.1", rounds=5000,
                   seed=2, on_record=records.append, keep_rounds=False)
    fast = ls.play("perceptron", "random-target", "halfspaces:d=5,margin=0.1", rounds=5000,
                   seed=2)
    assert fast.result == slow.result
    frame = fast.rounds()
    assert len(frame) == 5000 == len(records)
    for column in ("p", "y", "prediction", "mistake", "mistakes"):
        assert list(frame[column]) == [getattr(r, column) for r in records], column
    assert np.allclose(frame["expected_mistakes"], [r.expected_mistakes for r in records])
    assert np.array_equal(np.stack(frame["x"].to_numpy()), np.stack([r.x for r in records]))
    with pytest.raises(LittlestoneError, match="keep_rounds=False"):
        slow.rounds()


def test_the_experts_game_tabulates_its_regret():
    game = ls.play("hedge", "random-costs", game="experts", experts=8, rounds=300, seed=1)
    frame = game.rounds()
    assert frame["expected_regret"].iloc[-1] == pytest.approx(game.expected_regret)
    assert frame["regret"].iloc[-1] == pytest.approx(game.regret)
    assert game.expected_regret <= game.bound.value
    ax = game.plot()
    assert ax.get_ylabel() == "cumulative regret"
    assert "regret" in repr(game)


def test_river_and_scikit_learn_models_play_through_the_adapters_with_their_own_parameters():
    pytest.importorskip("sklearn")
    linear_model = pytest.importorskip("river.linear_model")
    from sklearn.linear_model import SGDClassifier

    hinge = ls.play(SGDClassifier(), "random-target", "thresholds:n=31", rounds=40, seed=0)
    logistic = ls.play(SGDClassifier(loss="log_loss"), "random-target", "thresholds:n=31",
                       rounds=40, seed=0)
    assert hinge.status == logistic.status == "complete"
    assert logistic.learner.startswith("sklearn:")
    # the hinge loss has no predict_proba: 0/1 answers; the logistic one probabilities
    assert set(hinge.rounds()["p"].iloc[1:]) <= {0.0, 1.0}
    assert not set(logistic.rounds()["p"].iloc[1:]) <= {0.0, 1.0}
    model = linear_model.LogisticRegression()
    game = ls.play(model, "random-target", "thresholds:n=31", rounds=40, seed=0)
    assert game.status == "complete" and game.learner.startswith("river:")
    assert model.weights == {}  # the model given is cloned, not trained in place


# -- bad arguments ------------------------------------------------------------------------

BAD = [
    (lambda: ls.play("halvng", "shattered-tree", "thresholds:n=63"), "learner",
     "unknown learner 'halvng'"),
    (lambda: ls.play("halving", "shattered-tre", "thresholds:n=63"), "adversary",
     "unknown adversary"),
    (lambda: ls.play("halving", "shattered-tree", "thresholds:n=-3"), "cls", "thresholds"),
    (lambda: ls.play("halving", "shattered-tree", 63), "cls", "not int 63"),
    (lambda: ls.play("halving", "shattered-tree"), "cls", "needs a class"),
    (lambda: ls.play("halving", "shattered-tree", "thresholds:n=63", rounds="20"), "rounds",
     "an integer >= 0"),
    (lambda: ls.play("halving", "shattered-tree", "thresholds:n=63", rounds=-1), "rounds",
     "not -1"),
    (lambda: ls.play("halving", "shattered-tree", "thresholds:n=63",
                     seed=1.5),  # type: ignore[arg-type]  # the bad argument is the test
     "seed",
     "64-bit integer"),
    (lambda: ls.play("halving", "shattered-tree", "thresholds:n=63", game="poker"), "game",
     "one of mistake-bound, experts"),
    (lambda: ls.play("hedge", "random-costs", game="experts"), "experts", "experts=D"),
    (lambda: ls.play("hedge", "random-costs", game="experts", experts=0), "experts",
     "an integer >= 1"),
    (lambda: ls.play("soa", "random-costs", game="experts", experts=3), "learner",
     "soa cannot play this game"),
    (lambda: ls.play("halving", "random-costs", "thresholds:n=63"), "adversary",
     "random-costs cannot play this game"),
    (lambda: ls.play(ADVERSARIES.make("noisy"), "noisy", "thresholds:n=7"), "learner",
     "is an adversary, not a learner"),
    (lambda: ls.play(object(), "noisy", "thresholds:n=7"), "learner", "not object"),
    (lambda: ls.play("halving", "noisy", "thresholds:n=7", data="x", on_record=print),
     "on_record", "not with data"),
    (lambda: ls.compare("halving", "noisy", "thresholds:n=7"), "learners", "a list"),
    (lambda: ls.compare(["halving"], "noisy", "thresholds:n=7", seeds=[]), "seeds",
     "at least one"),
    (lambda: ls.ldim("halfspaces:d=3,margin=0.2"), "cls", "infinite class"),
    (lambda: ls.ldim(None), "cls", "not None"),
    (lambda: ls.sweep(["halving", "hedging"], "noisy", "thresholds:n=7", workers=1,
                      progress=False), "learners", "unknown learner 'hedging'"),
    (lambda: ls.sweep("halving", "noisy", "thresholds:n=7", workers=0, progress=False),
     "workers", "an integer >= 1"),
    (lambda: ls.tournament({"name": "t", "rounds": 0, "classes": ["thresholds:n=7"],
                            "learners": ["halving"], "adversaries": ["noisy"]}),
     "config", "tournament.rounds: an integer >= 1"),
    (lambda: ls.tournament({"name": "t", "rounds": 5, "colour": "red"}), "config",
     "unknown key 'colour'"),
    (lambda: ls.tournament(42),  # type: ignore[arg-type]  # the bad argument is the test
     "config", "a dict or a TOML file's path"),
    (lambda: ls.tournament("/nowhere/t.toml"), "config", "no such file"),
    (lambda: ls.tournament({"name": "t", "rounds": 5, "learners": [MajorityVote()],
                            "adversaries": ["noisy"], "classes": ["thresholds:n=7"]}),
     "config", "entrants are specs"),
    (lambda: ls.replay("no-such-game", data="/nowhere"), "path_or_id",
     "no log file or game id"),
    (lambda: ls.connect("http://localhost:1", "halving"), "url", "ws:// or wss://"),
    (lambda: ls.connect("ws://127.0.0.1:1", "halving", join="g", rounds=5), "rounds",
     "join plays the rules"),
]


@pytest.mark.parametrize(("call", "argument", "says"), BAD,
                         ids=[f"{a}-{i}" for i, (_, a, _) in enumerate(BAD)])
def test_a_bad_argument_is_one_error_naming_it_raised_from_the_api(call, argument, says,
                                                                    tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ArgumentError) as caught:
        call()
    error = caught.value
    assert error.argument == argument and says in str(error), str(error)
    assert str(error).startswith(f"{error.function}: {argument}: ")
    assert isinstance(error, LittlestoneError | ValueError | TypeError)
    assert error.__cause__ is None and (error.__context__ is None
                                        or error.__suppress_context__)
    # no traceback from deep inside: past the caller, the frames are the API's own
    frames = [f for f in traceback.extract_tb(caught.tb) if f.filename != __file__]
    assert {Path(f.filename).name for f in frames} <= {"api.py", "sweeps.py"}, frames
    assert len(frames) <= 4


def test_an_exception_of_the_learner_ends_its_game_with_a_status_naming_it():
    class Broken(MajorityVote):
        def predict(self, x):
            return 1 / 0

    game = ls.play(Broken, "shattered-tree", "thresholds:n=15", rounds=10)
    assert game.status == "crash:learner:ZeroDivisionError" and game.played == 0
    assert "crash:learner" in str(game)


# -- results ------------------------------------------------------------------------------


def test_html_escapes_every_value():
    class Evil(MajorityVote):
        """A learner whose name is markup.

        >>> Evil.id
        '<script>alert(1)</script>'
        """

        id = "<script>alert(1)</script>"

    game = ls.play(Evil, "shattered-tree", "thresholds:n=15", rounds=5)
    assert game.learner == "<script>alert(1)</script>"
    for html in (game._repr_html_(), ls.compare([Evil], "shattered-tree", "thresholds:n=15",
                                                rounds=5, seeds=1)._repr_html_()):
        assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_played_rounds_recompute_the_running_totals():
    kept = PlayedRounds()
    kept.rounds(1, np.array([4, 2]), np.array([0.5, 1.0]), np.array([1, 0]), np.array([0, 1]))
    columns = kept.columns()
    assert columns["x"] == [4, 2] and columns["mistakes"].tolist() == [1, 2]
    assert columns["expected_mistakes"].tolist() == [0.5, 1.5]
    assert len(kept) == 2


def test_compare_plays_every_learner_on_the_same_seeds_against_its_bound():
    comparison = ls.compare(["halving", MajorityVote, "consistent"], "shattered-tree",
                            "singletons:n=8", rounds=12, seeds=[3, 4])
    table = comparison.table()
    assert list(table.index) == ["halving", "MajorityVote", "consistent"]
    assert table.loc["consistent", "mistakes"] == 7 == table.loc["consistent", "bound"]
    assert table.loc["halving", "mistakes"] == 1 and math.isnan(table.loc["MajorityVote",
                                                                          "bound"])
    assert table.loc["consistent", "share_of_bound"] == 1.0
    games = comparison.games()
    assert sorted(games["seed"]) == [3, 3, 3, 4, 4, 4] and len(games) == 6
    ax = comparison.plot()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[:2] == ["halving", "halving's bound 3"]
    assert "MajorityVote" in str(comparison) and "<svg" in comparison._repr_html_()


def test_ldim_carries_vcdim_the_randomised_value_and_a_shattered_tree():
    d = ls.ldim("thresholds:n=15")
    assert isinstance(d, Dimensions) and isinstance(d, int) and d == 4 and d + 1 == 5
    assert str(d) == "4" and d.vcdim == 1 and d.randomized_value == 2
    tree = d.tree()
    assert tree.graph["ldim"] == 4 and verify_shattered(tree, d.hclass)
    assert pickle.loads(pickle.dumps(d)) == 4
    assert pickle.loads(pickle.dumps(d)).hclass.spec == "thresholds:n=15"
    big = ls.ldim("monotone-disjunctions:n=20")
    assert big == 20 and big.method == "theorem"
    with pytest.raises(LittlestoneError, match="too large to build its shattered tree"):
        big.tree()
    assert "vcdim" in d._repr_html_()
    assert ls.play("soa", "shattered-tree", d, rounds=10).mistakes == d  # a class, too


# -- sweeps -------------------------------------------------------------------------------


def test_a_sweep_plays_the_grid_in_order_and_lists_what_cannot_be_played():
    frame = ls.sweep(["halving", "hedge"], ["shattered-tree", "random-target"],
                     ["thresholds:n=15"], rounds=[10, 30], seeds=2, workers=1,
                     progress=False)
    assert len(frame) == 2 * 2 * 2 * 2
    assert list(frame.columns[:7]) == ["learner", "adversary", "class", "experts", "horizon",
                                       "seed", "game"]
    first = frame.iloc[0]
    assert (first["learner"], first["adversary"], first["horizon"], first["seed"]) == (
        "halving", "shattered-tree", 10, 0)
    assert list(frame["seed"][:4]) == [0, 1, 0, 1]
    halving = frame.query("learner == 'halving' and adversary == 'shattered-tree'")
    assert (halving["mistakes"] == 4).all() and (halving["bound"] == 4.0).all()
    assert frame.query("learner == 'hedge'")["status"].eq("complete").all()


def test_a_sweep_in_worker_processes_equals_one_in_this_process_with_a_notebook_class():
    """Specs and built-ins go to the workers; a class defined in __main__ (a notebook's)
    plays in this process; the rows are the same either way, in the grid's order."""
    local = type("Local", (MajorityVote,), {"__module__": "__main__",
                                             "__doc__": MajorityVote.__doc__})
    grid = dict(learners=["soa", local], adversaries="shattered-tree",
                classes=["thresholds:n=15", "intervals:n=8"], rounds=20, seeds=2,
                progress=False)
    here = ls.sweep(**grid, workers=1)
    there = ls.sweep(**grid, workers=2)
    pd.testing.assert_frame_equal(here, there)
    assert set(there["learner"]) == {"soa", "Local"}


def test_a_sweep_declines_a_pair_that_cannot_play_its_game():
    frame = ls.sweep(["hedge", "soa"], "random-costs", game="experts", experts=[2, 4],
                     rounds=20, workers=1, progress=False)
    soa = frame.query("learner == 'soa'")
    assert (soa["status"] == "declined:learner").all()
    assert soa["message"].str.contains("it plays mistake-bound").all()
    assert frame.query("learner == 'hedge'")["experts"].tolist() == [2, 4]


def test_a_sweep_shows_its_progress(capsys):
    ls.sweep("halving", "noisy", "thresholds:n=7", rounds=5, seeds=3, workers=1)
    err = capsys.readouterr().err
    assert "sweep" in err and "3/3" in err


# -- tournaments, logs, remote games ------------------------------------------------------


def test_a_tournament_from_a_dict_or_its_toml_ranks_the_same(tmp_path):
    config = {"tournament": {"name": "lab", "rounds": 24, "seeds": 2},
              "classes": [{"spec": "thresholds:n=15"}, {"spec": "singletons:n=6"}],
              "learners": ["halving", "consistent"],
              "adversaries": ["shattered-tree", ADVERSARIES.make("random-target")]}
    from_dict = ls.tournament(config, data=tmp_path / "a", workers=1, progress=False)
    toml = tmp_path / "lab.toml"
    toml.write_text('learners = ["halving", "consistent"]\n'
                    'adversaries = ["shattered-tree", "random-target"]\n'
                    '[tournament]\nname = "lab"\nrounds = 24\nseeds = 2\n'
                    '[[classes]]\nspec = "thresholds:n=15"\n[[classes]]\nspec = "singletons:n=6"\n')
    from_toml = ls.tournament(toml, data=tmp_path / "b", workers=1, progress=False)
    pd.testing.assert_frame_equal(from_dict.payoff(), from_toml.payoff())
    table = from_dict.table()
    assert list(table.index) == ["halving", "consistent"] and table.loc["halving", "rank"] == 1
    assert len(from_dict.games()) == 2 * 2 * 2 * 2
    assert set(from_dict.adversaries().index) == {"shattered-tree", "random-target"}
    assert Path(from_dict.report.report).is_file()
    ax = from_dict.heatmap()
    assert [t.get_text() for t in ax.get_yticklabels()] == list(from_dict.payoff().index)
    html = from_dict._repr_html_()
    assert "minimax" in html and "halving" in html


def test_a_game_played_with_a_data_folder_replays_and_verifies(tmp_path):
    played = ls.play("halving", "random-target", "thresholds:n=63", rounds=50, seed=7,
                     data=tmp_path)
    assert played.game_id and played.log.is_file()
    assert played.rounds()["mistakes"].iloc[-1] == played.mistakes
    for handle in (played.game_id, played.log, str(played.log)):
        again = ls.replay(handle, data=tmp_path)
        assert again.result.mistakes == played.mistakes and again.seed == 7
        assert again.rounds().equals(played.rounds())
    compact = ls.play("soa", "shattered-tree", "thresholds:n=15", rounds=20, data=tmp_path,
                      log_level="compact")
    again = ls.replay(compact.game_id, data=tmp_path, verify=True)
    assert again.verification.ok and len(again.rounds()) == 20  # re-simulated
    assert again.bound.value == 4


def test_an_incomplete_log_replays_as_incomplete(tmp_path):
    played = ls.play("halving", "random-target", "thresholds:n=63", rounds=50, data=tmp_path)
    raw = played.log.read_bytes()
    cut = tmp_path / "cut.lslog"
    cut.write_bytes(raw[: len(raw) - 40])
    again = ls.replay(cut, data=tmp_path)
    assert again.status == "incomplete" and again.played == len(again.rounds())


async def test_connect_inside_a_running_loop_returns_a_task_that_plays(tmp_path):
    async with running_server(tmp_path) as server:
        task = ls.connect(server.url, "soa", "shattered-tree", "thresholds:n=15", rounds=10,
                          seed=2, token=server.token)
        assert isinstance(task, asyncio.Task)
        game = await task
        assert (game.status, game.mistakes, game.adversary) == (
            "complete", 4, "shattered-tree:budget=50000000")  # (as play names it)
        assert game.bound.value == 4 and game.game_id
        with pytest.raises(LittlestoneError, match="server's log"):
            game.rounds()
        assert "<table" in game._repr_html_()
        adversary = await ls.connect(server.url, "shattered-tree", "halving",
                                     "thresholds:n=15", rounds=6, token=server.token)
        assert adversary.learner == "halving" and adversary.mistakes == 4


def test_connect_where_no_loop_runs_plays_and_returns_the_game(tmp_path):
    """A script's call: the server runs on a loop of its own thread."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    try:
        server_cm = running_server(tmp_path)
        server = asyncio.run_coroutine_threadsafe(server_cm.__aenter__(), loop).result(30)
        try:
            game = ls.connect(server.url, MajorityVote(), "shattered-tree", "thresholds:n=31",
                              rounds=12, seed=1, token=server.token)
            assert isinstance(game, Game) and game.mistakes == 5
            assert game.learner == "MajorityVote"
            with pytest.raises(LittlestoneError, match="server: unauthorized: unknown token"):
                ls.connect(server.url, "halving", "noisy", "thresholds:n=7", rounds=3,
                           token="wrong")
        finally:
            asyncio.run_coroutine_threadsafe(server_cm.__aexit__(None, None, None),
                                             loop).result(30)
    finally:
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def test_connect_to_nobody_says_so_in_one_line():
    with pytest.raises(LittlestoneError, match=r"connect: cannot reach ws://127.0.0.1:9/"
                       ) as caught:
        ls.connect("ws://127.0.0.1:9/", "halving", "noisy", "thresholds:n=7", rounds=3)
    assert len(traceback.extract_tb(caught.tb)) <= 3
