"""Reproducible synthetic census-like data for the benchmarks.

The generator is a seeded :class:`numpy.random.Generator`: this is test data,
not privacy noise (dpframe's own noise never uses numpy's generators).
"""

from __future__ import annotations

from typing import Any, Literal, get_args

import numpy as np
import numpy.typing as npt
import pandas as pd

__all__ = [
    "AGES",
    "BOUNDS",
    "COUNTIES",
    "DEFAULT_SEED",
    "STATES",
    "KeyDtype",
    "as_key_dtype",
    "categories",
    "census_frame",
    "key_dtypes",
]

#: The fixed seed of every benchmark data set.
DEFAULT_SEED = 20240917

#: The 50 US postal codes: the public keys of ``state``.
STATES: tuple[str, ...] = (
    *("AL", "AK", "AZ", "AR", "CA", "CO", "CT", "DE", "FL", "GA", "HI", "ID", "IL"),
    *("IN", "IA", "KS", "KY", "LA", "ME", "MD", "MA", "MI", "MN", "MS", "MO", "MT"),
    *("NE", "NV", "NH", "NJ", "NM", "NY", "NC", "ND", "OH", "OK", "OR", "PA", "RI"),
    *("SC", "SD", "TN", "TX", "UT", "VT", "VA", "WA", "WV", "WI", "WY"),
)
_COUNTIES_PER_STATE = 20

#: 1,000 county keys, 20 per state ("CA-007"): the public keys of ``county``.
COUNTIES: tuple[str, ...] = tuple(
    f"{state}-{i:03d}" for state in STATES for i in range(1, _COUNTIES_PER_STATE + 1)
)

#: The 100 ages 0..99: public keys of ``age``, so that county × age has 100,000 keys.
AGES: tuple[int, ...] = tuple(range(100))

#: Public clamping bounds of the synthetic table.
BOUNDS: dict[str, tuple[float, float]] = {"income": (0.0, 1e6), "age": (0.0, 99.0)}

#: How the key columns are stored.  ``str`` is what pandas 3 ``read_csv`` gives
#: (the default string dtype, Arrow-backed when pyarrow is installed);
#: ``object`` is the pre-3.0 default; ``category`` is a pandas Categorical.
KeyDtype = Literal["str", "object", "category"]


def key_dtypes() -> tuple[str, ...]:
    """The valid values of :data:`KeyDtype`."""
    return get_args(KeyDtype)


def as_key_dtype(name: str) -> KeyDtype:
    """Check a key dtype name given on the command line."""
    if name not in key_dtypes():
        raise ValueError(f"key_dtype must be one of {key_dtypes()}, got {name!r}")
    return name  # type: ignore[return-value]


def categories() -> dict[str, list[Any]]:
    """The declared public keys of the synthetic table (``age`` also has bounds)."""
    return {"state": list(STATES), "county": list(COUNTIES), "age": list(AGES)}


def _key_column(codes: npt.NDArray[np.intp], keys: tuple[str, ...], dtype: KeyDtype) -> Any:
    if dtype == "category":
        return pd.Categorical.from_codes(codes, categories=pd.Index(list(keys)))
    values = np.array(keys, dtype=object)[codes]
    if dtype == "object":
        return pd.Series(values, dtype=object, copy=False)
    return pd.Series(values, dtype="str")


def census_frame(n: int, *, seed: int = DEFAULT_SEED, key_dtype: KeyDtype = "str") -> pd.DataFrame:
    """A census-shaped table of ``n`` rows, identical for the same ``n`` and ``seed``.

    Columns:
        age: int64, uniform on 0..99.
        income: float64, lognormal (median about 36,000, long right tail; a
            few rows exceed the public bound 1e6 and are clamped by dpframe).
        state: one of 50 keys; county: one of 1,000 keys nested in the
            states ("CA-007"), with skewed (lognormal) county populations.
        employed: bool, true for about 60% of rows.

    Args:
        n: number of rows.
        seed: the generator seed.
        key_dtype: how ``state`` and ``county`` are stored (see :data:`KeyDtype`).
    """
    key_dtype = as_key_dtype(key_dtype)
    rng = np.random.default_rng(seed)
    weights = rng.lognormal(0.0, 1.0, len(COUNTIES))
    county = rng.choice(len(COUNTIES), size=n, p=weights / weights.sum())
    state = county // _COUNTIES_PER_STATE
    frame: pd.DataFrame = pd.DataFrame(
        {
            "age": rng.integers(0, 100, size=n, dtype=np.int64),
            "income": rng.lognormal(10.5, 1.0, size=n),
            "state": _key_column(state, STATES, key_dtype),
            "county": _key_column(county, COUNTIES, key_dtype),
            "employed": rng.random(n) < 0.6,
        }
    )
    return frame
