"""The query spec and release types shared by the field worker's per-library adapters.

Runs inside the other libraries' virtual environments (see
``benchmarks/field_worker.py``): standard library, numpy and sibling
modules that import nothing of dpframe only.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from benchmarks.field_costs import Cost

__all__ = ["NO_SVT", "Built", "CostProbes", "Release", "Releases", "Spec"]

#: A release: a zero-argument callable returning the released value(s).
Release = Callable[[], Any]
#: Per query role ("count", "sum", ..., see ``benchmarks.workload.query_names``):
#: a release, or the reason the library has none.
Releases = dict[str, "Release | str"]
#: Per query role: a zero-argument callable returning the query's privacy cost
#: in the library's own accounting (it may run the release once).
CostProbes = dict[str, Callable[[], Cost]]

NO_SVT = "no sparse vector / AboveThreshold"


class Built(NamedTuple):
    """What a library adapter builds over one frame."""

    releases: Releases
    #: role -> the library call, for the report.
    api: dict[str, str]
    costs: CostProbes


class Spec:
    """Query parameters written by ``run_field`` (so nothing is duplicated here)."""

    def __init__(self, raw: dict[str, Any]) -> None:
        self.value: str = raw["value"]
        self.low, self.high = (float(b) for b in raw["bounds"])
        self.small_key: str = raw["small_key"]
        self.large_key: str = raw["large_key"]
        self.cross_key: str | None = raw.get("cross_key")
        self.keys: dict[str, list[Any]] = raw["keys"]
        #: the total ε of every release.
        self.epsilon: float = float(raw["epsilon"])
        #: role -> label, e.g. "gb_count" -> "groupby state count".
        self.names: dict[str, str] = raw["names"]
        #: bounded numeric columns summarised by describe(): name -> (low, high).
        self.describe: dict[str, tuple[float, float]] = {
            k: (float(v[0]), float(v[1])) for k, v in raw["describe"].items()
        }
        #: the public candidates of a quantile over [low, high] (dpframe's grid).
        self.candidates: int = int(raw["quantile_candidates"])

    def grid(self, low: float, high: float) -> list[float]:
        return [float(x) for x in np.linspace(low, high, self.candidates)]

    def cross_keys(self) -> tuple[list[Any], list[Any]]:
        """The declared (large key, cross key) pairs, large key outer."""
        assert self.cross_key is not None
        large, cross = self.keys[self.large_key], self.keys[self.cross_key]
        return [a for a in large for _ in cross], [b for _ in large for b in cross]
