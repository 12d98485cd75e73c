"""Privacy units: contribution bounding and sensitivities scaled by the rows one unit may add."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.backends.pandas_backend import bound_contributions
from dpframe.noise import SecureRandom
from tests.dp_check import worst_violation
from tests.stats_helpers import ALPHA, chi2_pvalue, dlaplace_pmf

K = 20_000  # groups, one noise draw each


def test_bounding_keeps_at_most_k_rows_per_unit() -> None:
    df = pd.DataFrame({"person": [1, 1, 1, 1, 2, 2, 3, None, None], "x": range(9)})
    bounded = bound_contributions(df, "person", 2, SecureRandom())
    per_unit = bounded["person"].value_counts(dropna=False)
    assert per_unit[1] == 2 and per_unit[2] == 2 and per_unit[3] == 1
    assert bounded["person"].isna().sum() == 2  # missing ids are units of their own
    assert set(bounded["x"]) <= set(range(9))


def test_bounding_picks_a_uniform_subset() -> None:
    df = pd.DataFrame({"person": [7, 7, 7, 7], "x": [0, 1, 2, 3]})
    rng = SecureRandom()
    n = 8_000
    kept = Counter(int(bound_contributions(df, "person", 1, rng)["x"].iloc[0]) for _ in range(n))
    assert stats.chisquare([kept[i] for i in range(4)]).pvalue > ALPHA


def _frame(df: pd.DataFrame, **unit: object) -> dp.PrivateFrame:
    session = dp.Session(epsilon=100, ledger=":memory:")
    return session.private_frame(df, categories={"g": list(range(K))}, **unit)  # type: ignore[arg-type]


def test_counts_use_noise_scaled_by_max_rows_per_unit() -> None:
    # Every group has 4 rows from 4 different people: bounding keeps all rows.
    df = pd.DataFrame({"g": np.repeat(np.arange(K), 4), "person": np.arange(4 * K)})
    pf = _frame(df, privacy_unit="person", max_rows_per_unit=3)
    noise = pf.groupby("g").count(epsilon=1.0).to_numpy().astype(np.int64) - 4
    pvalues = {f: chi2_pvalue(noise, dlaplace_pmf(3.0 * f)) for f in (0.7, 1.0, 1.3)}
    assert pvalues[1.0] > ALPHA and pvalues[0.7] < ALPHA and pvalues[1.3] < ALPHA


def test_one_person_at_the_contribution_limit() -> None:
    """D vs D' = D + one person with k rows in every group: the DP inequality holds.

    The wrong variant (row-level noise on person-level neighbours) is flagged.
    """
    k = 3
    base = pd.DataFrame({"g": np.repeat(np.arange(K), 2), "person": np.arange(2 * K)})
    extra = pd.DataFrame(
        {"g": np.repeat(np.arange(K), k), "person": -1 - np.repeat(np.arange(K), k)}
    )
    plus = pd.concat([base, extra], ignore_index=True)
    unit = {"privacy_unit": "person", "max_rows_per_unit": k}
    out_d = _frame(base, **unit).groupby("g").count(epsilon=1.0).to_numpy().astype(int)
    out_d2 = _frame(plus, **unit).groupby("g").count(epsilon=1.0).to_numpy().astype(int)
    assert worst_violation(list(out_d), list(out_d2), 1.0) <= 0
    wrong_d = _frame(base).groupby("g").count(epsilon=1.0).to_numpy().astype(int)
    wrong_d2 = _frame(plus).groupby("g").count(epsilon=1.0).to_numpy().astype(int)
    assert worst_violation(list(wrong_d), list(wrong_d2), 1.0) > 0


def test_unit_frames(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    df = cps.assign(person=np.arange(len(cps)) // 2)
    units = session.private_frame(
        df, bounds={"wage": (0, 5000)}, privacy_unit="person", max_rows_per_unit=2
    )
    explained = session.explain(lambda: units["wage"].sum(epsilon=0.3))
    assert explained.measures[0].sensitivity == pytest.approx(10_000)
    units["wage"].mean(epsilon=0.3)
    assert units["wage"].median(epsilon=0.1) > 0
    assert units.above_threshold([units["region"] == "south"], 100, epsilon=0.1) == [
        "(region == 'south')"
    ]
    assert session.spent == dp.Budget(0.5)
    with pytest.raises(dp.DPError, match="delta"):
        units.discover_keys("region", epsilon=0.1, delta=1e-7)  # a pure-DP session
    # Row-level releases of the same data in the same session would weaken the unit guarantee.
    with pytest.raises(dp.SchemaError, match="privacy unit"):
        session.private_frame(df, bounds={"wage": (0, 5000)})


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"privacy_unit": "nope", "max_rows_per_unit": 2}, "privacy_unit 'nope' is not a column"),
        (
            {"privacy_unit": "person", "max_rows_per_unit": 0},
            "max_rows_per_unit must be an integer >= 1",
        ),
        (
            {"privacy_unit": "person", "max_rows_per_unit": 1.5},
            "max_rows_per_unit must be an integer >= 1",
        ),
        ({"privacy_unit": "person"}, "Give privacy_unit= and max_rows_per_unit= together"),
        ({"max_rows_per_unit": 3}, "Give privacy_unit= and max_rows_per_unit= together"),
        (
            {"max_groups_per_unit": 2},
            "max_groups_per_unit= needs privacy_unit= and max_rows_per_unit=",
        ),
        (
            {"privacy_unit": "person", "max_rows_per_unit": 2, "max_groups_per_unit": 0},
            "max_groups_per_unit must be an integer >= 1",
        ),
    ],
)
def test_bad_unit_arguments(kwargs: dict[str, object], match: str) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    df = pd.DataFrame({"person": [1, 1], "x": [1.0, 2.0]})
    with pytest.raises(dp.SchemaError, match=match):
        session.private_frame(df, **kwargs)  # type: ignore[arg-type]
    assert session.ledger.empty


def test_key_limit_per_unit_keeps_at_most_g_keys() -> None:
    from dpframe.backends.pandas_backend import _limit_keys_per_unit

    units = pd.Series([1, 1, 1, 1, 2, 2, None])
    keys = np.array([0, 1, 2, 2, 0, 0, 1])
    for _ in range(20):
        keep = _limit_keys_per_unit(units, keys, 1, SecureRandom())
        kept = pd.DataFrame({"u": units, "k": keys})[keep]
        assert kept.groupby("u", dropna=False)["k"].nunique().max() == 1
        assert keep[4] and keep[5] and keep[6]  # unit 2 has one key; the missing id is its own


@pytest.mark.fresh_releases  # repeats one request to sample its noise (issue 31)
def test_discovery_with_units_hides_a_person_at_the_limit() -> None:
    """100,000 people each add 3 rows under a key of their own: each key is shown w.p. <= delta.

    Row-level calibration (scale 1/eps, threshold for a count of 1) would show about e^2
    times as many; the test counts shown keys against a binomial bound at 1e-7.
    """
    people, k, delta = 100_000, 3, 1e-3
    df = pd.DataFrame(
        {"person": np.repeat(np.arange(people), k), "key": np.repeat(np.arange(people), k)}
    )
    session = dp.Session(epsilon=10, delta=0.5, accounting="approx", ledger=":memory:")
    pf = session.private_frame(df, privacy_unit="person", max_rows_per_unit=k)
    shown = len(pf.discover_keys("key", epsilon=1, delta=delta))
    limit = stats.binom.ppf(1 - ALPHA, people, delta)
    assert shown <= limit, (shown, limit)
    from dpframe.mechanisms.thresholds.partition_selection import release_probability

    row_level = people * float(release_probability(k, 1.0, delta))
    assert row_level > 3 * limit  # the wrong calibration would be caught
