"""A new release kind in three pieces runs end to end (docs/architecture.md's walkthrough).

``tests/toy_kind/`` holds a node, its family and its facade function, and
nothing in ``dpframe/`` names them.  They run in a subprocess, since a family
joins the engine's families for the whole process that imports it; there the
toy kind is released embedded, recorded in the ledger, explained, refused over
budget before the charge, and sized by the curator's worst-case estimate from
the work its family declares.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_a_release_kind_added_in_three_pieces_runs_end_to_end() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "tests.toy_kind.demo"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    # discrete Laplace of scale 1/5 (ε = 5) and 1/4: |noise| >= 8 has probability < 1e-13
    assert abs(out["value"] - 1500) < 8
    assert abs(out["filtered"] - out["filtered_exact"]) < 8
    assert (out["query"], out["mechanism"]) == ("nonnull_count(x)", "discrete Laplace")
    assert out["releases"] == 2 and out["spent"] == pytest.approx(9.0)
    assert out["explained"].startswith("nonnull_count(x); cost ε=1")
    assert "nothing was charged" in out["refused"]
    # one evaluation of the plan (its column and the 2 of every plan), a cell, an overhead
    assert out["seconds"] == pytest.approx(10**6 * 3 * 5e-8 + 4e-5 + 0.05)
