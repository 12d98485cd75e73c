"""The bound chosen privately (``max_rows="auto"``) against the best bound chosen with hindsight.

Data: ``--people`` people, each with a heavy-tailed number of visits (1 + a
geometric number of mean ``--mean``, capped at the load limit 50) of cost
uniform in [0, 100]; people hold one row each.  Query: the sum (and the
count) of the join ``visits.merge(people, on="person_id")`` at ε = 1.

For a bound k the error of the release is computed exactly (no sampling of
the release itself): its bias is the expected loss of the truncation to a
uniform random subset of k rows per person, Σ_u S_u·(1 − min(1, k/c_u)) for a
person with c_u rows summing to S_u, and its noise the Laplace scale
b = k·U/ε (U = 100 for the sum, 1 for the count: variance 2b²), so
RMSE(k) = √(bias² + 2b²).  Hindsight: the k in 1…50 that minimises it.
Auto: ``max_rows="auto"`` run ``--runs`` times through the public API, each
in a fresh session (``bound_epsilon`` = ``--bound-epsilon``), and the RMSE at
the bound it released.  The table reports the bounds and the ratio
RMSE(auto)/RMSE(hindsight); the auto bound also spends ``bound_epsilon``,
which the hindsight bound does not.  Usage::

    python -m benchmarks.run_join_bounds --people 20000 --runs 20
"""

from __future__ import annotations

import argparse
import statistics

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.releases import new_releases

__all__ = ["main"]

LIMIT = 50
EPSILON = 1.0


def _tables(people: int, mean: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(7)
    counts = np.minimum(1 + rng.geometric(1 / mean, people) - 1, LIMIT)
    ids = np.repeat(np.arange(people), counts)
    visits = pd.DataFrame({"person_id": ids, "cost": rng.uniform(0, 100, len(ids))})
    folks = pd.DataFrame({"person_id": np.arange(people), "group": rng.integers(0, 4, people)})
    return visits, folks


def _rmse(k: int, counts: np.ndarray, sums: np.ndarray, scale: float) -> float:
    bias = float(np.sum(sums * (1 - np.minimum(1, k / counts))))
    return float(np.sqrt(bias**2 + 2 * (k * scale / EPSILON) ** 2))


def _auto(visits: pd.DataFrame, folks: pd.DataFrame, bound_epsilon: float) -> int:
    session = dp.Session(epsilon=10, ledger=":memory:")
    unit = dp.PrivacyUnit("person_id", max_rows=LIMIT, id_space="persons")
    v = session.private_frame(visits, bounds={"cost": (0, 100)}, privacy_unit=unit)
    p = session.private_frame(
        folks, privacy_unit=dp.PrivacyUnit("person_id", max_rows=1, id_space="persons")
    )
    joined = v.merge(p, on="person_id", max_rows="auto", bound_epsilon=bound_epsilon)
    return int(joined.count(epsilon=1).scale)  # the count's scale is k/ε with ε = 1


def main(argv: list[str] | None = None) -> None:
    """Print the comparison table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--people", type=int, default=20_000)
    parser.add_argument("--mean", type=float, default=4.0)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--bound-epsilon", type=float, default=0.1)
    args = parser.parse_args(argv)
    visits, folks = _tables(args.people, args.mean)
    per = visits.groupby("person_id")["cost"].agg(["size", "sum"])
    counts, sums = per["size"].to_numpy(float), per["sum"].to_numpy()
    autos = [_auto(visits, folks, args.bound_epsilon) for _ in range(args.runs)]
    print(
        f"{args.people:,} people, {len(visits):,} visits (rows per person: mean "
        f"{counts.mean():.1f}, 0.99 quantile {np.quantile(counts, 0.99):.0f}, max "
        f"{counts.max():.0f}); releases at ε={EPSILON}, auto bound at ε={args.bound_epsilon}, "
        f"{args.runs} runs"
    )
    print(f"auto bounds: median {statistics.median(autos)}, range {min(autos)}-{max(autos)}")
    print("| query | hindsight k | RMSE at hindsight k | median RMSE at auto k | ratio (median) |")
    print("|---|---|---|---|---|")
    for name, values, scale in (("sum(cost)", sums, 100.0), ("count()", np.ones_like(sums), 1.0)):
        values_per = values if name != "count()" else counts
        errors = {k: _rmse(k, counts, values_per, scale) for k in range(1, LIMIT + 1)}
        best = min(errors, key=errors.__getitem__)
        auto = statistics.median(errors[k] for k in autos)
        print(f"| {name} | {best} | {errors[best]:.1f} | {auto:.1f} | {auto / errors[best]:.2f} |")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
