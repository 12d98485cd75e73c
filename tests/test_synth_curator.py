"""Synthetic copies through the curator: the node travels as JSON, the response is the table.

The curator runs in its own process (``python -m dpframe serve``) over the
bundled CPS data; the analyst's frame comes from ``dp.connect(...).open("cps")``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_CATEGORIES
from dpframe.mechanisms.synth.synth_report import SynthInfo
from tests.curator.support import ALICE, Server, start_server, write_catalog
from tests.test_synth import kept_missing

COLUMNS = ["wage", "education", "region", "parttime"]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(write_catalog(tmp_path_factory.mktemp("curator")))
    yield running
    running.stop()


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    return dp.connect(server.url, token=ALICE).open("cps")


def test_copy_through_the_curator(remote: Any) -> None:
    before = remote.session.spent
    copy = remote[COLUMNS].synthesize(epsilon=1, progress=False)
    info = copy.attrs["dpframe_synth"]
    assert isinstance(info, SynthInfo)
    assert list(copy.columns) == COLUMNS
    assert info.rows_private and abs(len(copy) - 28155) < 500
    # No missing value (the data has none) but in a column whose empty missing cell the noise
    # kept: 3.6e-7 per column (MST) and 4.2e-7 (AIM) here, about 1.1e-6 per run over the
    # two copies when these checks met the missing values; two such columns: below 1e-12.
    kept = kept_missing(info)
    assert len(kept) <= 1, kept
    assert copy.drop(columns=sorted(kept)).notna().all().all()
    assert copy["wage"].dropna().between(0, 5000).all()
    assert set(copy["region"].dropna()) <= set(CPS1988_CATEGORIES["region"])
    assert len(info.pairs) == 3
    assert remote.session.spent.epsilon > before.epsilon
    assert remote.session.ledger["query"].iloc[-1].startswith("synthesize(wage, education")
    report = dp.synth_report(copy)
    assert len(report) == 4 + 3 + 3  # the 1-way, the tree's pairs, the 3 pairs outside it
    assert (report["status"] == "measured").sum() == 7


def test_aim_copy_through_the_curator(remote: Any) -> None:
    before = remote.session.spent
    copy = remote[COLUMNS].synthesize(epsilon=1, method="aim", progress=False)
    info = copy.attrs["dpframe_synth"]
    assert isinstance(info, SynthInfo) and info.method == "AIM"
    assert list(copy.columns) == COLUMNS
    assert info.rows_private and abs(len(copy) - 28155) < 500
    kept = kept_missing(info)  # as in the MST copy above
    assert len(kept) <= 1, kept
    assert copy.drop(columns=sorted(kept)).notna().all().all()
    assert set(copy["region"].dropna()) <= set(CPS1988_CATEGORIES["region"])
    assert len(info.pairs) == 8  # two stages of four rounds
    assert remote.session.spent.epsilon > before.epsilon  # zCDP: ε of the total ρ, not additive
    assert remote.session.ledger["query"].iloc[-1].endswith("aim)")
    report = dp.synth_report(copy)
    assert (report["status"] == "measured").sum() == 4 + 8
    assert set(report["kind"]) <= {"1-way", "2-way", "3-way"}


def test_refusals_through_the_curator_charge_nothing(remote: Any) -> None:
    before = remote.session.spent
    with pytest.raises(dp.InvalidArgumentError, match="method must be 'mst' or 'aim'"):
        remote[COLUMNS].synthesize(epsilon=1, method="gan")
    with pytest.raises(dp.ResourceLimitError, match="AIM's first model holds at most"):
        remote[["wage", "experience"]].synthesize(
            epsilon=1, method="aim", bins={"wage": 500, "experience": 100}
        )
    with pytest.raises(dp.InvalidArgumentError, match="rows must be a positive integer"):
        remote[COLUMNS].synthesize(epsilon=1, rows=0)
    assert remote.session.spent == before


def test_curator_refuses_a_copy_over_its_cell_limit(remote: Any) -> None:
    """The curator's default limit is 100,000 cells: three pairs of 250 x 250 bins exceed it.

    (Embedded, the limit is 2**24 cells: each pair is within the 2**16 of a 2-way marginal.)
    """
    before = remote.session.spent
    with pytest.raises(dp.ResourceLimitError):
        remote[["wage", "experience", "education"]].synthesize(epsilon=1, bins=250)
    assert remote.session.spent == before
