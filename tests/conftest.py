"""Shared fixtures: small classes and helpers to play games in tests."""

from __future__ import annotations

import numpy as np
import pytest

from littlestone.games.classes import MatrixClass


@pytest.fixture
def random_matrix_class():
    """A factory of random 0/1 matrix classes."""

    def make(rows: int, cols: int, seed: int = 0) -> MatrixClass:
        rng = np.random.default_rng(seed)
        return MatrixClass(rng.integers(0, 2, size=(rows, cols)))

    return make
