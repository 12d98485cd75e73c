"""Bundled public data for examples and tests."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

__all__ = ["CPS1988_BOUNDS", "CPS1988_CATEGORIES", "cps1988_path", "load_cps1988"]

#: Public bounds for the CPS 1988 columns (chosen from the survey design, not the data).
CPS1988_BOUNDS: dict[str, tuple[float, float]] = {
    "wage": (0.0, 5000.0),
    "education": (0.0, 20.0),
    "experience": (-8.0, 64.0),
}

#: The public keys of the CPS 1988 categorical columns.
CPS1988_CATEGORIES: dict[str, list[str]] = {
    "ethnicity": ["cauc", "afam"],
    "smsa": ["yes", "no"],
    "region": ["northeast", "midwest", "south", "west"],
    "parttime": ["yes", "no"],
}


def cps1988_path() -> Path:
    """Where the bundled CPS 1988 CSV file is (for ``%dp_load`` and ``read_csv``)."""
    return Path(str(resources.files("dpframe.examples") / "data" / "cps1988.csv"))


def load_cps1988() -> pd.DataFrame:
    """The March 1988 Current Population Survey extract (28,155 men aged 18–70).

    Columns: wage (weekly, USD), education and experience (years), ethnicity
    (cauc/afam), smsa (yes/no), region (northeast/midwest/south/west),
    parttime (yes/no).  Source: the R package AER (Bierens and Ginther 2001).
    """
    path = resources.files("dpframe.examples") / "data" / "cps1988.csv"
    with resources.as_file(path) as file:
        return pd.read_csv(file)
