"""Print every registered pin as a Markdown table: ``python -m tests.privacy_maps.report``.

The table in ``docs/proofs/privacy_maps.md`` is this script's output.  It also
prints, for the privacy-unit finding, the exact δ(ε) of the spread release
(the privacy-loss distribution of k independent shifted discrete Laplace
cells, convolved in float64: a magnitude, not a proof).
"""

from __future__ import annotations

import math
import time
from fractions import Fraction

import numpy as np

from tests.privacy_maps import (
    test_additive_maps,
    test_auto_bound_maps,
    test_grouped_quantile_maps,
    test_join_maps,
    test_key_join_auto_maps,
    test_key_join_maps,
    test_local_maps,
    test_mean_maps,
    test_partition_maps,
    test_public_join_maps,
    test_selection_maps,
    test_sparse_vector_maps,
    test_undeclared_maps,
    test_variance_maps,
    test_vector_maps,
)
from tests.privacy_maps.pins import CASES

_MODULES = (
    test_additive_maps,
    test_auto_bound_maps,
    test_grouped_quantile_maps,
    test_join_maps,
    test_key_join_auto_maps,
    test_key_join_maps,
    test_local_maps,
    test_mean_maps,
    test_partition_maps,
    test_public_join_maps,
    test_selection_maps,
    test_sparse_vector_maps,
    test_undeclared_maps,
    test_variance_maps,
    test_vector_maps,
)


def _g(value: object) -> str:
    return f"{float(str(value)):.6g}"


def table() -> str:
    """The Markdown table of every pin."""
    lines = [
        "| map | measure | stated cost | exact at stated noise | exact with 0.1% less noise "
        "| declared slack | holds | tight |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for build in CASES.values():
        pin = build()
        slack = "1" if pin.slack == 1 else f"{float(pin.slack):.6f}"
        if pin.note:
            slack += f" ({pin.note})"
        lines.append(
            f"| {pin.name} | {pin.measure} | {_g(pin.stated)} | {_g(pin.at_stated)} "
            f"| {_g(pin.at_less)} | {slack} | {'yes' if pin.within() else '**NO**'} "
            f"| {'yes' if pin.over() else 'no'} |"
        )
    return "\n".join(lines)


def spread_delta(k: int, scale: Fraction, shift: int, epsilon: float) -> float:
    """δ(ε) of k cells, each discrete Laplace (scale t) shifted by s, all in the same direction."""
    t = float(scale)
    a = math.exp(-1 / t)
    c = (1 - a) / (1 + a)
    # loss in units of 1/t: 2j − s for 0 < j < s (P(Y = j − s)), s for j ≥ s, −s for j ≤ 0
    probs = np.zeros(2 * shift + 1)
    probs[0] = a**shift / (1 + a)  # P(Y ≤ −s)
    probs[-1] = 1 / (1 + a)  # P(Y ≥ 0)
    for j in range(1, shift):
        probs[2 * j] += c * a ** (shift - j)
    total = np.array([1.0])
    for _ in range(k):
        total = np.convolve(total, probs)
    losses = (np.arange(len(total)) - k * shift) / t
    return float(np.sum(total * np.maximum(0.0, 1 - np.exp(epsilon - losses))))


def main() -> None:
    """Print the table and the privacy-unit finding's δ(ε)."""
    start = time.perf_counter()
    print(table())
    print(
        f"\n({len(CASES)} pins from {len(_MODULES)} modules, {time.perf_counter() - start:.1f} s)"
    )
    print("\nGrouped sum (0, 5000), ε = 1, a unit of k rows spread over k cells:")
    for k in (2, 10, 100):
        per_cell, units, spec, eps = test_additive_maps._unit_spread(k, "laplace")
        loss = k * per_cell / spec.parameter
        delta = spread_delta(k, spec.parameter, per_cell, float(eps))
        print(
            f"  k={k}: L1 move {k}·{per_cell} = {k * per_cell} grid units, Δ_u = {units}, "
            f"max loss {float(loss):.6f}, δ(ε=1) = {delta:.3g}"
        )


if __name__ == "__main__":
    main()
