"""Repeated releases reuse their compiled query and privacy map, keyed exactly by public inputs."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pandas as pd

import dpframe as dp
from dpframe.backends import PandasBackend
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments import aggregate_family
from dpframe.mechanisms.moments.aggregate_family import AggregateFamily
from dpframe.mechanisms.moments.aggregates import AggregateNoise, aggregate_noise
from dpframe.plan.expressions import Bucket, Col
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import Aggregate, Filter, GroupKey, Source
from dpframe.plan.privacy import PrivacyRequest


def _frame() -> pd.DataFrame:
    frame: pd.DataFrame = pd.DataFrame({"x": np.arange(100, dtype=float), "g": ["a", "b"] * 50})
    return frame


def _same_map(found: AggregateNoise, expected: AggregateNoise) -> bool:
    """Equal privacy maps (measures compared by their public numbers; expressions by key)."""

    def numbers(m: Measure) -> tuple[object, ...]:
        expr = None if m.expr is None else m.expr.key()
        return (m.kind, expr, m.lower, m.upper, m.center, m.power, m.quantum)

    return (
        [numbers(m) for m in found.measures] == [numbers(m) for m in expected.measures]
        and found.sensitivities == expected.sensitivities
        and found.noise == expected.noise
    )


def test_equal_queries_share_one_compilation_and_others_do_not() -> None:
    backend = PandasBackend(_frame())
    plan = Filter(Source("d"), Col("x") >= 10)
    same = Filter(Source("d"), Col("x") >= 10)  # another object, equal by value
    rows = (Measure("rows"),)
    by = (GroupKey("g", Col("g"), ("a", "b")),)
    first = backend.compute(plan, rows, by)
    assert backend.compute(same, rows, by)[0].tolist() == first[0].tolist() == [45.0, 45.0]
    assert len(backend._queries) == 1
    other = Filter(Source("d"), Col("x") >= 11)
    assert backend.compute(other, rows, by)[0].tolist() == [44.0, 45.0]
    binned = (GroupKey("b", Bucket(Col("x"), (0.0, 50.0, 100.0)), (0, 1)),)
    shifted = (GroupKey("b", Bucket(Col("x"), (0.0, 60.0, 100.0)), (0, 1)),)
    assert backend.compute(plan, rows, binned)[0].tolist() == [40.0, 50.0]
    assert backend.compute(plan, rows, shifted)[0].tolist() == [50.0, 40.0]
    clipped = (Measure("sum", Col("x"), 0.0, 50.0, 0.0, 1, 1.0),)
    wider = (Measure("sum", Col("x"), 0.0, 60.0, 0.0, 1, 1.0),)
    assert backend.compute(Source("d"), clipped, ())[0].tolist() == [3725.0]
    assert backend.compute(Source("d"), wider, ())[0].tolist() == [4170.0]
    assert len(backend._queries) == 6


def _mean(bounds: tuple[float, float], unit_rows: int = 1) -> Aggregate:
    source = Source("d") if unit_rows == 1 else Source("d", unit_rows=unit_rows, view="v")
    return Aggregate(source, "sum", Col("x"), bounds, (), "s", PrivacyRequest(epsilon=1))


def test_privacy_maps_are_reused_only_for_the_same_public_inputs() -> None:
    family = AggregateFamily()
    one = NoiseAllocation("laplace", Fraction(1))
    first = family.privacy_map(_mean((0.0, 100.0)), one)
    assert family.privacy_map(_mean((0.0, 100.0)), one) is first
    assert _same_map(first, aggregate_noise(_mean((0.0, 100.0)), one))
    for node, allocation in [
        (_mean((0.0, 100.0)), NoiseAllocation("laplace", Fraction(1, 2))),
        (_mean((0.0, 100.0)), NoiseAllocation("gaussian", Fraction(1))),
        (_mean((0.0, 1000.0)), one),
        (_mean((0.0, 100.0), unit_rows=3), one),
    ]:
        found = family.privacy_map(node, allocation)
        assert found is not first
        assert _same_map(found, aggregate_noise(node, allocation))
        assert not _same_map(found, first)
    assert family.privacy_map(_mean((0.0, 100.0), unit_rows=3), one).sensitivities == tuple(
        3 * s for s in first.sensitivities
    )


def test_the_map_cache_stays_bounded() -> None:
    family = AggregateFamily()
    one = NoiseAllocation("laplace", Fraction(1))
    for high in range(aggregate_family._MAPS_KEPT + 10):
        family.privacy_map(_mean((0.0, float(high + 1))), one)
    assert len(family._maps) <= aggregate_family._MAPS_KEPT


def test_each_session_has_its_own_families() -> None:
    first = dp.Session(epsilon=1, ledger=":memory:")
    second = dp.Session(epsilon=1, ledger=":memory:")
    assert first._path.families[Aggregate] is not second._path.families[Aggregate]
