"""A release never takes more than twice its worst-case estimate (issue 27, part 1).

Before: text and regex nodes were priced as one vectorized pass (5e-8 s per
row), but they call Python once per distinct value: ten regex replaces over
200,000 distinct ids were estimated at 0.19 s, admitted to the light lane,
and ran 111 s.  Now every expression node is priced by what it does per row
(:mod:`dpframe.curator.row_costs`), and this test checks the property on
generated plans of every release kind but synthetic copies (their estimate
is another issue's): the cost model is measured on this machine first
(:func:`dpframe.curator.calibration.calibrate`, the least of repeated runs),
then each generated request is estimated over the rows it reads and timed
through the engine (validate -> cost -> charge -> evaluate -> noise ->
record); the time must be at most twice the estimate.  The rows are chosen
so that each estimate is a fraction of a second (the test checks the
estimate, not an attack's full run); the text is all distinct (the worst
case: one Python call per row).  A time over the bound is taken again
(twice) and the least counts, so a burst of load from other processes does
not fail the test, while a missing term in the model (a kind that costs 5x
its estimate) still does.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.curator.calibration import calibrate, synthetic_frame
from dpframe.curator.worst_case import CostModel, worst_case_seconds
from dpframe.engine.release_path import Node

#: The characters of every text value (declared ``text(40)``).
LENGTH = 40
#: The most rows a generated request reads.
MOST_ROWS = 40_000
#: Each request is sized so that its estimate is about this many seconds.
TARGET_SECONDS = 0.25
#: Generated requests per release kind (DPFRAME_ESTIMATE_EXAMPLES raises it for a heavier run).
EXAMPLES = int(os.environ.get("DPFRAME_ESTIMATE_EXAMPLES", "2"))
EPS = 1e6

Frame = dp.PrivateFrame
Builder = Callable[[Frame, str], object]


@pytest.fixture(scope="module")
def model() -> CostModel:
    """The cost model measured on this machine, now (the least of repeated runs)."""
    return calibrate(rows=20_000, repeat=2)


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return synthetic_frame(MOST_ROWS, LENGTH)


def _load(session: dp.Session, frame: pd.DataFrame) -> Frame:
    return session.private_frame(
        frame,
        bounds={"x": (0, 100), "n": (0, 50)},
        categories={"cat": ["a", "b", "c", "d"]},
        dtypes={"t": f"text({LENGTH})"},
    )


class _Timed(dp.Session):
    """A session that estimates every node it runs, then times it (the least of ``tries``)."""

    def __init__(self, model: CostModel, rows: int, tries: int = 1) -> None:
        super().__init__(epsilon=1e12, delta=1e-3, ledger=":memory:")
        # as a curator's seat session (curator/seats.py): the curator keeps answers itself,
        # after the timed release, so the engine's copy for re-runs is not part of it
        self.keep_answers(False)
        self.model, self.rows, self.tries = model, rows, tries
        self.seen: list[tuple[str, float, float]] = []

    def run(self, node: Node) -> Any:
        estimate = worst_case_seconds(node, self.rows, self.model, lengths={"t": LENGTH})
        best, result = float("inf"), None
        for _ in range(self.tries):
            started = time.perf_counter()
            result = super().run(node)
            best = min(best, time.perf_counter() - started)
        self.seen.append((type(node).__name__, estimate, best))
        return result


class _Sized(Exception):  # noqa: N818  (a signal, not an error)
    def __init__(self, node: Node) -> None:
        super().__init__("sized")
        self.node = node


class _Sizer(dp.Session):
    def run(self, node: Node) -> Any:
        raise _Sized(node)


# -- the plans ------------------------------------------------------------------------------

NUMERIC: list[Callable[[Frame, str], Any]] = [
    lambda pf, v: pf[v] * 1.5 + 2,
    lambda pf, v: np.log1p(pf[v].clip(0, 100)),
    lambda pf, v: pf[v].clip(1, 90),
    lambda pf, v: pf[v].where(pf["x"] > 5, 0),
    lambda pf, v: pf["cat"].map({"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}) * pf[v],
    lambda pf, v: pf["d"].dt.month + pf[v],
    lambda pf, v: pf["t"].str.strip("0").str.len() + pf[v],
    lambda pf, v: pf[v].fillna(0) - pf["n"],
]
FILTERS: list[Callable[[Frame, int], Any]] = [
    lambda pf, k: pf["x"] > k % 90,
    lambda pf, k: pf["t"].isin(list(synthetic_frame(k, LENGTH)["t"])),
    lambda pf, k: pf["t"].str.contains(str(k % 10)),
    lambda pf, k: pf["t"].str.upper().str.contains("AB"),
    lambda pf, k: pf["t"].str.replace("1", "x").str.startswith("0"),
    lambda pf, k: pf["t"].str.replace(r"(\d)", r"<\1>", regex=True).str.contains("<9>"),
    lambda pf, k: pf["t"].str.replace("a", "b", case=False).str.endswith("b"),
    lambda pf, k: pf["t"].str.contains(r"\d{3}", regex=True),
    lambda pf, k: pf["cat"] == "a",
    lambda pf, k: pf["d"].dt.year >= 2022,
    lambda pf, k: dp.cut(pf["x"], bins=list(np.linspace(0, 100, 2 + k))).isna(),
    lambda pf, k: pf["cat"].map({"a": "x", "b": "y"}).isin(["x"]),
]
RELEASES: dict[str, Builder] = {
    "count": lambda pf, v: pf.count(epsilon=EPS),
    "sum": lambda pf, v: pf[v].sum(epsilon=EPS),
    "mean": lambda pf, v: pf[v].mean(epsilon=EPS),
    "var": lambda pf, v: pf[v].var(epsilon=EPS),
    "grouped mean": lambda pf, v: pf.groupby("cat")[v].mean(epsilon=EPS),
    "hist": lambda pf, v: pf[v].hist(bins=50, epsilon=EPS),
    "quantile": lambda pf, v: pf[v].quantile([0.25, 0.75], epsilon=EPS),
    "grouped quantile": lambda pf, v: pf.groupby("cat")[v].median(epsilon=EPS),
    "mode": lambda pf, v: pf["cat"].mode(epsilon=EPS),
    "argmax": lambda pf, v: pf.groupby("cat").argmax("mean", v, epsilon=EPS),
    "agg": lambda pf, v: pf.agg({v: ["mean", "sum"], "n": "median"}, epsilon=EPS),
    "laplace copy": lambda pf, v: pf[v].laplace_copy(epsilon=EPS),
    "randomized response": lambda pf, v: pf["cat"].randomized_response(epsilon=5),
    "sparse vector": lambda pf, v: pf.above_threshold(
        {"big": pf[v] > 50, "a": pf["cat"] == "a"}, 10, epsilon=EPS
    ),
    "discover keys": lambda pf, v: pf.discover_keys("t", epsilon=EPS, delta=1e-6),
    "discover then aggregate": lambda pf, v: pf.groupby("t")[v].mean(epsilon=EPS, delta=1e-6),
    # a small grid: the grid's Cholesky factor (priced by flop_seconds) takes 1 ms on one
    # thread and up to 0.7 s when OpenBLAS's threads fight other jobs for the cores
    "kde": lambda pf, v: pf[v].kde(5.0, epsilon=EPS, grid=32),
    "linear regression": lambda pf, v: pf.linear_regression(["x", "n"], v, epsilon=EPS, steps=5),
    "iterative regression": lambda pf, v: pf.linear_regression(
        ["x"], v, epsilon=EPS, delta=1e-6, analysis="iteration", passes=1
    ),
    "logistic regression": lambda pf, v: pf.assign(high=pf[v] > 50).logistic_regression(
        ["x", "n"], "high", epsilon=EPS, steps=5
    ),
    "corr": lambda pf, v: pf[["x", v]].corr(epsilon=EPS),
    "describe": lambda pf, v: pf[["x", v]].describe(epsilon=EPS),
    "approx bounds": lambda pf, v: pf[v].approx_bounds(epsilon=EPS),
}


@st.composite
def requests(draw: st.DrawFn, kind: str) -> Callable[[Frame], object]:
    """A release of ``kind`` after a few derived columns and filters (drawn)."""
    steps = draw(st.lists(st.integers(0, len(NUMERIC) - 1), max_size=4))
    filters = draw(
        st.lists(st.tuples(st.integers(0, len(FILTERS) - 1), st.integers(1, 2_000)), max_size=3)
    )

    def build(pf: Frame) -> object:
        value = "x"
        for i, step in enumerate(steps):
            pf = pf.assign(**{f"v{i}": NUMERIC[step](pf, value)})
            value = f"v{i}"
        for which, k in filters:
            pf = pf[FILTERS[which](pf, k)]
        return RELEASES[kind](pf, value)

    return build


def _node(release: Callable[[Frame], object], data: pd.DataFrame) -> Node | None:
    session = _Sizer(epsilon=1e12, delta=1e-3, ledger=":memory:")
    try:
        release(_load(session, data.head(50)))
    except _Sized as sized:
        return sized.node
    except dp.DPError:
        return None  # refused by the facade (e.g. a value without bounds): nothing to time
    return None


def _rows(node: Node, model: CostModel) -> int:
    """Rows whose part of the estimate is about :data:`TARGET_SECONDS` (0: too slow at any size).

    The estimate is linear in the rows: its fixed part (cells, overhead) must
    be at most 10 seconds (a describe's quantile cells are 3 s under load, and
    take a tenth of that), and the rows' part is about :data:`TARGET_SECONDS`.
    """
    fixed = worst_case_seconds(node, 0, model, lengths={"t": LENGTH})
    slope = (worst_case_seconds(node, 10_000, model, lengths={"t": LENGTH}) - fixed) / 10_000
    if fixed > 10.0:
        return 0
    return int(min(MOST_ROWS, max(200, TARGET_SECONDS / max(slope, 1e-12))))


def _check(release: Callable[[Frame], object], model: CostModel, data: pd.DataFrame) -> None:
    node = _node(release, data)
    assume(node is not None)
    assert node is not None
    rows = _rows(node, model)
    assume(rows > 0)
    session = _Timed(model, rows)
    pf = _load(session, data.head(rows))
    try:
        release(pf)
    except dp.DPError:
        assume(False)  # refused before the charge on these rows: nothing computed
    ((kind, estimate, took),) = session.seen[-1:]
    if took > 2 * estimate:  # a burst of load? the least of two more runs counts
        again = _Timed(model, rows, tries=2)
        release(_load(again, data.head(rows)))
        took = min(took, again.seen[-1][2])
    if os.environ.get("DPFRAME_ESTIMATE_LOG"):
        print(f"{kind:24s} rows {rows:6d} estimate {estimate:7.3f} s took {took:7.3f} s")
    assert took <= 2 * estimate, (
        f"{kind} over {rows:,} rows: {took:.3f} s, estimated {estimate:.3f} s"
    )


@pytest.mark.fresh_releases
@pytest.mark.parametrize("kind", list(RELEASES))
def test_a_release_takes_at_most_twice_its_estimate(
    kind: str, model: CostModel, data: pd.DataFrame
) -> None:
    @given(release=requests(kind))
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )
    def check(release: Callable[[Frame], object]) -> None:
        _check(release, model, data)

    check()
