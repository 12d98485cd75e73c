"""Exact output distributions of dpframe's selection and threshold mechanisms.

Companions of :mod:`dpframe.audit.exact_divergence` for mechanisms whose
output is not "value plus noise": each function below computes, in 60-digit
decimals, the probability of every output of the mechanism *as specified*
on given (small) inputs, by an argument independent of the library's code:

* :func:`permute_and_flip_distribution`: McKenna and Sheldon's
  permute-and-flip.  Every candidate r gets an independent coin with
  P(accept) = p_r = exp(−ε(u* − u_r)/(2Δ)); the output is the first accepted
  candidate in a uniformly random order.  Given the set S of accepted
  candidates, the first of S in a random order is uniform on S, so
  P(r) = p_r·E[1/(1 + N_r)], N_r the number of other accepted candidates
  (a Poisson-binomial variable, computed by dynamic programming).
* :func:`sparse_vector_distribution`: Lyu, Su and Li's Algorithm 1 with
  discrete Laplace noise: P(output) = Σ_ρ P(ρ)·Π_i P(query i's comparison |
  ρ), the comparisons being independent given the threshold noise ρ.
* :func:`thresholded_laplace`: a count plus discrete Laplace noise, released
  only when it reaches a threshold (private partition selection).
"""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal
from fractions import Fraction

from dpframe.audit.exact_divergence import Pmf, dec, discrete_laplace, precise

__all__ = [
    "permute_and_flip_distribution",
    "sparse_vector_distribution",
    "thresholded_laplace",
]


def permute_and_flip_distribution(
    utilities: Sequence[int], epsilon: Fraction, sensitivity: int
) -> dict[int, Decimal]:
    """P(output = r) of permute-and-flip with acceptance exp(−ε(u* − u_r)/(2Δ))."""
    best = max(utilities)
    eps = dec(epsilon)
    with precise():
        accept = [(-eps * (best - u) / (2 * sensitivity)).exp() for u in utilities]
        out: dict[int, Decimal] = {}
        for r, p_r in enumerate(accept):
            counts = [Decimal(1)]  # distribution of the number of other accepted candidates
            for i, p in enumerate(accept):
                if i == r:
                    continue
                nxt = [Decimal(0)] * (len(counts) + 1)
                for n, mass in enumerate(counts):
                    nxt[n] += mass * (1 - p)
                    nxt[n + 1] += mass * p
                counts = nxt
            out[r] = p_r * sum((mass / (1 + n) for n, mass in enumerate(counts)), Decimal(0))
    return out


def _cumulative(noise: Pmf) -> tuple[list[Decimal], Decimal]:
    """Prefix sums of a pmf window: cum[i] = P(X < start + i)."""
    with precise():
        cum = [Decimal(0)]
        for mass in noise.masses:
            cum.append(cum[-1] + mass)
    return cum, noise.outside


def sparse_vector_distribution(
    counts: Sequence[int],
    threshold: int,
    threshold_scale: Fraction,
    query_scale: Fraction,
    max_hits: int,
    tail: Decimal = Decimal("1e-20"),
) -> tuple[dict[tuple[int, ...], Decimal], Decimal]:
    """The distribution of the hits of Lyu–Su–Li Alg. 1 (discrete Laplace, integer threshold).

    Draw ρ ~ DLap(threshold_scale); for each query i in order, with fresh
    ν_i ~ DLap(query_scale), report a hit when count_i + ν_i ≥ T + ρ; stop after
    ``max_hits`` hits.  The output is the tuple of hits (examined queries
    after the last hit are implied by the stopping rule).

    Returns:
        The probabilities of the outputs (ρ and ν summed over windows that
        leave out at most ``tail`` each) and a bound on the probability
        left out by the windows.
    """
    rho = discrete_laplace(threshold_scale, tail)
    nu = discrete_laplace(query_scale, tail)
    cum, nu_out = _cumulative(nu)

    def below(m: int) -> Decimal:  # P(ν < m), over ν's window
        i = min(max(m - nu.start, 0), len(nu.masses))
        return cum[i]

    out: dict[tuple[int, ...], Decimal] = {}
    with precise():
        for j, p_rho in enumerate(rho.masses):
            r = rho.start + j
            # query i is a hit iff ν_i ≥ T + r − count_i
            states: dict[tuple[int, ...], Decimal] = {(): p_rho}
            finished: dict[tuple[int, ...], Decimal] = {}
            for i, count in enumerate(counts):
                miss = below(threshold + r - count)
                hit = 1 - miss
                nxt: dict[tuple[int, ...], Decimal] = {}
                for hits, mass in states.items():
                    grown = (*hits, i)
                    if len(grown) == max_hits:
                        finished[grown] = finished.get(grown, Decimal(0)) + mass * hit
                    else:
                        nxt[grown] = nxt.get(grown, Decimal(0)) + mass * hit
                    nxt[hits] = nxt.get(hits, Decimal(0)) + mass * miss
                states = nxt
            for hits, mass in [*states.items(), *finished.items()]:
                out[hits] = out.get(hits, Decimal(0)) + mass
        left_out = rho.outside + len(counts) * (nu_out + nu.error * len(nu.masses))
    return out, left_out


def thresholded_laplace(count: int, scale: Fraction, threshold: int) -> dict[object, Decimal]:
    """Outputs of count + DLap(scale), shown only when ≥ ``threshold``: value or ``"hidden"``."""
    noise = discrete_laplace(scale)
    out: dict[object, Decimal] = {}
    with precise():
        hidden = noise.outside  # mass beyond the window counted as hidden: conservative
        for i, mass in enumerate(noise.masses):
            value = count + noise.start + i
            if value >= threshold:
                out[value] = mass
            else:
                hidden += mass
        out["hidden"] = hidden
    return out
