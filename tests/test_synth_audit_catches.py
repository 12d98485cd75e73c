"""The auditor must catch a synthesizer that spends far more than it claims.

Its own file (split from ``test_synth_audit.py``): at 110 s it is the suite's
slowest test, and pytest-xdist keeps a file's tests on one worker
(``--dist loadfile``), so apart they run on both cores.
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
def test_auditor_catches_a_synthesizer_that_spends_ten_times_its_claim() -> None:
    """An audit with the claim ε = 0.1 for a copy that spends ε = 8 must fail."""
    df = base_frame()
    pairs = [
        p
        for p in dp.audit.neighbours(df, bounds=BOUNDS, categories=CATEGORIES)
        if p.name == "high_bound"
    ]
    results = dp.audit.audit_query(
        lambda pf: _features(pf.synthesize(epsilon=8, bins=3, progress=False)),
        pairs,
        epsilon=0.1,
        bounds=BOUNDS,
        categories=CATEGORIES,
        samples=300,
        votes=1,
    )
    assert results["high_bound"].violation
