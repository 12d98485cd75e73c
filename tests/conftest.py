"""Shared fixtures: every test gets its own ledger file; data comes from the package.

The suite runs on every core (pytest-xdist, ``-n auto`` in pyproject.toml's
``addopts``; ``-n 0`` runs it in one process): each worker is its own process
with its own temporary folders, every test and every process a test run
starts gets a throwaway default ledger, servers listen on free ports.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from hypothesis import settings

import dpframe as dp
from dpframe.engine.reruns import fresh_release
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988

# Plots in tests draw off screen; the notebook runs remove this so their kernels draw inline.
os.environ.setdefault("MPLBACKEND", "Agg")

# Hypothesis' per-example deadline (200 ms) is a timed test: on a loaded machine it fails
# correct code (test_coarsen_up_properties did, at a load average of 17). Speed is measured
# in benchmarks/, never by tests; every property still runs all its examples.
settings.register_profile("dpframe", deadline=None)
settings.load_profile("dpframe")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--audit-heavy",
        action="store_true",
        default=False,
        help="privacy auditor: run the heavy tier (more samples; see tests/AUDIT.md)",
    )


@pytest.fixture(scope="session", autouse=True)
def _no_real_ledger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Processes started by session or module fixtures (a Dask cluster, servers) too (and key)."""
    with pytest.MonkeyPatch.context() as patch:
        folder = tmp_path_factory.mktemp("default-ledger")
        patch.setenv("DPFRAME_LEDGER", str(folder / "default-ledger.sqlite"))
        patch.setenv("DPFRAME_KEY", str(folder / "config" / "key"))
        yield


@pytest.fixture(autouse=True)
def _isolated_ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test ever writes the user's real ledger or key."""
    monkeypatch.setenv("DPFRAME_LEDGER", str(tmp_path / "default-ledger.sqlite"))
    monkeypatch.setenv("DPFRAME_KEY", str(tmp_path / "config" / "dpframe" / "key"))


@pytest.fixture(scope="session")
def cps() -> pd.DataFrame:
    return load_cps1988()


@pytest.fixture
def ledger_path(tmp_path: Path) -> Path:
    return tmp_path / "ledger.sqlite"


@pytest.fixture
def session(ledger_path: Path) -> dp.Session:
    return dp.Session(epsilon=10.0, ledger=ledger_path)


@pytest.fixture
def pf(session: dp.Session, cps: pd.DataFrame) -> dp.PrivateFrame:
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


@pytest.fixture(autouse=True)
def _fresh_releases(request: pytest.FixtureRequest) -> Iterator[None]:
    """Under ``@pytest.mark.fresh_releases``: every release is new and charged (``fresh=True``).

    For tests that sample one release many times (its noise distribution) or
    count what repeated requests charge; a request the ledger already answered
    is otherwise answered from it, free (issue 31, tests/test_reruns.py).
    """
    if request.node.get_closest_marker("fresh_releases") is None:
        yield
        return
    with fresh_release(True):
        yield
