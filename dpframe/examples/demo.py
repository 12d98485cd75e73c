"""A short exploration of the bundled CPS 1988 data, every answer differentially private.

Run with ``python -m dpframe.demo``.  It uses a throw-away ledger (``:memory:``)
so running it twice starts afresh; real sessions keep their ledger on disk.
"""

from __future__ import annotations

import argparse

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988


def _show(label: str, release: dp.Release) -> None:
    low, high = release.ci(0.95)
    digits = 0 if getattr(release.intervals, "statistic", None) == "count" else 1  # whole people
    interval = f"95% CI [{low:,.{digits}f}, {high:,.{digits}f}]"
    print(f"{label:<44} {release.value:>12,.{digits}f}   {interval}  cost {release.cost}")


def main(argv: list[str] | None = None) -> None:
    """Run the demo exploration and print every release with its interval and cost."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--epsilon", type=float, default=1.0, help="session budget (default 1)")
    args = parser.parse_args(argv)

    session = dp.Session(epsilon=args.epsilon, ledger=":memory:", name="demo")
    pf = session.private_frame(load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    print(pf)
    print()
    share = args.epsilon / 10
    _show("people", pf.count(epsilon=share))
    _show("mean weekly wage (USD)", pf["wage"].mean(epsilon=share))
    _show(
        "mean wage, 16+ years of education", pf[pf["education"] >= 16]["wage"].mean(epsilon=share)
    )
    _show("std of years of experience", pf["experience"].std(epsilon=share))
    print()
    by_region = pf.groupby("region")["wage"].mean(epsilon=2 * share)
    table = dp.ci(by_region).assign(mean=by_region)[["mean", "low", "high"]]
    print("mean weekly wage by region (95% CI):")
    print(table.round(1).to_string())
    print()
    part_time = pf.groupby(["parttime", "smsa"]).size(epsilon=2 * share)
    print("people by part-time work and city residence:")
    print(part_time.round(0).to_string())
    print()
    print(f"spent {session.spent}, remaining {session.remaining}")
    try:
        pf["wage"].sum(epsilon=args.epsilon)
    except dp.BudgetExceededError as refusal:
        print("\nA query over budget is refused before it reads the data:")
        print(refusal)


if __name__ == "__main__":
    main()
