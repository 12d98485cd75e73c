"""The undeclared cell through the curator: it crosses the wire, warns the analyst, costs nothing.

The curator (its own process) declares the CPS 1988 regions; the analyst
narrows or miscases them with ``with_categories`` (public keys, sent in the
node), so the curator counts the rows outside them.  The count travels in
the result's metadata (``UndeclaredRows`` is on the response allow-list);
the warning is raised in the analyst's process from it.
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.mechanisms.answers.results import GroupedRelease, Release, UndeclaredRows
from dpframe.mechanisms.calibration.additive import NoiseSpec
from dpframe.mechanisms.moments.aggregates import IntervalModel
from dpframe.remote.wire import decode_response, dumps, encode_response, loads
from tests.curator.support import BOB, Server

THREE = ["northeast", "midwest", "south"]  # "west" (6,091 rows) left out
WARNING = "about 6,100 rows have a region outside the declared categories; check spelling and case"


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    return dp.connect(server.url, token=BOB).open("cps")  # pure DP, ε = 1 in total


@pytest.fixture(scope="module")
def embedded() -> Any:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    return session.private_frame(
        load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )


def test_the_count_crosses_the_wire_warns_and_is_free(remote: Any, embedded: Any) -> None:
    before = remote.session.spent
    with pytest.warns(UserWarning, match=WARNING):
        far = remote.with_categories(region=THREE).groupby("region")["wage"].sum(epsilon=0.25)
    with pytest.warns(UserWarning, match=WARNING):
        local = embedded.with_categories(region=THREE).groupby("region")["wage"].sum(epsilon=0.25)
    assert remote.session.spent == before + dp.Budget(0.25)  # the stated ε, nothing more
    assert list(far.index) == list(local.index) == THREE
    count, twin = far.dp.undeclared, local.dp.undeclared
    assert isinstance(count, dp.Release) and isinstance(twin, dp.Release)
    assert (count.mechanism, count.scale, count.cost) == (twin.mechanism, twin.scale, twin.cost)
    assert count.cost == dp.Budget(0)
    assert abs(float(count) - 6091) < 60 * count.scale  # scale 1/ε = 4 rows
    low, high = count.ci(0.9)
    assert low <= float(count) <= high


def test_value_counts_and_several_keys_keep_the_count_remotely(remote: Any) -> None:
    narrowed = remote.with_categories(region=THREE, smsa=["yes"])
    with pytest.warns(UserWarning, match="rows have a region or smsa outside"):
        sizes = narrowed.groupby(["region", "smsa"]).size(epsilon=0.25)
    with pytest.warns(UserWarning, match=WARNING):
        counts = narrowed["region"].value_counts(epsilon=0.25)
    cps = load_cps1988()
    outside = int(((cps["region"] == "west") | (cps["smsa"] == "no")).sum())
    assert abs(float(sizes.dp.undeclared) - outside) < 60 * sizes.dp.undeclared.scale
    assert abs(float(counts.dp.undeclared) - 6091) < 60 * counts.dp.undeclared.scale


def test_the_result_codec_round_trips_the_cell() -> None:
    noisy = np.array([6093.0])
    count = Release(6093.0, dp.Budget(0), "discrete Laplace", 4.0, "rows", _model(noisy))
    cell = UndeclaredRows(count, 52.0, ("region",), "the declared categories")
    meta = GroupedRelease(
        pd.Index(THREE, dtype=object, name="region"),
        dp.Budget(0.25),
        "discrete Laplace",
        np.ones(3),
        "sum(wage) by region",
        _model(np.ones(3)),
        undeclared=cell,
    )
    series = pd.Series([1.0, 2.0, 3.0], index=meta.index, name="sum")
    series.attrs["dpframe"] = meta
    back = decode_response(loads(dumps(encode_response(series))))
    again = back.attrs["dpframe"].undeclared
    assert isinstance(again, UndeclaredRows)
    assert (again.threshold, again.keys, again.outside) == (52.0, ("region",), cell.outside)
    assert float(again.count) == 6093.0 and again.count.cost == dp.Budget(0)
    assert again.clearly_present and again.message() == cell.message()


def _model(values: np.ndarray) -> IntervalModel:
    spec = NoiseSpec("laplace", Fraction(4), 1.0)
    return IntervalModel("count", (values,), (spec,), None)
