"""Measure the worst-case cost model on this machine (synthetic, public data only).

:class:`~dpframe.curator.worst_case.CostModel`'s defaults bound the slowest
kind of each unit of work measured on the 2-core test machine.  A data owner
on another machine measures their own with :func:`calibrate` and puts the
numbers in the catalog's ``[server.cost]`` table
(``python -m benchmarks.run_cost_calibration`` prints them beside the
defaults).  Every unit is the slowest of several kinds, each timed as the
least of ``repeat`` runs (the least is the machine's cost; the rest is other
load):

* ``row_op_seconds``: one expression node per row, the slowest vectorized
  kind (arithmetic, comparisons of numbers and text, ``clip``, ``.dt``,
  ``to_period``, numpy functions, ``where``), and a count's filter and
  group index per row;
* ``hash_row_seconds``: a row looked up in a short public list (``isin``,
  ``map`` and ``cut`` of numbers and text);
* ``list_item_seconds``: one row against one more item of a public list
  (``isin`` of text, ``map`` of text, ``cut`` with uneven edges: 10,000
  items against 10);
* ``text_value_seconds`` / ``regex_value_seconds``: one call per distinct
  value (``upper``, ``strip``, ``len``, plain ``contains`` and ``replace`` /
  ``contains`` with a regular expression, ``case=False`` replace), on short
  values, all distinct;
* ``text_char_seconds``: one more character per value (1,000 against 8);
* ``text_match_seconds``: one match of a replace that calls Python per
  match (every character a match);
* ``cell_seconds``, ``key_seconds``, ``row_noise_seconds`` and
  ``row_step_seconds`` from whole releases (a histogram's bins, a discovery
  of distinct keys, a Laplace copy, a regression's noisy steps), each the
  difference of two sizes (the fixed costs cancel);
* ``overhead_seconds``: the fixed cost of one part, the slowest kind of
  release (:data:`KINDS`, over 200 rows) divided by its parts;
* ``flop_seconds``: a Cholesky factor of a 1,024 x 1,024 matrix (a kernel
  density estimate's grid), per floating-point operation.

The synthetic copies' units (``tree_fit_seconds``, ``junction_fit_seconds``,
``junction_cell_seconds``, ``candidate_seconds``) are kept as given: they are
measured with the synthetic-copy benchmarks.

Example:
    >>> model = calibrate(rows=100_000)  # doctest: +SKIP
    >>> model.text_value_seconds  # doctest: +SKIP
    1.1e-06
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from dpframe.backends.evaluate import Rows, apply
from dpframe.curator.worst_case import CostModel
from dpframe.engine.reruns import fresh_release
from dpframe.plan.dag import DagBuilder
from dpframe.plan.releases import ReleaseNode

__all__ = ["KINDS", "calibrate", "measure", "synthetic_frame"]

#: Characters of the short text values (all distinct).
_SHORT = 8
#: Characters of the long text values.
_LONG = 1_000


_EPS = 1e6
#: One release of every kind but synthetic copies, over :func:`synthetic_frame`'s columns.
KINDS: dict[str, Callable[[dp.PrivateFrame], object]] = {
    "count": lambda pf: pf.count(epsilon=_EPS),
    "mean": lambda pf: pf["x"].mean(epsilon=_EPS),
    "var": lambda pf: pf["x"].var(epsilon=_EPS),
    "grouped mean": lambda pf: pf.groupby("cat")["x"].mean(epsilon=_EPS),
    "hist": lambda pf: pf["x"].hist(bins=20, epsilon=_EPS),
    "quantile": lambda pf: pf["x"].quantile([0.25, 0.75], epsilon=_EPS),
    "grouped quantile": lambda pf: pf.groupby("cat")["x"].median(epsilon=_EPS),
    "mode": lambda pf: pf["cat"].mode(epsilon=_EPS),
    "argmax": lambda pf: pf.groupby("cat").argmax("mean", "x", epsilon=_EPS),
    "agg": lambda pf: pf.agg({"x": ["mean", "sum"], "n": "median"}, epsilon=_EPS),
    "laplace copy": lambda pf: pf["x"].laplace_copy(epsilon=_EPS),
    "randomized response": lambda pf: pf["cat"].randomized_response(epsilon=5),
    "sparse vector": lambda pf: pf.above_threshold(
        {"big": pf["x"] > 50, "a": pf["cat"] == "a"}, 10, epsilon=_EPS
    ),
    "discover keys": lambda pf: pf.discover_keys("t", epsilon=_EPS, delta=1e-6),
    "discover then aggregate": lambda pf: pf.groupby("t")["x"].mean(epsilon=_EPS, delta=1e-6),
    "kde": lambda pf: pf["x"].kde(5.0, epsilon=_EPS, grid=32),  # its grid: flop_seconds
    "linear regression": lambda pf: pf.linear_regression(["x"], "n", epsilon=_EPS, steps=5),
    "iterative regression": lambda pf: pf.linear_regression(
        ["x"], "n", epsilon=_EPS, delta=1e-6, analysis="iteration", passes=1
    ),
    "logistic regression": lambda pf: pf.assign(high=pf["x"] > 50).logistic_regression(
        ["x", "n"], "high", epsilon=_EPS, steps=5
    ),
    "corr": lambda pf: pf[["x", "n"]].corr(epsilon=_EPS),
    "describe": lambda pf: pf[["x", "n"]].describe(epsilon=_EPS),
    "approx bounds": lambda pf: pf["x"].approx_bounds(epsilon=_EPS),
}


def synthetic_frame(rows: int, length: int = _SHORT) -> pd.DataFrame:
    """Public, made-up rows: numbers, a few categories, distinct text, dates (no randomness)."""
    index = np.arange(rows)
    pad = "ab1-" * (length // 4 + 1)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "x": (index * 7919 % 1000) / 10.0,
            "n": index % 50,
            "cat": np.array(["a", "b", "c", "d"], dtype=object)[index % 4],
            "t": [(f"{i:08d}" + pad)[:length] for i in range(rows)],
            "d": pd.Timestamp("2020-01-01") + pd.to_timedelta(index % 3650, unit="D"),
        }
    )
    return frame


def _frame(session: dp.Session, data: pd.DataFrame, length: int) -> dp.PrivateFrame:
    return session.private_frame(
        data,
        bounds={"x": (0, 100), "n": (0, 50)},
        categories={"cat": ["a", "b", "c", "d"]},
        dtypes={"t": f"text({max(length, 1)})"},
    )


def _least(run: Callable[[], object], repeat: int) -> float:
    """The least of ``repeat`` timed runs, each a new release.

    Never a re-run answered from the ledger (issue 31): that would time a
    lookup and calibrate every unit far too cheap, so the curator would admit
    requests whose real worst case is over its limit.
    """
    best = float("inf")
    with fresh_release(True):
        for _ in range(repeat):
            started = time.perf_counter()
            run()
            best = min(best, time.perf_counter() - started)
    return best


def _node_seconds(pf: dp.PrivateFrame, series: Any, data: pd.DataFrame, repeat: int) -> float:
    """Seconds of the last DAG node of ``series`` over ``data`` (its arguments computed once)."""
    builder = DagBuilder(pf.plan)
    builder.add(series.expr)
    instructions = builder.instructions
    rows = Rows(data)
    values: list[Any] = []
    for instruction in instructions[:-1]:
        values.append(apply(instruction, [values[a] for a in instruction[2]], rows))
    last = instructions[-1]
    args = [values[a] for a in last[2]]
    return _least(lambda: apply(last, args, rows), repeat)


def _vectorized(pf: dp.PrivateFrame) -> list[Any]:
    x, t, d = pf["x"], pf["t"], pf["d"]
    return [
        x * 1.5,
        x > 3,
        t == "00000001",
        t < "00000001",
        x.clip(1, 90),
        d.dt.year,
        d.dt.to_period("M"),
        np.log1p(x),
        x.where(x > 5, 0),
        (x > 3) & (x < 50),
    ]


def _hashed(pf: dp.PrivateFrame) -> list[Any]:
    return [
        pf["t"].isin(["00000001", "00000002"]),
        pf["cat"].map({"a": 1, "b": 2, "c": 3, "d": 4}),
        pf["cat"].map({"a": "x", "b": "y"}),
        pf["n"].isin([1, 2, 3]),
        dp.cut(pf["x"], bins=[0, 10, 50, 100]),
    ]


def _listed(pf: dp.PrivateFrame, items: int) -> list[Any]:
    names = [f"{i:08d}" for i in range(items)]
    edges = sorted({round(0.001 * 1.001**i, 12) for i in range(items)} | {100.5})
    return [
        pf["t"].isin(names),
        pf["t"].map(dict.fromkeys(names, "x")),
        dp.cut(pf["x"], bins=edges[: items + 1]),
    ]


def _text(pf: dp.PrivateFrame, regex: bool) -> list[Any]:
    t = pf["t"]
    if regex:
        return [
            t.str.contains(r"9+\d", regex=True),
            t.str.contains("zz", case=False, regex=True),
            t.str.replace("zz", "y", case=False),
            t.str.replace(r"z(\d)", r"\1", regex=True),
        ]
    return [
        t.str.upper(),
        t.str.strip("a"),
        t.str.len(),
        t.str.contains("zz"),
        t.str.replace("zz", ""),
    ]


def _matches(pf: dp.PrivateFrame) -> list[Any]:
    t = pf["t"]
    return [t.str.replace(".", r"\g<0>", regex=True), t.str.replace("a", "b", case=False)]


def _per_unit(
    run: Callable[[Any], object], small: Any, large: Any, units: float, repeat: int
) -> float:
    """Seconds per unit: ``run(large)`` less ``run(small)`` (the fixed costs), over ``units``."""
    return max(_least(lambda: run(large), repeat) - _least(lambda: run(small), repeat), 0.0) / units


def measure(rows: int = 100_000, repeat: int = 3) -> dict[str, dict[str, float]]:
    """Each unit of the cost model, measured for each kind (see the module docstring).

    Args:
        rows: rows of the synthetic data for the per-row units (text units
            use a tenth, long text and matches a hundredth).
        repeat: runs of each measurement; the least counts.

    Returns:
        ``{unit: {kind: seconds}}`` for every unit :func:`calibrate` sets.
    """
    session = dp.Session(epsilon=1e12, delta=1e-2, ledger=":memory:")
    found: dict[str, dict[str, float]] = {}
    data = synthetic_frame(rows)
    pf = _frame(session, data, _SHORT)
    found["row_op_seconds"] = {
        str(s.expr): _node_seconds(pf, s, data, repeat) / rows for s in _vectorized(pf)
    }
    found["hash_row_seconds"] = {
        str(s.expr): _node_seconds(pf, s, data, repeat) / rows for s in _hashed(pf)
    }
    few, many = 10, 10_000
    found["list_item_seconds"] = {
        str(b.expr)[:60]: max(
            _node_seconds(pf, b, data, repeat) - _node_seconds(pf, a, data, repeat), 0.0
        )
        / (rows * (many - few))
        for a, b in zip(_listed(pf, few), _listed(pf, many), strict=True)
    }
    small = max(rows // 10, 100)
    text_data = synthetic_frame(small)
    tf = _frame(session, text_data, _SHORT)
    for unit, regex in (("text_value_seconds", False), ("regex_value_seconds", True)):
        found[unit] = {
            str(s.expr): _node_seconds(tf, s, text_data, repeat) / small for s in _text(tf, regex)
        }
    tiny = max(rows // 100, 50)
    long_data, short_data = synthetic_frame(tiny, _LONG), synthetic_frame(tiny, _SHORT)
    lf, sf = _frame(session, long_data, _LONG), _frame(session, short_data, _SHORT)
    longs, shorts = _text(lf, False) + _text(lf, True), _text(sf, False) + _text(sf, True)
    found["text_char_seconds"] = {
        str(b.expr): max(
            _node_seconds(lf, a, long_data, repeat) - _node_seconds(sf, b, short_data, repeat), 0.0
        )
        / (tiny * (_LONG - _SHORT))
        for a, b in zip(longs, shorts, strict=True)
    }
    length = 64
    match_data = synthetic_frame(tiny, length)
    mf = _frame(session, match_data, length)
    found["text_match_seconds"] = {
        str(s.expr): _node_seconds(mf, s, match_data, repeat) / (tiny * (length + 1))
        for s in _matches(mf)
    }
    half = _frame(session, data.head(rows // 2), _SHORT)
    found["row_op_seconds"]["a filtered, grouped count, per pass"] = _per_unit(
        lambda f: f[f["x"] > 1].groupby("cat").size(epsilon=1e6),
        half,
        pf,
        (rows - rows // 2) * 3,  # the filter's node, the mask and the group index
        repeat,
    )
    few_rows = _frame(session, data.head(1_000), _SHORT)
    found["cell_seconds"] = {
        "hist bins": _per_unit(
            lambda bins: few_rows["x"].hist(bins=bins, epsilon=1e6), 100, 20_100, 20_000, repeat
        )
    }
    keys_small = _frame(session, synthetic_frame(max(rows // 20, 200)), _SHORT)
    keys_large = _frame(session, synthetic_frame(max(rows // 5, 800)), _SHORT)
    found["key_seconds"] = {
        "discover_keys of distinct text": _per_unit(
            lambda f: f.discover_keys("t", epsilon=1e6, delta=1e-9),
            keys_small,
            keys_large,
            max(rows // 5, 800) - max(rows // 20, 200),
            repeat,
        )
    }
    found["row_noise_seconds"] = {
        "laplace_copy": _per_unit(
            lambda f: f["x"].laplace_copy(epsilon=1e6), half, pf, rows / 2, repeat
        )
    }
    step_rows = 2_000
    steps_small = _frame(session, synthetic_frame(step_rows // 4), _SHORT)
    steps_large = _frame(session, synthetic_frame(step_rows), _SHORT)
    found["row_step_seconds"] = {
        "linear_regression(analysis='iteration')": _per_unit(
            lambda f: f.linear_regression(
                ["n"], "x", epsilon=1e6, delta=1e-9, analysis="iteration", passes=1
            ),
            steps_small,
            steps_large,
            step_rows - step_rows // 4,
            repeat,
        )
    }
    grid = np.linspace(0.0, 100.0, 1024)
    kernel = np.exp(-0.5 * ((grid[:, None] - grid[None, :]) / 5.0) ** 2) + 1e-6 * np.eye(1024)
    found["flop_seconds"] = {
        "Cholesky, 1,024 points": _least(lambda: np.linalg.cholesky(kernel), repeat) / 1024**3 * 3
    }
    few_data = synthetic_frame(200, 40)
    found["overhead_seconds"] = {}
    for kind, release in KINDS.items():
        timed = _Parts(epsilon=1e12, delta=1e-3, ledger=":memory:")
        pf_few = _frame(timed, few_data, 40)
        seconds = _least(lambda r=release, f=pf_few: r(f), repeat)  # type: ignore[misc]
        found["overhead_seconds"][kind] = seconds / max(timed.parts, 1)
    return found


class _Parts(dp.Session):
    """A session that notes how many parts (sized one by one) its last release had."""

    parts = 0

    def run(self, node: Any) -> Any:
        stack, parts = [node], 0
        while stack:
            item = stack.pop()
            parts += 1
            stack.extend(item.parts() if isinstance(item, ReleaseNode) else ())
        self.parts = parts
        return super().run(node)


def calibrate(rows: int = 100_000, repeat: int = 3, base: CostModel | None = None) -> CostModel:
    """The cost model measured on this machine: each unit the slowest kind of :func:`measure`.

    Args:
        rows: rows of the synthetic data (see :func:`measure`).
        repeat: runs of each measurement; the least counts.
        base: the model whose synthetic-copy units are kept (default: the defaults).

    Returns:
        A :class:`CostModel` with every unit measured (no margin added).
    """
    found = measure(rows, repeat)
    units = {unit: max(kinds.values()) for unit, kinds in found.items()}
    units["key_seconds"] = max(units["key_seconds"], units["cell_seconds"])  # a noisy cell each
    return dataclasses.replace(base or CostModel(), **units)
