"""A public table whose key repeats: the merge multiplies each row, and the stability with it.

``pf.merge(table, on="region")`` where a region has up to ``d`` rows in the
public table: each private row becomes up to ``d`` rows of the same owner,
so a unit of ``m`` rows contributes ``m·d`` rows (or ``max_rows`` per ID after
a random truncation, for a frame with an ID column).  The explanation and
the ledger say so; refusals come before any charge.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.plan.joins import public_join, public_name
from dpframe.plan.nodes import PUBLIC_VIEW, Aggregate, Source, lineage

BIG = 1e7
#: Up to 3 rows per region (west: none).
TABLE = pd.DataFrame(
    {
        "region": ["northeast", "northeast", "midwest", "south", "south", "south"],
        "weight": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
    }
)


def _visits() -> pd.DataFrame:
    rng = np.random.default_rng(3)
    n = 400
    frame: pd.DataFrame = pd.DataFrame(
        {
            "pid": np.repeat(np.arange(100, dtype=np.int64), 4),  # 4 rows each
            "region": rng.choice(["northeast", "midwest", "south", "west"], n),
            "x": rng.uniform(0, 10, n),
        }
    )
    return frame


CATS = {"region": ["northeast", "midwest", "south", "west"]}


def _session() -> dp.Session:
    return dp.Session(epsilon=1e12, ledger=":memory:")


def test_rows_are_pandas_merge_and_the_stability_is_multiplied() -> None:
    session = _session()
    pf = session.private_frame(_visits(), bounds={"x": (0, 10)}, categories=CATS)
    for how in ("inner", "left"):
        merged = pf.merge(TABLE, on="region", how=how)
        truth = _visits().merge(TABLE, on="region", how=how)
        assert merged.count(epsilon=BIG).value == pytest.approx(len(truth), abs=1)
        got = merged["weight"].sum(epsilon=BIG).value
        assert got == pytest.approx(truth["weight"].sum(), abs=1)
        assert merged["weight"].bounds == (1.0, 6.0)
    text = str(session.explain(lambda: pf.merge(TABLE, on="region").count(epsilon=1), detail=True))
    assert "keys repeat up to 3 times" in text and "sensitivity 3" in text
    assert "keys repeat up to 3 times" in str(session.ledger["query"].iloc[-1])


def test_an_id_frame_counts_its_rows_times_the_repeats_or_max_rows() -> None:
    session = _session()
    unit = dp.PrivacyUnit("pid", max_rows=5)
    pf = session.private_frame(_visits(), bounds={"x": (0, 10)}, categories=CATS, privacy_unit=unit)
    merged = pf.merge(TABLE, on="region")
    assert lineage(merged._handle.plan)[0].unit_rows == 15  # 5 rows x 3 repeats
    assert "sensitivity 15" in str(session.explain(lambda: merged.count(epsilon=1), detail=True))
    capped = pf.merge(TABLE, on="region", how="inner", max_rows=4)
    assert "sensitivity 4" in str(session.explain(lambda: capped.count(epsilon=1), detail=True))
    # truncated per person after the merge: the exact count of min(rows, 4) per person
    truth = _visits().merge(TABLE, on="region")
    want = int(np.minimum(truth.groupby("pid").size().to_numpy(), 4).sum())
    assert want < len(truth)  # the bound cuts rows
    assert capped.count(epsilon=BIG).value == pytest.approx(want, abs=1)


def test_a_private_join_then_a_public_table_whose_key_repeats() -> None:
    session = _session()
    visits = session.private_frame(
        _visits(), bounds={"x": (0, 10)}, categories=CATS, privacy_unit=dp.PrivacyUnit("pid", 6)
    )
    people = session.private_frame(
        pd.DataFrame({"pid": np.arange(100, dtype=np.int64), "age": np.full(100, 30.0)}),
        bounds={"age": (0, 100)},
        privacy_unit=dp.PrivacyUnit("pid", 1),
    )
    joined = visits.merge(people, max_rows=2).merge(TABLE, on="region")
    assert lineage(joined._handle.plan)[0].unit_rows == 6  # 2 per person x 3 repeats
    again = visits.merge(TABLE, on="region", max_rows=4).merge(people)  # and the other way
    assert lineage(again._handle.plan)[0].unit_rows == 4
    assert joined.count(epsilon=BIG).value >= 0


def test_a_source_claiming_fewer_repeats_names_no_table_and_is_refused() -> None:
    session = _session()
    pf = session.private_frame(_visits(), bounds={"x": (0, 10)}, categories=CATS)
    table = Source(public_name("0" * 32, 1), unit_rows=1, view=PUBLIC_VIEW)
    schema = pf.merge(TABLE, on="region")._handle.schema
    forged, _ = public_join(
        pf._handle.plan,
        pf._handle.schema,
        table,
        dp.Session(epsilon=1, ledger=":memory:").load_public(TABLE, "region")[1],
        how="inner",
        on="region",
    )
    assert forged.unit_rows == 1 and "weight" in schema.names
    with pytest.raises(dp.DPError, match="another session"):
        session.run(Aggregate(forged, "count", None, None, (), "q"))
    assert session.ledger.empty
    lying = Source("public:1:" + "0" * 32, unit_rows=2, view=PUBLIC_VIEW)
    with pytest.raises(dp.DPError, match="does not match its table"):
        public_join(pf._handle.plan, pf._handle.schema, lying, schema, how="inner", on="region")
