"""``k="auto"`` in a join on another key against the best k chosen with hindsight.

Data (synthetic households): ``--households`` households of a heavy-tailed
size (1 + a geometric number of mean ``--mean``, at most 60 people); one row
per person in ``people`` (m_L = 1) and two rows per person in ``spending``
(m_R = 2).  Query: the count of ``people.merge(spending, on="hh", k_left=,
k_right=)`` at ε = 1.

For (k_L, k_R) the error is computed exactly: the cut keeps min(c, k) rows
of a key value of c rows on each side, so the joined count is
Σ_x min(c_L,x, k_L)·min(c_R,x, k_R) (no randomness), its bias the gap to the
uncut join's count, and its noise the Laplace scale b = S/ε with
S = 2·(m_L·k_R + m_R·k_L) (variance 2b²): RMSE = √(bias² + 2b²).
Hindsight: the pair of public candidates (the ones ``k="auto"`` chooses
among) that minimises it.  Auto: ``k="auto"`` through the public API,
``--runs`` times, each in a fresh session (``bound_epsilon`` =
``--bound-epsilon``, which the hindsight pair does not spend).  Usage::

    python -m benchmarks.run_key_join_bounds --households 5000 --runs 20
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.releases import new_releases
from dpframe.api.verbs.joins import AUTO_K_CANDIDATES
from dpframe.plan.nodes import lineage

__all__ = ["main"]

EPSILON = 1.0
M_L, M_R = 1, 2


def _tables(households: int, mean: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(17)
    sizes = np.minimum(rng.geometric(1 / mean, households), 60)
    hh = np.repeat(np.arange(households), sizes)
    people = pd.DataFrame({"pid": np.arange(len(hh)), "hh": hh})
    spending = pd.DataFrame({"pid": np.repeat(people["pid"], M_R), "hh": np.repeat(hh, M_R)})
    return people, spending


def _rmse(k_l: int, k_r: int, c_l: np.ndarray, c_r: np.ndarray) -> float:
    bias = float(np.sum(c_l * c_r) - np.sum(np.minimum(c_l, k_l) * np.minimum(c_r, k_r)))
    scale = 2 * (M_L * k_r + M_R * k_l) / EPSILON
    return float(np.sqrt(bias**2 + 2 * scale**2))


def _auto(people: pd.DataFrame, spending: pd.DataFrame, bound_epsilon: float) -> tuple[int, int]:
    session = dp.Session(epsilon=10, ledger=":memory:")
    a = session.private_frame(people, privacy_unit=dp.PrivacyUnit("pid", M_L, id_space="p"))
    b = session.private_frame(spending, privacy_unit=dp.PrivacyUnit("pid", M_R, id_space="p"))
    joined = a.merge(b, on="hh", k="auto", bound_epsilon=bound_epsilon)
    join = lineage(joined._handle.plan)[0].join
    assert join is not None
    return join.k_left, join.k_right


def main(argv: list[str] | None = None) -> None:
    """Print the comparison table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--households", type=int, default=5_000)
    parser.add_argument("--mean", type=float, default=3.0)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--bound-epsilon", type=float, default=0.1)
    args = parser.parse_args(argv)
    people, spending = _tables(args.households, args.mean)
    c_l = people.groupby("hh").size().to_numpy()
    c_r = spending.groupby("hh").size().to_numpy()
    errors = {(a, b): _rmse(a, b, c_l, c_r) for a in AUTO_K_CANDIDATES for b in AUTO_K_CANDIDATES}
    best = min(errors, key=errors.__getitem__)
    autos = [_auto(people, spending, args.bound_epsilon) for _ in range(args.runs)]
    auto_errors = [errors[pair] for pair in autos]
    print(
        f"{args.households:,} households, {len(people):,} people, {len(spending):,} spending "
        f"rows (people per household: mean {c_l.mean():.1f}, max {c_l.max()}); count of the "
        f"join at ε={EPSILON}, k='auto' at ε={args.bound_epsilon}, {args.runs} runs"
    )
    print(
        "| hindsight (k_L, k_R) | RMSE there | auto (k_L, k_R): median, range | median RMSE "
        "at auto | ratio |"
    )
    print("|---|---|---|---|---|")
    lefts, rights = [a for a, _ in autos], [b for _, b in autos]
    median = statistics.median(auto_errors)
    print(
        f"| {best} | {errors[best]:.0f} | ({statistics.median(lefts)}, "
        f"{statistics.median(rights)}), {min(lefts)}-{max(lefts)} / {min(rights)}-{max(rights)} "
        f"| {median:.0f} | {median / errors[best]:.2f} |"
    )


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
