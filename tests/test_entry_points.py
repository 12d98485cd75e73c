"""The documented entry points still work after the layout move."""

from __future__ import annotations

import subprocess
import sys

import dpframe.local_queries
from dpframe.mechanisms.copies.copy_family import estimate_frequencies


def test_estimate_frequencies_is_still_importable_from_local_queries() -> None:
    assert dpframe.local_queries.estimate_frequencies is estimate_frequencies


def test_python_m_dpframe_demo_runs_on_the_bundled_data() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "dpframe.demo"], capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert "mean weekly wage by region (95% CI):" in done.stdout
    assert "A query over budget is refused before it reads the data:" in done.stdout
    assert "Requested" in done.stdout and "Remaining" in done.stdout
