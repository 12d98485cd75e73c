"""Issue 29's grouping and filter items on Dask (see ``tests/test_pandas_as_written.py``)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

BIG = 1e6


def test_integer_keys_and_undeclared_filter_values_on_dask(
    on_dask: list[Any], cps: pd.DataFrame
) -> None:
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    assert on_dask  # the frame really is on Dask
    got = pf.groupby("education")["wage"].mean(epsilon=BIG)
    assert list(got.index) == list(range(21))
    truth = cps.assign(wage=cps["wage"].clip(0, 5000)).groupby("education")["wage"].mean()
    assert abs(float(got[12]) - truth[12]) <= 1
    sizes = pf.groupby(["region", "education"]).size(epsilon=BIG)
    assert (
        abs(
            float(sizes[("south", 12)])
            - int(((cps.region == "south") & (cps.education == 12)).sum())
        )
        <= 5
    )
    spent = session.spent
    with pytest.raises(dp.SchemaError, match=r"'South' is not a declared key.*'south'"):
        pf[pf["region"] == "South"]["wage"].mean(epsilon=1)
    with pytest.raises(dp.SchemaError, match=r"'Wesst' is not a declared key.*'west'"):
        pf[~pf["region"].isin(["Wesst"])].count(epsilon=1)
    assert session.spent == spent
