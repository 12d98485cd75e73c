"""Joins of two private frames on another key than the ID (household, store): ``k=``.

Each side keeps at most k rows per key value (a random subset), then the
rows are matched; a person of m_L left rows and m_R right rows changes at
most 2·(m_L·k_R + m_R·k_L) joined rows (docs/proofs/private_joins.md, "Joins
on another key"), which every later release counts; the joined frame has no
ID, so no per-ID step and no further private join may follow.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.plan.nodes import lineage

BIG = 1e7


def _data() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(5)
    people = pd.DataFrame(
        {
            "pid": np.arange(60, dtype=np.int64),
            "hh": rng.integers(0, 12, 60).astype(float),
            "age": rng.integers(0, 90, 60).astype(float),
        }
    )
    people.loc[[3, 4], "hh"] = np.nan  # missing keys never match and are never cut
    spending = pd.DataFrame(
        {
            "pid": np.repeat(np.arange(60, dtype=np.int64), 2),
            "hh": np.repeat(people["hh"].to_numpy(), 2),
            "amount": rng.uniform(0, 100, 120),
        }
    )
    return people, spending


def _frames(session: dp.Session) -> tuple[dp.PrivateFrame, dp.PrivateFrame]:
    people, spending = _data()
    a = session.private_frame(
        people, bounds={"age": (0, 100)}, privacy_unit=dp.PrivacyUnit("pid", 1, id_space="p")
    )
    b = session.private_frame(
        spending, bounds={"amount": (0, 100)}, privacy_unit=dp.PrivacyUnit("pid", 2, id_space="p")
    )
    return a, b


@pytest.fixture
def session() -> dp.Session:
    return dp.Session(epsilon=1e12, ledger=":memory:")


def test_with_k_over_every_group_the_rows_are_pandas_merge(session: dp.Session) -> None:
    people, spending = _frames(session)
    joined = people.merge(spending, on="hh", how="inner", k=200)
    raw_people, raw_spending = _data()
    truth = raw_people.dropna(subset=["hh"]).merge(raw_spending.dropna(subset=["hh"]), on="hh")
    assert joined.count(epsilon=BIG).value == pytest.approx(len(truth), abs=1)
    assert joined["amount"].sum(epsilon=BIG).value == pytest.approx(truth["amount"].sum(), abs=1)
    outer = people.merge(spending, on="hh", how="left", k=200).count(epsilon=BIG).value
    assert outer == pytest.approx(len(truth) + 2, abs=1)  # the two missing keys, unmatched


def test_each_side_keeps_at_most_k_rows_per_key(session: dp.Session) -> None:
    people, spending = _frames(session)
    joined = people.merge(spending, on="hh", k_left=1, k_right=2)
    per_key = joined.groupby(joined["hh"].cut(list(range(13)), right=False))
    counts = per_key.size(epsilon=BIG)
    assert all(round(float(c)) <= 1 * 2 for c in counts)  # k_left x k_right per value
    assert float(joined.count(epsilon=BIG)) <= 12 * 2


@pytest.mark.parametrize(
    ("how", "k_left", "k_right", "stability"),
    [
        ("inner", 3, 3, 2 * (1 * 3 + 2 * 3)),
        ("left", 2, 5, 2 * (1 * 5 + 2 * 2)),
        ("semi", 4, 9, 2 * (1 + 2 * 4)),
    ],
)
def test_the_stated_stability(
    session: dp.Session, how: str, k_left: int, k_right: int, stability: int
) -> None:
    people, spending = _frames(session)
    joined = people.merge(spending, on="hh", how=how, k_left=k_left, k_right=k_right)
    source = lineage(joined._handle.plan)[0]
    assert source.unit_rows == stability and source.unit_column == "" and source.id_space == ""
    text = str(session.explain(lambda: joined.count(epsilon=1), detail=True))
    assert f"sensitivity {stability}" in text and "rows per key value" in text
    assert session.ledger.empty


REFUSALS: list[tuple[Callable[[Any, Any], object], str]] = [
    (lambda a, b: a.merge(b, on="hh"), "Add the ID to the keys, or bound both sides per key"),
    (lambda a, b: a.merge(b, on="hh", k_left=2), "give k_left= and k_right= together"),
    (lambda a, b: a.merge(b, on="hh", k=2, k_left=2), "not both"),
    (lambda a, b: a.merge(b, on="hh", k=0), "integer >= 1"),
    (lambda a, b: a.merge(b, on="hh", k=True), "integer >= 1"),
    (lambda a, b: a.merge(b, on="hh", k="auto"), r"give its cost, e\.g\. bound_epsilon="),
    (lambda a, b: a.merge(b, on="hh", k="some"), "or 'auto'"),
    (lambda a, b: a.merge(b, on="hh", k=2, max_rows=3), "keeps no ID"),
    (lambda a, b: a.merge(b, on="hh", k=2, rows="dropped"), "keeps no ID"),
    (lambda a, b: a.merge(b, on="pid", k=2), "this is a join on the ID"),
    (lambda a, b: a.merge(b, on="hh", k=2).merge(b, on="pid"), "has no ID space"),
    (lambda a, b: b.merge(a.merge(b, on="hh", k=2), on="hh", k=2), "has no ID space"),
    (lambda a, b: a.merge(pd.DataFrame({"hh": [1.0]}), on="hh", k=2), "for joins of two private"),
]


@pytest.mark.parametrize(("call", "match"), REFUSALS)
def test_refusals_before_any_charge(
    session: dp.Session, call: Callable[[Any, Any], object], match: str
) -> None:
    people, spending = _frames(session)
    with pytest.raises(dp.DPError, match=match):
        call(people, spending)
    assert session.ledger.empty and session.spent == dp.Budget(0)


def test_two_id_spaces_or_a_row_level_frame_are_refused(session: dp.Session) -> None:
    people, _ = _frames(session)
    other = session.private_frame(
        pd.DataFrame({"sid": [1, 2], "hh": [1.0, 2.0]}),
        privacy_unit=dp.PrivacyUnit("sid", 1, id_space="stores"),
    )
    with pytest.raises(dp.DPError, match="two ID spaces"):
        people.merge(other, on="hh", k=2)
    rows = dp.Session(epsilon=1, ledger=":memory:").private_frame(pd.DataFrame({"hh": [1.0, 2.0]}))
    with pytest.raises(dp.DPError, match="two sessions"):
        people.merge(rows, on="hh", k=2)
    assert session.ledger.empty
