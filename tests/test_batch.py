"""session.batch(): several releases admitted all or none, in one durable commit."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import dpframe as dp
from tests.sessions import local

BOUNDS = {"wage": (0, 5000), "education": (0, 20)}
CATEGORIES = {"region": ["northeast", "midwest", "south", "west"]}


def _frame(cps: pd.DataFrame, ledger: str = ":memory:", epsilon: float = 1.0) -> dp.PrivateFrame:
    session = dp.Session(epsilon=epsilon, ledger=ledger)
    return session.private_frame(cps, bounds=BOUNDS, categories=CATEGORIES)


def test_a_batch_admits_all_then_computes_each(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    with local(pf).batch() as batch:
        count = batch.add(lambda: pf.count(epsilon=0.25))
        counts = batch.add(lambda: pf["region"].value_counts(epsilon=0.25))
        described = batch.add(lambda: pf.describe(epsilon=0.25))
        assert pf.session.ledger.empty  # nothing charged inside the block
        with pytest.raises(dp.DPError, match="available when"):
            _ = count.result
    # Discrete Laplace noise of scale 4 (ε = 0.25): |noise| >= 80 with chance 2.3e-9 (the
    # earlier bar of 40 failed by chance 5.1e-5 a run).
    assert abs(float(count.result) - len(cps)) < 80
    assert counts.result.index[0] == "south"  # sorted by released count (post-processing)
    assert list(described.result.columns) == ["wage", "education"]
    assert pf.session.spent == dp.Budget("0.75")
    assert list(pf.session.ledger["status"]) == ["released"] * 3


def test_a_batch_over_budget_charges_nothing(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    pf.count(epsilon=0.5)
    batch = local(pf).batch()
    with pytest.raises(dp.BudgetExceededError, match="Requested"), batch as queue:
        queue.add(lambda: pf.count(epsilon=0.3))
        queue.add(lambda: pf["wage"].mean(epsilon=0.3))
    assert pf.session.spent == dp.Budget("0.5")
    assert len(pf.session.ledger) == 1


def test_an_error_inside_the_block_admits_nothing(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    batch = local(pf).batch()
    with pytest.raises(ValueError, match="changed my mind"), batch as queue:
        queue.add(lambda: pf.count(epsilon=0.3))
        raise ValueError("changed my mind")
    assert pf.session.ledger.empty


def test_bad_input_is_refused_when_added(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    with local(pf).batch() as batch:
        with pytest.raises(dp.SchemaError, match="needs a numeric column"):
            batch.add(lambda: pf["region"].mean(epsilon=0.1))
        with pytest.raises(dp.SchemaError, match="made no release"):
            batch.add(lambda: None)
    assert len(batch) == 0 and pf.session.ledger.empty


def test_a_failing_release_keeps_its_charge_and_raises_on_read(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    calls = {"n": 0}

    def flaky() -> object:
        calls["n"] += 1
        if calls["n"] == 2:  # captured fine, fails when the batch computes it
            raise RuntimeError("boom")
        return pf.count(epsilon=0.2)

    with local(pf).batch() as batch:
        failing = batch.add(flaky)
        fine = batch.add(lambda: pf.count(epsilon=0.2))
    assert float(fine.result) > 0
    with pytest.raises(RuntimeError, match="boom"):
        _ = failing.result
    assert pf.session.spent == dp.Budget("0.4")  # the failed one's charge stands
    assert list(pf.session.ledger["status"]) == ["failed", "released"]


def test_a_function_that_changes_its_release_is_refused(cps: pd.DataFrame) -> None:
    pf = _frame(cps)
    epsilons = iter([0.1, 0.2])
    with local(pf).batch() as batch:
        changing = batch.add(lambda: pf.count(epsilon=next(epsilons)))
    with pytest.raises(dp.DPError, match="different release"):
        _ = changing.result
    assert list(pf.session.ledger["status"]) == ["failed"]


def test_a_batch_is_one_durable_commit(cps: pd.DataFrame, tmp_path: Path) -> None:
    pf = _frame(cps, ledger=str(tmp_path / "ledger.sqlite"), epsilon=2)
    with local(pf).batch() as batch:
        for _ in range(5):
            batch.add(lambda: pf.count(epsilon=0.1))
    reopened = dp.Session(epsilon=2, ledger=str(tmp_path / "ledger.sqlite"))
    assert reopened.spent == dp.Budget("0.5")
