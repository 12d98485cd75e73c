"""Measure the auditor's false-alarm and detection rates: ``python -m tests.audit.rates_probe``.

Not a test: it prints the numbers recorded in tests/AUDIT.md.  The reference
mechanism is a count with discrete Laplace noise of scale f/ε on the pair
(10 rows, 11 rows): f = 1 is exactly ε-DP and tight on this pair (the worst
case for false alarms); f < 1 is a violation whose true δ at ε is known in
closed form, so the detection rate can be set against the size of the violation.
"""

from __future__ import annotations

import argparse
import math
from fractions import Fraction

from dpframe.audit import hockey_stick_vote, vote_level
from dpframe.noise import SecureRandom, coarsen_up, discrete_laplace_array


def true_delta(factor: float, epsilon: float = 1.0) -> float:
    """δ(ε) of count + DLap(factor/ε) on a shift of 1: the event {y ≥ c + 1} is the worst."""
    a = math.exp(-epsilon / factor)
    return max(0.0, (1 - math.exp(epsilon) * a) / (1 + a))


def vote_flags(factor: float, samples: int, level: float, votes: int) -> tuple[int, int]:
    """Flagged directions and flagged votes over ``votes`` votes."""
    rng = SecureRandom()
    scale = coarsen_up(Fraction(factor).limit_denominator(1000))
    pilot = samples // 2

    def draw(count: int) -> list[tuple[float]]:
        noise = discrete_laplace_array(scale, samples, rng)
        return [(float(count + v),) for v in noise]

    directions = flagged = 0
    for _ in range(votes):
        d0, d1 = draw(10), draw(11)
        vote = hockey_stick_vote(
            d0[:pilot], d1[:pilot], d0[pilot:], d1[pilot:], epsilon=1.0, delta=0.0, level=level
        )
        directions += vote.forward.flagged + vote.backward.flagged
        flagged += vote.flagged
    return directions, flagged


def main() -> None:
    """Print the report."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--votes", type=int, default=1000)
    args = parser.parse_args()
    default = vote_level(1e-7, 5)
    print(f"Per-direction level of a 5-vote audit at alpha = 1e-7: {default:.3g}\n")
    print(
        "| scale factor | true δ at ε = 1 | samples | level | votes "
        "| directions flagged | votes flagged |"
    )
    print("|---|---|---|---|---|---|---|")
    rows = [(1.0, 2000, 0.05), (1.0, 2000, default), (1.0, 120, default)]
    rows += [(f, n, default) for f in (0.95, 0.9, 0.8, 0.7) for n in (120, 600, 2000)]
    for factor, samples, level in rows:
        directions, flagged = vote_flags(factor, samples, level, args.votes)
        print(
            f"| {factor:g} | {true_delta(factor):.3f} | {samples} | {level:.3g} | {args.votes} | "
            f"{directions} ({directions / (2 * args.votes):.2%}) | "
            f"{flagged} ({flagged / args.votes:.2%}) |"
        )


if __name__ == "__main__":
    main()
