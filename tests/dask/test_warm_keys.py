"""Warm keys on Dask: a source key column's slot codes are kept on the workers across releases."""

from __future__ import annotations

from typing import Any

import dask
import numpy as np
import pandas as pd
import pytest
from distributed import Client

from dpframe.backends import PandasBackend
from dpframe.backends.dask_backend import KEY_CODES_OPTION, DaskBackend
from dpframe.backends.pandas_backend import source_slot_codes
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.plan.expressions import Col, Lit
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, Filter, GroupKey, Plan, Source
from tests.dask._support import from_pandas

pytestmark = pytest.mark.usefixtures("dask_client")

STATES = ("CA", "NY", "TX")


def _frame(n: int = 5_000) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    state = np.array(["CA", "NY", "TX", "WA", None], dtype=object)[rng.integers(0, 5, size=n)]
    other = np.array(["a", "b"], dtype=object)[rng.integers(0, 2, size=n)]
    frame: pd.DataFrame = pd.DataFrame(
        {"state": state, "other": other, "x": rng.normal(50, 30, size=n)}
    )
    return frame


def _key(name: str, categories: tuple[Any, ...]) -> GroupKey:
    return GroupKey(name, Col(name), categories)


def _mean_measures(by: tuple[GroupKey, ...]) -> tuple[Measure, ...]:
    agg = Aggregate(Source("data"), "mean", Col("x"), (0.0, 100.0), by, "t")
    measures, _ = measures_for(agg)
    return measures


def _record_columns(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    seen: list[list[str]] = []
    original = DaskBackend._partitions

    def partitions(self: DaskBackend, columns: list[str]) -> Any:
        seen.append(list(columns))
        return original(self, columns)

    monkeypatch.setattr(DaskBackend, "_partitions", partitions)
    return seen


CASES = [
    ("count by state", Source("data"), (Measure("rows"),), (_key("state", STATES),)),
    (
        "mean by state",
        Source("data"),
        _mean_measures((_key("state", STATES),)),
        (_key("state", STATES),),
    ),
    (
        "filter on the key, two keys",
        Filter(Source("data"), Col("state") != Lit("TX")),
        (Measure("rows"), Measure("nonnull", Col("state"))),
        (_key("state", STATES), _key("other", ("a", "b"))),
    ),
]


@pytest.mark.parametrize(("name", "plan", "measures", "by"), CASES, ids=[c[0] for c in CASES])
def test_warm_results_are_bit_identical_to_pandas(
    name: str, plan: Plan, measures: tuple[Measure, ...], by: tuple[GroupKey, ...]
) -> None:
    frame = _frame()
    expected = PandasBackend(frame).compute(plan, measures, by, True)
    backend = DaskBackend(from_pandas(frame, 4))
    for _ in range(3):  # cold, then warm twice
        got = backend.compute(plan, measures, by, True)
        assert [g.tobytes() for g in got] == [e.tobytes() for e in expected]
    assert set(backend._codes) == {(k.name, k.categories) for k in by}


def test_codes_are_computed_once_and_the_key_column_is_not_read_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen = _record_columns(monkeypatch)
    backend = DaskBackend(from_pandas(_frame(), 3))
    by = (_key("state", STATES),)
    backend.compute(Source("data"), (Measure("rows"),), by)
    kept = backend._codes[("state", STATES)]
    backend.compute(Source("data"), _mean_measures(by), by)
    assert backend._codes[("state", STATES)] is kept  # not recomputed
    assert seen == [["x"]]  # the count read no column, the sum only x
    # Filtering on the key reads it (its values are needed beyond the codes).
    backend.compute(Filter(Source("data"), Col("state") != Lit("TX")), (Measure("rows"),), by)
    assert seen[-1] == ["state"]


def test_other_categories_get_their_own_codes() -> None:
    frame = _frame()
    backend = DaskBackend(from_pandas(frame, 3))
    for categories in (STATES, ("WA", "CA"), STATES):
        by = (_key("state", categories),)
        expected = PandasBackend(frame).compute(Source("data"), (Measure("rows"),), by, True)
        got = backend.compute(Source("data"), (Measure("rows"),), by, True)
        assert [g.tobytes() for g in got] == [e.tobytes() for e in expected]
    assert len(backend._codes) == 2


def test_codes_survive_a_lost_worker(dask_client: Client) -> None:
    frame = _frame()
    backend = DaskBackend(from_pandas(frame, 4))
    by = (_key("state", STATES),)
    expected = PandasBackend(frame).compute(Source("data"), (Measure("rows"),), by)
    backend.compute(Source("data"), (Measure("rows"),), by)
    dask_client.restart()  # every worker's memory (the persisted codes) is gone
    got = backend.compute(Source("data"), (Measure("rows"),), by)
    assert got[0].tobytes() == expected[0].tobytes()


def test_compact_codes_match_the_pandas_cache() -> None:
    column = pd.Series(["CA", None, "TX", "zz", "NY"] * 3, dtype=object)
    codes = source_slot_codes(column, STATES, chunk_rows=4)
    assert codes.dtype == np.uint8 and not codes.flags.writeable
    assert codes[:5].tolist() == [1, 0, 3, 4, 2]


def test_keeping_no_codes_reads_the_key_every_time(monkeypatch: pytest.MonkeyPatch) -> None:
    seen = _record_columns(monkeypatch)
    frame = _frame()
    backend = DaskBackend(from_pandas(frame, 3))
    by = (_key("state", STATES),)
    expected = PandasBackend(frame).compute(Source("data"), (Measure("rows"),), by, True)
    with dask.config.set({KEY_CODES_OPTION: 0}):
        for _ in range(2):
            got = backend.compute(Source("data"), (Measure("rows"),), by, True)
            assert [g.tobytes() for g in got] == [e.tobytes() for e in expected]
    assert backend._codes == {}
    assert seen == [["state"], ["state"]]


def test_at_most_the_configured_number_of_code_lists_are_kept() -> None:
    backend = DaskBackend(from_pandas(_frame(), 3))
    with dask.config.set({KEY_CODES_OPTION: 2}):
        for categories in (STATES, ("WA",), ("CA", "NY"), STATES):
            backend.compute(Source("data"), (Measure("rows"),), (_key("state", categories),))
    assert list(backend._codes) == [("state", ("CA", "NY")), ("state", STATES)]
