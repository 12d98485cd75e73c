"""pandas functions given a private frame refuse with advice, outside IPython too.

pandas tells its own frames apart by asking each argument for ``_typ``; a private
frame or column answers that probe, from inside a pandas function, with the
function's refusal (a ``dp.DPError`` and a ``TypeError``) instead of letting pandas
raise its bare ``TypeError`` naming dpframe's class.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pandas as pd
import pytest

import dpframe as dp

CASES: list[tuple[Callable[[dp.PrivateFrame], Any], str]] = [
    (lambda pf: pd.concat([pf, pf]), r"pd\.concat\(\) .*Instead: concatenate releases"),  # type: ignore[list-item]
    (lambda pf: pd.concat([pf["x"]]), r"pd\.concat\(\) .*Instead: concatenate releases"),
    (
        lambda pf: pd.merge(pd.DataFrame({"k": ["a"]}), pf),  # type: ignore[arg-type]
        r"pd\.merge\(\) .*pf\.merge\(public_df",
    ),
    (lambda pf: pd.isna(pf), r"pd\.isna\(\) .*pf\.isna\(\)\.sum\(epsilon"),  # type: ignore[call-overload]
]


@pytest.fixture
def pf() -> dp.PrivateFrame:
    session = dp.Session(epsilon=1, ledger=":memory:", name="probe")
    frame = pd.DataFrame({"x": [1.0, 2.0], "k": ["a", "b"]})
    return session.private_frame(frame, bounds={"x": (0, 5)}, categories={"k": ["a", "b"]})


@pytest.mark.parametrize(("call", "match"), CASES, ids=["concat", "concat-series", "merge", "isna"])
def test_pandas_functions_refuse_with_advice(
    pf: dp.PrivateFrame, call: Callable[[dp.PrivateFrame], Any], match: str
) -> None:
    with pytest.raises(dp.DPError, match=match) as refused:
        call(pf)
    assert isinstance(refused.value, TypeError)  # still what pandas would have raised
    assert pf.session.ledger.empty  # nothing charged


def test_the_probe_outside_pandas_is_an_ordinary_missing_attribute(pf: dp.PrivateFrame) -> None:
    assert not hasattr(pf, "_typ") and not hasattr(pf["x"], "_typ")
    with pytest.raises(AttributeError, match="has no attribute '_typ'"):
        _ = pf._typ
