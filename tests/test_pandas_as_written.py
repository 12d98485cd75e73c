"""Everyday pandas steps as typed (issue 29): no silent trap, no raw error.

Each test runs a pandas spelling on the private frame and checks that it
either works as pandas would (with ``epsilon=`` added) or is refused before
any charge with a message that says how to fix it.  The same filters run on
Dask (``tests/dask/test_pandas_as_written_on_dask.py``) and through the
curator (``tests/curator/test_pandas_as_written_remote.py``).
"""

from __future__ import annotations

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

BIG = 1e6


@pytest.fixture
def frame(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=1e7, ledger=":memory:")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


# -- values that are not declared keys: refused before the charge ------------------

UNDECLARED_FILTERS = [
    ('pf[pf["region"] == "South"]', "'South' is not a declared key of 'region'.*'south'"),
    ('pf[pf["region"] != "Wesst"]', "'Wesst' is not a declared key.*Did you mean 'west'"),
    ('pf[pf["region"].isin(["south", "Wesst"])]', "'Wesst' is not a declared.*'west'"),
    ('pf[~pf["region"].isin(["NorthEast"])]', "'NorthEast'.*Did you mean 'northeast'"),
    ("pf.query(\"region == 'South'\")", "'South' is not a declared key.*Did you mean 'south'"),
    ("pf.query(\"region in ['west', 'Midwest']\")", "'Midwest'.*Did you mean 'midwest'"),
]  # fmt: skip


@pytest.mark.parametrize(("code", "match"), UNDECLARED_FILTERS)
def test_a_value_outside_the_declared_keys_is_refused_before_any_charge(
    frame: dp.PrivateFrame, code: str, match: str
) -> None:
    with pytest.raises(dp.SchemaError, match=match):
        eval(code, {"pf": frame})
    assert frame.session.spent == dp.Budget(0)


def test_declared_values_still_filter(frame: dp.PrivateFrame, cps: pd.DataFrame) -> None:
    got = frame[frame["region"] == "south"].count(epsilon=BIG)
    assert abs(float(got) - int((cps["region"] == "south").sum())) <= 5
    other = frame[~frame["region"].isin(["west", "south"])].count(epsilon=BIG)
    assert abs(float(other) - int((~cps["region"].isin(["west", "south"])).sum())) <= 5


def test_text_without_declared_keys_cannot_be_checked() -> None:
    session = dp.Session(epsilon=BIG, ledger=":memory:")
    names = pd.DataFrame({"name": ["ann", "bob", "cy"] * 50})
    pf = session.private_frame(names, dtypes={"name": "string"})
    got = pf[pf["name"] == "Ann"].count(epsilon=BIG)  # no keys to check against: charged
    assert abs(float(got)) <= 5
    assert session.spent == dp.Budget(BIG)
