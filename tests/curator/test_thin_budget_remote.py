"""A budget spread too thin, through the curator: the warning shows in the analyst's kernel
and ``explain`` states the bars before anything is spent (issue 33 item 5)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import dpframe as dp
from tests.curator.support import ALICE, Server, write_catalog


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("curator-thin"), alice_epsilon=100.0)


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    return dp.connect(server.url, token=ALICE).open("cps")


def test_a_remote_grouped_count_spread_too_thin_warns(remote: Any) -> None:
    # 32 cells at the seat's least ε (its μ² share makes each cell's ± about 6,000 rows):
    # most cells hold a few hundred rows or fewer, each too thin with probability about
    # 0.95 or more, so no warning at all has probability far below 1e-6.
    keys = ["region", "smsa", "parttime", "ethnicity"]
    with pytest.warns(UserWarning, match=r"^Too thin to read: \d+ of 32 cells"):
        remote.groupby(keys).size(epsilon=1e-6, fresh=True)


def test_remote_explain_states_the_bar_and_spends_nothing(remote: Any) -> None:
    session = remote.session
    before, rows = session.spent, len(session.ledger)
    text = str(session.explain(lambda: remote.agg(["mean", "std"], epsilon=0.2)))
    assert "too thin to read (95% ± wider than the value)" in text, text
    assert re.search(r"std\(wage\): under [\d,.]+ rows whatever the data", text), text
    assert session.spent == before and len(session.ledger) == rows
