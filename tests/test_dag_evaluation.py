"""The backends evaluate plans as DAGs: each derived column once, same results as inlining."""

from __future__ import annotations

import dataclasses
import pickle
from collections.abc import Callable
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpframe.backends import PandasBackend
from dpframe.backends.evaluate import Rows, apply
from dpframe.backends.program import Program, Run, compile_query
from dpframe.mechanisms.moments.aggregates import measures_for
from dpframe.plan.expressions import (
    Abs,
    Arith,
    ArithOp,
    Bucket,
    Clip,
    Col,
    Compare,
    CompareOp,
    Expr,
    IsIn,
    IsNull,
    Lit,
    Logical,
    Neg,
    Not,
    col,
)
from dpframe.plan.measures import Measure
from dpframe.plan.nodes import (
    Aggregate,
    Assign,
    Filter,
    GroupKey,
    Plan,
    Source,
    Statistic,
    lineage,
)

WHOLE = 1 << 30

# -- the reference: inline every derived column as a tree (the evaluator before DAGs) ------


def inline_tree(expr: Expr, defs: dict[str, Expr]) -> Expr:
    """``expr`` with derived columns replaced by their definitions (a tree, no sharing)."""
    if isinstance(expr, Col):
        return defs.get(expr.name, expr)
    changes = {
        f.name: inline_tree(getattr(expr, f.name), defs)
        for f in dataclasses.fields(expr)
        if isinstance(getattr(expr, f.name), Expr)
    }
    return dataclasses.replace(expr, **changes) if changes else expr


def inlined(plan: Plan) -> tuple[Plan, dict[str, Expr]]:
    """An equivalent plan of filters over source columns, and the final definitions."""
    source, steps = lineage(plan)
    defs: dict[str, Expr] = {}
    out: Plan = source
    for step in steps:
        if isinstance(step, Assign):
            defs = {**defs, step.name: inline_tree(step.expr, defs)}
        else:
            out = Filter(out, inline_tree(step.predicate, defs))
    return out, defs


def inline_key(key: GroupKey, defs: dict[str, Expr]) -> GroupKey:
    return dataclasses.replace(key, expr=inline_tree(key.expr, defs))


def inline_measure(measure: Measure, defs: dict[str, Expr]) -> Measure:
    if measure.expr is None:
        return measure
    return dataclasses.replace(measure, expr=inline_tree(measure.expr, defs))


# -- random frames and plans ----------------------------------------------------------

floats = st.one_of(
    st.floats(-1e3, 1e3),
    st.sampled_from([np.nan, np.inf, -np.inf, 0.0, -0.0, 0.5, 2.5]),
)


@st.composite
def frames(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(0, 30))
    frame: pd.DataFrame = pd.DataFrame(
        {
            "x": pd.Series(draw(st.lists(floats, min_size=n, max_size=n)), dtype="float64"),
            "y": pd.Series(
                draw(st.lists(st.integers(-50, 50), min_size=n, max_size=n)), dtype="int64"
            ),
            "k": pd.Series(
                draw(st.lists(st.sampled_from(["a", "b", None]), min_size=n, max_size=n)),
                dtype="str",
            ),
            "g": pd.Series(
                draw(st.lists(st.integers(0, 3), min_size=n, max_size=n)), dtype="int64"
            ),
            "b": pd.Series(draw(st.lists(st.booleans(), min_size=n, max_size=n)), dtype=bool),
        }
    )
    return frame


NUMERIC_SOURCES = ("x", "y", "g", "b")
ARITH_OPS: tuple[ArithOp, ...] = ("+", "-", "*", "/")
COMPARE_OPS: tuple[CompareOp, ...] = ("<", "<=", ">", "==", "!=")
STATISTICS: tuple[Statistic, ...] = ("sum", "mean", "var")
DERIVED = ("z", "w", "x")  # "x" shadows a source column


def numeric(draw: st.DrawFn, names: list[str], pool: list[Expr], depth: int = 2) -> Expr:
    """A numeric expression over ``names``, sometimes reusing an object from ``pool``."""
    if len(pool) > 0 and draw(st.booleans()):
        return draw(st.sampled_from(pool))
    if depth == 0 or draw(st.integers(0, 2)) == 0:
        if draw(st.booleans()):
            return Col(draw(st.sampled_from(names)))
        return Lit(draw(st.sampled_from([0.5, 2, -1.0, 3])))
    kind = draw(st.sampled_from(["arith", "neg", "abs", "clip"]))
    inner = numeric(draw, names, pool, depth - 1)
    if kind == "arith":
        op = draw(st.sampled_from(ARITH_OPS))
        made: Expr = Arith(op, inner, numeric(draw, names, pool, depth - 1))
    elif kind == "neg":
        made = Neg(inner)
    elif kind == "abs":
        made = Abs(inner)
    else:
        made = Clip(inner, -5.0, 5.0)
    pool.append(made)
    return made


def predicate(draw: st.DrawFn, names: list[str], pool: list[Expr]) -> Expr:
    kind = draw(st.sampled_from(["compare", "isin", "null", "logical"]))
    if kind == "compare":
        op = draw(st.sampled_from(COMPARE_OPS))
        return Compare(op, numeric(draw, names, pool), Lit(draw(st.sampled_from([0, 1.5]))))
    if kind == "isin":
        return IsIn(Col("k"), ("a",))
    if kind == "null":
        return Not(IsNull(numeric(draw, names, pool)))
    return Logical("|", Col("b"), Compare(">", numeric(draw, names, pool), Lit(0)))


@st.composite
def plans(draw: st.DrawFn) -> tuple[Plan, list[str]]:
    plan: Plan = Source("d")
    names = list(NUMERIC_SOURCES)
    pool: list[Expr] = []
    for _ in range(draw(st.integers(0, 7))):
        if draw(st.booleans()):
            name = draw(st.sampled_from(DERIVED))
            plan = Assign(plan, name, numeric(draw, names, pool))
            names.append(name)
        else:
            plan = Filter(plan, predicate(draw, names, pool))
    return plan, sorted(set(names))


def _same(left: list[npt.NDArray[np.float64]], right: list[npt.NDArray[np.float64]]) -> None:
    assert len(left) == len(right)
    for a, b in zip(left, right, strict=True):
        assert a.dtype == b.dtype == np.float64
        assert a.tobytes() == b.tobytes()


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_dag_evaluation_equals_inlining_bit_for_bit(data: st.DataObject) -> None:
    frame = data.draw(frames())
    plan, names = data.draw(plans())
    value = Col(data.draw(st.sampled_from(names)))
    measures: list[Measure] = [Measure("rows"), Measure("nonnull", value)]
    for statistic in data.draw(st.lists(st.sampled_from(STATISTICS), max_size=2)):
        agg = Aggregate(plan, statistic, Col(data.draw(st.sampled_from(names))), (-3, 7), (), "")
        measures += measures_for(agg)[0]
    keys = [
        GroupKey("g", Col("g"), (0, 1, 2)),
        GroupKey("k", Col("k"), ("a", "b")),
        GroupKey("bin", Bucket(value, (-2.0, 0.0, 2.0), clamp=True), (0, 1)),
        GroupKey("h", Arith("+", value, Lit(1)), (1.0, 2.0)),
    ]
    by = tuple(data.draw(st.lists(st.sampled_from(keys), max_size=2, unique_by=lambda k: k.name)))
    reference, defs = inlined(plan)
    ref_measures = tuple(inline_measure(m, defs) for m in measures)
    ref_by = tuple(inline_key(k, defs) for k in by)
    ref_value = inline_tree(value, defs)
    chunk_rows = data.draw(st.sampled_from([1, 3, WHOLE]))
    backend = PandasBackend(frame)
    pairs: list[tuple[Callable[[], Any], Callable[[], Any]]] = [
        (
            lambda: PandasBackend(frame, chunk_rows=chunk_rows).compute(plan, tuple(measures), by),
            lambda: PandasBackend(frame, chunk_rows=WHOLE).compute(reference, ref_measures, ref_by),
        ),
        (lambda: backend.key_counts(plan, value), lambda: backend.key_counts(reference, ref_value)),
        (
            lambda: backend.numeric_rows(plan, [value]),
            lambda: backend.numeric_rows(reference, [ref_value]),
        ),
        (
            lambda: backend.category_codes(plan, Col("k"), ["a", "b"]),
            lambda: backend.category_codes(reference, Col("k"), ["a", "b"]),
        ),
    ]
    for dag, tree in pairs:
        assert _outcome(dag) == _outcome(tree)


def _outcome(compute: Callable[[], Any]) -> Any:
    """Raw bytes of every array in the result, or the exception's type (e.g. 0.0 / 0.0)."""
    try:
        result = compute()
    except ArithmeticError as error:  # scalar-only arithmetic raises as Python does
        return type(error)
    return _as_bytes(result)


def _as_bytes(result: Any) -> Any:
    if isinstance(result, np.ndarray):
        return (result.dtype.str, result.tobytes())
    if isinstance(result, (list, tuple)):
        return tuple(_as_bytes(r) for r in result)
    return repr(result)


# -- shadowing ----------------------------------------------------------------------------


def test_a_later_assign_shadows_only_the_steps_after_it() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0, 4.0]})
    plan: Plan = Assign(Source("d"), "z", col("x") * 2)
    plan = Filter(plan, col("z") > 4)  # z = 2x: keeps x = 3, 4
    plan = Assign(plan, "z", col("x") * 10)
    plan = Filter(plan, col("z") < 35)  # z = 10x: keeps x = 3
    total = Measure("sum", col("z"), -100.0, 100.0)
    rows, summed = PandasBackend(frame).compute(plan, (Measure("rows"), total), ())
    assert rows.tolist() == [1.0]
    assert summed.tolist() == [30.0]


def test_a_filter_reads_a_source_column_shadowed_later() -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    plan: Plan = Filter(Source("d"), col("x") >= 2)
    plan = Assign(plan, "x", col("x") * 100)  # the derived x; the filter read the source x
    plan = Assign(plan, "y", col("x") + 1)
    (summed,) = PandasBackend(frame).compute(
        plan, (Measure("sum", col("y"), 0.0, 1000.0),), (GroupKey("x", col("x"), (200.0,)),)
    )
    assert summed.tolist() == [201.0]
    values, mask = PandasBackend(frame).row_values(plan, [col("x"), col("y")])
    assert mask is not None
    assert values[0][mask].tolist() == [200.0, 300.0]
    assert values[1][mask].tolist() == [201.0, 301.0]


# -- work counted (not timed) -------------------------------------------------------------


@pytest.fixture
def applied(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The tag of every node evaluation (``program.apply`` calls)."""
    calls: list[str] = []

    def counting(instruction: Any, args: Any, rows: Rows) -> Any:
        calls.append(instruction[0])
        return apply(instruction, args, rows)

    monkeypatch.setattr("dpframe.backends.program.apply", counting)
    return calls


def _doubling_chain(steps: int) -> Plan:
    plan: Plan = Source("d")
    for i in range(1, steps + 1):
        plan = Assign(plan, f"a{i}", col(f"a{i - 1}") + col(f"a{i - 1}"))
    return plan


def test_a_doubling_chain_evaluates_each_derived_column_once(applied: list[str]) -> None:
    rng = np.random.default_rng(1)
    frame = pd.DataFrame({"a0": rng.uniform(0.0, 1.0, 1000)})
    plan = _doubling_chain(30)
    top = float(2**30)
    (total,) = PandasBackend(frame).compute(plan, (Measure("sum", col("a30"), 0.0, top),), ())
    assert applied == ["source"] + ["arith"] * 30
    assert total.tolist() == [float(np.rint(frame["a0"].to_numpy() * top).sum())]
    applied.clear()
    kept = Filter(plan, col("a30") > top / 2)
    (rows,) = PandasBackend(frame, chunk_rows=300).compute(kept, (Measure("rows"),), ())
    assert len(applied) == 4 * (1 + 30 + 2)  # four chunks: source, 30 sums, literal, compare
    assert rows.tolist() == [float((frame["a0"] > 0.5).sum())]


def test_a_shared_expression_evaluates_each_node_once(applied: list[str]) -> None:
    frame = pd.DataFrame({"a": [0.25, 0.5]})
    x: Expr = col("a")
    for _ in range(40):
        x = x + x
    (total,) = PandasBackend(frame).compute(Source("d"), (Measure("sum", x, 0.0, 2.0**41),), ())
    assert len(applied) == 41
    assert total.tolist() == [0.75 * 2.0**40]


def test_equal_computations_are_shared_across_steps_and_measures(applied: list[str]) -> None:
    frame = pd.DataFrame({"x": [1.0, 2.0, 3.0]})
    plan: Plan = Assign(Source("d"), "z", col("x") * 2)
    plan = Filter(plan, col("x") * 2 > 2)  # the same computation as z, written out again
    plan = Assign(plan, "w", col("z"))
    measures = (Measure("sum", col("w"), 0.0, 10.0), Measure("nonnull", col("x") * 2))
    summed, present = PandasBackend(frame).compute(plan, measures, ())
    assert sorted(applied) == ["arith", "compare", "lit", "source"]  # one Lit(2) for both
    assert summed.tolist() == [10.0]
    assert present.tolist() == [2.0]


def test_a_run_drops_every_value_after_its_last_reader() -> None:
    frame = pd.DataFrame({"x": np.arange(5.0)})
    total: Expr = col("x")
    for i in range(300):
        total = total + i  # left-deep: 300 intermediate columns
    plan = Filter(Source("d"), col("x") > 0)
    compiled = Program.compile(plan, [total])
    run = Run(compiled, Rows(frame))
    assert run.mask() is not None
    (out,) = compiled.outputs
    assert run.value(out).tolist() == list(np.arange(5.0) + sum(range(300)))
    assert list(run._values) == [out]  # every intermediate column (and the filter) dropped


# -- deep plans -----------------------------------------------------------------------------


def test_deep_plans_evaluate_and_compile_to_flat_picklable_queries() -> None:
    frame = pd.DataFrame({"a": [1.0, 2.0], "g": ["p", "q"]})
    plan: Plan = Source("d")
    for _ in range(3000):
        plan = Assign(plan, "a", col("a") + 1)
    plan = Filter(plan, col("a") > 3001.5)
    measures = (Measure("sum", col("a"), 0.0, 5000.0), Measure("rows"))
    by = (GroupKey("g", col("g"), ("p", "q")),)
    summed, rows = PandasBackend(frame, chunk_rows=1).compute(plan, measures, by)
    assert summed.tolist() == [0.0, 3002.0]
    assert rows.tolist() == [0.0, 1.0]
    query = pickle.loads(pickle.dumps(compile_query(plan, measures, by)))
    _same(PandasBackend(frame).run_query(query), [summed, rows])
    assert all(m.expr is None for m in query.measures)  # no nested expressions shipped
    assert query.keys[0].source == "g"
    assert query.program.columns == ("a", "g")
