"""``explain`` of a composite gives one line per output, at its share, before anything is spent."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES


@pytest.fixture
def pf(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=10, ledger=":memory:", name="explain-outputs")
    return session.private_frame(cps, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)


def test_describe_lists_each_columns_moments_and_quartiles(pf: dp.PrivateFrame) -> None:
    found = pf.session.explain(lambda: pf.describe(epsilon=0.6))
    labels = [label for label, _ in found.outputs]
    assert labels == [
        "var(wage)",
        "quantile(wage, q=[0.25, 0.5, 0.75])",
        "var(education)",
        "quantile(education, q=[0.25, 0.5, 0.75], 21 candidates)",
        "var(experience)",
        "quantile(experience, q=[0.25, 0.5, 0.75], 73 candidates)",
    ]
    lines = dict(found.outputs)
    assert lines["var(wage)"].startswith("the variance within about ±")
    assert "rows of the true quantile's at 95%" in lines["quantile(wage, q=[0.25, 0.5, 0.75])"]
    assert "6 outputs, one charge split between them:" in str(found)
    assert float(pf.session.spent.epsilon) == 0  # explaining spends nothing


def test_a_part_at_a_smaller_share_is_explained_as_noisier(pf: dp.PrivateFrame) -> None:
    """Each output's line is at its own share: agg's two cells at 1/2 each, vs one alone."""
    both = pf.session.explain(
        lambda: pf.groupby("region")["wage"].agg(["mean", "count"], epsilon=0.5)
    )
    lines = dict(both.outputs)
    assert set(lines) == {"mean(wage) by region", "count(wage) by region"}
    alone = pf.session.explain(lambda: pf.groupby("region")["wage"].count(epsilon=0.25))
    assert lines["count(wage) by region"] == alone.headline  # the same share, the same line
    wider = pf.session.explain(lambda: pf.groupby("region")["wage"].count(epsilon=0.5))
    assert lines["count(wage) by region"] != wider.headline


def test_a_single_release_has_no_output_list(pf: dp.PrivateFrame) -> None:
    found = pf.session.explain(lambda: pf["wage"].mean(epsilon=0.5))
    assert found.outputs == ()
    assert "outputs" not in str(found)


def test_the_std_states_its_variance_accuracy_in_the_columns_units(pf: dp.PrivateFrame) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        found = pf.session.explain(lambda: pf["wage"].std(epsilon=0.5))
    assert found.headline.startswith("the variance within about ±")
    assert found.headline.endswith("the std's error is that over 2·std")
