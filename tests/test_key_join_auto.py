"""``k="auto"``: the rows kept per key value in a join on another key, chosen privately.

Each side's k is the 0.999 quantile of its rows' ranks within their key value
(``rows="per_key"``: one row per side row whose key is present), released in
one grouped quantile (by side) at ``bound_epsilon``, charged once; the join is
then built with those k (docs/proofs/private_joins.md, "k chosen privately").
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.api.verbs.joins import AUTO_K_CANDIDATES, AUTO_K_MOST
from dpframe.plan.joins import id_join
from dpframe.plan.nodes import lineage


def _data() -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(11)
    n = 400
    people = pd.DataFrame(
        {
            "pid": np.arange(n, dtype=np.int64),
            "hh": rng.integers(0, 150, n).astype(float),
            "age": rng.integers(0, 90, n).astype(float),
        }
    )
    people.loc[[3, 4], "hh"] = np.nan  # missing keys: no rank (they never match)
    spending = pd.DataFrame(
        {
            "pid": np.repeat(people["pid"].to_numpy(), 2),
            "hh": np.repeat(people["hh"].to_numpy(), 2),
            "amount": rng.uniform(0, 100, 2 * n),
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
    return dp.Session(epsilon=1e6, ledger=":memory:")


def test_auto_k_is_one_charged_grouped_quantile_and_builds_the_key_join(
    session: dp.Session,
) -> None:
    people, spending = _frames(session)
    joined = people.merge(spending, on="hh", k="auto", bound_epsilon=1000)
    ledger = session.ledger
    assert len(ledger) == 1 and ledger.iloc[0]["epsilon"] == 1000
    assert ledger.iloc[0]["query"].startswith(
        "quantile(rank, q=[0.999], 21 candidates) by side of the rows per key value of each side"
    )
    join = lineage(joined._handle.plan)[0].join
    assert join is not None and join.rows == "kept"
    raw_people, raw_spending = _data()
    for k, raw in ((join.k_left, raw_people), (join.k_right, raw_spending)):
        ranks = raw.dropna(subset=["hh"]).groupby("hh").cumcount() + 1
        truth = min(c for c in AUTO_K_CANDIDATES if (ranks <= c).mean() >= 0.999)
        assert k == truth  # at ε = 1000 the quantile is the exact one
    stability = 2 * (1 * join.k_right + 2 * join.k_left)
    assert lineage(joined._handle.plan)[0].unit_rows == stability
    text = str(session.explain(lambda: joined.count(epsilon=1), detail=True))
    assert f"at most {join.k_left} and {join.k_right} rows per key value" in text
    assert f"sensitivity {stability}" in text
    assert session.spent == dp.Budget(1000)  # the choice only: explain charges nothing
    people.merge(spending, on="hh", k="auto", bound_epsilon=1000)
    assert session.spent == dp.Budget(2000)  # each merge(k="auto") is its own charged choice


def test_the_ranks_per_key_value_are_each_sides_places(session: dp.Session) -> None:
    people, spending = _frames(session)
    source, schema = id_join(
        people._handle.plan,
        people._handle.schema,
        spending._handle.plan,
        spending._handle.schema,
        how="inner",
        on="hh",
        rows="per_key",
        k_left=3,
        k_right=3,
    )
    assert source.unit_rows == 1 + 2  # m_L + m_R rows of the table per person
    assert schema.names == ("side", "rank") and schema.get("rank").bounds == (1.0, 3.0)
    backend: Any = session._path.source_backend(source)
    table = backend.materialized().rows
    raw_people, raw_spending = _data()
    for side, raw in (("left", raw_people), ("right", raw_spending)):
        truth = (raw.dropna(subset=["hh"]).groupby("hh").cumcount() + 1).clip(upper=3)
        got = table.loc[table["side"] == side, "rank"]
        assert sorted(got.tolist()) == sorted(truth.tolist())


def test_removing_a_person_removes_at_most_their_rows_of_the_rank_table() -> None:
    """The rank table as a multiset: removing one person's m_L + m_R rows removes exactly
    that many of its rows (the top ranks of their key values), never changes others."""
    from dpframe.backends.joins import per_key_ranks

    rng = np.random.default_rng(3)
    people, spending = _data()
    join = _rank_join()
    full = per_key_ranks(people, spending, join).value_counts().to_dict()
    for _ in range(20):
        u = int(rng.integers(0, len(people)))
        gone = per_key_ranks(people[people.pid != u], spending[spending.pid != u], join)
        before, after = full, gone.value_counts().to_dict()
        removed = sum(before.values()) - sum(after.values())
        assert all(after.get(key, 0) <= n for key, n in before.items())
        assert all(key in before for key in after)
        present = people.loc[people.pid == u, "hh"].notna().sum()
        assert removed == present * 3  # one left row and two right rows, if the key is present


def _rank_join() -> Any:
    from dpframe.plan.nodes import Join, Source

    columns = ("pid", "hh")
    return Join(
        Source("a"),
        Source("b"),
        ("hh",),
        ("hh",),
        "inner",
        1,
        columns,
        columns,
        rows="per_key",
        k_left=AUTO_K_MOST,
        k_right=AUTO_K_MOST,
    )


REFUSALS: list[tuple[Callable[[Any, Any], object], str]] = [
    (lambda a, b: a.merge(b, on="hh", k="auto"), r"give its cost, e\.g\. bound_epsilon=0\.05"),
    (lambda a, b: a.merge(b, on="hh", k="auto", k_left=2, bound_epsilon=1), "k='auto' alone"),
    (lambda a, b: a.merge(b, on="hh", k="auto", max_rows=3, bound_epsilon=1), "keeps no ID"),
    (lambda a, b: a.merge(b, on="hh", k="auto", rows="dropped", bound_epsilon=1), "keeps no ID"),
    (lambda a, b: a.merge(b, on="pid", k="auto", bound_epsilon=1), "this is a join on the ID"),
    (lambda a, b: a.merge(b, on="hh", k="Auto", bound_epsilon=1), "or 'auto'"),
    (lambda a, b: a.merge(b, on="hh", k=2, bound_epsilon=1), "keeps no ID"),
    (
        lambda a, b: a.merge(b, on="hh", k="auto", bound_epsilon=2e6),
        "exceed",
    ),
]


@pytest.mark.parametrize(("call", "match"), REFUSALS)
def test_refusals_before_any_charge(
    session: dp.Session, call: Callable[[Any, Any], object], match: str
) -> None:
    people, spending = _frames(session)
    with pytest.raises(dp.DPError, match=match):
        call(people, spending)
    assert session.ledger.empty and session.spent == dp.Budget(0)


def test_rows_per_key_on_a_join_on_the_id_is_refused(session: dp.Session) -> None:
    people, spending = _frames(session)
    with pytest.raises(dp.SchemaError, match="for choosing k privately"):
        people.merge(spending, on="pid", rows="per_key")
    assert session.ledger.empty
