"""The auditor on a private join (issue 32): one person removed from every table at once.

The pair: visits and claims of one ID space, and the same two tables without
one person who has the most rows either table keeps (5 visits, 5 claims).
Joined on the ID with ``max_rows=5``, that person has 25 joined rows and the
engine keeps 5, so a count released at ε = 1 moves by at most 5 (its noise
scale) and passes.  The variant without the truncation after the join keeps
all 25 rows at the same charge: a loss of 5·ε on this pair, which the auditor
must catch.  Every draw goes through the public release path (a session per
batch; the join is computed once per session, so its draws share one subset,
which does not change a count here: every person's kept rows are min(rows, 5)).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.backends import joins as backend_joins

EPSILON = 1.0
LIMIT = 5
SAMPLES = 600
VOTES = 3


def _tables(with_person: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(7)
    ids = np.repeat(np.arange(40), rng.integers(1, LIMIT + 1, 40))
    visits = pd.DataFrame({"pid": ids, "cost": rng.uniform(0, 10, len(ids))})
    claims = pd.DataFrame({"pid": ids[::2], "paid": rng.uniform(0, 10, len(ids[::2]))})
    if with_person:  # the person at the limit in both tables
        visits = pd.concat(
            [visits, pd.DataFrame({"pid": [999] * LIMIT, "cost": [5.0] * LIMIT})],
            ignore_index=True,
        )
        claims = pd.concat(
            [claims, pd.DataFrame({"pid": [999] * LIMIT, "paid": [5.0] * LIMIT})],
            ignore_index=True,
        )
    return visits, claims


def _sampler(truncate: bool) -> Callable[[tuple[pd.DataFrame, pd.DataFrame], int], list[float]]:
    def draw(data: tuple[pd.DataFrame, pd.DataFrame], n: int) -> list[float]:
        visits, claims = data
        with pytest.MonkeyPatch.context() as mp:
            if not truncate:  # the wrong variant: every joined row kept
                mp.setattr(backend_joins, "kept_positions", lambda units, *_: np.arange(len(units)))
            session = dp.Session(epsilon=EPSILON * n + 1, ledger=":memory:")
            unit = dp.PrivacyUnit("pid", max_rows=LIMIT, id_space="persons")
            v = session.private_frame(visits, privacy_unit=unit)
            c = session.private_frame(claims, privacy_unit=unit)
            joined = v.merge(c, on="pid", max_rows=LIMIT)
            return [float(joined.count(epsilon=EPSILON)) for _ in range(n)]

    return draw


@pytest.mark.parametrize(("truncate", "flagged"), [(True, False), (False, True)])
def test_a_join_without_truncation_is_caught_and_the_join_passes(
    truncate: bool, flagged: bool
) -> None:
    result = dp.audit.audit(
        _sampler(truncate),
        _tables(with_person=True),
        _tables(with_person=False),
        epsilon=EPSILON,
        samples=SAMPLES,
        votes=VOTES,
        batched=True,
        name="join, one person removed from both tables",
    )
    assert result.violation is flagged, repr(result)
