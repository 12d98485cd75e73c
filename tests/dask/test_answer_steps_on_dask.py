"""Issue 30's pandas steps on releases computed by the Dask backend (``on_dask``: every frame
is loaded as a three-partition dask DataFrame on a two-worker cluster)."""

from __future__ import annotations

import pytest

from tests.test_answer_steps import test_every_step_keeps_the_intervals_of_embedded_releases

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = ["test_every_step_keeps_the_intervals_of_embedded_releases"]
