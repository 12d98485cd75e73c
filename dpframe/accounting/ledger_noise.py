"""Checking the noise calibrations a ledger row records against its charge.

A row's ``noise`` column (schema 9) lists the calibrations its release made
(:mod:`dpframe.mechanisms.calibration.recorded`): each names its allocation
(Laplace ε or Gaussian ρ, and the currency), the sensitivity, quantum and
spread, and the noise parameter and grid chosen.  :func:`check_noise`
recomputes each with the mechanisms' own calibration function
(:func:`~dpframe.mechanisms.calibration.additive.noise_for`) and checks that
no allocation exceeds the row's charge.
"""

from __future__ import annotations

import json
from fractions import Fraction
from typing import Any

from dpframe.accounting.accountants import Charge
from dpframe.errors import DPError
from dpframe.mechanisms.calibration.additive import noise_for
from dpframe.mechanisms.core.allocation import NoiseAllocation

__all__ = ["check_noise"]


def check_noise(noise: str | None, charge: Charge, accounting: str) -> list[str]:
    """The problems of a row's recorded calibrations (empty when each matches its cost).

    Args:
        noise: the row's ``noise`` column (None: nothing recorded, nothing to check).
        charge: the row's charge.
        accounting: the session's accounting (``pure``, ``approx``, ``zcdp``, ``gdp``).
    """
    if noise is None:
        return []
    try:
        entries = json.loads(noise)
        if not isinstance(entries, list):
            raise ValueError("not a list")
    except ValueError:
        return ["its recorded noise calibrations are not readable JSON (edited)"]
    problems: list[str] = []
    for index, entry in enumerate(entries):
        problem = _check_entry(entry, charge)
        if problem is not None:
            problems.append(f"noise calibration {index}: {problem}")
    return problems


def _check_entry(entry: Any, charge: Charge) -> str | None:
    try:
        kind = entry["kind"]
        if kind not in ("laplace", "gaussian") or entry["currency"] not in ("zcdp", "gdp"):
            return "an unknown kind of noise"
        allocation = NoiseAllocation(kind, Fraction(entry["allocation"]), entry["currency"])
        _, _, spec = noise_for(
            int(entry["sensitivity"]), float(entry["quantum"]), allocation, int(entry["spread"])
        )
        recorded, grid = Fraction(entry["parameter"]), float(entry["grid"])
    except (KeyError, TypeError, ValueError, ZeroDivisionError, DPError) as exc:
        return f"not a calibration the mechanisms make ({type(exc).__name__})"
    if spec.parameter != recorded or spec.grid != grid:
        return (
            f"the recorded noise ({entry['parameter']} on a grid of {entry['grid']}) is not "
            f"what the mechanism calibrates for its allocation and sensitivity "
            f"({spec.parameter} on {spec.grid})"
        )
    if not _within(allocation, charge):
        return f"its allocation ({kind} {entry['allocation']}) exceeds the row's charge"
    return None


def _within(allocation: NoiseAllocation, charge: Charge) -> bool:
    """Whether one calibration's allocation fits within the row's charge."""
    if allocation.kind == "gaussian":
        return allocation.parameter <= charge.rho
    if charge.epsilon > 0:
        return allocation.parameter <= charge.epsilon
    return allocation.parameter**2 / 2 <= charge.rho  # ε-DP is ε²/2-zCDP
