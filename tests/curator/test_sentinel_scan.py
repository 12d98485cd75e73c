"""After a whole exploration session through the client, the analyst's process holds no row.

A separate process runs every aggregate against the curator (through an
IPython shell, so the history is scanned too) and then searches every object
the garbage collector can reach, their referents, every module's globals and
the IPython history for the planted values.  The same probe in embedded mode
is the control: it must find them, or the scan proves nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.curator.probe_client import KEY
from tests.curator.support import (
    ALICE,
    SENTINEL_FLOAT,
    SENTINEL_INT,
    SENTINEL_TEXT,
    Server,
)

ROOT = Path(__file__).resolve().parents[2]

#: The probe's cells that must fail: releases needing categories that were never
#: declared, and the guard's refusals.  Every other cell is a release that must succeed.
REFUSED = [
    "pf['note'].mode(epsilon=0.1)",
    "pf['note'].value_counts(epsilon=0.1)",
    "pf.head()",
    "len(pf)",
    "pf.to_numpy()",
    "pf.__dict__",
    "vars(pf['wage'])",
]


def _encode(text: str) -> str:
    return bytes(b ^ KEY for b in text.encode()).hex()


def _probe(mode: str, env_extra: dict[str, str]) -> dict[str, Any]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROBE_")}
    env["PROBE_SENTINELS"] = ":".join(
        _encode(x) for x in (SENTINEL_TEXT, repr(SENTINEL_FLOAT), str(SENTINEL_INT))
    )
    env.update(env_extra)
    done = subprocess.run(
        [sys.executable, "-m", "tests.curator.probe_client", mode],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report


@pytest.mark.slow
def test_no_planted_value_reaches_the_analyst_process(server: Server) -> None:
    report = _probe("remote", {"PROBE_URL": server.url, "PROBE_TOKEN": ALICE})
    print(f"\nremote probe: {report}")
    assert report["cells"] >= 30
    # The refused cells fail on purpose; every release succeeds.
    assert report["failed_cells"] == REFUSED, report["failed_cells"]
    assert report["objects"] > 10_000
    assert report["hit_count"] == 0, report["hits"]
    assert report["history_hits"] == 0


@pytest.mark.slow
def test_the_scan_finds_planted_values_in_embedded_mode(catalog_path: Path) -> None:
    report = _probe("embedded", {"PROBE_CSV": str(catalog_path.parent / "sentinel.csv")})
    print(f"\nembedded probe: {report}")
    assert report["failed_cells"] == REFUSED, report["failed_cells"]  # the same session
    assert report["hit_count"] > 0
    kinds = " ".join(report["hits"])
    assert "float64" in kinds and "int64" in kinds  # the planted numbers
    assert "StringArray" in kinds or "of str" in kinds  # the planted text
