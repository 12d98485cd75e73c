"""Fixtures for the noise tests.

``rng`` is a SecureRandom over a deterministic SHAKE-256 stream seeded by the
test id, so runs are reproducible; set ``DPFRAME_NOISE_TEST_URANDOM=1`` to run
the same tests on fresh os.urandom bytes.
"""

from __future__ import annotations

import os

import pytest

from dpframe.noise import SecureRandom
from tests.noise._support import ShakeSource


@pytest.fixture
def source(request: pytest.FixtureRequest) -> ShakeSource:
    return ShakeSource(request.node.nodeid)


@pytest.fixture
def rng(source: ShakeSource) -> SecureRandom:
    if os.environ.get("DPFRAME_NOISE_TEST_URANDOM") == "1":
        return SecureRandom()
    return SecureRandom(source)
