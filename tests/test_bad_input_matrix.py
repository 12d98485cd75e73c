"""A matrix of malformed inputs across the API: each ends in a DPError or a correct release.

Every case names its input and the expected outcome: a :class:`dp.DPError`
subclass, or ``RELEASE`` (a correct release).  For every case the harness checks:

* an error is the expected ``DPError`` subclass and was raised in dpframe's
  own code (never a traceback from deep inside pandas or numpy);
* an error message never contains the sentinel values planted in the data;
* an error charges nothing (the spend and the ledgers of all sessions are
  unchanged); a release leaves only ``released`` rows (never a charge without
  a release) and, where a value is checked, it is the right value: the
  sessions have ε = 10¹², so a query at ε = 10⁹ has noise of scale ~10⁻⁹.

The cases live in ``tests/bad_input_cases.py``.  (``tests/test_bad_input.py``
covers the basic privacy-parameter, column, bound and category errors; this
matrix does not repeat them.)
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import dpframe as dp
from tests.bad_input_cases import DATA_CASES, FORBIDDEN, RELEASE, Case, Ctx
from tests.bad_input_params import PARAMETER_CASES

CASES = DATA_CASES + PARAMETER_CASES

DPFRAME_DIR = str(Path(dp.__file__).parent)


def test_matrix_is_large_and_names_are_unique() -> None:
    names = [case.name for case in CASES]
    assert len(names) == len(set(names))
    assert len(CASES) >= 40
    assert sum(case.expect is RELEASE for case in CASES) >= 15
    assert sum(case.expect is not RELEASE for case in CASES) >= 25
    assert all(case.match for case in CASES if case.expect is not RELEASE)  # each names its refusal


@pytest.fixture
def ctx(tmp_path: Path) -> Ctx:
    path = tmp_path / "matrix-ledger.sqlite"
    return Ctx(
        pure=dp.Session(epsilon=1e12, ledger=path, name="pure"),
        zcdp=dp.Session(epsilon=1e12, delta=1e-3, ledger=path, name="zcdp", accounting="zcdp"),
        other=dp.Session(epsilon=1e12, ledger=path, name="other"),
        tmp=tmp_path,
    )


def _state(ctx: Ctx) -> list[tuple[dp.Budget, int]]:
    return [(s.spent, len(s.ledger)) for s in ctx.sessions]


@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_malformed_input(ctx: Ctx, case: Case) -> None:
    before = _state(ctx)
    if case.expect is not RELEASE:
        assert case.match is not None
        with pytest.raises(dp.DPError, match=case.match) as info:
            case.run(ctx)
        assert type(info.value) is case.expect or isinstance(info.value, case.expect), info.value
        origin = str(info.traceback[-1].path)
        assert origin.startswith(DPFRAME_DIR + os.sep), f"raised outside dpframe: {origin}"
        message = str(info.value)
        assert not any(secret in message for secret in FORBIDDEN), message
        assert _state(ctx) == before  # nothing charged, no ledger row
        return
    result = case.run(ctx)
    after = _state(ctx)
    assert after != before  # a release was charged...
    for session in ctx.sessions:
        assert set(session.ledger["status"]) <= {"released"}  # ...and every charge released
    assert ctx.other.spent == before[2][0]  # never charged to another session
    assert case.check is not None
    case.check(result)
