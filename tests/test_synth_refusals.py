"""Requests synthesize() cannot serve: refused with dpframe's errors, nothing charged.

Each was found by a review (2026-11-30): a bare numpy error for an array as
``method``, a misleading "has neither" for a keyed column named in ``bins=``,
integer values outside their bin (bounds past ±2**53; edges with a bin that
holds no whole number), and "edges must increase" for bounds too close to cut
at float precision.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp


def _frame(session: dp.Session, **bounds: tuple[float, float]) -> dp.PrivateFrame:
    gen = np.random.default_rng(5)  # test data only
    data = pd.DataFrame(
        {"i": gen.integers(0, 10, 200), "f": gen.random(200), "c": gen.choice(["x", "y"], 200)}
    )
    declared = {"i": (0, 9), "f": (0.0, 1.0), **bounds}
    return session.private_frame(data, bounds=declared, categories={"c": ["x", "y"]})


def _untyped(value: object) -> Any:
    """A value passed where the signature says otherwise (as an untyped caller would)."""
    return value


CASES: dict[str, tuple[dict[str, Any], Callable[[dp.PrivateFrame], object], type, str]] = {
    "two methods as an array": (
        {},
        lambda pf: pf.synthesize(epsilon=1, method=_untyped(np.array(["mst", "aim"]))),
        dp.InvalidArgumentError,
        "method must be 'mst' or 'aim'",
    ),
    "one method as an array": (
        {},
        lambda pf: pf.synthesize(epsilon=1, method=_untyped(np.array(["mst"]))),
        dp.InvalidArgumentError,
        "method must be 'mst' or 'aim'",
    ),
    "a keyed column in bins=": (
        {},
        lambda pf: pf.synthesize(epsilon=1, bins={"c": 3}),
        dp.SchemaError,
        "bins= is for numeric and date columns; 'c' is keyed",
    ),
    "integer bounds past 2**53": (
        {"i": (-1e300, 1e300)},
        lambda pf: pf.synthesize(epsilon=1),
        dp.SchemaError,
        r"within ±2\*\*53; the bounds of 'i' reach 1e\+300",
    ),
    "integer edges past 2**53": (
        {},
        lambda pf: pf.synthesize(epsilon=1, bins={"i": [0, 5, 2.0**60]}),
        dp.SchemaError,
        r"within ±2\*\*53; the bins of 'i' reach",
    ),
    "an integer bin without a whole number": (
        {},
        lambda pf: pf.synthesize(epsilon=1, bins={"i": [0, 0.3, 0.6, 10]}),
        dp.InvalidArgumentError,
        r"The bin \[0\.3, 0\.6\) of the integer column 'i' holds no whole number",
    ),
    "a closed last integer bin without one": (
        {},
        lambda pf: pf.synthesize(epsilon=1, bins={"i": [0, 4.5, 4.6]}),
        dp.InvalidArgumentError,
        r"The bin \[4\.5, 4\.6\] of the integer column 'i' holds no whole number",
    ),
    "float bounds too close for the bins": (
        {"f": (1e15, 1e15 + 1)},
        lambda pf: pf.synthesize(epsilon=1),
        dp.SchemaError,
        "are too close for 16 bins at float precision",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_request_synthesize_cannot_serve_is_refused_before_any_charge(case: str) -> None:
    bounds, request, error, message = CASES[case]
    session = dp.Session(epsilon=5, ledger=":memory:")
    pf = _frame(session, **bounds)
    with pytest.raises(error, match=message):
        request(pf)
    assert session.spent == dp.Budget(0) and len(session.ledger) == 0


def test_edges_with_a_whole_number_in_every_bin_are_served() -> None:
    """The twin of the refusals: the closed last bin [9, 9] holds 9; values stay in their bins."""
    session = dp.Session(epsilon=5, ledger=":memory:")
    copy = _frame(session).synthesize(epsilon=4, bins={"i": [0, 0.5, 8.5, 9]}, progress=False)
    values = copy["i"].dropna().astype(int)
    assert values.between(0, 9).all() and len(session.ledger) == 1
