"""Composition readouts of a session's spend."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting.composition import advanced_composition, summarize
from dpframe.examples.datasets import CPS1988_BOUNDS


def _cell(table: pd.DataFrame, row: str, column: str) -> float:
    return float(table.loc[row, column])  # type: ignore[arg-type]


def test_advanced_composition_formula() -> None:
    k, eps, dprime = 50, 0.05, 1e-6
    expected = math.sqrt(2 * k * math.log(1 / dprime)) * eps + k * eps * math.expm1(eps)
    assert advanced_composition([eps] * k, dprime) == pytest.approx(expected, rel=1e-12)
    with pytest.raises(dp.InvalidBudgetError, match="needs 0 < delta' < 1"):
        advanced_composition([eps], 0.0)


@pytest.mark.fresh_releases
def test_pure_session_readouts(tmp_path: Path, cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=10.0, ledger=tmp_path / "l.sqlite")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS)
    for _ in range(40):
        pf.count(epsilon=0.05)
    summary = session.composition(delta=1e-6)
    table = summary.to_frame()
    assert summary.used == "basic" and bool(table.loc["basic", "used"])
    assert _cell(table, "basic", "epsilon") == pytest.approx(2.0)
    assert _cell(table, "basic", "epsilon") == pytest.approx(float(session.spent.epsilon))
    expected = math.sqrt(2 * 40 * math.log(1e6)) * 0.05 + 40 * 0.05 * math.expm1(0.05)
    assert _cell(table, "advanced", "epsilon") == pytest.approx(expected)
    assert _cell(table, "advanced", "delta") == pytest.approx(1e-6)
    assert _cell(table, "zCDP", "epsilon") == pytest.approx(
        40 * 0.05**2 / 2 + 2 * math.sqrt(40 * 0.05**2 / 2 * math.log(1e6))
    )
    assert bool(table["valid"].all())
    assert "uses: basic" in str(summary)


def test_advanced_never_reported_above_basic(tmp_path: Path, cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=10.0, ledger=tmp_path / "l.sqlite")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS)
    pf.count(epsilon=1.0)
    table = session.composition().to_frame()
    assert _cell(table, "advanced", "epsilon") == pytest.approx(1.0)


def test_zcdp_session_readouts(tmp_path: Path, cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1.0, delta=1e-6, accounting="zcdp", ledger=tmp_path / "l.sqlite")
    pf = session.private_frame(cps, bounds=CPS1988_BOUNDS)
    pf.count(epsilon=0.3)
    pf["wage"].mean(epsilon=0.3)
    summary = session.composition()
    table = summary.to_frame()
    assert summary.used == "zCDP"
    assert not bool(table.loc["advanced", "valid"])
    assert math.isnan(_cell(table, "advanced", "epsilon"))
    assert _cell(table, "zCDP", "epsilon") == pytest.approx(float(session.spent.epsilon), rel=1e-9)
    # Basic composition of zCDP releases (each converted at δ'/k) is never better than zCDP.
    assert _cell(table, "basic", "epsilon") > _cell(table, "zCDP", "epsilon")
    # The RDP conversion of the same Σρ on a grid of orders is close to the zCDP one.
    assert _cell(table, "RDP", "epsilon") == pytest.approx(
        _cell(table, "zCDP", "epsilon"), rel=0.05
    )
    assert "not valid here" in str(summary)


def test_summarize_empty_ledger() -> None:
    empty = pd.DataFrame(columns=["mechanism", "epsilon", "delta", "rho"])
    summary = summarize("pure", 0.0, empty)
    assert summary.releases == 0
    assert summary.to_frame()["epsilon"].fillna(0).sum() == 0
    with pytest.raises(dp.InvalidBudgetError, match=r"delta must be in \(0, 1\)"):
        summarize("pure", 0.0, empty, delta_prime=2.0)
