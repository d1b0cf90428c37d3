"""pytest fixtures shared by every test folder (the helper functions are in ``tests/helpers.py``)."""

from __future__ import annotations

import numpy as np
import pytest


@pytest.fixture
def rng() -> np.random.Generator:
    """Return a fixed-seed generator (tests must not depend on global randomness)."""
    return np.random.default_rng(12345)
