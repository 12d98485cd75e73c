"""A copy of noisy length draws no more rows than a public ceiling (a curator's ``max_rows``).

At a small ε a copy's noisy row count is often millions above the data's
length; the curator prices drawing at the dataset's declared row ceiling and
runs each release under it (``row_ceiling``), so a copy never draws more
rows than were priced.  A given ``rows=`` is public and priced as given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.mechanisms.runtime.row_ceiling import public_row_ceiling, row_ceiling
from dpframe.mechanisms.synth import synth_aim, synth_family
from dpframe.mechanisms.synth.synth_rows import noisy_length
from dpframe.plan.releases.synthesis import MAX_SYNTH_ROWS
from dpframe.remote.wire import decode_response
from tests.curator.support import BOB, release_body, write_catalog

#: The row count the noise gave (as at a small ε): far above the data's 400 rows.
PUSHED = 50_000.0


def test_the_noisy_length_is_rounded_and_capped_by_the_public_ceilings() -> None:
    assert noisy_length(-3.2) == 0
    assert noisy_length(41.6) == 42
    assert noisy_length(1e12) == MAX_SYNTH_ROWS
    assert public_row_ceiling() is None  # embedded: no ceiling but the public maximum
    with row_ceiling(500):
        assert public_row_ceiling() == 500
        assert noisy_length(41.6) == 42
        assert noisy_length(9e6) == 500
        with row_ceiling(None):
            assert noisy_length(9e6) == 9_000_000
        assert noisy_length(9e6) == 500
    assert public_row_ceiling() is None


@pytest.mark.parametrize("bad", [-1, 2.5, True, "10"])
def test_a_row_ceiling_is_a_count_of_rows(bad: Any) -> None:
    with (
        pytest.raises(dp.InvalidArgumentError, match="A row ceiling is a count of rows"),
        row_ceiling(bad),
    ):
        pass  # pragma: no cover - refused on entry


def _pushed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both synthesizers estimate the row count at :data:`PUSHED` (post-processing only)."""
    for module in (synth_family, synth_aim):
        monkeypatch.setattr(module, "inverse_variance_total", lambda totals: PUSHED)


def _frame(session: dp.Session) -> dp.PrivateFrame:
    gen = np.random.default_rng(4)  # test data only
    data = pd.DataFrame({"a": gen.integers(0, 4, 400), "b": gen.choice(["x", "y"], 400)})
    return session.private_frame(data, bounds={"a": (0, 3)}, categories={"b": ["x", "y"]})


@pytest.mark.parametrize("method", ["mst", "aim"])
def test_a_copy_of_noisy_length_is_cut_to_the_ceiling(
    monkeypatch: pytest.MonkeyPatch, method: str
) -> None:
    _pushed(monkeypatch)
    pf = _frame(dp.Session(epsilon=10, ledger=":memory:"))
    assert len(pf.synthesize(epsilon=1, method=method, progress=False)) == PUSHED
    with row_ceiling(1_000):
        assert len(pf.synthesize(epsilon=1, method=method, progress=False)) == 1_000
        given = pf.synthesize(epsilon=1, method=method, rows=2_000, progress=False)
        assert len(given) == 2_000  # a given length is public, priced as given


def test_the_curator_draws_no_more_than_the_datasets_declared_ceiling(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    _pushed(monkeypatch)  # the curator's own process computes the copy (workers = 0)
    curator = Curator(Catalog.load(write_catalog(tmp_path, cps_max_rows=30_000)))
    try:
        who = curator.authenticate(f"Bearer {BOB}")
        body = release_body(lambda pf: pf[["region", "parttime"]].synthesize(epsilon=0.5))
        copy = decode_response(curator.answer(who, "cps", {**body, "fresh": True})["result"])
        assert len(copy) == 30_000  # the noisy 50,000 cut to the declared max_rows
    finally:
        curator.close()
