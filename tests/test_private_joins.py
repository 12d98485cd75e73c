"""Private joins on the ID of one ID space (issue 32): rows, truncation, pins, refusals."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.backends.joins import join_frames
from dpframe.engine.joins import JoinedRows
from dpframe.plan.nodes import Join, Source, lineage

PERSONS = "persons"


def _people(n: int = 60) -> pd.DataFrame:
    rng = np.random.default_rng(1)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "id": np.arange(n),
            "region": rng.choice(["north", "south"], n),
            "age": rng.integers(20, 80, n),
            "member": rng.integers(0, 2, n).astype(bool),
        }
    )
    return frame


def _visits(n: int = 300, people: int = 70) -> pd.DataFrame:
    rng = np.random.default_rng(2)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "person_id": rng.integers(0, people, n),  # some ids have no person row
            "cost": rng.uniform(0, 100, n).round(2),
            "age": rng.integers(0, 5, n),  # a column named as one of people's
        }
    )
    return frame


def _frames(
    session: dp.Session, visits_rows: int = 10, people: pd.DataFrame | None = None
) -> tuple[dp.PrivateFrame, dp.PrivateFrame]:
    visits = session.private_frame(
        _visits(),
        bounds={"cost": (0, 100), "age": (0, 5)},
        privacy_unit=dp.PrivacyUnit("person_id", max_rows=visits_rows, id_space=PERSONS),
    )
    folks = session.private_frame(
        _people() if people is None else people,
        bounds={"age": (0, 100)},
        categories={"region": ["north", "south"]},
        privacy_unit=dp.PrivacyUnit("id", max_rows=1, id_space=PERSONS),
    )
    return visits, folks


@pytest.fixture
def session() -> dp.Session:
    return dp.Session(epsilon=100, ledger=":memory:")


# -- the joined rows ----------------------------------------------------------------------


def _join(how: str, max_rows: int = 1000) -> Join:
    left, right = Source("v"), Source("p")
    return Join(
        left,
        right,
        ("person_id",),
        ("id",),
        how,
        max_rows,
        ("person_id", "cost", "age"),
        ("id", "region", "age", "member"),
    )


@pytest.mark.parametrize("how", ["inner", "left", "right", "outer"])
def test_rows_are_pandas_merge_without_missing_keys(how: str) -> None:
    visits, people = _visits(), _people()
    ours = join_frames(visits, people, _join(how))
    theirs = visits.merge(
        people.rename(columns={"id": "person_id"}),
        on="person_id",
        how=how,  # type: ignore[arg-type]
    )
    assert list(ours.columns) == list(theirs.columns)
    key = ["person_id", "cost", "age_x"]
    mine = ours.sort_values(key).reset_index(drop=True)
    pandas = theirs.sort_values(key).reset_index(drop=True)
    assert len(mine) == len(pandas)
    for column in ("person_id", "cost", "age_x", "age_y", "region"):
        assert (
            mine[column].astype(object).fillna(-1).tolist()
            == pandas[column].astype(object).fillna(-1).tolist()
        )


def test_semi_and_anti_joins_filter_the_left_rows() -> None:
    visits, people = _visits(), _people()
    known = visits["person_id"].isin(people["id"])
    semi = join_frames(visits, people, _join("semi"))
    anti = join_frames(visits, people, _join("anti"))
    assert list(semi.columns) == list(visits.columns)
    assert sorted(semi["cost"]) == sorted(visits.loc[known, "cost"])
    assert sorted(anti["cost"]) == sorted(visits.loc[~known, "cost"])


def test_missing_keys_never_match_and_unmatched_rows_are_kept() -> None:
    visits = pd.DataFrame({"person_id": [1.0, np.nan, np.nan], "cost": [1.0, 2.0, 3.0]})
    people = pd.DataFrame({"id": [1.0, np.nan], "region": ["north", "south"]})
    join = Join(
        Source("v"),
        Source("p"),
        ("person_id",),
        ("id",),
        "outer",
        10,
        ("person_id", "cost"),
        ("id", "region"),
    )
    rows = join_frames(visits, people, join)
    # pandas would pair the two missing visit keys with the missing person key
    assert len(rows) == 1 + 2 + 1
    assert rows["region"].isna().sum() == 2 and rows["cost"].isna().sum() == 1
    inner = join_frames(visits, people, Join(**{**join.__dict__, "how": "inner"}))
    assert inner["cost"].tolist() == [1.0]


def test_truncation_keeps_at_most_max_rows_per_id(session: dp.Session) -> None:
    visits, people = _frames(session)
    joined = visits.merge(people, left_on="person_id", right_on="id", max_rows=2)
    source = lineage(joined._handle.plan)[0]
    backend = session._path.source_backend(source)
    assert isinstance(backend, JoinedRows)
    rows = backend.materialized().rows  # type: ignore[attr-defined]
    per_id = rows.groupby("person_id").size()
    assert per_id.max() == 2
    expected = (
        _visits().merge(_people(), left_on="person_id", right_on="id").groupby("person_id").size()
    )
    assert per_id.to_dict() == expected.clip(upper=2).to_dict()  # ids with fewer keep all


def _computed(backend: JoinedRows) -> object:
    return backend._rows


def test_the_rows_are_computed_after_the_charge_only_and_once(session: dp.Session) -> None:
    visits, people = _frames(session)
    joined = visits.merge(people, left_on="person_id", right_on="id")
    source = lineage(joined._handle.plan)[0]
    session.explain(lambda: joined.count(epsilon=1))
    with pytest.raises(dp.BudgetExceededError, match="exceed"):
        joined.count(epsilon=1000)
    backend = session._path.source_backend(source)
    assert isinstance(backend, JoinedRows) and _computed(backend) is None
    first = joined.count(epsilon=50)
    kept = _computed(backend)
    assert kept is not None and float(first) > 0
    joined["cost"].sum(epsilon=1)
    assert _computed(backend) is kept


# -- the privacy map: every release counts max_rows rows per person -------------------------


@pytest.mark.parametrize(("max_rows", "expected"), [(None, 10), (3, 3)])
def test_count_and_sum_noise_scale_with_max_rows(
    session: dp.Session, max_rows: int | None, expected: int
) -> None:
    visits, people = _frames(session)
    joined = visits.merge(people, left_on="person_id", right_on="id", max_rows=max_rows)
    count = joined.count(epsilon=2)
    assert count.scale == pytest.approx(expected / 2)
    total = joined["cost"].sum(epsilon=2)
    # exactly the scale of a frame loaded with that many rows per person
    alone = session.private_frame(
        _visits(),
        bounds={"cost": (0, 100)},
        privacy_unit=dp.PrivacyUnit("person_id", max_rows=expected, id_space=PERSONS),
    )
    assert total.scale == alone["cost"].sum(epsilon=2).scale
    assert total.scale == pytest.approx(expected * 100 / 2, rel=1e-3)
    shown = str(session.explain(lambda: joined.count(epsilon=2), detail=True))
    assert f"sensitivity {expected}," in shown


def test_semi_join_counts_the_left_limit(session: dp.Session) -> None:
    visits, people = _frames(session, visits_rows=4)
    kept = visits.merge(people, left_on="person_id", right_on="id", how="semi")
    assert kept.count(epsilon=1).scale == pytest.approx(4)
    assert list(kept.columns) == ["person_id", "cost", "age"]


def test_a_join_of_a_join_multiplies_the_limits(session: dp.Session) -> None:
    visits, people = _frames(session, visits_rows=3)
    claims = session.private_frame(
        pd.DataFrame({"pid": [1, 1, 2, 3], "paid": [1.0, 2.0, 3.0, 4.0]}),
        bounds={"paid": (0, 10)},
        privacy_unit=dp.PrivacyUnit("pid", max_rows=2, id_space=PERSONS),
    )
    both = visits.merge(people, left_on="person_id", right_on="id").merge(
        claims, left_on="person_id", right_on="pid"
    )
    assert both.count(epsilon=1).scale == pytest.approx(3 * 1 * 2)


def test_release_kinds_work_on_a_join(session: dp.Session) -> None:
    visits, people = _frames(session)
    joined = visits.merge(people, left_on="person_id", right_on="id", how="left")
    by_region = joined.groupby("region")["cost"].mean(epsilon=1)
    assert list(by_region.index) == ["north", "south"]
    assert 0 <= float(joined["cost"].median(epsilon=1)) <= 100
    assert joined[joined["age_y"] > 50].count(epsilon=1).scale == pytest.approx(10)
    counts = joined["region"].value_counts(epsilon=1)
    assert set(counts.index) == {"north", "south"}
    assert joined.schema.loc["member", "dtype"] == "boolean"
    assert joined.schema.loc["age_y", "dtype"] == "Int64"  # declared bounds: nullable already
    float(joined["member"].mean(epsilon=1))


def test_the_ledger_names_the_join(session: dp.Session) -> None:
    visits, people = _frames(session)
    visits.merge(people, left_on="person_id", right_on="id", max_rows=4).count(epsilon=1)
    row = session.ledger.iloc[-1]
    assert "an inner join on person_id (at most 4 rows per ID)" in row["query"]
    assert row["privacy_unit"] == (
        "person_id: at most 4 rows, 4 keys (a join in ID space 'persons')"
    )


def test_a_hand_built_join_source_claiming_fewer_rows_is_refused(session: dp.Session) -> None:
    visits, people = _frames(session)
    joined = visits.merge(people, left_on="person_id", right_on="id", max_rows=4)
    source = lineage(joined._handle.plan)[0]
    forged = Source(
        source.dataset,
        unit_rows=1,
        unit_column=source.unit_column,
        unit_groups=1,
        id_space=source.id_space,
        join=source.join,
    )
    node = session.capture_node(lambda: joined.count(epsilon=1))
    with pytest.raises(dp.DPError, match="does not match its join"):
        session.run(replace(node, plan=forged))
    assert len(session.ledger) == 0


# -- bad input: refused before any charge -----------------------------------------------------

Refusal = Callable[[dict[str, Any]], Any]


def _two_spaces(s: dp.Session) -> Any:
    visits, _ = _frames(s)
    homes = s.private_frame(
        pd.DataFrame({"person_id": [1, 2], "rooms": [3, 4]}),
        privacy_unit=dp.PrivacyUnit("person_id", max_rows=1, id_space="households"),
    )
    return visits.merge(homes, on="person_id")


def _row_level(s: dp.Session) -> Any:
    other = dp.Session(epsilon=1, ledger=":memory:")
    plain = other.private_frame(_people())
    return plain.merge(plain, on="id")


def _other_session(s: dp.Session) -> Any:
    visits, _ = _frames(s)
    _, people = _frames(dp.Session(epsilon=1, ledger=":memory:"))
    return visits.merge(people, left_on="person_id", right_on="id")


def _kinds(s: dp.Session) -> Any:
    visits, _ = _frames(s)
    texts = s.private_frame(
        pd.DataFrame({"id": ["a", "b"], "x": [1, 2]}),
        privacy_unit=dp.PrivacyUnit("id", max_rows=1, id_space=PERSONS),
    )
    return visits.merge(texts, left_on="person_id", right_on="id")


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda v, p: v.merge(p, left_on="nope", right_on="id"),
            "Unknown column 'nope'",
        ),
        (
            lambda v, p: v.merge(p, left_on="cost", right_on="age"),
            "must match the ID columns",
        ),
        (
            lambda v, p: v.merge(p, left_on="person_id", right_on="id", max_rows=0),
            r"max_rows=...\) must be an integer >= 1",
        ),
        (
            lambda v, p: v.merge(p, left_on="person_id", right_on="id", max_rows=2.5),
            r"max_rows=...\) must be an integer >= 1",
        ),
        (
            lambda v, p: v.merge(p, left_on="person_id", right_on="id", max_rows="most"),
            "takes an integer >= 1, or 'auto'",
        ),
        (lambda v, p: v.merge(p, left_on="person_id", right_on="id", how="cross"), "how="),
        (lambda v, p: v.merge(p, on="person_id", left_on="person_id"), "not both"),
        (lambda v, p: v.merge(p, left_on="person_id"), "together"),
        (
            lambda v, p: v.merge(p, left_on="person_id", right_on="id", validate="m:1"),
            "no validate=",
        ),
        (
            lambda v, p: v.merge(p, left_on="person_id", right_on="id", suffixes=("", "")),
            "two different strings",
        ),
    ],
)
def test_bad_joins_are_refused_before_any_charge(
    session: dp.Session, call: Callable[[Any, Any], Any], match: str
) -> None:
    visits, people = _frames(session)
    with pytest.raises(dp.DPError, match=match):
        call(visits, people).count(epsilon=1)
    assert len(session.ledger) == 0 and session.spent == dp.Budget(0)


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (_two_spaces, r"two ID spaces \('persons' and 'households'\)"),
        (_row_level, "has no ID space .* cannot be joined privately"),
        (_other_session, "two sessions"),
        (_kinds, r"different kinds"),
    ],
)
def test_joins_across_spaces_sessions_and_kinds_are_refused(
    session: dp.Session, build: Callable[[dp.Session], Any], match: str
) -> None:
    with pytest.raises(dp.SchemaError, match=match):
        build(session).count(epsilon=1)
    assert len(session.ledger) == 0


def test_unit_frames_of_one_session_may_have_other_limits_and_spaces(
    session: dp.Session,
) -> None:
    visits, people = _frames(session)
    _two_spaces_frame = session.private_frame(
        pd.DataFrame({"hh": [1, 2], "rooms": [3, 4]}),
        privacy_unit=dp.PrivacyUnit("hh", max_rows=1, id_space="households"),
    )
    assert visits.count(epsilon=1).scale == pytest.approx(10)
    assert people.count(epsilon=1).scale == pytest.approx(1)
    assert _two_spaces_frame.count(epsilon=1).scale == pytest.approx(1)
    with pytest.raises(dp.SchemaError, match="asks for one row per person"):
        session.private_frame(_people())


def test_privacy_unit_id_space_is_checked() -> None:
    with pytest.raises(dp.SchemaError, match=r"id_space=\.\.\.\) takes a non-empty name"):
        dp.PrivacyUnit("id", max_rows=1, id_space="")
    assert dp.PrivacyUnit("id", max_rows=1).space == "id"
    assert dp.PrivacyUnit("id", max_rows=1, id_space=PERSONS).space == PERSONS


def test_source_keys_tell_joins_apart() -> None:
    a, b = _join("inner", 3), _join("inner", 4)
    assert a != b and a == _join("inner", 3) and hash(a) == hash(_join("inner", 3))
    assert Source("x", join=a) != Source("x", join=b)
    assert Source("x", id_space="p") != Source("x")


_FILLED = {"int64": "float64", "bool": "boolean"}


@pytest.mark.parametrize("how", ["inner", "left", "right", "outer", "semi", "anti"])
def test_unmatched_rows_fill_columns_in_dtypes_chosen_from_dtypes(
    session: dp.Session, how: str
) -> None:
    visits, people = _frames(session)
    joined = visits.merge(people, left_on="person_id", right_on="id", how=how)
    joined.count(epsilon=1)
    source = lineage(joined._handle.plan)[0]
    backend = session._path.source_backend(source)
    rows = backend.materialized().rows  # type: ignore[attr-defined]
    assert list(rows.columns) == list(joined.columns)
    loaded = {
        "person_id": "int64",
        "cost": "float64",
        "age_x" if how not in ("semi", "anti") else "age": "int64",
        "region": str(_people()["region"].dtype),
        "age_y": "int64",
        "member": "bool",
    }
    left_filled = how in ("right", "outer")
    right_filled = how in ("left", "outer")
    for name in rows.columns:
        filled = right_filled if name in ("region", "age_y", "member") else left_filled
        dtype = loaded[name]
        if filled and name != "person_id":
            dtype = _FILLED.get(dtype, dtype)
        assert str(rows[name].dtype) == dtype, name


def test_public_lookups_work_on_a_join_and_the_id_columns_are_the_default_keys(
    session: dp.Session,
) -> None:
    visits = session.private_frame(
        _visits(), bounds={"cost": (0, 100)}, privacy_unit=dp.PrivacyUnit("person_id", 5)
    )
    people = session.private_frame(
        _people().rename(columns={"id": "person_id"}),
        categories={"region": ["north", "south"]},
        privacy_unit=dp.PrivacyUnit("person_id", 1),  # the ID space is the column's name
    )
    joined = visits.merge(people)  # on the two ID columns, inner
    sizes = pd.DataFrame({"region": ["north", "south"], "area": [3.0, 4.0]})
    with_area = joined.merge(sizes, on="region")
    assert with_area["area"].mean(epsilon=1).scale > 0
    assert with_area.count(epsilon=1).scale == pytest.approx(5)


def test_the_dropped_rows_are_a_charged_count_from_the_same_draw(session: dp.Session) -> None:
    visits, _ = _frames(session, visits_rows=6)
    claims = session.private_frame(
        pd.DataFrame({"pid": np.repeat(np.arange(50), 3), "paid": 1.0}),
        privacy_unit=dp.PrivacyUnit("pid", max_rows=3, id_space=PERSONS),
    )
    kept = visits.merge(claims, left_on="person_id", right_on="pid", max_rows=4)
    dropped = visits.merge(claims, left_on="person_id", right_on="pid", max_rows=4, rows="dropped")
    assert dropped.count(epsilon=1).scale == pytest.approx(6 * 3 - 4)  # per person: 18 - 4
    kept.count(epsilon=1)
    both = {
        rows: session._path.source_backend(lineage(frame._handle.plan)[0]).materialized().rows  # type: ignore[attr-defined]
        for rows, frame in (("kept", kept), ("dropped", dropped))
    }
    truth = _visits().groupby("person_id").size().clip(upper=6).mul(3).reindex(range(50)).dropna()
    kept_rows, dropped_rows = both["kept"], both["dropped"]
    per_id = kept_rows.groupby("person_id").size()
    cut = dropped_rows.groupby("person_id").size().reindex(per_id.index, fill_value=0)
    assert (per_id + cut).to_dict() == truth.astype(int).to_dict()  # one draw, split in two
    assert per_id.to_dict() == truth.clip(upper=4).astype(int).to_dict()
    with pytest.raises(dp.SchemaError, match="drops nothing"):
        visits.merge(claims, left_on="person_id", right_on="pid", rows="dropped").count(epsilon=1)
    with pytest.raises(dp.SchemaError, match="takes 'kept'"):
        visits.merge(claims, left_on="person_id", right_on="pid", rows="all")


def test_max_rows_auto_is_a_charged_quantile_of_rows_per_person(session: dp.Session) -> None:
    visits, people = _frames(session)
    joined = visits.merge(
        people, left_on="person_id", right_on="id", max_rows="auto", bound_epsilon=0.5
    )
    count, quantile = session.ledger.iloc[0], session.ledger.iloc[1]
    assert count["query"].startswith("count() of the rows per ID")
    assert quantile["query"].startswith("quantile(rows, q=[0.99], 10 candidates) of the rows per")
    assert (count["epsilon"], quantile["epsilon"]) == (0.05, 0.45)
    assert session.spent == dp.Budget(0.5)
    k = lineage(joined._handle.plan)[0].unit_rows
    assert 1 <= k <= 10
    assert joined.count(epsilon=1).scale == pytest.approx(k)
    per_id = visits.merge(people, left_on="person_id", right_on="id", rows="per_id")
    assert list(per_id.columns) == ["rows"] and per_id.count(epsilon=1).scale == 1


def test_max_rows_auto_without_its_cost_is_refused_before_any_charge(session: dp.Session) -> None:
    visits, people = _frames(session)
    with pytest.raises(dp.SchemaError, match=r"give its cost, e\.g\. bound_epsilon=0\.05"):
        visits.merge(people, left_on="person_id", right_on="id", max_rows="auto")
    with pytest.raises(dp.SchemaError, match="bound_epsilon= is the cost of max_rows='auto'"):
        visits.merge(people, left_on="person_id", right_on="id", bound_epsilon=0.1)
    with pytest.raises(dp.BudgetExceededError, match="exceed"):
        visits.merge(
            people, left_on="person_id", right_on="id", max_rows="auto", bound_epsilon=1000
        )
    assert len(session.ledger) == 0 and session.spent == dp.Budget(0)


def test_a_join_never_travels_to_a_curator_as_another_dataset(session: dp.Session) -> None:
    from dpframe.plan.codec import NodeFormatError, decode_node, encode_node
    from dpframe.plan.nodes import Source

    visits, people = _frames(session)
    joined = visits.merge(people, left_on="person_id", right_on="id")
    node = session.capture_node(lambda: joined.count(epsilon=1))
    body = encode_node(node)
    assert "join" in body["node"]["plan"][0]  # the join travels whole, never as one dataset
    with pytest.raises(NodeFormatError, match="does not accept"):
        decode_node(body, Source("cps"))  # an endpoint without a catalog to resolve it
