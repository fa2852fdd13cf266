"""Queued experts rounds scored in blocks (games/experts.py: ExpertsReferee.queue,
queued_answer, score_queued) and logged as one frame of columns per block (log format 2):
the same records, scores, coins and commitment as round by round, and logs written
before (format 1, a frame per round) still read, replay and verify."""

from __future__ import annotations

import hashlib
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from littlestone.games.classes import FiniteClass, make_class
from littlestone.games.commitment import SequenceHash
from littlestone.games.errors import IllegalMove
from littlestone.games.experts import ExpertsBlock, ExpertsReferee, draw_index, draw_indices
from littlestone.games.game import EXPERTS, GameSpec
from littlestone.learners import LEARNERS
from littlestone.local import play
from littlestone.server.records.logs import FULL_ARRAYS_MAX, LogWriter, read_log
from littlestone.server.records.logs.format import ForeignLog
from littlestone.server.records.verify import verify
from tests.support import ROOT

FORMAT1 = ROOT / "tests" / "data" / "format1"


def plain(record: Any) -> list[Any]:
    return [v.tolist() if isinstance(v, np.ndarray) else v for v in record]


def script(spec: str, rounds: int, seed: int) -> tuple[list[int], list[int], list[Any]]:
    """Instances, labels and the learner's answers: weights (some off 1 by less than the
    tolerance), a prediction p now and then, a fault now and then."""
    hclass = finite(spec)
    rng = np.random.default_rng(seed)
    xs = rng.integers(0, hclass.domain_size, rounds).tolist()
    ys = rng.integers(0, 2, rounds).tolist()
    answers: list[Any] = []
    for _ in range(rounds):
        kind = rng.random()
        if kind < 0.1:
            answers.append(float(rng.random()))
        elif kind < 0.15:
            answers.append(None)  # a fault
        else:
            w = rng.random(hclass.size) ** 3
            w /= w.sum()
            answers.append(w * (1 + 1e-9) if kind > 0.9 else w)
    return xs, ys, answers


def finite(spec: str) -> FiniteClass:
    hclass = make_class(spec)
    assert isinstance(hclass, FiniteClass)
    return hclass


def round_by_round(spec: str, rounds: int, seed: int, commit: bool) -> tuple[Any, ...]:
    hclass = finite(spec)
    xs, ys, answers = script(spec, rounds, seed)
    ref = ExpertsReferee(hclass.size, rounds, seed=seed, hclass=hclass)
    if commit:
        ref.commit(bytes(32))
    records = []
    for x, y, answer in zip(xs, ys, answers, strict=True):
        ref.instance(x)
        if answer is None:
            ref.answer_fault()
        elif isinstance(answer, float):
            ref.prediction(answer)
        else:
            ref.weights(answer)
        records.append(ref.label(y))
    return records, ref


def in_blocks(spec: str, rounds: int, seed: int, commit: bool, block: int,
              score_every: int) -> tuple[Any, ...]:
    hclass = finite(spec)
    xs, ys, answers = script(spec, rounds, seed)
    ref = ExpertsReferee(hclass.size, rounds, seed=seed, hclass=hclass)
    if commit:
        ref.commit(bytes(32))
    records, blocks = [], []
    for start in range(0, rounds, block):
        ref.queue(xs[start : start + block], ys[start : start + block])
        for i, answer in enumerate(answers[start : start + block]):
            costs = ref.queued_answer(answer)
            y = ys[start + i]
            assert costs.tolist() == (hclass.evaluate(xs[start + i]).astype(float)
                                      if y == 0 else 1.0 - hclass.evaluate(xs[start + i])
                                      ).tolist()
            if ref.queued_answered == score_every:
                records += ref.score_queued()
                blocks.append(ref.last_block)
        records += ref.score_queued(final=True)
        blocks.append(ref.last_block)
    return records, ref, [b for b in blocks if b is not None]


@pytest.mark.parametrize(("spec", "rounds", "seed", "block", "score_every"), [
    ("thresholds:n=15", 300, 0, 256, 0),
    ("thresholds:n=99", 517, 1, 256, 100),
    ("intervals:n=6", 90, 2, 7, 3),
    ("singletons:n=8", 64, 3, 64, 0),
    ("thresholds:n=4999", 20, 4, 8, 0),  # beyond 4 draw blocks: the draw row by row
])
@pytest.mark.parametrize("commit", [False, True])
def test_blocks_score_as_round_by_round(spec, rounds, seed, block, score_every, commit):
    one, ref_one = round_by_round(spec, rounds, seed, commit)
    many, ref_many, blocks = in_blocks(spec, rounds, seed, commit, block, score_every)
    assert [plain(r) for r in many] == [plain(r) for r in one]
    assert ref_many.result() == ref_one.result()
    assert ref_many.phase is ref_one.phase
    # the block's columns are its records
    assert [plain(r) for b in blocks for r in b.records()] == [plain(r) for r in one]
    if commit:  # the sequence hash saw the same moves in the same order
        assert ref_many._sequence is not None and ref_one._sequence is not None
        assert ref_many._sequence.digest(bytes(16)) == ref_one._sequence.digest(bytes(16))


def test_the_draws_of_a_block_are_those_of_each_row():
    rng = np.random.default_rng(7)
    for d in (1, 2, 5, 100, 4096, 4097):
        ws = rng.random((30, d)) ** 4
        ws[3] = 0.0
        ws[3, -1] = 1.0  # all the weight on the last expert
        ws /= ws.sum(axis=1, keepdims=True)
        us = rng.random(30)
        us[0] = 0.0
        assert draw_indices(ws, us).tolist() == [draw_index(w, float(u)) for w, u in
                                                 zip(ws, us, strict=True)]


def test_weights_the_referee_rejects_end_the_game_after_the_rounds_before():
    hclass = make_class("thresholds:n=3")
    ref = ExpertsReferee(4, 10, seed=1, hclass=hclass)
    ref.queue([0, 1, 2, 2, 0], [1, 0, 1, 0, 1])
    ref.queued_answer(np.full(4, 0.25))
    ref.queued_answer(0.5)
    with pytest.raises(IllegalMove):
        ref.queued_answer(np.full(4, 0.5))  # sums to 2
    assert ref.result().rounds == 0  # not yet scored
    records = ref.score_queued(final=True)
    assert [r.t for r in records] == [1, 2]
    result = ref.result()
    assert result.status == "illegal_move:learner:weights_distribution"
    assert result.rounds == 2 and ref.over


def game_log(tmp_path: Path, records: list[Any], blocks: list[ExpertsBlock] | None,
             name: str) -> Path:
    """The records written as a scored game's log: block frames, or (``blocks`` None)
    one record at a time, gathered by the writer."""
    path = tmp_path / f"{name}.lslog"
    writer = LogWriter(path, {"game": EXPERTS}, background=False)
    if blocks is None:
        for record in records:
            writer.expert(record)
    else:
        for block in blocks:
            writer.expert_block(block)
    writer.close({"status": "complete"})
    return path


@pytest.mark.parametrize(("spec", "rounds", "seed"), [
    ("thresholds:n=15", 600, 5), ("intervals:n=6", 70, 6),
    (f"thresholds:n={FULL_ARRAYS_MAX}", 12, 7),  # d > FULL_ARRAYS_MAX: each row's SHA-256
])
def test_a_block_frame_reads_back_as_the_records(tmp_path, spec, rounds, seed):
    records, _, blocks = in_blocks(spec, rounds, seed, False, 256, 0)
    for path in (game_log(tmp_path, records, blocks, "blocks"),
                 game_log(tmp_path, records, None, "gathered")):
        log = read_log(path)
        assert log.header["format"] == 2 and log.n_rounds == rounds
        d = make_class(spec).size
        if d <= FULL_ARRAYS_MAX:
            assert [plain(r) for r in log.records()] == [plain(r) for r in records]
            continue
        for row, record in zip(log.expert_rounds, records, strict=True):
            assert row["costs_sha256"] == hashlib.sha256(
                np.ascontiguousarray(record.costs, dtype="<f8").tobytes()).hexdigest()
            assert ("weights_sha256" in row) == (record.weights is not None)
            assert [row[k] for k in ("t", "p", "y", "drawn", "loss", "regret")] == [
                record.t, record.p, record.y, record.drawn, record.loss, record.regret]


@pytest.mark.parametrize("learner", ["hedge", "weighted-majority"])
@pytest.mark.parametrize("seed", [0, 9])
def test_a_logged_local_experts_game_verifies_from_its_block_frames(tmp_path, learner, seed):
    from littlestone.adversaries import ADVERSARIES
    from littlestone.server.records.logged import play_logged

    game = GameSpec(EXPERTS, 600, make_class("thresholds:n=31"))
    done = play_logged(game, LEARNERS.make(learner), ADVERSARIES.make("noisy:rate=0.2"), seed,
                       tmp_path)
    log = read_log(done.log)
    assert log.header["format"] == 2
    records: list[Any] = []
    play(game, LEARNERS.make(learner), ADVERSARIES.make("noisy:rate=0.2"), seed,
         on_record=records.append, key=bytes.fromhex(log.footer["key"]))
    assert [plain(r) for r in log.records()] == [plain(r) for r in records]
    report = verify(log, tmp_path)
    assert report.ok and report.rounds_checked == 600, report.message


@pytest.mark.parametrize("name", ["hedge_random_target", "weighted_majority_noisy"])
def test_a_format_1_log_still_reads_and_verifies(tmp_path, name):
    """Logs written before format 2 (by littlestone at the commit before it: a frame per
    experts round) read, re-simulate and verify as they did."""
    path = tmp_path / f"{name}.lslog"
    shutil.copy(FORMAT1 / f"{name}.lslog", path)
    log = read_log(path)
    assert log.header["format"] == 1 and log.status == "complete"
    report = verify(log)
    assert report.records_ok, report.message
    assert report.rounds_checked == log.n_rounds > 0


def test_experts_frames_are_refused_in_a_format_1_log(tmp_path):
    _, _, blocks = in_blocks("thresholds:n=3", 5, 1, False, 5, 0)
    # a format 1 header followed by a format 2 frame: not what any writer wrote
    path = tmp_path / "mixed.lslog"
    writer = LogWriter(path, {"game": EXPERTS, "format": 1}, background=False)
    writer.expert_block(blocks[0])
    writer.close({"status": "complete"})
    with pytest.raises(ForeignLog, match="format 2"):
        read_log(path)


def test_a_sequence_hash_of_all_moves_at_once_is_that_of_each():
    a, b = SequenceHash("thresholds:n=3"), SequenceHash("thresholds:n=3")
    moves = [0, 1, 3, 0, 2**70, 1023, 1024, np.int64(5)]
    for move in moves:
        a.add(move)
    b.add_all(moves)
    assert a.digest(bytes(16)) == b.digest(bytes(16))


def test_a_spectator_gets_a_blocks_rounds_and_totals(tmp_path):
    import msgpack

    from littlestone.server.net.spectators import Broadcast
    from tests.server.net.test_spectators import Spectator

    records, _, blocks = in_blocks("thresholds:n=15", 40, 3, False, 16, 0)
    broadcast = Broadcast("g", {"game": "experts"}, "hedge", "random-target")
    spectator = Spectator()
    broadcast.spectators.add(spectator)
    writer = LogWriter(tmp_path / "g.lslog", {"game": EXPERTS}, background=False)
    writer.observer = broadcast
    for block in blocks:
        writer.expert_block(block)
    messages = [msgpack.unpackb(frame) for frame in spectator.frames]
    assert [(m["t0"], m["n"]) for m in messages] == [(1, 16), (17, 16), (33, 8)]
    assert [v for m in messages for v in m["round_loss"]] == [r.loss for r in records]
    assert [v for m in messages for v in m["y"]] == [r.y for r in records]
    last, total = messages[-1], 0.0
    for r in records:
        total += r.loss
    assert last["t"] == 40 and last["loss"] == total
    assert last["regret"] == records[-1].regret
    assert broadcast.watching()["t"] == 40
