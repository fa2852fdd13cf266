"""Logs anchored outside themselves, and the index opened by nothing but the store
(issues: forged logs; the index opened as a log; two servers on one data folder).

The forgeries are made on games with a remote learner, which cannot be re-simulated: only
the anchor (the final chain digest the index recorded when the game ended, under the
folder's HMAC key) can tell them from the real log, so these tests fail without it.
"""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from littlestone.adversaries import ADVERSARIES
from littlestone.cli import main
from littlestone.client import play_remote
from littlestone.games.classes import make_class
from littlestone.games.errors import SpecError
from littlestone.games.game import MISTAKE_BOUND, GameSpec, PlayedFields, RoundRecord
from littlestone.learners import LEARNERS
from littlestone.server.records.anchors import resolve
from littlestone.server.records.database import SCHEMA_VERSION
from littlestone.server.records.folder import is_index
from littlestone.server.records.logged import play_logged
from littlestone.server.records.logs import ForeignLog, LogWriter, read_log
from littlestone.server.records.store import Store, anchor_hmac
from littlestone.server.records.verify import verify
from tests.support.servers import running_server

GAME = GameSpec(MISTAKE_BOUND, 40, make_class("thresholds:n=63"))


async def server_games(data: Path, n: int) -> list[PlayedFields]:
    """``n`` games of a remote halving against the server's shattered-tree (which forces
    a mistake on each of its first rounds), as ``play --json`` reports them."""
    async with running_server(data) as server:
        token = server.token  # type: ignore[attr-defined]
        return [await play_remote(server.url, LEARNERS.make("halving"), "shattered-tree",
                                  GAME, seed, token) for seed in range(n)]


def rewrite(path: Path, header: dict[str, Any] | None = None, honest_rounds: bool = True,
            result: dict[str, Any] | None = None) -> None:
    """Rewrite a log as a forger would: other content, the whole chain recomputed."""
    log = read_log(path)
    assert log.footer is not None
    forged = path.with_suffix(".forged")
    writer = LogWriter(forged, header or log.header, background=False)
    for record in log.records():
        assert isinstance(record, RoundRecord) and record.y is not None
        writer.round(record if honest_rounds else record._replace(prediction=record.y))
    writer.close({**log.footer, "result": {**log.footer["result"], **(result or {})}})
    os.replace(forged, path)
    assert read_log(path).status == "complete"  # a whole, well-chained log


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def edit_row(data: Path, game_id: str, **columns: Any) -> None:
    """Change an index row behind the store's back (as an intruder with sqlite3 would)."""
    db = sqlite3.connect(data / "littlestone.db", isolation_level=None)
    sets = ", ".join(f"{k} = ?" for k in columns)
    db.execute(f"UPDATE games SET {sets} WHERE game_id = ?", (*columns.values(), game_id))
    db.close()


# -- (e) an untouched log verifies; the anchor is written by the server and by play ------


async def test_an_untouched_log_is_anchored_and_verifies(tmp_path, capsys):
    data = tmp_path / "data"
    (out,) = await server_games(data, 1)
    row = Store(data).game(out["game_id"])
    log = read_log(row["log"])
    assert row["chain_sha256"] == log.chain.hex() and len(row["chain_hmac"]) == 64
    report = verify(log)
    assert report.ok and report.anchored is True and report.records_ok
    assert "remotely" in report.message and "anchored" in report.message
    code, text, _ = run(capsys, "replay", out["game_id"], "--data", str(data), "--verify")
    assert code == 0 and text.startswith("verified: ")
    local = play_logged(GAME, LEARNERS.make("soa"), ADVERSARIES.make("random-target"), 3, data)
    code, text, _ = run(capsys, "replay", local.game_id, "--data", str(data), "--verify",
                        "--json")
    shown = json.loads(text)
    assert code == 0 and shown["verified"] and shown["anchored"] is True


# -- (a) (b) a rewritten log, its chain recomputed ---------------------------------------


async def test_a_log_rewritten_to_fewer_mistakes_fails_verify(tmp_path, capsys):
    data = tmp_path / "data"
    (out,) = await server_games(data, 1)
    assert out["mistakes"] >= 3
    path = Path(Store(data).game(out["game_id"])["log"])
    rewrite(path, honest_rounds=False, result={"mistakes": 0})
    forged = read_log(path)
    assert sum(r.mistake for r in forged.records()) == 0
    report = verify(forged)
    assert not report.ok and report.anchored is False
    assert report.records_ok  # the chain alone cannot tell: the anchor does
    assert "final chain digest" in report.message and "rewritten" in report.message
    code, text, _ = run(capsys, "replay", out["game_id"], "--data", str(data), "--verify")
    assert code == 1 and text.startswith("differs: the log's final chain digest")


async def test_a_log_with_its_learner_renamed_fails_verify(tmp_path, capsys):
    data = tmp_path / "data"
    (out,) = await server_games(data, 1)
    path = Path(Store(data).game(out["game_id"])["log"])
    header = read_log(path).header
    rewrite(path, header={**header, "learner": {**header["learner"], "spec": "remote:alice"}})
    assert read_log(path).header["learner"]["spec"] == "remote:alice"
    report = verify(read_log(path))
    assert not report.ok and report.anchored is False and "final chain digest" in report.message
    code, _, _ = run(capsys, "replay", str(path), "--verify")  # by path: its own folder's index
    assert code == 1


async def test_a_local_game_rewritten_fails_on_its_anchor_before_its_records(tmp_path):
    done = play_logged(GAME, LEARNERS.make("halving"), ADVERSARIES.make("shattered-tree"), 0,
                       tmp_path)
    rewrite(done.log, honest_rounds=False, result={"mistakes": 0})
    report = verify(read_log(done.log))
    assert not report.ok and not report.records_ok and report.anchored is False
    assert report.message.startswith("the log's final chain digest")


# -- (c) the index row edited too ---------------------------------------------------------


async def test_editing_the_index_row_too_does_not_help(tmp_path):
    data = tmp_path / "data"
    first, second = await server_games(data, 2)
    path = Path(Store(data).game(first["game_id"])["log"])
    rewrite(path, honest_rounds=False, result={"mistakes": 0})
    edit_row(data, first["game_id"], mistakes=0)
    report = verify(read_log(path))
    assert not report.ok and "final chain digest" in report.message
    # ... and the row's digest set to the forged log's: its HMAC fails (no key)
    edit_row(data, first["game_id"], chain_sha256=read_log(path).chain.hex())
    report = verify(read_log(path))
    assert not report.ok and report.anchored is False and "fails its HMAC" in report.message
    # a row edited alone, its log untouched, no longer agrees with the log it anchors
    edit_row(data, second["game_id"], mistakes=0)
    report = verify(read_log(Store(data).game(second["game_id"])["log"]))
    assert not report.ok and report.anchored is False
    assert f"its mistakes is 0.0, the log's {second['mistakes']}" in report.message


async def test_whoever_can_write_the_whole_data_folder_can_still_forge(tmp_path):
    """What the anchor cannot do (README): the index holds its own key, so whoever can
    write the index and the logs can forge both, here a game that cannot be re-simulated."""
    data = tmp_path / "data"
    (out,) = await server_games(data, 1)
    path = Path(Store(data).game(out["game_id"])["log"])
    rewrite(path, honest_rounds=False, result={"mistakes": 0})
    db = sqlite3.connect(data / "littlestone.db", isolation_level=None)
    (secret,) = db.execute("SELECT value FROM secrets").fetchone()
    db.close()
    digest = read_log(path).chain.hex()
    edit_row(data, out["game_id"], mistakes=0, chain_sha256=digest,
             chain_hmac=anchor_hmac(secret, out["game_id"], digest))
    assert verify(read_log(path)).ok


# -- (d) two games' logs swapped ---------------------------------------------------------


async def test_swapped_logs_fail_verify(tmp_path, capsys):
    data = tmp_path / "data"
    one, two = await server_games(data, 2)
    store = Store(data)
    a, b = (Path(store.game(out["game_id"])["log"]) for out in (one, two))
    swap = a.with_suffix(".swap")
    os.replace(a, swap)
    os.replace(b, a)
    os.replace(swap, b)
    code, text, _ = run(capsys, "replay", one["game_id"], "--data", str(data), "--verify")
    assert code == 1 and "final chain digest" in text
    assert f"its header names game {two['game_id']}" in text
    report = verify(read_log(a), data, one["game_id"])
    assert not report.ok and report.anchored is False
    # by path, a file is the log its header says it is: game two's, whole and anchored
    report = verify(read_log(a))
    assert report.ok and f"game {two['game_id']} ended" in report.message


# -- a log with no index row -------------------------------------------------------------


def test_a_log_with_no_index_row_is_not_anchored_and_not_verified(tmp_path, capsys):
    done = play_logged(GAME, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 1,
                       tmp_path / "data")
    copy = tmp_path / "handed-over.lslog"
    copy.write_bytes(done.log.read_bytes())
    report = verify(read_log(copy))
    assert not report.ok and report.anchored is None and report.records_ok
    assert report.message.startswith(f"not anchored: no index row for game {done.game_id}")
    assert "all 40 rounds and the result match" in report.message
    assert verify(read_log(copy), tmp_path / "data").ok  # --data names its index
    code, text, err = run(capsys, "replay", str(copy), "--data", str(tmp_path / "none"),
                          "--verify")
    assert code == 1 and text.startswith("not anchored: ") and err == ""


# -- (f) an index from before the anchors -------------------------------------------------

OLD_SCHEMA = """
CREATE TABLE games (game_id TEXT PRIMARY KEY, started TEXT NOT NULL, finished TEXT,
    source TEXT, game TEXT NOT NULL, class TEXT, experts INTEGER, learner TEXT NOT NULL,
    adversary TEXT NOT NULL, seed INTEGER, horizon INTEGER, rounds INTEGER,
    status TEXT NOT NULL, mistakes REAL, expected_mistakes REAL, regret REAL,
    expected_regret REAL, bound REAL, bound_name TEXT, log TEXT);
CREATE TABLE tokens (name TEXT PRIMARY KEY, sha256 TEXT NOT NULL UNIQUE,
    created TEXT NOT NULL);
PRAGMA user_version = 1;
"""


def test_an_index_without_the_anchor_columns_is_migrated_on_open(tmp_path, capsys):
    new = tmp_path / "new"
    done = play_logged(GAME, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 2, new)
    row = Store(new).game(done.game_id)
    old = tmp_path / "old"
    (old / "games").mkdir(parents=True)
    log = old / "games" / done.log.name
    log.write_bytes(done.log.read_bytes())
    db = sqlite3.connect(old / "littlestone.db", isolation_level=None)
    db.executescript(OLD_SCHEMA)
    columns = [c for c in row if c not in ("chain_sha256", "chain_hmac", "owner",
                                               "pairing")]
    db.execute(f"INSERT INTO games ({', '.join(columns)}) VALUES "
               f"({', '.join('?' * len(columns))})", [row[c] for c in columns[:-1]] + [str(log)])
    db.execute("INSERT INTO tokens VALUES ('ann', 'abc', 'then')")
    db.close()

    store = Store(old)
    migrated = store.game(done.game_id)
    assert migrated is not None and migrated["mistakes"] == row["mistakes"]
    assert migrated["chain_sha256"] is None and migrated["chain_hmac"] is None
    assert store.token_account("abc") == ("ann", "player")  # (roles came with version 3)
    db = sqlite3.connect(old / "littlestone.db")
    assert db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    db.close()
    report = verify(read_log(log))
    assert not report.ok and report.anchored is None and report.records_ok
    assert report.message.startswith(f"not anchored: the index row of game {done.game_id} "
                                     "holds no chain digest")
    code, text, err = run(capsys, "replay", done.game_id, "--data", str(old), "--verify")
    assert code == 1 and text.startswith("not anchored") and "Traceback" not in err
    code, text, _ = run(capsys, "games", "--data", str(old), "--json")
    assert code == 0 and json.loads(text)["games"][0]["game_id"] == done.game_id
    later = play_logged(GAME, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 3,
                        old)
    assert verify(read_log(later.log)).ok  # games played since are anchored
    assert Store(old).game(done.game_id)["chain_sha256"] is None  # the old row as it was


# -- nothing but the store opens the index -----------------------------------------------


def test_the_index_and_its_files_are_refused_as_logs_before_they_are_opened(tmp_path):
    store = Store(tmp_path)
    store.start_game({"game": MISTAKE_BOUND, "learner": "a", "adversary": "b"}, log="-")
    (tmp_path / "elsewhere").mkdir()
    os.link(store.path, tmp_path / "elsewhere" / "hard.lslog")  # another name, same file
    os.symlink(store.path, tmp_path / "elsewhere" / "soft.lslog")
    names = [store.path, tmp_path / "littlestone.db-wal", tmp_path / "littlestone.db-shm",
             tmp_path / "elsewhere" / "hard.lslog", tmp_path / "elsewhere" / "soft.lslog"]
    for path in names:
        assert is_index(path)
        with pytest.raises(ForeignLog, match="is the SQLite index, not a game log"):
            read_log(path)
        with pytest.raises(ForeignLog, match="is the SQLite index"):
            resolve(str(path), tmp_path)
        with pytest.raises(SpecError, match="is the SQLite index"):
            ADVERSARIES.make(f"replay:log={path}")
    done = play_logged(GAME, LEARNERS.make("halving"), ADVERSARIES.make("random-target"), 0,
                       tmp_path)
    assert not is_index(done.log) and not is_index(tmp_path / "littlestone-db.lslog")
    store.close()


def test_telling_a_log_from_an_index_does_not_grow_with_the_indexes_opened(tmp_path,
                                                                          monkeypatch):
    """A file is told apart by one stat, however many indexes this process opened. It
    was compared with each of them: after a test session's 700 indexes, a read of a log
    took 6 ms, 0.5 ms in a fresh process. Now at most one comparison is made, with the
    index file it shares an inode number with (a file deleted since, whose number a new
    file may take); another name of an index (a hard link) is still seen."""
    from littlestone.server.records import folder

    for n in range(50):
        folder.opened(tmp_path / f"data{n}" / "littlestone.db")
    compared = []
    samefile = os.path.samefile
    monkeypatch.setattr(os.path, "samefile",
                        lambda a, b: compared.append(b) or samefile(a, b))
    log = tmp_path / "game.lslog"
    log.write_bytes(b"not an index")
    assert not is_index(log) and len(compared) <= 1
    store = Store(tmp_path / "data")
    os.link(store.path, tmp_path / "hard.lslog")
    assert is_index(tmp_path / "hard.lslog") and compared
    store.close()


BOUND = textwrap.dedent("""
    import subprocess, sys
    from pathlib import Path
    from littlestone.server.records.folder import is_index
    from littlestone.server.records.logs import ForeignLog, read_log
    from littlestone.server.records.store import Store

    data = Path(sys.argv[1])
    store = Store(data)
    for name in ("littlestone.db", "littlestone.db-wal"):
        alias = data / f"{name}.alias.lslog"
        alias.touch()
        subprocess.run(["mount", "--bind", str(data / name), str(alias)], check=True)
        try:
            read_log(alias)
        except ForeignLog as exc:
            print(is_index(alias), exc)
    store.close()
""")


def test_the_index_bound_under_another_name_is_refused_as_a_log(tmp_path):
    """A bind mount is another path to the index's file, of one link and another name
    (as is a name a case-insensitive file system folds to the index's): it is refused by
    identity, not opened (telling a log by its one link's name let it through)."""
    unshare = ["unshare", "--user", "--map-root-user", "--mount"]
    (tmp_path / "a").touch()
    (tmp_path / "b").touch()
    try:  # (a bind mount in a private mount namespace, where this machine allows one)
        ready = subprocess.run([*unshare, "mount", "--bind", str(tmp_path / "a"),
                                str(tmp_path / "b")], capture_output=True).returncode == 0
    except OSError:
        ready = False
    if not ready:
        pytest.skip("no bind mount in a private mount namespace here (unshare)")
    done = subprocess.run([*unshare, sys.executable, "-c", BOUND, str(tmp_path)],
                          capture_output=True, text=True, check=True)
    assert done.stdout.splitlines() == [
        f"True {tmp_path}/{name}.alias.lslog is the SQLite index, not a game log"
        for name in ("littlestone.db", "littlestone.db-wal")]


HOLDER = textwrap.dedent("""
    import os, subprocess, sys
    from pathlib import Path
    from littlestone.adversaries import ADVERSARIES
    from littlestone.games.errors import SpecError
    from littlestone.server.records.logs import LogError, read_log
    from littlestone.server.records import playback  # registers the replay adversary
    from littlestone.server.records.anchors import resolve
    from littlestone.server.records.store import Store

    data = Path(sys.argv[1])
    store = Store(data)
    info = {"game": "mistake-bound", "learner": "holder", "adversary": "random-target"}
    other = ("import sys; from pathlib import Path; from littlestone.server.records.store "
             "import Store; s = Store(Path(sys.argv[1])); g = s.start_game({'game': "
             "'mistake-bound', 'learner': 'other', 'adversary': 'x'}, log='-'); "
             "s.finish_game(g, {'status': 'complete'}); s.close()")
    os.link(store.path, data / "alias.lslog")
    refused = 0
    for i in range(10):
        for _ in range(3):
            game_id = store.start_game(info, log="-")
            store.finish_game(game_id, {"status": "complete", "rounds": 5}, chain=bytes(32))
        for name in ("littlestone.db", "littlestone.db-wal", "littlestone.db-shm",
                     "alias.lslog"):
            for attempt in (read_log, resolve, lambda p: ADVERSARIES.make(f"replay:log={p}")):
                try:
                    attempt(data / name)
                except (LogError, SpecError, OSError):
                    refused += 1
        # another process opens the index and closes it: were this process's locks gone,
        # it would take itself for the last one, checkpoint and delete the WAL
        subprocess.run([sys.executable, "-c", other, str(data)], check=True)
    store.close()
    print(refused)
""")


@pytest.mark.slow
def test_reading_the_index_as_a_log_keeps_the_holders_rows(tmp_path):
    """The POSIX-lock pitfall: a process that closes any descriptor of the index loses its
    SQLite locks. A writer that meanwhile tries to read the index (and its WAL, and an
    alias of it) as a log, in every way there is, keeps every row. (With the refusal
    switched off, so that these reads open the files, 9 of these 40 rows were lost when
    tried.)"""
    script = tmp_path / "holder.py"
    script.write_text(HOLDER)
    data = tmp_path / "data"
    data.mkdir()
    done = subprocess.run([sys.executable, str(script), str(data)], capture_output=True,
                          text=True, timeout=120, check=True)
    assert int(done.stdout) == 10 * 4 * 3
    rows = Store(data).games(limit=1000)
    assert sum(r["learner"] == "holder" for r in rows) == 30
    assert sum(r["learner"] == "other" for r in rows) == 10
    assert all(r["status"] == "complete" for r in rows)


async def test_replay_of_a_running_servers_index_is_refused_in_one_line(tmp_path, capsys):
    data = tmp_path / "data"
    async with running_server(data) as server:
        before = await play_remote(server.url, LEARNERS.make("halving"), "random-target",
                                   GAME, 1, server.token)
        for name in ("littlestone.db", "littlestone.db-wal", "littlestone.db-shm"):
            code, out, err = run(capsys, "replay", str(data / name), "--data", str(data),
                                 "--verify")
            assert code == 3 and out == ""
            assert err.strip() == (f"littlestone: error: {data / name} is the SQLite index, "
                                   "not a game log")
        after = await play_remote(server.url, LEARNERS.make("halving"), "random-target",
                                  GAME, 2, server.token)
    store = Store(data)
    assert [store.game(out["game_id"])["status"] for out in (before, after)] == ["complete"] * 2


# -- two servers on one data folder --------------------------------------------------------


def start_server(data: Path) -> tuple[subprocess.Popen[str], str]:
    server = subprocess.Popen([sys.executable, "-m", "littlestone", "serve", "--anonymous",
                               "--port", "0", "--data", str(data)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert server.stdout is not None
    line = server.stdout.readline()
    assert line.startswith("littlestone serving on "), (line, server.stderr)
    return server, line.split()[3]


@pytest.mark.slow
async def test_two_servers_on_one_data_folder_index_every_game(tmp_path, capsys):
    data = tmp_path / "data"
    servers = [start_server(data) for _ in range(2)]
    game = GameSpec(MISTAKE_BOUND, 30, make_class("thresholds:n=31"))
    try:
        outs = await asyncio.gather(*(
            play_remote(url, LEARNERS.make("halving"), "random-target", game, seed)
            for seed in range(15) for _, url in servers))
    finally:
        for server, _ in servers:
            server.terminate()
        codes = [server.wait(timeout=30) for server, _ in servers]
    assert codes == [0, 0]
    ids = [out["game_id"] for out in outs]
    assert len(set(ids)) == 30 and all(out["status"] == "complete" for out in outs)
    store = Store(data)
    assert len(store.games(limit=1000)) == 30
    for out in outs:
        row = store.game(out["game_id"])
        assert row is not None and row["status"] == "complete"
        assert row["mistakes"] == out["mistakes"] and row["chain_sha256"] is not None
        assert read_log(row["log"]).chain.hex() == row["chain_sha256"]
    for game_id in ids[::7]:
        code, text, _ = run(capsys, "replay", game_id, "--data", str(data), "--verify")
        assert code == 0 and text.startswith("verified: ")


# -- (f) the index the reader names wins over the one beside the log (issue 25) ---------


async def test_a_named_data_folder_alone_anchors_a_log_and_the_verdict_names_it(
        tmp_path, capsys):
    """Break (fixed): ``replay LOG --verify --data TEACHER`` said "verified ... anchored"
    for a doctored game whose anchor was the forger's own index beside the log, although
    TEACHER's index holds no such game. The index ``--data`` names is the only one asked;
    without ``--data`` the log's neighbour answers, and each verdict names its index."""
    teacher, forger = tmp_path / "teacher", tmp_path / "forger"
    Store(teacher).close()  # the teacher's folder: an index, without this game
    (out,) = await server_games(forger, 1)
    path = Path(Store(forger).game(out["game_id"])["log"])
    code, text, _ = run(capsys, "replay", str(path), "--verify", "--data", str(teacher))
    assert code == 1 and text.startswith("not anchored: no index row for game")
    assert str(teacher / "littlestone.db") in text and str(forger) not in text
    code, text, _ = run(capsys, "replay", str(path), "--verify")
    assert code == 0 and f"anchored: the index {forger / 'littlestone.db'} recorded" in text
    # by its id, the game is looked up (and anchored) in the folder named, or not at all
    code, _, err = run(capsys, "replay", out["game_id"], "--verify", "--data", str(teacher))
    assert code == 2 and "no log file or game id" in err


async def test_verify_says_interrupted_where_a_game_was_interrupted(tmp_path, capsys):
    """Break (fixed): ``--verify`` of a game cut off (``kill -9``: ``interrupted``; a full
    disk: ``aborted:storage``) said it was "indexed by a littlestone that kept no
    digests", which was false."""
    data = tmp_path / "data"
    (out,) = await server_games(data, 1)
    path = Path(Store(data).game(out["game_id"])["log"])
    for status, said in (("interrupted", "interrupted: the process that ran the game"),
                         ("aborted:storage", "interrupted: the disk was full")):
        edit_row(data, out["game_id"], status=status, chain_sha256=None, chain_hmac=None)
        code, text, _ = run(capsys, "replay", str(path), "--verify")
        assert code == 1 and said in text and "kept no digests" not in text, text


def test_a_link_to_a_wal_whose_inode_a_deleted_index_file_had_is_refused(tmp_path,
                                                                         monkeypatch):
    """Break (fixed; the suite saw it once): the -wal took the inode number of another
    index's file, opened by this process and deleted since. ``is_index`` compared the
    link with that file's gone name; the comparison raised, and the answer was False."""
    from littlestone.server.records import folder

    store = Store(tmp_path / "data")
    wal = tmp_path / "data" / "littlestone.db-wal"
    os.link(wal, tmp_path / "again.lslog")
    info = os.stat(wal)
    monkeypatch.setitem(folder._OPENED, (info.st_dev, info.st_ino),
                        tmp_path / "deleted" / "littlestone.db-wal")
    try:
        assert is_index(tmp_path / "again.lslog")
    finally:
        store.close()


def test_a_hard_link_to_a_wal_made_since_the_index_was_opened_is_refused(tmp_path):
    """SQLite deletes the -wal and -shm files with its last connection and makes them
    again, under new inode numbers, when another process opens the index: a hard link
    to the new one is still told as the index's, not read as a log."""
    store = Store(tmp_path)
    store.close()  # (its -wal and -shm: gone)
    for n in range(4):  # (files that take the inode numbers they freed)
        (tmp_path / f"filler{n}").write_bytes(b"x")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sqlite3, sys, time\n"
         "db = sqlite3.connect(sys.argv[1]); db.execute('PRAGMA journal_mode=WAL')\n"
         "db.execute('SELECT count(*) FROM sqlite_master').fetchall()\n"
         "print('open', flush=True); time.sleep(60)", str(store.path)],
        stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "open"
        wal = tmp_path / "littlestone.db-wal"
        assert wal.exists()
        os.link(wal, tmp_path / "again.lslog")
        assert is_index(tmp_path / "again.lslog")
        with pytest.raises(ForeignLog, match="is the SQLite index"):
            read_log(tmp_path / "again.lslog")
    finally:
        holder.kill()
        holder.wait()
