"""The auditor flags every deliberately wrong variant and passes its correct twin.

Each variant re-implements one of our mechanisms with one bug (half the
Laplace scale, 30% too little noise, no clamping, no query noise in the sparse
vector, the noisy max value released, a partition threshold that ignores δ, a
mean of two noisy values over unclamped inputs) and is audited against the
claim the correct mechanism makes, on the neighbour where the bug shows; the
correct twin is audited on the same pair at the same sample size.  Rates per
vote are recorded for tests/AUDIT.md (``--audit-heavy`` repeats each audit).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

import dpframe as dp
from tests.audit.conftest import Tier
from tests.audit.variants import (
    BOUNDS,
    CATEGORIES,
    EPSILON,
    SVT_EXPRESSIONS,
    VARIANTS,
    Variant,
    base_frame,
)

PAIRS = {
    p.name: p
    for p in dp.audit.neighbours(
        base_frame(),
        bounds={"x": BOUNDS},
        categories={"g": list(CATEGORIES)},
        queries=list(SVT_EXPRESSIONS),
    )
}


def _run(variant: Variant, wrong: bool, tier: Tier) -> dp.audit.AuditResult:
    pair = PAIRS[variant.pair]
    return dp.audit.audit(
        variant.wrong if wrong else variant.correct,
        pair.base,
        pair.neighbour,
        epsilon=EPSILON,
        delta=variant.delta,
        samples=tier.variant_samples,
        votes=tier.variant_votes,
        batched=True,
        name=variant.name,
    )


def test_the_flip_row_flips_the_later_condition() -> None:
    pair = PAIRS["flips_query"]
    added = pair.neighbour.iloc[-1]
    assert added["g"] != "c" and added["x"] > 7.3
    assert "condition 1" in pair.description


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_wrong_variant_is_flagged_and_its_twin_passes(
    variant: Variant, tier: Tier, record: Callable[[str, dict[str, object]], None]
) -> None:
    wrong = [_run(variant, True, tier) for _ in range(tier.repeats)]
    right = [_run(variant, False, tier) for _ in range(tier.repeats)]
    record(
        "variant",
        {
            "variant": variant.name,
            "pair": variant.pair,
            "audits": tier.repeats,
            "samples": tier.variant_samples,
            "votes": tier.variant_votes,
            "wrong_missed_audits": sum(r.passed for r in wrong),
            "wrong_votes_not_flagged": sum(len(r.votes) - r.flags for r in wrong),
            "wrong_median_delta_hat": sorted(r.delta_hat for r in wrong)[len(wrong) // 2],
            "correct_false_alarm_audits": sum(r.violation for r in right),
            "correct_votes_flagged": sum(r.flags for r in right),
        },
    )
    missed = [repr(r) for r in wrong if r.passed]
    assert not missed, "a wrong variant was not flagged:\n" + "\n".join(missed)
    alarms = [repr(r) for r in right if r.violation]
    assert not alarms, "a correct mechanism was flagged:\n" + "\n".join(alarms)


#: Variants whose violation has δ close to 1 on their pair (outputs reachable from one
#: side only): the sample size of the public-API suite must flag them every time.
GROSS = {"sum_without_clamping", "mean_of_two_noisy_values_unclamped"}


@pytest.mark.parametrize("variant", VARIANTS, ids=[v.name for v in VARIANTS])
def test_detection_at_the_public_api_suite_size(
    variant: Variant, tier: Tier, record: Callable[[str, dict[str, object]], None]
) -> None:
    """What the public-API suite's sample size can see: gross leaks always, subtler ones not."""
    pair = PAIRS[variant.pair]
    results = [
        dp.audit.audit(
            variant.wrong,
            pair.base,
            pair.neighbour,
            epsilon=EPSILON,
            delta=variant.delta,
            samples=tier.api_samples,
            votes=tier.api_votes,
            batched=True,
            name=variant.name,
        )
        for _ in range(tier.repeats)
    ]
    record(
        "api_size_variant",
        {
            "variant": variant.name,
            "samples": tier.api_samples,
            "votes": tier.api_votes,
            "audits": tier.repeats,
            "flagged_audits": sum(r.violation for r in results),
        },
    )
    if variant.name in GROSS:
        assert all(r.violation for r in results), "\n".join(map(repr, results))
