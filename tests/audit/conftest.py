"""The auditor's tiers: the fast tier runs in CI; ``--audit-heavy`` draws many more releases."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass

import pytest

from dpframe.audit import AuditResult


@dataclass(frozen=True)
class Tier:
    """Sample sizes of one tier (releases per dataset per vote, and votes)."""

    name: str
    api_samples: int  # public-API suite (every mechanism x every neighbour)
    api_votes: int
    variant_samples: int  # batched wrong variants and their correct twins
    variant_votes: int
    repeats: int  # audits per variant when measuring miss / false-alarm rates


FAST = Tier("fast", api_samples=120, api_votes=1, variant_samples=2000, variant_votes=5, repeats=1)
HEAVY = Tier(
    "heavy", api_samples=600, api_votes=3, variant_samples=2000, variant_votes=5, repeats=40
)


@pytest.fixture(scope="session")
def tier(request: pytest.FixtureRequest) -> Tier:
    return HEAVY if request.config.getoption("--audit-heavy") else FAST


@pytest.fixture(scope="session")
def record(tier: Tier) -> Callable[[str, dict[str, object]], None]:
    """Append one JSON line per measurement to $DPFRAME_AUDIT_REPORT (if set)."""
    path = os.environ.get("DPFRAME_AUDIT_REPORT")

    def write(kind: str, fields: dict[str, object]) -> None:
        if path:
            with open(path, "a", encoding="utf-8") as out:
                out.write(json.dumps({"tier": tier.name, "kind": kind, **fields}) + "\n")

    return write


def summary(result: AuditResult) -> dict[str, object]:
    """The numbers of one audit, for the report."""
    return {
        "pair": result.name,
        "violation": result.violation,
        "flags": result.flags,
        "votes": len(result.votes),
        "samples": result.samples,
        "delta_hat": round(result.delta_hat, 4),
        "max_tolerance": round(
            max(max(v.forward.tolerance, v.backward.tolerance) for v in result.votes), 4
        ),
    }
