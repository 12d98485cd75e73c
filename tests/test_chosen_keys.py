"""A key chosen by argmax or mode carries how sure the choice is (issue 30, item 4)."""

from __future__ import annotations

import math
import pickle

import pandas as pd
import pytest
from IPython.lib.pretty import pretty

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from dpframe.mechanisms.answers.winner import WinnerInt, WinnerText, WinnerTuple, winner


def _frame(cps: pd.DataFrame, epsilon: float = 10.0) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=":memory:", name="chosen")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def test_argmax_key_says_its_gap_before_and_after(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    before = pf.session.explain(lambda: pf.groupby("region").argmax(epsilon=0.2)).headline
    best = pf.groupby("region").argmax(epsilon=0.2)
    assert isinstance(best, WinnerText) and best in CPS1988_CATEGORIES["region"]
    # (2Δ/ε)·ln(k/β) with Δ = 1, ε = 0.2, k = 4, β = 0.05: 43.8, shown as 44
    assert 2 / 0.2 * math.log(4 / 0.05) == pytest.approx(43.82, abs=0.01)
    assert best.statement == before == dp.ci(best)
    assert "within 44 of the largest count at 95% (among 4 declared keys" in best.statement
    shown = pretty(best)  # type: ignore[no-untyped-call]
    assert shown == f"{str(best)!r}\n(chosen privately: {best.statement})"


def test_the_key_works_as_the_key(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    best = pf.groupby("region").argmax(epsilon=1)
    plain = str(best)
    assert best == plain and hash(best) == hash(plain) and repr(best) == repr(plain)
    assert {plain: 1}[best] == 1
    mean = pf[pf["region"] == best]["wage"].mean(epsilon=0.1)
    assert pf.session.ledger["query"].iloc[-1] == f"mean(wage) where (region == {plain!r})"
    low, high = dp.ci(mean)
    assert low <= float(mean) <= high
    copied = pickle.loads(pickle.dumps(best))
    assert type(copied) is str and copied == plain


def test_integer_keys_and_means(cps: pd.DataFrame) -> None:
    pf = _frame(cps).with_categories(education=list(range(21)))
    best = pf.groupby("education").argmax("mean", "wage", epsilon=1)
    assert isinstance(best, WinnerInt) and 0 <= best <= 20
    assert dp.ci(best).startswith("the key of the largest noisy mean; each mean within about ")


def test_mode_series_carries_it(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    common = pf["region"].mode(epsilon=0.5)
    assert common.name == "region" and common[0] in CPS1988_CATEGORIES["region"]
    assert dp.ci(common).startswith("a key whose count is within ")
    with pytest.raises(dp.DPError, match=r"at 95% only \(asked: 0.99\)"):
        dp.ci(common, 0.99)
    assert dp.ci(common, 0.9) == dp.ci(common)


def test_other_key_types() -> None:
    assert isinstance(winner(("south", "yes"), "s"), WinnerTuple)
    day = pd.Timestamp("2020-01-01")
    assert winner(day, "s") is day  # not subclassed: explain states it
    assert winner(True, "s") is True
    with pytest.raises(dp.DPError, match="ci\\(\\) needs a dpframe release"):
        dp.ci(day)
