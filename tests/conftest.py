"""Shared fixtures: small classes and helpers to play games in tests."""

from __future__ import annotations

import os

import numpy as np
import pytest

from littlestone.games.classes import MatrixClass


def pytest_xdist_auto_num_workers(config: pytest.Config) -> int:
    """``-n auto``: one worker more than the cores this process may use. Many tests also
    wait (on sockets, subprocesses, sandboxes): with one worker a core, a 2-core run was
    17% idle; with one more, 3%."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return (cores or 1) + 1


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under ``--dist loadgroup``, every test of an ``xdist_group`` must carry its group:
    xdist writes it into the node id (``...@group``), and a pytest that ignores that (9.2
    with xdist 3.8: pytest-xdist issue 1386) splits every group across the workers, each
    of which then builds the group's module fixtures again (a tournament, a Ray cluster,
    a browser)."""
    if not getattr(config.option, "loadgroup", False):
        return
    lost = [item.nodeid for item in items if item.get_closest_marker("xdist_group")
            and item.nodeid.rfind("@") <= item.nodeid.rfind("]")]
    if lost:
        raise pytest.UsageError(f"--dist loadgroup: {len(lost)} tests lost their xdist_group "
                                f"(e.g. {lost[0]}): this pytest and pytest-xdist do not "
                                "group tests; install the versions pyproject.toml names")


@pytest.fixture
def random_matrix_class():
    """A factory of random 0/1 matrix classes."""

    def make(rows: int, cols: int, seed: int = 0) -> MatrixClass:
        rng = np.random.default_rng(seed)
        return MatrixClass(rng.integers(0, 2, size=(rows, cols)))

    return make


@pytest.fixture(autouse=True, scope="session")
def _no_user_data(tmp_path_factory):
    """Nothing the suite plays goes into the user's ./littlestone-data: commands run
    without --data (in process or as subprocesses) use a folder of the session's own."""
    import os

    from littlestone.server.records.folder import DATA_VARIABLE

    before = os.environ.get(DATA_VARIABLE)
    os.environ[DATA_VARIABLE] = str(tmp_path_factory.mktemp("littlestone-data"))
    yield
    if before is None:
        os.environ.pop(DATA_VARIABLE, None)
    else:
        os.environ[DATA_VARIABLE] = before
