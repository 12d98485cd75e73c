"""A PrivateFrame never yields raw values: every path raises or shows only the schema."""

from __future__ import annotations

import copy
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp

SENTINEL_WAGE = 4242.4242
SENTINEL_KEY = "zz-sentinel-key-77"


@pytest.fixture
def secret_frame(session: dp.Session) -> dp.PrivateFrame:
    df = pd.DataFrame(
        {
            "wage": [SENTINEL_WAGE, 17.5, float("nan"), 3.0],
            "region": [SENTINEL_KEY, "south", "west", "south"],
        }
    )
    return session.private_frame(
        df, bounds={"wage": (0, 5000)}, categories={"region": ["south", "west"]}
    )


ACCESSORS: list[tuple[str, Callable[[Any], Any]]] = [
    ("len", len),
    ("iter", lambda f: list(iter(f))),
    ("head", lambda f: f.head()),
    ("tail", lambda f: f.tail()),
    ("sample", lambda f: f.sample(1)),
    ("iloc", lambda f: f.iloc[0]),
    ("loc", lambda f: f.loc[0]),
    ("values", lambda f: f.values),
    ("to_numpy", lambda f: f.to_numpy()),
    ("np.asarray", np.asarray),
    ("pickle", pickle.dumps),
    ("shape", lambda f: f.shape),
    ("size", lambda f: f.size),
    ("bool", bool),
    ("tolist", lambda f: f.tolist()),
]


@pytest.mark.parametrize(("what", "access"), ACCESSORS, ids=[a[0] for a in ACCESSORS])
def test_frame_refuses_raw_access(
    secret_frame: dp.PrivateFrame, what: str, access: Callable[[Any], Any]
) -> None:
    with pytest.raises(dp.PrivacyViolationError, match="would reveal private rows") as info:
        access(secret_frame)
    assert str(SENTINEL_WAGE) not in str(info.value)
    assert SENTINEL_KEY not in str(info.value)


@pytest.mark.parametrize(("what", "access"), ACCESSORS, ids=[a[0] for a in ACCESSORS])
def test_series_refuses_raw_access(
    secret_frame: dp.PrivateFrame, what: str, access: Callable[[Any], Any]
) -> None:
    with pytest.raises(dp.PrivacyViolationError, match="would reveal private rows"):
        access(secret_frame["wage"])


def test_unknown_attribute_is_not_forwarded(secret_frame: dp.PrivateFrame) -> None:
    with pytest.raises(dp.DPError, match=r"PrivateFrame has no attribute 'pipe'.*does not forward"):
        secret_frame.pipe(print)
    with pytest.raises(dp.PrivacyViolationError, match=r"PrivateFrame\.to_csv would reveal"):
        secret_frame.to_csv("x.csv")
    with pytest.raises(AttributeError, match=r"no attribute '_df' .*does not forward"):
        secret_frame._df  # noqa: B018
    with pytest.raises(dp.DPError, match="PrivateSeries has no attribute 'apply'"):
        secret_frame["wage"].apply(print)
    with pytest.raises(AttributeError, match="PrivateGroupBy has no attribute 'apply'"):
        secret_frame.groupby("region").apply  # noqa: B018


def test_repr_shows_schema_only(secret_frame: dp.PrivateFrame) -> None:
    shown = repr(secret_frame) + secret_frame._repr_html_() + repr(secret_frame["wage"])
    shown += repr(secret_frame.schema) + repr(secret_frame.dtypes)
    assert "wage" in shown and "(0.0, 5000.0)" in shown
    assert str(SENTINEL_WAGE) not in shown
    assert SENTINEL_KEY not in shown
    assert "17.5" not in shown


def test_frames_are_immutable(secret_frame: dp.PrivateFrame) -> None:
    with pytest.raises(dp.SchemaError, match="A PrivateFrame is immutable"):
        secret_frame.wage = 3
    with pytest.raises(dp.SchemaError, match=r"session\.private_frame\(df"):
        dp.PrivateFrame()
    assert copy.deepcopy(secret_frame) is secret_frame


def test_session_cannot_be_pickled(session: dp.Session) -> None:
    with pytest.raises(dp.DPError, match="A session holds private data and cannot be pickled"):
        pickle.dumps(session)


def test_expression_truth_value_is_refused(secret_frame: dp.PrivateFrame) -> None:
    with pytest.raises(dp.PrivacyViolationError, match="Truth testing would reveal private rows"):
        if secret_frame["wage"] > 3:
            pass
    with pytest.raises(dp.SchemaError, match="only known row by row"):
        bool(dp.col("wage") > 3)


def test_public_facts_are_available(secret_frame: dp.PrivateFrame) -> None:
    assert list(secret_frame.columns) == ["wage", "region"]
    assert secret_frame.bounds == {"wage": (0.0, 5000.0)}
    assert secret_frame.categories == {"region": ("south", "west")}
    assert "wage" in dir(secret_frame)
    assert secret_frame.wage.bounds == (0.0, 5000.0)


def test_series_from_another_frame_is_not_rebound(session: dp.Session) -> None:
    pf = session.private_frame(pd.DataFrame({"x": [0.1, 0.6, 0.9]}), bounds={"x": (0, 1)})
    zeroed = pf.assign(x=pf["x"] * 0)
    with pytest.raises(dp.SchemaError, match="another frame"):
        pf[zeroed["x"] > 0.5]
    filtered = pf[pf["x"] > 0.2]
    assert isinstance(filtered[pf["x"] < 0.8], dp.PrivateFrame)  # same meaning: accepted
