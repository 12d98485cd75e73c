"""Plots that show: short bin labels, rotation when crowded, error bars on every bar."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.plotting import CHARACTERS_PER_INCH, axis_labels, crowded

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")


@pytest.fixture
def pf() -> dp.PrivateFrame:
    session = dp.Session(epsilon=10, ledger=":memory:", name="plots")
    return session.private_frame(
        load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )


def _error_bars(ax: object) -> list[tuple[float, float]]:
    """(low, high) of each drawn error bar, from the line collection matplotlib made."""
    (collection,) = ax.collections  # type: ignore[attr-defined]
    return [(float(seg[0][1]), float(seg[1][1])) for seg in collection.get_segments()]


def test_histogram_bins_are_short_labels_with_error_bars(pf: dp.PrivateFrame) -> None:
    wages = pf["wage"].hist(bins=[0, 250, 500, 750, 1000, 1500, 2000, 5000], epsilon=1)
    ax = dp.plot(wages)
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels == [
        "0–250",
        "250–500",
        "500–750",
        "750–1000",
        "1000–1500",
        "1500–2000",
        "2000–5000",
    ]
    assert ax.get_xlabel() == "wage"
    assert len(ax.patches) == 7
    intervals = dp.ci(wages)
    bars = _error_bars(ax)
    assert len(bars) == 7
    for (low, high), (_, row) in zip(bars, intervals.iterrows(), strict=True):
        assert low == pytest.approx(min(row["low"], wages.loc[row.name]))
        assert high == pytest.approx(max(row["high"], wages.loc[row.name]))
    # seven labels of up to 9 characters would touch at 6 inches: rotated
    assert all(t.get_rotation() == 30 for t in ax.get_xticklabels())
    wide = dp.plot(wages, figsize=(12, 3.5))
    assert all(t.get_rotation() == 0 for t in wide.get_xticklabels())


def test_crowded_labels_rotate(pf: dp.PrivateFrame) -> None:
    sizes = pf.groupby(["ethnicity", "parttime", "region"]).size(epsilon=1)
    ax = dp.plot(sizes)
    ticks = ax.get_xticklabels()
    assert len(ticks) == 16 and ticks[0].get_text() == "afam / no / midwest"
    assert all(t.get_rotation() == 30 and t.get_horizontalalignment() == "right" for t in ticks)
    assert len(_error_bars(ax)) == 16


def test_axis_labels_and_crowding_rule() -> None:
    index = pd.IntervalIndex.from_breaks([0.0, 2.5, 10.0], closed="left")
    assert axis_labels(index) == ["0–2.5", "2.5–10"]
    assert axis_labels(pd.Index([("a", 1)], tupleize_cols=False)) == ["a / 1"]
    room = CHARACTERS_PER_INCH * 6
    assert not crowded([]) and not crowded(["x" * 10] * (room // 10))
    assert crowded(["x" * 10] * (room // 10 + 1))
    assert not crowded(["x" * 10] * (room // 10 + 1), width_inches=12)


def test_a_single_release_has_its_error_bar(pf: dp.PrivateFrame) -> None:
    release = pf["wage"].mean(epsilon=1)
    ax = dp.plot(release)
    ((low, high),) = _error_bars(ax)
    assert (low, high) == pytest.approx(release.ci())
    assert np.isclose(ax.patches[0].get_height(), release.value)
