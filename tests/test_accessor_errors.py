"""``.str`` and ``.dt`` name what they offer when an analyst reaches for a pandas method they lack.

Before: ``pf["name"].str.split(",")`` raised a bare ``AttributeError:
'StringAccessor' object has no attribute 'split'``, naming a class the
analyst never met and no way forward.
"""

from __future__ import annotations

import pandas as pd
import pytest

import dpframe as dp


@pytest.fixture
def frame() -> dp.PrivateFrame:
    session = dp.Session(epsilon=1, ledger=":memory:")
    df = pd.DataFrame({"name": ["a,b", "c"], "when": pd.to_datetime(["2020-01-01", "2021-06-30"])})
    return session.private_frame(
        df,
        dtypes={"name": "text(10)"},
        bounds={"when": (pd.Timestamp("2019-01-01"), pd.Timestamp("2022-01-01"))},
    )


@pytest.mark.parametrize("method", ["extract", "findall", "get", "partition"])
def test_per_row_pieces_teach_the_way_forward(frame: dp.PrivateFrame, method: str) -> None:
    # split and rsplit are methods now (.str.split(sep).str[i]: tests/test_text_parts.py)
    with pytest.raises(
        dp.DPError,
        match=rf"\.str has no attribute .{method}. .*take one part with \.str\.split\(sep\)"
        r"\.str\[i\], test for the part you want with \.str\.contains/startswith/endswith",
    ) as info:
        getattr(frame["name"].str, method)
    assert isinstance(info.value, AttributeError)  # hasattr() stays False
    assert "Text methods here: lower, upper" in str(info.value)


def test_unknown_names_list_what_exists(frame: dp.PrivateFrame) -> None:
    with pytest.raises(AttributeError, match=r"\.str has no attribute 'wrap' .*Text methods here"):
        _ = frame["name"].str.wrap
    with pytest.raises(AttributeError, match=r"\.dt has no attribute 'nanosecond' .*year, quart"):
        _ = frame["when"].dt.nanosecond
    assert not hasattr(frame["name"].str, "_repr_html_")
    assert frame["when"].dt.year.name  # real methods are untouched
