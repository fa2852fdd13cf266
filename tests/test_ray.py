"""Everything that runs on a Ray cluster: a tournament's field and a sweep. One cluster of
two nodes (on this machine) serves the whole module: its start costs about 4 CPU seconds,
and idle it costs 0.05 CPU seconds a second, so it starts at the module's first test and
stops after its last (the ``ray`` xdist group keeps the module on one worker). A test
that needs Ray goes here and takes the ``cluster`` fixture.

``--ray local`` (a cluster started by the command itself, for one machine) is the same
code once Ray is up: :func:`test_local_starts_a_cluster_of_its_own_sized_by_the_workers`
checks what it asks Ray for."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import littlestone as ls
from littlestone.cli import main
from littlestone.sandbox import Sandbox
from littlestone.server.records.store import Store
from littlestone.server.tournament import load_config, run_tournament
from tests.littlestone.test_python_api import MajorityVote
from tests.server.tournament.test_field import write_config
from tests.support import ROOT

ray = pytest.importorskip("ray")
pd = pytest.importorskip("pandas")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("ray")]

EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def cluster() -> Iterator[str]:
    """A two-node Ray cluster, this process connected to it: its address."""
    from ray.cluster_utils import Cluster

    nodes = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
    nodes.add_node(num_cpus=1)
    nodes.wait_for_nodes()
    try:
        ray.init(address=nodes.address, log_to_driver=False, configure_logging=False)
        yield str(nodes.address)
    finally:
        ray.shutdown()
        nodes.shutdown()


@pytest.mark.skipif(Sandbox.unavailable() is not None,
                    reason=f"no sandbox here: {Sandbox.unavailable()}")
def test_a_small_field_on_a_ray_cluster_of_two_nodes(cluster: str, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """Two Ray nodes, each sandboxing with bubblewrap: the games of a small field come
    back with their logs, which the tournament's process alone writes into its data
    folder (the workers are never told where it is, and the folder is named relative to
    the tournament's working directory, which Ray's workers do not share); every game
    verifies against that folder's anchors."""
    config = write_config(tmp_path, "rayfield", [
        f"{EXAMPLES}/minimal_learner.py:MajorityVote", "halving"],
        [f"{EXAMPLES}/minimal_adversary.py:Contrarian", "random-target"], rounds=20, seeds=2)
    monkeypatch.chdir(tmp_path)
    data = Path("data")
    report = run_tournament(load_config(config), data, 2, progress=False, ray_address=cluster)
    assert len({n["NodeID"] for n in ray.nodes() if n["Alive"]}) == 2
    assert len(report.games) == 8 and all(g["status"] == "complete" for g in report.games)
    for game in report.games:
        log, game_id = game["log"], game["game_id"]
        assert log is not None and game_id is not None
        assert Path(log).resolve().parent == tmp_path / "data" / "games"
        assert main(["replay", game_id, "--data", str(data), "--verify"]) == 0


def test_a_tournament_on_ray_gives_the_results_of_one_worker(
        cluster: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    config = write_config(tmp_path, "ray", ["halving", "soa", "hedge"],
                          ["random-target", "shattered-tree"], rounds=50, seeds=2)
    results = {}
    for label, extra in (("one", ["--workers", "1"]),
                         ("ray", ["--ray", cluster, "--workers", "2"])):
        data = tmp_path / label
        assert main(["tournament", str(config), "--data", str(data), "--json", *extra]) == 0
        capsys.readouterr()
        results[label] = {
            (r["learner"], r["adversary"], r["seed"]): (r["status"], r["raw"],
                                                        r["result"]["expected_mistakes"])
            for r in Store(data).tournament_games("ray")
        }
    assert len(results["one"]) == 12 and results["one"] == results["ray"]


def test_a_sweep_on_ray_gives_the_rows_of_one_process(cluster: str) -> None:
    grid: dict[str, Any] = dict(
        learners=["halving", MajorityVote], adversaries="shattered-tree",
        classes="thresholds:n=15", rounds=[8, 16], seeds=2, progress=False)
    pd.testing.assert_frame_equal(ls.sweep(**grid, workers=1),
                                  ls.sweep(**grid, workers=2, ray=cluster))


class Started(Exception):
    """Raised by a stand-in for ray.init: what it was asked is kept."""


def test_local_starts_a_cluster_of_its_own_sized_by_the_workers(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``local``, with no Ray running in this process, starts a cluster of its own (even
    if one runs on this machine: ``address="local"``) with one CPU a worker, and no
    dashboard. (Ray's start itself is the cluster fixture's, above.)"""
    asked: list[dict[str, Any]] = []

    def init(**kwargs: Any) -> None:
        asked.append(kwargs)
        raise Started

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    with pytest.raises(Started):
        ls.sweep("halving", "shattered-tree", "thresholds:n=7", rounds=4, seeds=2,
                 workers=3, ray="local", progress=False)
    config = write_config(tmp_path, "local", ["halving"], ["random-target"], rounds=4, seeds=1)
    with pytest.raises(Started):
        run_tournament(load_config(config), tmp_path / "data", 2, progress=False,
                       ray_address="local")
    assert [(a.get("address", "local"), a["num_cpus"], a["include_dashboard"])
            for a in asked] == [("local", 3, False), ("local", 2, False)]


@pytest.mark.skipif(Sandbox.unavailable() is not None,
                    reason=f"no sandbox here: {Sandbox.unavailable()}")
def test_a_sampled_field_on_ray_lands_its_games_here(cluster: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The sampled schedule on the two nodes, stage by stage: every entrant (a
    submission among them) plays its k games, fewer than the round robin's, whose logs
    come back into this data folder and verify; the ranking has its ratings."""
    config = write_config(tmp_path, "raysampled", [
        f"{EXAMPLES}/minimal_learner.py:MajorityVote", "halving", "soa", "hedge"],
        [f"{EXAMPLES}/minimal_adversary.py:Contrarian", "random-target", "shattered-tree"],
        rounds=20, seeds=2)
    config.write_text(config.read_text().replace(
        "[tournament]\n", '[tournament]\nschedule = "sampled"\ngames_per_version = 3\n'))
    monkeypatch.chdir(tmp_path)
    report = run_tournament(load_config(config), Path("data"), 2, progress=False,
                            ray_address=cluster)
    assert len(report.games) < 4 * 3 * 2
    for role, entries in (("learner", report.learners), ("adversary", report.adversaries)):
        for entry in entries:
            assert entry["games"] >= 3 and entry["rating_games"] > 0, (role, entry)
    for game in report.games:
        assert game["status"] == "complete" and game["log"] is not None
        assert Path(game["log"]).resolve().parent == tmp_path / "data" / "games"
    assert main(["replay", str(report.games[0]["game_id"]), "--data", "data", "--verify"]) == 0
