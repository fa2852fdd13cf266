"""The course benchmark still runs (no figures asserted: tests never time things), and a
new version of a sampled course plays its k games, not the round robin's."""

from __future__ import annotations

import re

from benchmarks.course import adversary, bench_course, learner, make_course
from littlestone.server.tournament import load_config


def test_a_small_course_runs_and_a_new_version_plays_its_k_games():
    rows = bench_course(10, 4, 1, rounds=20)
    assert [unit for *_, unit in rows] == ["games", "s", "s"]
    assert rows[0][1] < rows[0][2]  # (fewer games than the round robin's)
    for name, *_ in rows[1:]:
        played = re.search(r"\((\d+) games played\)", name)
        assert played is not None and 4 <= int(played.group(1)) <= 4 + 2, name


def test_the_students_are_built_in_agents_each_with_its_own_parameters(tmp_path):
    config = load_config(make_course(tmp_path, 300))
    assert len(config.learners) == len(config.adversaries) == 300
    assert config.schedule == "sampled" and learner(1) != learner(7)
    assert adversary(2) in config.adversaries
