"""approx_bounds: suggested clamping bounds from a noisy histogram over fixed log-scale bins.

The statistical test reads the noise through the rule's one observable: with
one occupied bin, the suggestion widens exactly when some empty bin's noise
clears the threshold.  Its rate is computed here from first principles (the
discrete Laplace of scale 1/ε, the threshold as documented) and must fit the
true scale and reject a scale 30% off, at ALPHA.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections import Counter
from collections.abc import Callable
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import dpframe as dp
from dpframe.engine.reruns import fresh_release
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.moments.bounds_family import (
    BETA,
    FALLBACK,
    ApproxBoundsFamily,
    select_bounds,
)
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Source
from dpframe.plan.privacy import PrivacyRequest
from dpframe.plan.releases import ApproxBounds, bounds_edges
from tests.stats_helpers import ALPHA

EDGES = bounds_edges()
BINS = len(EDGES) - 1  # 101: 50 negative, the zero bin, 50 positive


def _session(**kwargs: object) -> dp.Session:
    return dp.Session(ledger=":memory:", **{"epsilon": 1e6, **kwargs})  # type: ignore[arg-type]


def _usual(release: Callable[[], tuple[float, float]], runs: int = 20) -> tuple[float, float]:
    """The result most runs give: an empty bin widens one run with chance up to β = 0.05
    by design, so an exact expectation is checked against a majority of 20 runs (ten or more
    widened runs happen with chance below 2e-8)."""
    with fresh_release(True):  # each run a new release, never a re-run from the ledger
        (found, times), *_ = Counter(release() for _ in range(runs)).most_common(1)
        assert times > runs // 2, f"no majority: {Counter(release() for _ in range(runs))}"
    return found


def _threshold(scale: float) -> int:
    """The smallest integer a with P(|X| <= a) >= 1 - 2β/m for X discrete Laplace(scale)."""
    a = 1.0 / scale
    level = 1 - 2 * BETA / BINS
    t = 0
    while stats.dlaplace.cdf(t, a) - stats.dlaplace.cdf(-t - 1, a) < level:
        t += 1
    return t


def test_the_bins_are_public_powers_of_two_with_a_zero_bin() -> None:
    assert BINS == 101
    assert EDGES[0] == -(2.0**40) and EDGES[-1] == 2.0**40
    assert EDGES[50:52] == (-(2.0**-10), 2.0**-10)
    assert all(b > a for a, b in itertools.pairwise(EDGES))


def test_the_threshold_is_the_stated_noise_quantile_exactly() -> None:
    node = ApproxBounds(plan=Source("d"), privacy=PrivacyRequest(epsilon=1), expr=Col("x"))
    for epsilon in (Fraction(1, 10), Fraction(1), Fraction(3)):
        planned = ApproxBoundsFamily().privacy_map(node, NoiseAllocation("laplace", epsilon))
        assert planned.threshold == _threshold(1 / float(epsilon))


@pytest.mark.parametrize(
    ("counts", "expected"),
    [
        ({60: 500, 70: 900}, (EDGES[60], EDGES[71])),
        ({50: 500, 70: 900}, (0.0, EDGES[71])),  # the zero bin as the lowest: low = 0
        ({20: 500, 50: 900}, (EDGES[20], 0.0)),  # the zero bin as the highest: high = 0
        ({50: 500}, (EDGES[50], EDGES[51])),  # the zero bin alone keeps its edges
        ({0: 500, 100: 900}, (-(2.0**40), 2.0**40)),
        ({}, None),
    ],
)
def test_the_rule_keeps_the_outermost_bins_above_the_threshold(
    counts: dict[int, int], expected: tuple[float, float] | None
) -> None:
    noisy = np.zeros(BINS)
    noisy[list(counts)] = list(counts.values())
    noisy[30] = 10.0  # at the threshold: not above it
    assert select_bounds(noisy, 10.0, EDGES) == expected


@pytest.mark.fresh_releases
def test_cps_wages_get_bounds_that_cover_the_bulk(cps: pd.DataFrame) -> None:
    session = _session(epsilon=2)
    pf = session.private_frame(cps)  # no bounds declared: that is the point
    low, high = pf["wage"].approx_bounds(epsilon=1)
    assert (low in EDGES or low == 0.0) and high in EDGES
    share = ((cps["wage"] >= low) & (cps["wage"] <= high)).mean()
    assert low <= 64 and high >= 4096 and share > 0.99  # an empty bin can only widen it
    assert session.spent == dp.Budget(1)
    assert list(session.ledger["query"]) == ["approx_bounds(wage)"]
    bounded = pf.with_bounds(wage=(low, high))  # with_bounds accepts the suggestion
    assert math.isfinite(float(bounded["wage"].mean(epsilon=1)))
    usual = _session().private_frame(cps)["wage"]
    assert _usual(lambda: usual.approx_bounds(epsilon=1)) == (32.0, 8192.0)


def test_values_near_zero_and_negative_values() -> None:
    rng = np.random.default_rng(7)  # test data only
    n = 6000
    frame = pd.DataFrame(
        {
            "small": rng.uniform(0, 0.0009, n),  # all in the zero bin
            "loss": rng.uniform(-300, -10, n),  # bins [-512, -256) ... [-16, -8)
            "hours": np.where(np.arange(n) % 3 == 0, 0.0, rng.uniform(1, 100, n)),
        }
    )
    pf = _session().private_frame(frame)
    assert _usual(lambda: pf["small"].approx_bounds(epsilon=1)) == (EDGES[50], EDGES[51])
    assert _usual(lambda: pf["loss"].approx_bounds(epsilon=1)) == (-512.0, -8.0)
    # the zero bin as the lowest occupied bin: low = 0
    assert _usual(lambda: pf["hours"].approx_bounds(epsilon=1)) == (0.0, 128.0)
    shifted = pf.assign(x=pf["small"] * 1000 + 0.3)  # derived columns work too: [0.3, 1.2)
    assert _usual(lambda: shifted["x"].approx_bounds(epsilon=1)) == (0.25, 2.0)


@pytest.mark.fresh_releases
def test_too_few_rows_warn_and_fall_back_and_are_charged() -> None:
    """Three rows at ε = 0.05: no bin should clear the threshold (each try fails with chance
    ≤ β = 0.05, so ten tries without a fallback happen with chance below 1e-13)."""
    session = _session(epsilon=1)
    pf = session.private_frame(pd.DataFrame({"x": [1.0, 2.0, 3.0]}))
    fallbacks = 0
    for _ in range(10):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            found = pf["x"].approx_bounds(epsilon=0.05)
        said = [str(w.message) for w in caught if issubclass(w.category, UserWarning)]
        if found == FALLBACK:
            fallbacks += 1
            assert len(said) == 1 and "no bin cleared the noise threshold" in said[0]
        else:
            assert said == [] and found[0] < found[1]
    assert fallbacks >= 1
    assert session.spent == dp.Budget(Fraction(1, 2))


def test_bad_requests_are_refused_before_the_charge(cps: pd.DataFrame) -> None:
    session = _session(epsilon=1)
    pf = session.private_frame(cps)
    with pytest.raises(dp.SchemaError, match="approx_bounds\\(\\) needs a numeric column"):
        pf["region"].approx_bounds(epsilon=0.1)
    with pytest.raises(dp.SchemaError, match="salary"):
        pf["salary"].approx_bounds(epsilon=0.1)
    with pytest.raises(dp.InvalidBudgetError, match="epsilon"):
        pf["wage"].approx_bounds()
    with pytest.raises(dp.BudgetExceededError, match="Requested"):
        pf["wage"].approx_bounds(epsilon=2)
    assert session.spent.is_zero and session.ledger.empty


def test_explain_shows_the_histogram_and_charges_nothing(cps: pd.DataFrame) -> None:
    session = _session(epsilon=1)
    pf = session.private_frame(cps)
    text = str(session.explain(lambda: pf["wage"].approx_bounds(epsilon=0.5), detail=True))
    assert text.startswith(
        "approx_bounds(wage) = a (low, high) suggestion from 101 public log-scale bins (each "
        "bin's count within ±6.0 at 95%); cost ε=0.5; ε=0.5 left\n"
    )
    assert "101 groups" in text and "discrete Laplace scale 2" in text
    assert session.spent.is_zero


@pytest.mark.fresh_releases  # the most usual of repeated releases: each a new one
def test_under_zcdp_the_histogram_is_gaussian(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=5, delta=1e-6, ledger=":memory:")
    pf = session.private_frame(cps)
    assert _usual(lambda: pf["education"].approx_bounds(epsilon=0.2)) == (0.0, 32.0)
    assert set(session.ledger["mechanism"]) == {
        "noisy histogram over log-scale bins (threshold rule)"
    }


RUNS = 3000


@pytest.mark.fresh_releases
@pytest.mark.slow
def test_empty_bins_widen_the_result_at_the_stated_rate() -> None:
    """One occupied bin ([64, 128)); the rest are empty, each crossing τ with P(X > τ)."""
    epsilon = 1.0
    pf = _session().private_frame(pd.DataFrame({"x": np.full(10_000, 100.0)}))
    widened = sum(pf["x"].approx_bounds(epsilon=epsilon) != (64.0, 128.0) for _ in range(RUNS))
    tau = _threshold(1 / epsilon)
    pvalue_at = {}
    for factor in (0.7, 1.0, 1.3):
        above = stats.dlaplace.sf(tau, epsilon / factor)  # P(X > τ) at scale factor/ε
        rate = 1 - (1 - above) ** (BINS - 1)
        pvalue_at[factor] = stats.binomtest(widened, RUNS, rate).pvalue
    assert pvalue_at[1.0] > ALPHA, f"true scale rejected ({widened} of {RUNS}): {pvalue_at}"
    assert pvalue_at[0.7] < ALPHA, f"scale 0.7x not rejected ({widened}): {pvalue_at}"
    assert pvalue_at[1.3] < ALPHA, f"scale 1.3x not rejected ({widened}): {pvalue_at}"
    assert widened / RUNS <= BETA + 4 * math.sqrt(BETA / RUNS)  # the stated guarantee
