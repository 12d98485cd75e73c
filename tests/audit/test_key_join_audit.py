"""The auditor on a join on another key and on a merge with a public table whose key repeats.

Join on another key (``k=2``): people (one row each) and their spending (two
rows each) in households; one person of a large household is removed from
both tables.  With each side cut to 2 rows per household, the join's count
moves by little and its charge covers S = 2·(1·2 + 2·2) = 12 rows: passes.
The variant without the cut per household keeps every row (a household of
10 people and 20 spending rows gives 200 joined rows, 162 without the
person): the count moves by 38 at a charge for 12, which the auditor must
catch.

A public table whose key repeats 8 times: a row-level frame where the
removed row's key has 8 rows in the table.  Charged for 8 rows, the count
passes; the variant that states the stability of a unique key (1 row) is
caught.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.backends import joins as backend_joins
from dpframe.engine import joins as engine_joins
from dpframe.plan import joins as plan_joins
from dpframe.plan.nodes import Source

EPSILON = 1.0
SAMPLES = 600
VOTES = 3
Pair = tuple[pd.DataFrame, pd.DataFrame]


def _households(with_person: bool) -> Pair:
    rng = np.random.default_rng(9)
    hh = np.concatenate([np.full(10, 0.0), rng.integers(1, 8, 30).astype(float)])
    people = pd.DataFrame({"pid": np.arange(40), "hh": hh})
    spending = pd.DataFrame({"pid": np.repeat(np.arange(40), 2), "hh": np.repeat(hh, 2)})
    if not with_person:  # person 0 (household 0, the large one) removed from both tables
        people, spending = people[people["pid"] != 0], spending[spending["pid"] != 0]
    return people.reset_index(drop=True), spending.reset_index(drop=True)


def _key_sampler(cut: bool) -> Callable[[Pair, int], list[float]]:
    def draw(data: Pair, n: int) -> list[float]:
        people, spending = data
        with pytest.MonkeyPatch.context() as mp:
            if not cut:  # the wrong variant: every row kept on both sides
                mp.setattr(backend_joins, "per_key", lambda frame, *_: frame)
            session = dp.Session(epsilon=EPSILON * n + 1, ledger=":memory:")
            a = session.private_frame(
                people, privacy_unit=dp.PrivacyUnit("pid", 1, id_space="persons")
            )
            b = session.private_frame(
                spending, privacy_unit=dp.PrivacyUnit("pid", 2, id_space="persons")
            )
            joined = a.merge(b, on="hh", k=2)
            return [float(joined.count(epsilon=EPSILON)) for _ in range(n)]

    return draw


@pytest.mark.parametrize(("cut", "flagged"), [(True, False), (False, True)])
def test_a_key_join_without_its_cut_is_caught_and_the_join_passes(cut: bool, flagged: bool) -> None:
    result = dp.audit.audit(
        _key_sampler(cut),
        _households(with_person=True),
        _households(with_person=False),
        epsilon=EPSILON,
        samples=SAMPLES,
        votes=VOTES,
        batched=True,
        name="join on a household key, one person removed from both tables",
    )
    assert result.violation is flagged, repr(result)


TABLE = pd.DataFrame({"key": ["a"] * 8 + ["b"], "w": np.arange(9.0)})


def _rows(with_row: bool) -> pd.DataFrame:
    keys = ["b"] * 30 + (["a"] if with_row else [])
    rows: pd.DataFrame = pd.DataFrame({"key": keys, "x": np.ones(len(keys))})
    return rows


def _public_sampler(multiplied: bool) -> Callable[[pd.DataFrame, int], list[float]]:
    def draw(rows: pd.DataFrame, n: int) -> list[float]:
        with pytest.MonkeyPatch.context() as mp:
            if not multiplied:  # the wrong variant: the stability of a unique key

                def unique(how: str, left: Source, right: Source) -> int:
                    return left.unit_rows

                mp.setattr(plan_joins, "default_max_rows", unique)
                mp.setattr(engine_joins, "default_max_rows", unique)
            session = dp.Session(epsilon=EPSILON * n + 1, ledger=":memory:")
            pf = session.private_frame(rows, categories={"key": ["a", "b"]})
            merged = pf.merge(TABLE, on="key", how="inner")
            return [float(merged.count(epsilon=EPSILON)) for _ in range(n)]

    return draw


@pytest.mark.parametrize(("multiplied", "flagged"), [(True, False), (False, True)])
def test_a_repeating_public_merge_charged_as_unique_is_caught(
    multiplied: bool, flagged: bool
) -> None:
    result = dp.audit.audit(
        _public_sampler(multiplied),
        _rows(with_row=True),
        _rows(with_row=False),
        epsilon=EPSILON,
        samples=SAMPLES,
        votes=VOTES,
        batched=True,
        name="merge with a public table whose key repeats 8 times, one row removed",
    )
    assert result.violation is flagged, repr(result)
