"""The second half of the malformed inputs: privacy parameters, empty results, mixed sessions,
files and ledgers (see ``tests/bad_input_cases.py`` for the data-side half and the helpers).
"""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pandas as pd

import dpframe as dp
from tests.bad_input_cases import (
    EXACT,
    RELEASE,
    Case,
    _write,
    across,
    near,
    noisy,
    people_frame,
    series_near,
    within,
)

PARAMETER_CASES: list[Case] = [
    # privacy parameters
    Case(
        "epsilon 1e-12: count",
        lambda c: people_frame(c.pure).count(epsilon=1e-12),
        RELEASE,
        noisy(1e11),
    ),
    Case(
        "epsilon 1e-12: sum",
        lambda c: people_frame(c.pure)["wage"].sum(epsilon=1e-12),
        RELEASE,
        noisy(1e13),
    ),
    Case(
        "epsilon 1e-12: quantile",
        lambda c: people_frame(c.pure)["wage"].quantile(0.5, epsilon=1e-12),
        RELEASE,
        within(0, 100),
    ),
    Case(
        "epsilon 1e12 (the whole budget): mean",
        lambda c: people_frame(c.pure)["wage"].mean(epsilon=1e12),
        RELEASE,
        near((100 + 10 + 20 + 30) / 4),
    ),
    Case(
        "epsilon 2e12 (over the budget)",
        lambda c: people_frame(c.pure).count(epsilon=2e12),
        dp.BudgetExceededError,
        match="Privacy budget exceeded; nothing was charged",
    ),
    Case(
        "epsilon 10**400",
        lambda c: people_frame(c.pure).count(epsilon=10**400),
        dp.BudgetExceededError,
        match="Privacy budget exceeded; nothing was charged",
    ),
    Case(
        "epsilon a numpy array",
        lambda c: people_frame(c.pure).count(epsilon=np.array([0.5])),  # type: ignore[arg-type]
        dp.InvalidBudgetError,
        match=r"epsilon must be one number, not an array .*\(ndarray of shape \(1,\)\)",
    ),
    Case(
        "epsilon True",
        lambda c: people_frame(c.pure).count(epsilon=True),
        dp.InvalidBudgetError,
        match=r"epsilon must be a number, got True\.",
    ),
    Case(
        "epsilon Decimal('NaN')",
        lambda c: people_frame(c.pure).count(epsilon=Decimal("NaN")),
        dp.InvalidBudgetError,
        match=r"epsilon must be finite, got Decimal\('NaN'\)\.",
    ),
    Case(
        "epsilon pd.NA",
        lambda c: people_frame(c.pure).count(epsilon=pd.NA),  # type: ignore[arg-type]
        dp.InvalidBudgetError,
        match=r"epsilon must be a number, got NAType\.",
    ),
    Case(
        "epsilon complex",
        lambda c: people_frame(c.pure).count(epsilon=1j),  # type: ignore[arg-type]
        dp.InvalidBudgetError,
        match=r"epsilon must be a number, got complex\.",
    ),
    Case(
        "epsilon '1/0'",
        lambda c: people_frame(c.pure).count(epsilon="1/0"),
        dp.InvalidBudgetError,
        match=r"epsilon must be a number, not the string '1/0'; write it without quotes",
    ),
    Case(
        "epsilon numpy float64: count",
        lambda c: people_frame(c.pure).count(epsilon=np.float64(EXACT)),
        RELEASE,
        near(5),
    ),
    Case(
        "rho NaN (zCDP session)",
        lambda c: people_frame(c.zcdp).count(rho=float("nan")),
        dp.InvalidBudgetError,
        match=r"rho must be finite, got nan\.",
    ),
    Case(
        "delta inf (zCDP session)",
        lambda c: people_frame(c.zcdp).count(rho=0.1, delta=float("inf")),
        dp.InvalidBudgetError,
        match=r"delta must be finite, got inf\.",
    ),
    Case(
        "session epsilon inf",
        lambda c: dp.Session(epsilon=float("inf"), ledger=c.tmp / "inf.sqlite"),
        dp.InvalidBudgetError,
        match=r"epsilon must be finite, got inf\.",
    ),
    Case(
        "quantile q=NaN",
        lambda c: people_frame(c.pure)["wage"].quantile(np.nan, epsilon=1),
        dp.SchemaError,
        match=r"A quantile must be in \[0, 1\], got nan\.",
    ),
    Case(
        "quantile q=None",
        lambda c: people_frame(c.pure)["wage"].quantile(None, epsilon=1),
        dp.SchemaError,
        match=r"A quantile must be a number in \[0, 1\], got None\.",
    ),
    Case(
        "hist with 10**9 bins",
        lambda c: people_frame(c.pure)["wage"].hist(10**9, epsilon=1),
        dp.SchemaError,
        match=r"hist\(bins=\.\.\.\) takes at most 16777216 bins\.",
    ),
    Case(
        "hist edges with NaN",
        lambda c: people_frame(c.pure)["wage"].hist([0, np.nan, 5], epsilon=1),
        dp.SchemaError,
        match=r"hist\(bins=\.\.\.\) edges must be finite and",
    ),
    Case(
        "above_threshold with a NaN threshold",
        lambda c: (lambda p: p.above_threshold([p["wage"] > 1], np.nan, epsilon=1))(
            people_frame(c.pure)
        ),
        dp.SchemaError,
        match=r"threshold must be a finite number\.",
    ),
    # zero rows
    Case(
        "filter to zero rows: mean",
        lambda c: (lambda p: p[p["wage"] > 1e12]["wage"].mean(epsilon=EXACT))(people_frame(c.pure)),
        RELEASE,
        within(0, 100),
    ),
    Case(
        "filter to zero rows: var",
        lambda c: (lambda p: p[p["wage"] > 1e12]["wage"].var(epsilon=EXACT))(people_frame(c.pure)),
        RELEASE,
        within(0, 50**2),
    ),
    Case(
        "filter to zero rows: quantile",
        lambda c: (lambda p: p[p["age"] < 0]["age"].quantile(0.5, epsilon=EXACT))(
            people_frame(c.pure)
        ),
        RELEASE,
        within(0, 100),
    ),
    Case(
        "filter to zero rows: grouped count",
        lambda c: (lambda p: p[p["age"] < 0].groupby("region").count(epsilon=EXACT))(
            people_frame(c.pure)
        ),
        RELEASE,
        series_near({"south": 0, "west": 0}),
    ),
    Case(
        "zero columns selected: count",
        lambda c: people_frame(c.pure)[[]].count(epsilon=EXACT),
        RELEASE,
        near(5),
    ),
    # expressions mixing frames from two sessions
    Case(
        "arithmetic across two sessions' frames (other data)",
        across(lambda a, b: a["wage"] + b["wage"]),
        dp.SchemaError,
        match="wage comes from another frame where it means",
    ),
    Case(
        "filter by another session's condition (other data)",
        across(lambda a, b: a[b["wage"] > 1]),
        dp.SchemaError,
        match=r"\(wage > 1\) comes from another frame where it",
    ),
    Case(
        "assign a column of another session's frame (other data)",
        across(lambda a, b: a.assign(w=b["wage"])),
        dp.SchemaError,
        match="wage comes from another frame where it means",
    ),
    Case(
        "above_threshold with another session's condition (other data)",
        across(lambda a, b: a.above_threshold([b["wage"] > 1], 1, epsilon=1)),
        dp.SchemaError,
        match=r"\(wage > 1\) comes from another frame where it",
    ),
    Case(
        "groupby by another session's series",
        across(lambda a, b: a.groupby(b["region"])),
        dp.SchemaError,
        match=r"region comes from another frame where it means something else",
    ),
    Case(
        "filter by another session's condition (same data): charged here only",
        lambda c: (lambda a, b: a[b["wage"] > 15].count(epsilon=EXACT))(
            people_frame(c.pure), people_frame(c.other)
        ),
        RELEASE,
        near(3),
    ),
    # files and ledgers
    Case(
        "read_csv with an unknown keyword",
        lambda c: c.pure.read_csv(_write(c, "a.csv", b"x\n1\n"), nonsense=1),
        dp.InvalidArgumentError,
        match=r"the reader refused its arguments \(nonsense\);",
    ),
    Case(
        "read_csv of random bytes",
        lambda c: c.pure.read_csv(_write(c, "r.csv", bytes(range(256)) * 4)),
        dp.SchemaError,
        match=r"r\.csv': (ParserError|UnicodeDecodeError)\.",  # the latter before pandas 3
    ),
    Case(
        "read_parquet of a CSV file",
        lambda c: c.pure.read_parquet(_write(c, "a.parquet", b"x\n1\n")),
        dp.SchemaError,
        match=r"ArrowInvalid\.",
    ),
    Case(
        "ledger path is a folder",
        lambda c: dp.Session(epsilon=1, ledger=c.tmp),
        dp.LedgerError,
        match=r"is a folder; pass a file path\.",
    ),
    Case(
        "ledger= an int",
        lambda c: dp.Session(epsilon=1, ledger=5),  # type: ignore[arg-type]
        dp.LedgerError,
        match="ledger= takes a file path, ':memory:', a Ledger",
    ),
    Case(
        "pf[0:2]",
        lambda c: people_frame(c.pure)[0:2],
        dp.SchemaError,
        match="Index a PrivateFrame with a column name, a list",
    ),
]
