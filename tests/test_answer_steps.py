"""Issue 30's pandas steps on embedded releases (the same checks run on Dask and the curator)."""

from __future__ import annotations

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from tests.answer_steps import STEPS, check_steps


def test_every_step_keeps_the_intervals_of_embedded_releases() -> None:
    session = dp.Session(epsilon=10, ledger=":memory:")
    pf = session.private_frame(load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    assert check_steps(pf) == dict.fromkeys(STEPS, "kept")
