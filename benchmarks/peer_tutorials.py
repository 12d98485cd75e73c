"""Peer tutorials done as-is in dpframe (issue 15, closing note).

Three peers' first-session material, each step translated to dpframe as an
analyst would type it, on the bundled CPS 1988 table (the peers' own data sets
are not in ``../shared/data``, so each step asks the same question of a CPS
column of the same kind):

* OpenDP "Essential Statistics" and "Grouping" (France LFS → CPS: ``HWUSUAL``
  work hours → ``education`` years, ``AGE``/``ILOSTAT``/``SEX`` →
  ``experience``/``region``/``smsa``);
* Tumult Analytics tutorials 1–6 (library members → CPS rows; the checkouts
  table of tutorial 6 → CPS rows given a synthetic person id, 1–3 rows each);
* diffprivlib's ``notebooks/exploration.ipynb`` (Covertype → CPS columns).

Each step lists spellings, tried in order against a fresh ``ledger=":memory:"``
session.  The first is the step as written in dpframe's pandas vocabulary:

* **W** the first spelling works;
* **A** a later spelling works (shown);
* **R** every spelling is refused by a ``dp.DPError`` (or dpframe's
  ``AttributeError`` subclasses) saying why;
* **X** it cannot be done: any other exception, or no spelling exists.

Nothing is hard-coded: the letter comes from running the spellings.
Run: ``MPLBACKEND=Agg python -m benchmarks.peer_tutorials``.
"""

from __future__ import annotations

import argparse
import datetime
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.peer_tutorial_steps import (
    DIFFPRIVLIB,
    OPENDP_ESSENTIAL,
    OPENDP_GROUPING,
    TUMULT,
    Step,
)
from benchmarks.releases import new_releases
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988


@dataclass
class Outcome:
    """The letter a step earned, the spelling that worked and one line of detail."""

    letter: str
    spelling: str
    detail: str
    tried: list[str] = field(default_factory=list)


def _short(value: Any) -> str:
    """One line describing a result (type and a glimpse, never more than 110 chars)."""
    if isinstance(value, pd.Series | pd.DataFrame):
        text = f"{type(value).__name__} {value.shape}"
    elif value is None:
        text = "done"
    else:
        text = f"{type(value).__name__}: " + " ".join(str(value).split())
    return text[:110]


def _refused(error: BaseException) -> bool:
    """A clear refusal: dpframe's own errors (its AttributeErrors are DPErrors too)."""
    return isinstance(error, dp.DPError)


def run_step(step: Step, namespace: dict[str, Any]) -> Outcome:
    """Try each spelling in order; the first that runs decides W (first) or A (later)."""
    if not step.spellings:
        return Outcome("X", "", step.note or "no dpframe spelling")
    failures: list[tuple[str, BaseException]] = []
    for index, spelling in enumerate(step.spellings):
        *body, last = spelling.split("\n")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                if body:
                    exec("\n".join(body), namespace)
                value = eval(last, namespace)
        except Exception as error:
            failures.append((spelling, error))
            continue
        letter = "W" if index == 0 else "A"
        detail = _short(value)
        if failures:
            first = failures[0][1]
            detail += f"  (as written: {type(first).__name__}: {' '.join(str(first).split())[:90]})"
        return Outcome(letter, spelling, detail, [s for s, _ in failures])
    letter = "R" if all(_refused(e) for _, e in failures) else "X"
    shown = [failures[0]] + ([failures[-1]] if len(failures) > 1 else [])
    detail = " | then: ".join(
        f"{type(e).__name__}: {' '.join(str(e).split())[:150]}" for _, e in shown
    )
    return Outcome(letter, failures[0][0], detail, [s for s, _ in failures])


# ---------------------------------------------------------------- data and sessions


def cps() -> pd.DataFrame:
    """The bundled CPS table."""
    table: pd.DataFrame = load_cps1988()
    return table


def checkouts() -> pd.DataFrame:
    """CPS rows given a deterministic person id: 1 to 3 rows per person (Tumult tutorial 6)."""
    data: pd.DataFrame = load_cps1988().copy()
    rng = np.random.default_rng(6)
    sizes = rng.integers(1, 4, len(data))
    ids = np.repeat(np.arange(len(data)), sizes)[: len(data)]
    data["member_id"] = ids.astype(str)
    return data


def fresh(epsilon: float = 1.0, delta: float = 0.0) -> dict[str, Any]:
    """A namespace with a throw-away session and the CPS frame ``pf``."""
    session = dp.Session(epsilon=epsilon, delta=delta, ledger=":memory:", name="peer")
    pf = session.private_frame(cps(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    return {"dp": dp, "pd": pd, "np": np, "session": session, "pf": pf, "df": cps()}


TUTORIALS: dict[str, tuple[tuple[Step, ...], Callable[[], dict[str, Any]]]] = {
    # OpenDP's pages build several contexts (ε=1 each); one session of ε=5 here.
    "OpenDP — Essential Statistics": (OPENDP_ESSENTIAL, lambda: fresh(5.0)),
    "OpenDP — Grouping": (OPENDP_GROUPING, lambda: fresh(5.0, 1e-6)),
    "Tumult Analytics — tutorials 1-6": (TUMULT, lambda: fresh(1.0)),
    "diffprivlib — notebooks/exploration.ipynb": (DIFFPRIVLIB, lambda: fresh(1.0)),
}


def main(argv: list[str] | None = None) -> int:
    """Run every tutorial's steps and print the table (also to ``--out``)."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="also write the report to this file")
    args = parser.parse_args(argv)
    lines = [f"Peer tutorials done as-is in dpframe — {datetime.date.today().isoformat()}", ""]
    totals: dict[str, int] = {}
    for title, (steps, make) in TUTORIALS.items():
        namespace = make()
        namespace.update(
            CPS1988_BOUNDS=CPS1988_BOUNDS,
            CPS1988_CATEGORIES=CPS1988_CATEGORIES,
            checkouts=checkouts,
        )
        outcomes = [run_step(step, namespace) for step in steps]
        counts = {k: sum(o.letter == k for o in outcomes) for k in "WARX"}
        for k, v in counts.items():
            totals[k] = totals.get(k, 0) + v
        summary = " ".join(f"{k}={v}" for k, v in counts.items())
        lines += [f"== {title}  ({len(steps)} steps: {summary})", ""]
        for number, (step, outcome) in enumerate(zip(steps, outcomes, strict=True), 1):
            lines.append(f"{number:2d} {outcome.letter}  {step.name}")
            lines.append(f"      peer: {step.peer}")
            if outcome.spelling:
                shown = outcome.spelling.replace("\n", "; ")
                lines.append(f"      dpframe: {shown}")
            lines.append(f"      -> {outcome.detail}")
            if step.note:
                lines.append(f"      note: {step.note}")
        lines.append("")
    lines.append("Totals: " + " ".join(f"{k}={v}" for k, v in totals.items()))
    report = "\n".join(lines)
    print(report)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            handle.write(report + "\n")
    return 0


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        raise SystemExit(main())
