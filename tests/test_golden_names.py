"""Names that outlive a move: the wire's node JSON, the ledger's strings and the result classes.

Moving modules (the facade into verbs, the mechanisms into subpackages)
must not change what crosses the wire or what the ledger records: a curator
and its clients of different versions, and every existing ledger, depend on
them.  One release of every kind is made on a small public frame; its node's
JSON (:func:`dpframe.plan.codec.encode_node`), its ledger row's ``query`` and
``mechanism``, and the dataclass names of its encoded answer
(:func:`dpframe.remote.wire.encode_response`) are compared with
``tests/golden/names.json``, written once before the move.

To rewrite the golden file after a deliberate change of a name:
``DPFRAME_WRITE_GOLDEN=1 python -m pytest tests/test_golden_names.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.plan.codec import encode_node
from dpframe.remote.wire import encode_response

GOLDEN = Path(__file__).parent / "golden" / "names.json"
BIG = 1e4


def _frame() -> pd.DataFrame:
    rng = np.random.default_rng(3)  # test data only, not privacy noise
    n = 400
    frame: pd.DataFrame = pd.DataFrame(
        {
            "x": rng.uniform(0, 10, n),
            "y": rng.uniform(0, 1, n),
            "g": rng.choice(["a", "b", "c"], n),
            "h": rng.choice(["p", "q"], n),  # no declared keys: discovered
            "flag": rng.random(n) < 0.3,
        }
    )
    return frame


RELEASES: dict[str, Callable[[dp.PrivateFrame], Any]] = {
    "count": lambda pf: pf.count(epsilon=BIG),
    "sum": lambda pf: pf["x"].sum(epsilon=BIG),
    "grouped mean": lambda pf: pf.groupby("g")["x"].mean(epsilon=BIG),
    "quantile": lambda pf: pf["x"].quantile([0.25, 0.5], epsilon=BIG),
    "grouped median": lambda pf: pf.groupby("g")["x"].median(epsilon=BIG),
    "mode": lambda pf: pf["g"].mode(epsilon=BIG),
    "argmax": lambda pf: pf.groupby("g").argmax("sum", "x", epsilon=BIG),
    "describe": lambda pf: pf.describe(epsilon=BIG),
    "agg": lambda pf: pf.agg({"x": ["mean", "median"], "y": "sum"}, epsilon=BIG),
    "approx_bounds": lambda pf: pf["x"].approx_bounds(epsilon=BIG),
    "above_threshold": lambda pf: pf.above_threshold({"big": pf["x"] > 5}, 10, epsilon=BIG),
    "discover_keys": lambda pf: pf.discover_keys("h", epsilon=BIG, delta=1e-7),
    "discover then mean": lambda pf: pf.groupby("h")["x"].mean(epsilon=BIG, delta=1e-7),
    "randomized_response": lambda pf: pf["g"].randomized_response(epsilon=5),
    "laplace_copy": lambda pf: pf["x"].laplace_copy(epsilon=BIG),
    "kde": lambda pf: pf["x"].kde(1.0, epsilon=BIG, delta=1e-7, grid=8),
    "regression": lambda pf: pf.linear_regression(
        ["x"], "y", epsilon=BIG, delta=1e-7, steps=2, progress=False
    ),
    "corr": lambda pf: pf[["x", "y"]].corr(epsilon=BIG),
    "synthesize": lambda pf: pf[["x", "g"]].synthesize(epsilon=50, rows=5, bins=2, progress=False),
}


def _session() -> tuple[dp.Session, dp.PrivateFrame]:
    session = dp.Session(epsilon=1e6, delta=0.5, ledger=":memory:", accounting="approx")
    pf = session.private_frame(
        _frame(),
        bounds={"x": (0.0, 10.0), "y": (0.0, 1.0)},
        categories={"g": ["a", "b", "c"]},
    )
    return session, pf


def _dataclass_names(encoded: Any) -> list[str]:
    found: set[str] = set()
    stack = [encoded]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if "$dc" in item:
                found.add(str(item["$dc"]))
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return sorted(found)


def _observed() -> dict[str, dict[str, Any]]:
    observed: dict[str, dict[str, Any]] = {}
    for name, release in RELEASES.items():
        session, pf = _session()

        def make(
            release: Callable[[dp.PrivateFrame], Any] = release, pf: dp.PrivateFrame = pf
        ) -> Any:
            return release(pf)

        node = session.capture_node(make)
        result = make()
        row = session.ledger.iloc[-1]
        observed[name] = {
            "node": json.loads(json.dumps(encode_node(node))),
            "query": str(row["query"]),
            "mechanism": str(row["mechanism"]),
            "results": _dataclass_names(encode_response(result)),
        }
    return observed


@pytest.fixture(scope="module")
def observed() -> dict[str, dict[str, Any]]:
    return _observed()


def test_golden_file_covers_every_release(observed: dict[str, dict[str, Any]]) -> None:
    if os.environ.get("DPFRAME_WRITE_GOLDEN") == "1":
        GOLDEN.parent.mkdir(exist_ok=True)
        GOLDEN.write_text(json.dumps(observed, indent=1, sort_keys=True) + "\n")
    golden = json.loads(GOLDEN.read_text())
    assert sorted(golden) == sorted(RELEASES)


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_names_are_unchanged(name: str, observed: dict[str, dict[str, Any]]) -> None:
    golden = json.loads(GOLDEN.read_text())[name]
    seen = observed[name]
    assert seen["node"] == golden["node"], "the node's wire JSON changed"
    assert seen["query"] == golden["query"], "the ledger's query label changed"
    assert seen["mechanism"] == golden["mechanism"], "the ledger's mechanism name changed"
    assert seen["results"] == golden["results"], "the answer's dataclass names changed"
