"""``nunique()`` of a column without public keys (an ID column): a noisy distinct count.

Exact at a huge ε (embedded; the Dask file reruns these) against pandas'
``nunique``; the noise is the stated discrete Laplace / Gaussian (statistical
tests over many groups that reject a scale 30% off); the privacy map's
sensitivity pinned (1 for the unit's own ID column, the row limit otherwise);
refusals before the charge; the node on the wire; ``explain``.
"""

from __future__ import annotations

import json
import math
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting import rho_from_epsilon_delta
from dpframe.mechanisms.calibration.gdp_curves import discrete_gaussian_rho, mu_from_epsilon_delta
from dpframe.mechanisms.moments.distinct_family import distinct_sensitivity
from dpframe.plan.codec import decode_node, encode_node
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import GroupKey, lineage
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import DistinctCount
from tests.stats_helpers import ALPHA, chi2_pvalue, dgauss_pmf, dlaplace_pmf

BIG = 1e9
K = 10_000  # groups of the statistical tests: one draw each
ROWS = 6  # per group: values 0, 1, 2 twice, so 3 distinct values


@pytest.fixture(scope="module")
def visits() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    n = 5_000
    frame: pd.DataFrame = pd.DataFrame(
        {
            "person": [f"p{i}" for i in rng.integers(0, 1_200, n)],
            "shop": rng.choice(["north", "south", "east"], n),
            "item": rng.integers(0, 400, n).astype(float),
            "spend": rng.uniform(0, 100, n),
        }
    )
    return frame


def _frame(data: pd.DataFrame, **session: object) -> dp.PrivateFrame:
    opened = dp.Session(ledger=":memory:", **{"epsilon": 1e12, **session})  # type: ignore[arg-type]
    return opened.private_frame(
        data, bounds={"spend": (0, 100)}, categories={"shop": ["north", "south", "east"]}
    )


def test_the_distinct_count_of_an_id_column_is_pandas_nunique(visits: pd.DataFrame) -> None:
    pf = _frame(visits)
    assert float(pf["person"].nunique(epsilon=BIG)) == visits["person"].nunique()
    assert float(pf["item"].nunique(epsilon=BIG)) == visits["item"].nunique()
    assert len(pf.session.ledger) == 2


def test_a_filtered_and_a_derived_column_count_as_pandas(visits: pd.DataFrame) -> None:
    pf = _frame(visits)
    rich = pf[pf["spend"] > 50]["person"].nunique(epsilon=BIG)
    assert float(rich) == visits[visits["spend"] > 50]["person"].nunique()
    tens = (pf["item"] // 10).nunique(epsilon=BIG)  # keyless: item has no declared keys
    assert float(tens) == (visits["item"] // 10).nunique()


def test_per_group_distinct_counts_are_pandas(visits: pd.DataFrame) -> None:
    pf = _frame(visits)
    got = pf.groupby("shop")["person"].nunique(epsilon=BIG)
    want = visits.groupby("shop")["person"].nunique()
    assert list(got.index) == list(want.index) == ["east", "north", "south"]
    assert {k: round(float(v)) for k, v in got.items()} == want.to_dict()
    assert got.name == "person"


def test_the_sensitivity_is_one_for_the_units_own_column_and_the_row_limit_otherwise(
    visits: pd.DataFrame,
) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    pf = session.private_frame(
        visits,
        bounds={"spend": (0, 100)},
        categories={"shop": ["north", "south", "east"]},
        privacy_unit=dp.PrivacyUnit("person", max_rows=3),
    )
    own = pf["person"].nunique(epsilon=0.25)
    other = pf["item"].nunique(epsilon=0.25)
    grouped = pf.groupby("shop")["person"].nunique(epsilon=0.25)
    assert own.scale == pytest.approx(1 / 0.25, rel=1e-6)  # Δ = 1: one person, one ID
    assert other.scale == pytest.approx(3 / 0.25, rel=1e-6)  # Δ = 3: three rows, three items
    assert grouped.attrs["dpframe"].scales[0] == pytest.approx(3 / 0.25, rel=1e-6)


def test_a_rewritten_id_column_loses_its_sensitivity_of_one(visits: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    pf = session.private_frame(
        visits, bounds={"spend": (0, 100)}, privacy_unit=dp.PrivacyUnit("person", max_rows=2)
    )
    renamed = pf.assign(person=pf["shop"])
    node = DistinctCount(plan=renamed._handle.plan, privacy=_request(1.0), column="person")
    assert distinct_sensitivity(node) == (2, 1)


def _request(epsilon: float) -> PrivacyRequest:
    return PrivacyRequest(epsilon=epsilon)


@pytest.fixture(scope="module")
def groups() -> pd.DataFrame:
    keys = np.repeat(np.arange(K), ROWS)
    values = np.tile(np.array([0.0, 1.0, 2.0] * 2), K)
    frame: pd.DataFrame = pd.DataFrame({"g": keys, "v": values})
    return frame


def _assert_fits(pvalue_at: dict[float, float]) -> None:
    assert pvalue_at[1.0] > ALPHA, f"true scale rejected: {pvalue_at}"
    assert pvalue_at[0.7] < ALPHA, f"scale 0.7x not rejected: {pvalue_at}"
    assert pvalue_at[1.3] < ALPHA, f"scale 1.3x not rejected: {pvalue_at}"


def _grouped(groups: pd.DataFrame, **session: object) -> dp.PrivateGroupBy:
    opened = dp.Session(ledger=":memory:", **session)  # type: ignore[arg-type]
    pf = opened.private_frame(groups, categories={"g": list(range(K))})
    return pf.groupby("g")["v"]


@pytest.mark.slow
@pytest.mark.parametrize("epsilon", [0.5, 2.0])
def test_grouped_distinct_counts_are_discrete_laplace(groups: pd.DataFrame, epsilon: float) -> None:
    counts = _grouped(groups, epsilon=epsilon).nunique(epsilon=epsilon)
    noise = np.rint(counts.to_numpy(dtype=float)).astype(np.int64) - 3
    scale = 1 / epsilon  # row-level privacy: a row adds at most one distinct value
    _assert_fits({f: chi2_pvalue(noise, dlaplace_pmf(scale * f)) for f in (0.7, 1.0, 1.3)})


@pytest.mark.slow
def test_grouped_distinct_counts_are_discrete_gaussian_under_zcdp(groups: pd.DataFrame) -> None:
    counts = _grouped(groups, epsilon=1.0, delta=1e-6, accounting="zcdp").nunique(epsilon=0.5)
    noise = np.rint(counts.to_numpy(dtype=float)).astype(np.int64) - 3
    rho = float(rho_from_epsilon_delta(dp.Budget(1).epsilon, dp.Budget(0, 1e-6).delta)) * 0.5
    sigma = 1 / math.sqrt(2 * rho)
    _assert_fits({f: chi2_pvalue(noise, dgauss_pmf((sigma * f) ** 2)) for f in (0.7, 1.0, 1.3)})


@pytest.mark.slow
def test_grouped_distinct_counts_under_gdp_use_the_discrete_correction(
    groups: pd.DataFrame,
) -> None:
    counts = _grouped(groups, epsilon=1.0, delta=1e-6).nunique(epsilon=1.0)  # GDP: the default
    noise = np.rint(counts.to_numpy(dtype=float)).astype(np.int64) - 3
    mu = mu_from_epsilon_delta(Fraction(1), Fraction(9, 10_000_000))  # δ less its reserve
    rho = float(discrete_gaussian_rho(mu * mu / 2, 1))
    sigma = 1 / math.sqrt(2 * rho)
    _assert_fits({f: chi2_pvalue(noise, dgauss_pmf((sigma * f) ** 2)) for f in (0.7, 1.0, 1.3)})


@pytest.mark.parametrize(
    ("call", "match"),
    [
        (
            lambda pf: pf.groupby("person")["item"].nunique(epsilon=1),
            r"needs the public keys of 'person'",
        ),
        (lambda pf: pf.groupby("shop")["shop"].nunique(epsilon=1), r"'shop' is a group key"),
        (lambda pf: pf["nope"].nunique(epsilon=1), r"Unknown column 'nope'"),
        (lambda pf: pf["person"].nunique(epsilon=-1), r"epsilon"),
    ],
)
def test_bad_distinct_counts_are_refused_before_any_charge(
    visits: pd.DataFrame, call: object, match: str
) -> None:
    pf = _frame(visits, epsilon=1)
    with pytest.raises(dp.DPError, match=match):
        call(pf)  # type: ignore[operator]
    assert pf.session.ledger.empty


def test_too_many_groups_are_refused_before_the_charge() -> None:
    data = pd.DataFrame({"a": [1], "b": [1], "v": [1.0]})
    session = dp.Session(epsilon=1, ledger=":memory:")
    pf = session.private_frame(data, categories={"a": list(range(200)), "b": list(range(200))})
    with pytest.raises(dp.SchemaError, match=r"would release 40,000 counts, more than 10,000"):
        pf.groupby(["a", "b"])["v"].nunique(epsilon=1)
    assert session.ledger.empty


def test_the_node_travels_on_the_wire(visits: pd.DataFrame) -> None:
    pf = _frame(visits)
    grouped = pf.groupby("shop")
    node = DistinctCount(
        plan=pf._handle.plan, privacy=_request(0.5), column="person", by=grouped._handle.keys
    )
    source = lineage(node.plan)[0]
    back = decode_node(json.loads(json.dumps(encode_node(node))), source)
    assert back == node and back.label == "nunique(person) by shop"


def test_explain_states_the_half_width_before_anything_is_spent(visits: pd.DataFrame) -> None:
    pf = _frame(visits, epsilon=1)
    told = pf.session.explain(lambda: pf["person"].nunique(epsilon=1))
    assert "within ±3 of the true number of distinct values at 95%" in str(told)
    assert "sensitivity 1" not in str(told)  # the mechanism's detail: behind detail=True
    detailed = pf.session.explain(lambda: pf["person"].nunique(epsilon=1), detail=True)
    assert "sensitivity 1" in str(detailed)
    assert pf.session.ledger.empty


def test_sql_count_distinct_of_an_id_column(visits: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1e12, ledger=":memory:")
    session.register("visits", session.private_frame(visits, bounds={"spend": (0, 100)}))
    got = session.sql("SELECT COUNT(DISTINCT person) FROM visits", epsilon=BIG)
    assert float(got) == visits["person"].nunique()
    told = session.sql("EXPLAIN SELECT COUNT(DISTINCT person) FROM visits", epsilon=1)
    assert [(m.name, m.sensitivity) for m in told.measures] == [("distinct values", 1)]
    assert len(session.ledger) == 1  # EXPLAIN spends nothing


def test_frame_nunique_counts_keyless_columns_in_the_same_charge(visits: pd.DataFrame) -> None:
    pf = _frame(visits)
    got = pf[["person", "shop", "item"]].nunique(epsilon=BIG)
    want = visits[["person", "shop", "item"]].nunique()
    assert got.to_dict() == want.to_dict() and str(got.dtype) == "int64"
    ledger = pf.session.ledger
    assert len(ledger) == 1 and ledger["epsilon"].tolist() == [BIG]


def test_frame_nunique_splits_the_request_evenly_over_columns(visits: pd.DataFrame) -> None:
    from dpframe.plan.releases import Describe, FrameDistinct

    pf = _frame(visits)
    keyed = pf.groupby("shop")._handle.keys
    node = FrameDistinct(
        plan=pf._handle.plan, privacy=_request(0.9), columns=("person", "shop", "item"), keyed=keyed
    )
    parts = node.parts()
    assert [type(p).__name__ for p in parts] == ["Describe", "DistinctCount", "DistinctCount"]
    assert isinstance(parts[0], Describe)
    shares = [p.privacy.epsilon for p in parts if p.privacy is not None]
    assert shares == [Fraction(3, 10), Fraction(3, 10), Fraction(3, 10)]  # 0.9 / 3 columns


def test_a_group_key_over_no_column_is_refused_before_the_charge(visits: pd.DataFrame) -> None:
    """Found by the curator's fuzzer: a key over an unknown column was charged, then failed."""
    pf = _frame(visits)
    node = DistinctCount(
        plan=pf._handle.plan,
        privacy=_request(0.5),
        column="person",
        by=(GroupKey("nope", Col("nope"), ("a", "b")),),
    )
    with pytest.raises(dp.SchemaError, match="nope"):
        pf.session.run(node)
    assert pf.session.spent.is_zero and pf.session.ledger.empty
