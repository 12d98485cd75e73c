"""The auditor on the synthesizer: every adversarial neighbour, through the public API.

Each release is a whole synthetic copy of a 40-row frame (x in [0, 10] in
three bins, g in three declared categories); its features are the copy's
length, its rows in the top bin of x and its rows in category c.  The
neighbours include a row at the far bound (``high_bound``), far beyond it
(``above_bounds``) and a row whose category is not declared (``new_key``).  The
auditor's false-alarm bound is 1e-7 per pair.
"""

from __future__ import annotations

import pandas as pd
import pytest

import dpframe as dp
from tests.audit.variants import base_frame

BOUNDS = {"x": (0.0, 10.0)}
CATEGORIES = {"g": ["a", "b", "c"]}


def _features(copy: pd.DataFrame) -> tuple[float, float, float]:
    return (
        float(len(copy)),
        float((copy["x"] > 10 * 2 / 3).sum()),
        float((copy["g"] == "c").sum()),
    )


@pytest.mark.slow
@pytest.mark.parametrize("method", ["mst", "aim"])
def test_synthesizer_passes_the_auditor_on_every_neighbour(method: str) -> None:
    """In a Gaussian DP session of (1, 1e-6), the default whenever δ > 0: each copy spends it all.

    The claim is the session's guarantee after one copy, (1, 9e-7) (its δ
    reserve of 1e-7 unspent).
    """
    df = base_frame()
    wanted = {"high_bound", "above_bounds", "new_key"}
    pairs = [
        p for p in dp.audit.neighbours(df, bounds=BOUNDS, categories=CATEGORIES) if p.name in wanted
    ]
    names = {p.name for p in pairs}
    assert names == wanted
    results = dp.audit.audit_query(
        lambda pf: _features(pf.synthesize(epsilon=1, method=method, bins=3, progress=False)),
        pairs,
        epsilon=1.0,
        delta=9e-7,
        bounds=BOUNDS,
        categories=CATEGORIES,
        accounting="gdp",
        session_budget=(1.0, 1e-6),
        samples=120,
        votes=1,
    )
    assert set(results) == names
    failed = [repr(r) for r in results.values() if r.violation]
    assert not failed, "\n".join(failed)
