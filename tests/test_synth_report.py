"""The utility report of a synthetic copy (issue 26, part 4): pairs, error bars, the heat map.

Everything here is computed from the released marginals: no charge.  A pair
the model never measured gets no error bar (none is released for it).
"""

from __future__ import annotations

import itertools
import math
from fractions import Fraction

import matplotlib
import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.api.verbs.synthesis import synthesis_node
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.synth.synth_family import measure_marginal, synth_noise
from dpframe.mechanisms.synth.synth_report import pair_status
from dpframe.noise import SecureRandom
from dpframe.synth_plot import pair_errors
from tests.test_synth import cps_frame

matplotlib.use("Agg")


@pytest.fixture(scope="module")
def copies() -> dict[str, pd.DataFrame]:
    found = {}
    for method in ("mst", "aim"):
        session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
        pf = cps_frame(session)[["wage", "education", "experience", "region", "parttime"]]
        found[method] = pf.synthesize(epsilon=1.0, method=method, progress=False)
    return found


@pytest.mark.parametrize("method", ["mst", "aim"])
def test_every_pair_is_listed_once_with_what_is_known_of_it(
    copies: dict[str, pd.DataFrame], method: str
) -> None:
    copy = copies[method]
    info = copy.attrs["dpframe_synth"]
    report = dp.synth_report(copy)
    pairs = report[report["kind"] == "2-way"]
    names = [tuple(m.split(" × ")) for m in pairs["marginal"]]
    assert sorted(set(names)) == sorted(itertools.combinations(info.columns, 2))
    status = pair_status(info)
    for row in pairs.itertuples(index=False):
        pair = tuple(str(row.marginal).split(" × "))
        assert row.status == status[pair]  # type: ignore[index]
        if row.status == "not measured":
            assert math.isnan(float(row.tv_error_bar)) and math.isnan(float(row.tv_noise))
            model = "independent given" if method == "mst" else "the fitted model"
            assert str(row.model).startswith(model)
        else:
            assert float(row.tv_error_bar) > float(row.tv_noise) > 0
    if method == "mst":  # a tree: d - 1 pairs kept, the others modelled along its paths
        assert (pairs["status"] == "measured").sum() == len(info.columns) - 1


def test_the_heat_map_shows_measured_pairs_and_marks_the_others(
    copies: dict[str, pd.DataFrame],
) -> None:
    copy = copies["mst"]
    info = copy.attrs["dpframe_synth"]
    table = pair_errors(copy)
    assert list(table.index) == list(info.columns) == list(table.columns)
    np.testing.assert_array_equal(table.to_numpy(), table.to_numpy().T)
    report = dp.synth_report(copy).set_index("marginal")
    for name in info.columns:
        one = report.loc[name]
        assert table.loc[name, name] == pytest.approx(one["tv_error_bar"] + one["tv_fit"])
    kept = {frozenset(p) for p in info.pairs}
    for a, b in itertools.combinations(info.columns, 2):
        assert math.isnan(table.loc[a, b]) == (frozenset((a, b)) not in kept)
    ax = dp.synth_heatmap(copy)
    texts = [t.get_text() for t in ax.texts]
    d = len(info.columns)
    unmeasured = d * (d - 1) - 2 * len(kept)
    assert texts.count("not\nmeasured") == unmeasured
    assert len(texts) == d * d
    assert "MST" in ax.get_title()
    import matplotlib.pyplot as plt

    plt.close(ax.figure)


def test_the_error_bar_covers_the_noise_of_a_marginal_as_stated() -> None:
    """The TV error bar at 95% holds for 95% of noisy marginals (the stated noise, drawn).

    2,000 draws of a 200-cell 1-way marginal's noise, planned by MST's privacy
    map; the share within the bar is binomial(2000, p): sd 0.0049.  The bar is a
    normal approximation of a sum of 200 half-normals and covers p = 0.9490 ±
    0.0002, not 0.95 (10^6 draws of this noise, 2026-11-30): the former range
    [0.925, 0.975] failed a correct bar with probability 1.8e-6 per run.  A bar
    whose spread is 0.7 or 1.6 times the stated one covers 0.877 or 0.9952.
    [0.918, 0.984] lies 6.3 and 7.1 sd from p and 5.6 and 7.2 sd from those
    (exact binomial): a false failure of about 1e-8 per run, of which 2e-9 from
    the correct bar and 1e-8 from the wrong ones landing inside.
    """
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    node = synthesis_node(cps_frame(session)[["wage", "region"]], dp.Privacy(epsilon=1))
    noise = synth_noise(node, NoiseAllocation("gaussian", Fraction(1, 50)))
    rng = SecureRandom()
    cells, total, draws = 200, 100_000.0, 2000
    std = 0.0
    tvs = []
    for _ in range(draws):
        noisy, spec = measure_marginal(np.zeros(cells), noise.one_way, 1, rng)
        std = spec.std
        tvs.append(float(np.abs(noisy).sum()) / (2 * total))
    from dpframe.mechanisms.synth.synth_report import _noise_tv_bound

    bar = _noise_tv_bound(cells, std, total, 1.6448536)
    inside = float(np.mean(np.asarray(tvs) <= bar))
    assert 0.918 <= inside <= 0.984
    mean = cells * std * math.sqrt(2 / math.pi) / (2 * total)
    for wrong in (0.7, 1.6):  # a bar of the wrong width: its share is far off
        share = float(np.mean(np.asarray(tvs) <= mean + wrong * (bar - mean)))
        assert not 0.918 <= share <= 0.984, wrong
