"""A large course rated by the sampled schedule, side by side with its baselines
(``make bench``, or ``python -m benchmarks.course [--students N]``).

:func:`make_course` writes a course whose students are built-in agents with their own
parameters (student k submits a learner and an adversary: Hedge, Weighted-Majority,
online gradient descent, randomised and weighted Halving with a learning rate or a
prior of its own; iid and prior-target adversaries with their own distribution), on
three classes, in ``schedule = "sampled"``.

- :func:`bench_course`: the whole course rated, then each new version (a learner and
  an adversary, each submitted after the field was rated) rated against the stored
  field, next to the round robin's games for one version (what a version would cost
  without the sampled schedule, at the course's own rate).
- :func:`bench_agreement` (``--only agreement``): a small course rated by the sampled
  schedule next to its round robin: how far the sampled ranking agrees with the exact
  one (Kendall's tau-b, the top 5) on a field whose games are the same in every run.
- :func:`bench_course_ray`: the same course's games per second on a local Ray cluster
  of two nodes next to one node (Ray's own ``cluster_utils.Cluster``, on loopback: no
  shared disk is used, the games' logs come back to the tournament's process).

Tests never time anything; ``tests/benchmarks/test_course.py`` runs a small course.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from littlestone.server.tournament import load_config, rate_entrant, run_tournament

CLASSES = ["thresholds:n=63", "monotone-disjunctions:n=6", "intervals:n=16"]
#: (family, parameter, its first value, its step) of the students' learners.
LEARNER_FAMILIES = [("hedge", "eta", 0.05, 0.0031), ("weighted-majority", "beta", 0.05, 0.0011),
                    ("ogd", "eta", 0.05, 0.0029), ("randomized-halving", "s", 0.3, 0.0113),
                    ("weighted-halving", "s", 0.3, 0.0107),
                    ("randomized-weighted-majority", "eta", 0.05, 0.0037)]
ADVERSARY_FAMILIES = [("iid:dist=uniform", "q", 0.05, 0.0011),
                      ("iid:dist=zipf", "s", 1.05, 0.0113),
                      ("prior-target:prior=zipf", "s", 0.3, 0.0117)]


def learner(k: int) -> str:
    """Student k's learner: a built-in with a parameter of its own."""
    family, name, first, step = LEARNER_FAMILIES[k % len(LEARNER_FAMILIES)]
    return f"{family}:{name}={first + step * (k // len(LEARNER_FAMILIES)):.4f}"


def adversary(k: int) -> str:
    """Student k's adversary: a built-in with a parameter of its own."""
    family, name, first, step = ADVERSARY_FAMILIES[k % len(ADVERSARY_FAMILIES)]
    value = first + step * (k // len(ADVERSARY_FAMILIES))
    return f"{family},{name}={min(value, 0.95) if name == 'q' else value:.4f}"


def make_course(folder: Path, students: int, k: int = 12, rounds: int = 100,
                name: str = "course", seeds: int = 2, schedule: str = "sampled") -> Path:
    """The course's tournament file, ``folder/NAME.toml`` (``schedule``, sampled by
    default, ``k`` games a version)."""
    folder.mkdir(parents=True, exist_ok=True)
    learners = sorted({learner(i) for i in range(students)})
    adversaries = sorted({adversary(i) for i in range(students)})
    path = folder / f"{name}.toml"
    path.write_text(
        f"learners = {json.dumps(learners)}\nadversaries = {json.dumps(adversaries)}\n\n"
        f'[tournament]\nname = "{name}"\nrounds = {rounds}\nseeds = {seeds}\n'
        f'schedule = "{schedule}"\ngames_per_version = {k}\n\n'
        + "".join(f'[[classes]]\nspec = "{c}"\n\n' for c in CLASSES))
    return path


def bench_course(students: int = 1000, k: int = 12, workers: int = 2, rounds: int = 100
                 ) -> list[tuple[str, float, float, str]]:
    """The course rated in sampled mode, then one new learner and one new adversary
    each rated against the stored field."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = make_course(folder, students, k, rounds)
        config = load_config(path)
        started = time.perf_counter()
        report = run_tournament(config, folder / "data", workers, progress=False)
        field_seconds = time.perf_counter() - started
        seen = {g["game_id"] for g in report.games}
        versions: list[tuple[str, float, int]] = []
        field = config
        for role, spec in (("learner", learner(students + 6)),
                           ("adversary", adversary(students + 3))):
            started = time.perf_counter()
            rated = rate_entrant(field, folder / "data", spec, role, workers, progress=False)
            versions.append((role, time.perf_counter() - started,
                             sum(g["game_id"] not in seen for g in rated.games)))
            seen |= {g["game_id"] for g in rated.games}
            if role == "learner":
                field = dataclasses.replace(field, learners=(*field.learners, spec))
            else:
                field = dataclasses.replace(field, adversaries=(*field.adversaries, spec))
    rate = len(report.games) / field_seconds
    round_robin = len(config.adversaries) * len(CLASSES) * len(config.seeds)
    rows = [(f"a course of {students} students ({len(config.learners)} learners x "
             f"{len(config.adversaries)} adversaries), sampled, k = {k}: "
             f"{len(report.games)} games in {field_seconds:.0f} s, --workers {workers}\n"
             f"    vs its round robin's games ({len(config.learners) * round_robin})",
             float(len(report.games)), float(len(config.learners) * round_robin), "games")]
    for role, seconds, played in versions:
        rows.append((f"a new {role} version rated against the stored course ({played} games "
                     f"played): {seconds:.1f} s\n    vs its round robin's {round_robin} games "
                     f"at the course's rate ({rate:.1f} games/s)", seconds, round_robin / rate,
                     "s"))
    return rows


def agreement(exact: Any, sampled: Any) -> dict[str, tuple[float, float, bool]]:
    """Each side's (Kendall's tau-b, :func:`.ratings.agreement`, top 5 in the same
    order) of a sampled leaderboard against its round robin's: ranks as ranks (tied
    entrants share one; tau-b counts a pair one side ties and the other orders against
    the estimate), entrants one side leaves unranked last."""
    from littlestone.server.tournament.ratings import agreement as ordered
    from littlestone.server.tournament.ratings import kendall_tau

    out = {}
    for role in ("learner", "adversary"):
        ours = exact.learners if role == "learner" else exact.adversaries
        theirs = sampled.learners if role == "learner" else sampled.adversaries
        last = len(ours) + 1
        a = {e[role]: last if e["rank"] is None else e["rank"] for e in ours}
        b = {e[role]: last if e["rank"] is None else e["rank"] for e in theirs}
        names = sorted(a)
        top = [e[role] for e in ours[:5]]
        out[role] = (kendall_tau([a[n] for n in names], [b.get(n, last) for n in names]),
                     ordered([a[n] for n in names], [b.get(n, last) for n in names]),
                     sorted(top, key=lambda n: (b.get(n, last), n)) == top)
    return out


def bench_agreement(students: int = 12, k: int = 10, rounds: int = 100,
                    reference: Path | None = None) -> list[tuple[str, float, float, str]]:
    """A course of ``students`` (built-in agents with their own parameters: their games
    are the same in every run) rated by the sampled schedule, ``k`` games a version,
    next to its round robin (played in the same run, in process, or read from the data
    folder ``reference`` where this course's round robin was stored): Kendall's tau-b,
    the agreement on the pairs the round robin orders, the top 5, and the share of the
    round robin's games played."""
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        exact_path = make_course(folder, students, k, rounds, name="course",
                                 schedule="round-robin")
        started = time.perf_counter()
        exact = run_tournament(load_config(exact_path), reference or folder / "exact", 1,
                               progress=False)
        exact_seconds = time.perf_counter() - started
        sampled_path = make_course(folder, students, k, rounds, name="course")
        started = time.perf_counter()
        sampled = run_tournament(load_config(sampled_path), folder / "sampled", 1,
                                 progress=False)
        seconds = time.perf_counter() - started
    found = agreement(exact, sampled)
    (tau_l, ordered_l, top_l), (tau_a, ordered_a, top_a) = found["learner"], found["adversary"]
    return [(f"a course of {students} students rated by the sampled schedule, k = {k}: "
             f"{len(sampled.games)} games in {seconds:.1f} s; Kendall tau-b against the round "
             f"robin {tau_l:.3f} (learners), {tau_a:.3f} (adversaries), on the pairs it "
             f"orders {ordered_l:.3f}, {ordered_a:.3f}; top 5 in the same order: {top_l} "
             f"(learners), {top_a} (adversaries)\n    vs the round robin's "
             f"{len(exact.games)} games ({exact_seconds:.1f} s"
             + (", stored before)" if reference is not None else ")"),
             float(len(sampled.games)), float(len(exact.games)), "games")]


def bench_course_ray(students: int = 200, k: int = 8) -> list[tuple[str, float, float, str]]:
    """The course's games per second on a local Ray cluster of two nodes (one CPU
    each) next to one node."""
    try:
        import ray
        from ray.cluster_utils import Cluster
    except ImportError:
        return []
    rates: dict[int, float] = {}
    games: dict[int, int] = {}
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        path = make_course(folder, students, k, name="raycourse")
        for nodes in (1, 2):
            cluster = Cluster(initialize_head=True, head_node_args={"num_cpus": 1})
            for _ in range(nodes - 1):
                cluster.add_node(num_cpus=1)
            cluster.wait_for_nodes()
            try:
                ray.init(address=cluster.address, log_to_driver=False, configure_logging=False)
                started = time.perf_counter()
                report = run_tournament(load_config(path), folder / f"data{nodes}", 1,
                                        progress=False, ray_address=cluster.address)
                seconds = time.perf_counter() - started
            finally:
                ray.shutdown()
                cluster.shutdown()
            rates[nodes], games[nodes] = len(report.games) / seconds, len(report.games)
    return [(f"a sampled course of {students} students (k = {k}, {games[2]} games) on a local "
             f"Ray cluster of two nodes (1 CPU each)\n    vs one node ({games[1]} games)",
             rates[2], rates[1], "games/s")]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--students", type=int, help="1000 (--only agreement: 12)")
    parser.add_argument("--games-per-version", type=int, help="12 (--only agreement: 10)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--ray-students", type=int, default=200)
    parser.add_argument("--only", choices=["course", "ray", "agreement"])
    parser.add_argument("--reference", type=Path, help="with --only agreement: a data "
                        "folder where the same course's round robin is stored (played "
                        "there if not)")
    args = parser.parse_args(argv)
    rows: list[Any] = []
    if args.only == "agreement":
        rows += bench_agreement(args.students or 12, args.games_per_version or 10,
                                reference=args.reference)
    if args.only in (None, "course"):
        rows += bench_course(args.students or 1000, args.games_per_version or 12,
                             args.workers)
    if args.only in (None, "ray"):
        rows += bench_course_ray(args.ray_students)
    for name, ours, base, unit in rows:
        ratio = base / ours if unit == "s" else ours / base
        label, *more = name.split("\n")
        print(f"{label:<100} {ours:>10.4g} {base:>10.4g} {ratio:>7.3g}x  {unit}", flush=True)
        for line in more:
            print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
