"""A budget spread too thin: a one-line warning after every release with many outputs, and
the same bar in ``explain`` before anything is spent (issue 33 item 5, issue 30 item 6).

The warning's bar: a cell's 95% half-width is larger than its value (a correlation: its
interval spans over half of [−1, 1]).  At a tiny ε every cell's noise dwarfs its value, so
each cell is too thin with probability about 0.95 at least, and every release below has 6
cells or more: no warning at all has probability below 0.05**6 ≈ 1.6e-8.  At an ample ε
every value is far from 0 (counts of 150 rows or more, means near 50, std near 20, a
correlation near 0.7) and its half-width is under 1% of it, so a false warning needs a
noise draw beyond a hundred 95% half-widths.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.api.thin import thin_cells, thin_message
from dpframe.mechanisms.answers.array import DPArray
from dpframe.mechanisms.answers.forms import Block

TINY = 0.002
AMPLE = 2_000.0
KEYS = list("abcdefgh")

Release = Callable[[dp.PrivateFrame, float], Any]


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    rows = 3_000
    x = rng.uniform(20, 80, rows)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "k": rng.choice(KEYS, rows),
            "g": rng.choice(["u", "v", "w"], rows),
            "x": x,
            "y": np.clip(x + rng.normal(0, 15, rows), 0, 100),
        }
    )
    return frame


def _frame(data: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=100_000, ledger=":memory:")
    return session.private_frame(
        data,
        bounds={"x": (0, 100), "y": (0, 100)},
        categories={"k": KEYS, "g": ["u", "v", "w"]},
    )


RELEASES: dict[str, Release] = {
    "describe": lambda pf, e: pf.describe(epsilon=e),
    "describe(include=all)": lambda pf, e: pf.describe(include="all", epsilon=e),
    "agg": lambda pf, e: pf.agg(["mean", "std"], epsilon=e),
    "crosstab": lambda pf, e: dp.crosstab(pf["k"], pf["g"], epsilon=e),
    "value_counts": lambda pf, e: pf["k"].value_counts(epsilon=e),
    "hist": lambda pf, e: pf["x"].hist(bins=[20, 30, 40, 50, 60, 70, 80], epsilon=e),
    "grouped mean": lambda pf, e: pf.groupby("k")["x"].mean(epsilon=e),
    "grouped size": lambda pf, e: pf.groupby(["k", "g"]).size(epsilon=e),
    "grouped agg": lambda pf, e: pf.groupby("k").agg({"x": ["mean", "sum"]}, epsilon=e),
    "pivot_table": lambda pf, e: pf.pivot_table(
        values="x", index="k", columns="g", aggfunc="sum", epsilon=e
    ),
    "cov": lambda pf, e: pf[["x", "y"]].cov(epsilon=e),
    "corr": lambda pf, e: pf[["x", "y"]].corr(epsilon=e),
    "pair corr": lambda pf, e: pf["x"].corr(pf["y"], epsilon=e),
}


def _thin_warnings(release: Callable[[], Any]) -> list[str]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        release()
    return [str(w.message) for w in caught if str(w.message).startswith("Too thin to read")]


@pytest.mark.fresh_releases
@pytest.mark.parametrize("kind", list(RELEASES))
def test_a_release_spread_too_thin_warns_once_in_one_line(data: pd.DataFrame, kind: str) -> None:
    pf = _frame(data)
    bar = "spans" if "corr" in kind else "wider than the value"
    with pytest.warns(UserWarning, match=rf"^Too thin to read: .*{bar}"):
        RELEASES[kind](pf, TINY)
    found = _thin_warnings(lambda: RELEASES[kind](pf, TINY))
    assert len(found) == 1, found  # once, even when the release runs other releases inside
    assert "\n" not in found[0]
    # How many cells, and an ε larger than the one spent that would bring them under the bar.
    assert re.search(r"\(\d+ of \d+ (cells|entries)|\d+ of \d+ cells (has|have)", found[0])
    # At a tiny ε a mean or a std may read 0 (clamped to its bounds), a group be shown <NA>
    # or an interval be unbounded: no ε is advised for those cells, and the message says so.
    advised = re.search(r"about ε=([0-9.,e+-]+) would bring", found[0])
    if advised is None:
        assert re.search(r"too thin at any ε|a much larger ε", found[0])
    else:
        assert float(advised.group(1).replace(",", "")) > TINY


@pytest.mark.fresh_releases
@pytest.mark.parametrize("kind", list(RELEASES))
def test_an_ample_budget_gives_no_warning(data: pd.DataFrame, kind: str) -> None:
    pf = _frame(data)
    assert _thin_warnings(lambda: RELEASES[kind](pf, AMPLE)) == []


def test_the_warning_reads_released_values_only(data: pd.DataFrame) -> None:
    # A released table keeps its cells' noise: the same check on the result, afterwards,
    # finds the same cells (nothing in it needs the data).
    from dpframe.api.thin import thin_cells

    pf = _frame(data)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        table = dp.crosstab(pf["k"], pf["g"], epsilon=TINY)
    found = thin_cells(table)
    assert found is not None
    assert found.judged == len(KEYS) * 3
    intervals = dp.ci(table)
    halves = (intervals.xs("high", axis=1, level=1) - intervals.xs("low", axis=1, level=1)) / 2
    values = table.astype(float)
    assert found.thin == int((halves.to_numpy() > np.abs(values.to_numpy())).sum())
    assert thin_cells(pf.count(epsilon=TINY)) is None  # one output: nothing to spread


EXPLAINED: dict[str, tuple[Release, str]] = {
    "describe": (
        lambda pf, e: pf.describe(include="all", epsilon=e),
        r"var\(x\): under ([\d,.]+) rows",
    ),
    "agg": (lambda pf, e: pf.agg(["mean", "std"], epsilon=e), r"std\(x\): under ([\d,.]+) rows"),
    "crosstab": (
        lambda pf, e: dp.crosstab(pf["k"], pf["g"], epsilon=e),
        r"a cell counting under ([\d,.]+)",
    ),
    "corr": (lambda pf, e: pf[["x", "y"]].corr(epsilon=e), r"corr\(x, y\): under ([\d,.]+) rows"),
}


@pytest.mark.parametrize("kind", list(EXPLAINED))
def test_explain_states_the_bar_before_anything_is_spent(data: pd.DataFrame, kind: str) -> None:
    pf = _frame(data)
    release, pattern = EXPLAINED[kind]
    session = pf.session
    before, rows = session.spent, len(session.ledger)

    def bar(epsilon: float) -> float:
        text = str(session.explain(lambda: release(pf, epsilon)))
        assert "too thin to read (95% ± wider than the value)" in text, text
        found = re.search(pattern, text)
        assert found is not None, text
        return float(found.group(1).replace(",", ""))

    thin, ample = bar(0.05), bar(0.5)
    assert session.spent == before and len(session.ledger) == rows  # nothing spent
    # Pure DP: the noise scales as 1/ε, so the bar falls tenfold (two significant digits).
    assert thin / ample == pytest.approx(10, rel=0.1)


def test_explain_of_one_output_has_no_bar(data: pd.DataFrame) -> None:
    pf = _frame(data)
    text = str(pf.session.explain(lambda: pf["x"].mean(epsilon=0.1)))
    assert "too thin" not in text
    assert pf.session.spent.epsilon == 0


class _WholeBounds:
    """An interval model whose cells' intervals are the whole declared range [0, 100]."""

    def interval(self, level: float) -> tuple[np.ndarray, np.ndarray]:
        return np.zeros(3), np.full(3, 100.0)


def test_an_interval_spanning_the_bounds_is_too_thin_at_any_value() -> None:
    """A mean clamped to [0, 100] reads "100 ± 100": too thin, as "50 ± 50" (both reach 0).

    Judged by the ± shown (the larger distance to an end): with (high - low) / 2 the
    first cell read 100 ± 50 and passed, so a release at a tiny ε could give no warning
    (7 of 300 agg releases at ε = 0.002 did).  The advised ε is above the one spent.
    """
    values = np.array([100.0, 50.0, 20.0])
    cells = DPArray.of_block(values, Block(3, model=_WholeBounds(), released=values))
    found = thin_cells(pd.Series(cells, index=["a", "b", "c"]))
    assert found is not None and found.thin == 3 and found.judged == 3
    assert found.factor is not None and found.factor > 80 / 20  # 20 ± 80: the thinnest
    message = thin_message(pd.Series(cells, index=["a", "b", "c"]))
    assert message is not None and "(thinnest: c: 20 ± 80)" in message
