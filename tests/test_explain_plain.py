"""``explain`` starts with one plain line per answer: accuracy, cost, what is left."""

from __future__ import annotations

import math
from fractions import Fraction

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.mechanisms.core.explanations import plain_number
from dpframe.mechanisms.quantiles.quantiles import rank_error


@pytest.fixture
def session() -> dp.Session:
    return dp.Session(epsilon=1, ledger=":memory:", name="plain")


@pytest.fixture
def pf(session: dp.Session) -> dp.PrivateFrame:
    return session.private_frame(
        load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (599.3, "600"),
        (12.43, "12"),
        (0.0312, "0.031"),
        (166_600.0, "170,000"),
        (9.96, "10"),
        (1.0, "1.0"),
        (-0.5, "-0.50"),
        (1.234e-5, "1.2e-05"),
        (3e12, "3e+12"),
        (0.0, "0"),
        (math.inf, "inf"),
    ],
)
def test_plain_numbers_have_two_significant_digits(value: float, text: str) -> None:
    assert plain_number(value) == text


def test_a_count_says_its_half_width_cost_and_what_is_left(
    session: dp.Session, pf: dp.PrivateFrame
) -> None:
    explained = session.explain(lambda: pf.count(epsilon=0.1))
    width = explained.measures[0].half_width_95
    assert explained.plain() == (
        f"count() = within ±{plain_number(width)} of the true value at 95%; cost ε=0.1; ε=0.9 left"
    )
    assert str(explained).split("\n")[0] == explained.plain()
    assert "row count: sensitivity 1" not in str(explained)  # the detail is asked for
    assert "detail=True" in str(explained)  # ... and the short form says how
    detailed = session.explain(lambda: pf.count(epsilon=0.1), detail=True)
    assert "row count: sensitivity 1" in str(detailed)  # the mechanism's detail
    assert "no mechanism with this guarantee can beat" in str(detailed)  # the floor
    assert detailed.plain() == explained.plain()
    with pytest.raises(dp.InvalidArgumentError, match=r"explain\(detail=...\) takes True"):
        session.explain(lambda: pf.count(epsilon=0.1), detail="yes")  # type: ignore[arg-type]
    assert explained._repr_html_().startswith(
        f"<pre class='dpframe-explain'><b>{explained.plain()}"
    )
    assert session.spent.is_zero


def test_the_half_width_is_the_count_noise_quantile(
    session: dp.Session, pf: dp.PrivateFrame
) -> None:
    # discrete Laplace of scale 10: P(|Y| > k) = 2a^(k+1)/(1+a), a = e^(-1/10); the 95%
    # half-width is the smallest k with P(|Y| > k) <= 0.05, i.e. 29 (+ 0 rounding).
    a = math.exp(-0.1)
    k = next(k for k in range(1000) if 2 * a ** (k + 1) / (1 + a) <= 0.05)
    explained = session.explain(lambda: pf.count(epsilon=0.1))
    assert explained.measures[0].half_width_95 == pytest.approx(k, abs=1)
    assert f"±{plain_number(explained.measures[0].half_width_95)} of" in explained.plain()


def test_grouped_sums_say_per_group(session: dp.Session, pf: dp.PrivateFrame) -> None:
    text = session.explain(lambda: pf.groupby("region")["wage"].sum(epsilon=0.1)).plain()
    assert text.startswith("sum(wage) by region = within ±150,000 of the true value at 95% in")
    assert "in each group; cost ε=0.1; ε=0.9 left" in text


def test_a_mean_states_its_error_as_a_function_of_n(
    session: dp.Session, pf: dp.PrivateFrame
) -> None:
    explained = session.explain(lambda: pf["wage"].mean(epsilon=0.1))
    final = next(m for m in explained.measures if "worst case" in m.name)
    width = final.half_width_95
    assert explained.plain().startswith(
        f"mean(wage) = within about ±{plain_number(width)}/n of the true value at 95%"
    )
    assert f"±{plain_number(width / 1e3)} at n = 1,000" in explained.plain()


def test_a_quantile_states_its_rank_error(session: dp.Session, pf: dp.PrivateFrame) -> None:
    text = session.explain(lambda: pf["wage"].median(epsilon=0.1)).plain()
    expected = plain_number(rank_error(0.05, 0.95, Fraction(1, 2)))  # the point: half ε
    assert text.startswith(f"quantile(wage, q=[0.5]) = a value whose rank is within ±{expected}")


def test_a_refused_query_says_so_on_the_plain_line(
    session: dp.Session, pf: dp.PrivateFrame
) -> None:
    explained = session.explain(lambda: pf.count(epsilon=3))
    assert not explained.allowed
    assert explained.plain().endswith("cost ε=3; would be REFUSED: only ε=1 left")


def test_zcdp_sessions_state_the_share_left() -> None:
    session = dp.Session(epsilon=1, delta=1e-6, ledger=":memory:")
    pf = session.private_frame(pd.DataFrame({"x": [1.0] * 50}), bounds={"x": (0, 2)})
    text = session.explain(lambda: pf["x"].sum(epsilon=0.25)).plain()
    assert text.endswith("cost ε=0.25; ε=0.75, δ=1e-06 left")


def test_labels_are_in_the_users_terms(session: dp.Session, pf: dp.PrivateFrame) -> None:
    """Issue 33: no engine names (``_a``) or implied clauses in explain, nor in the ledger."""
    for ask in (
        lambda: pf["wage"].corr(pf["education"], epsilon=0.5),
        lambda: pf[["wage", "education"]].corr(epsilon=0.5),
    ):
        text = str(session.explain(ask))
        assert text.startswith("corr(wage, education): ")
        assert "_a" not in text and "isnull" not in text
    pf["wage"].corr(pf["education"], epsilon=0.5)
    assert session.ledger["query"].iloc[-1].startswith("corr(wage, education)")
