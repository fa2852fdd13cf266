"""Fair play: no agent can outguess the referee's coin or its opponent's seed once the
game key is secret (a server's games), while in-process play with a public seed stays
reproducible and, as README says, protects nothing. Each cheat is shown to work where
nothing is secret, so that its failure elsewhere means something."""

from __future__ import annotations

import hashlib
import math

import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.coin import Coin, coin_for
from littlestone.games.game import EXPERTS, MISTAKE_BOUND, GameSpec, game_seeds
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.server.records.logs import read_log
from littlestone.server.records.verify import verify
from tests.support import HOSTILE
from tests.support.cheaters import CoinPredictor, DrawCharger, TargetRecomputer
from tests.support.servers import running_server

TREE = GameSpec(MISTAKE_BOUND, 20, make_class("thresholds:n=1023"))  # Ldim 10
SEEDS = (0, 3, 17, 42)
#: Games played against a server when the test is statistical (its failure probability
#: is stated next to each threshold).
MANY = range(100, 108)


def test_seeds_derive_by_hmac_and_reveal_nothing_of_each_other():
    secret = game_seeds(5, bytes(range(32)))
    public = game_seeds(5)
    assert public.public and not secret.public
    assert len({secret.learner, secret.adversary, public.learner, public.adversary}) == 4
    assert secret.referee != public.referee and len(secret.referee) == 32
    assert secret.commitment == hashlib.sha256(secret.key).digest()
    # negative and huge seeds are seeds too
    assert game_seeds(-1).learner != game_seeds(2**70).learner
    with pytest.raises(ValueError, match="32 bytes"):
        game_seeds(1, b"short")


def test_the_coin_is_a_stream_in_blocks_or_one_at_a_time():
    one, many = Coin(bytes(32)), Coin(bytes(32))
    singles = [one.random() for _ in range(2500)]
    blocks = [*many.random(1000).tolist(), *many.random(1).tolist(), *many.random(1499).tolist()]
    assert singles == blocks
    assert 0.45 < sum(singles) / len(singles) < 0.55
    assert coin_for(1).random() != coin_for(2).random()


@pytest.mark.parametrize("seed", SEEDS)
def test_the_coin_predictor_wins_in_process_where_nothing_is_secret(seed):
    """The cheat is real: with the public key of ``play --seed S`` it finds S from its
    own seed, rebuilds the referee's coin and never errs against shattered-tree."""
    cheater = CoinPredictor()
    result = play(TREE, cheater, ADVERSARIES.make("shattered-tree"), seed)
    assert cheater.cheated and result.status == "complete"
    assert result.mistakes == 0 and result.expected_mistakes >= 5


@pytest.mark.slow
async def test_the_coin_predictor_gains_nothing_against_a_server(tmp_path):
    """Over the network the game key is secret: the search finds nothing, and the
    realised mistakes behave like an honest coin's: at each of the Ldim = 10 splits a
    mistake with probability 1/2 (expected mistakes exactly 5 a game)."""
    realised = []
    async with running_server(tmp_path) as server:
        for seed in MANY:
            out = await play_remote(server.url, CoinPredictor(), "shattered-tree", TREE, seed,
                                    server.token)
            assert out["status"] == "complete"
            assert out["expected_mistakes"] >= 5
            realised.append(out["mistakes"])
    # Binomial(80, 1/2): mean 40, sd 4.5; below 15 with probability < 1e-8 (the cheat
    # that works makes 0)
    assert sum(realised) >= 15, realised


@pytest.mark.parametrize("seed", SEEDS)
def test_the_target_recomputer_reads_random_targets_target_in_process(seed):
    game = GameSpec(MISTAKE_BOUND, 200, make_class("thresholds:n=255"))
    result = play(game, TargetRecomputer(seed=seed), ADVERSARIES.make("random-target"), seed)
    assert result.mistakes == 0


async def test_knowing_the_game_seed_does_not_give_a_servers_target_away(tmp_path):
    """A learner told the game seed S (as a submission reading --seed from its command
    line) cannot rebuild random-target's target: the adversary's seed comes from the
    server's secret key."""
    game = GameSpec(MISTAKE_BOUND, 200, make_class("thresholds:n=255"))
    total = 0
    async with running_server(tmp_path) as server:
        for seed in MANY:
            out = await play_remote(server.url, TargetRecomputer(seed=seed), "random-target",
                                    game, seed, server.token)
            assert out["status"] == "complete"
            total += out["mistakes"]
    # predicting 0 against a uniform threshold errs ~100 times a game; 8 games under 100
    # in all need 8 targets below ~33 together: probability < 1e-6
    assert total >= 100


FREE = GameSpec(EXPERTS, 400, experts=10)


def test_the_draw_charger_wins_in_process_where_nothing_is_secret():
    result = play(FREE, LEARNERS.make("hedge"), DrawCharger(), 3)
    assert result.regret > FREE.rounds / 2  # charged every draw: loss 400, best expert ~40
    assert result.bound is not None and result.regret > 5 * result.bound.value


async def test_the_draw_charger_gains_nothing_against_a_server(tmp_path):
    """An adversary of the experts game cannot charge the expert the referee is about to
    draw: Hedge's realised regret stays within its expected regret plus the coin's
    fluctuation, and the expected regret within sqrt(2 T ln d)."""
    async with running_server(tmp_path) as server:
        for seed in SEEDS[:2]:
            out = await play_remote(server.url, DrawCharger(), "hedge", FREE, seed,
                                    server.token)
            assert out["status"] == "complete"
            bound = math.sqrt(2 * FREE.rounds * math.log(10))
            assert out["expected_regret"] <= bound
            # realised - expected loss is a martingale of steps in [-1, 1] (Azuma): beyond
            # 5 sqrt(T) with probability < 4e-6
            assert out["regret"] <= out["expected_regret"] + 5 * math.sqrt(FREE.rounds)


async def test_a_server_game_commits_to_its_key_and_reveals_it_for_verify(tmp_path):
    """start carries SHA-256 of the game key, end and the log's footer the key; the log
    header holds neither the key nor a seed but S; --verify re-derives everything."""
    game = GameSpec(MISTAKE_BOUND, 50, make_class("thresholds:n=63"))
    async with running_server(tmp_path) as server:
        out = await play_remote(server.url, LEARNERS.make("hedge"), "random-target", game, 9,
                                server.token)
        row = server.store.game(out["game_id"])
    log = read_log(row["log"])
    assert set(log.header) >= {"seed", "key_sha256"} and "seeds" not in log.header
    assert log.header["seed"] == 9
    key = bytes.fromhex(log.footer["key"])
    assert key.hex() == out["game_key"]
    assert hashlib.sha256(key).hexdigest() == log.header["key_sha256"]
    assert not game_seeds(9, key).public
    report = verify(log)
    assert report.ok and "remotely" in report.message  # a remote learner: the chain only


def test_verify_refuses_a_footer_key_that_is_not_the_committed_one(tmp_path):
    from littlestone.server.records.logged import play_logged
    from littlestone.server.records.logs import LogWriter

    game = GameSpec(MISTAKE_BOUND, 30, make_class("thresholds:n=31"))
    done = play_logged(game, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 4,
                       tmp_path, key=bytes(32))
    log = read_log(done.log)
    assert verify(log).ok
    # the same rounds, re-written with another key in the footer: the chain is whole,
    # the key is not the one committed to
    forged = tmp_path / "forged.lslog"
    writer = LogWriter(forged, log.header, background=False)
    for record in log.records():
        writer.round(record)
    writer.close({**log.footer, "key": bytes(range(32)).hex()})
    report = verify(read_log(forged))
    assert not report.ok and "does not match" in report.message


def test_the_tournament_cheats_are_real_in_process():
    """The submissions tests/server/tournament/test_tournament.py shows failing in a
    tournament do win where nothing is secret: in process, with the public key of
    --seed S (and S on the command line for the target reader)."""
    import sys

    hostile = HOSTILE
    coin = LEARNERS.make(f"{hostile}/coin_predictor.py:CoinPredictor")
    assert play(TREE, coin, ADVERSARIES.make("shattered-tree"), 5).mistakes == 0
    game = GameSpec(MISTAKE_BOUND, 200, make_class("thresholds:n=255"))
    saved = sys.argv
    sys.argv = ["littlestone", "play", "--seed", "6"]
    try:
        reader = LEARNERS.make(f"{hostile}/target_reader.py:TargetReader")
        assert play(game, reader, ADVERSARIES.make("random-target"), 6).mistakes == 0
    finally:
        sys.argv = saved
