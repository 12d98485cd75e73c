"""The curator's API fuzzed with Schemathesis from its own OpenAPI schema, and with release nodes.

Every generated request (valid and invalid bodies, odd path names) must get
a 4xx or 2xx answer, never a 5xx; no answer may contain a planted value; an
answer that is not a release must leave the budget untouched; and the
curator must never hit an error its validation did not anticipate.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.mechanisms.core.explanations import Explanation
from dpframe.plan.codec import _KINDS, decode_exact, encode_exact
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, RELEASES, SENTINEL_TEXT, release_body, write_catalog

#: Examples per operation; DPFRAME_FUZZ_EXAMPLES raises it for a heavier run.
FUZZ_EXAMPLES = int(os.environ.get("DPFRAME_FUZZ_EXAMPLES", "120"))


@pytest.fixture(scope="module")
def fuzz_curator(tmp_path_factory: pytest.TempPathFactory) -> Curator:
    return Curator(Catalog.load(write_catalog(tmp_path_factory.mktemp("fuzz"))))


@pytest.fixture(scope="module")
def api_schema(fuzz_curator: Curator) -> Any:
    return schemathesis.openapi.from_asgi("/openapi.json", create_app(fuzz_curator))


@pytest.fixture(scope="module")
def tally() -> Iterator[dict[str, int]]:
    counts = {"requests": 0, "2xx": 0, "4xx": 0, "5xx": 0}
    yield counts
    print(f"\nfuzzing: {counts}")


def _spent(curator: Curator) -> list[Any]:
    return [seat.session.spent for seat in curator._seats.values()]


def _check(case: Any, curator: Curator, tally: dict[str, int]) -> None:
    if "name" in (case.path_parameters or {}) and case.path.endswith("/query"):
        case.path_parameters["name"] = "sentinel"  # fuzz the bodies against real data
    before = _spent(curator)
    response = case.call(headers={"Authorization": f"Bearer {ALICE}"})
    tally["requests"] += 1
    status = response.status_code
    tally[f"{status // 100}xx"] = tally.get(f"{status // 100}xx", 0) + 1
    assert status < 500, response.text
    assert SENTINEL_TEXT not in response.text
    assert "4321.123" not in response.text
    if status != 200 or not case.path.endswith("/query"):
        after = _spent(curator)
        assert after[: len(before)] == before  # no charge without a release
    assert curator.unexpected_errors == 0


def test_fuzzed_requests_never_fail_the_server_or_leak(
    api_schema: Any, fuzz_curator: Curator, tally: dict[str, int]
) -> None:
    operations = [result.ok() for result in api_schema.get_all_operations()]
    assert "POST /v1/datasets/{name}/query" in {op.label for op in operations}
    for operation in operations:

        @given(case=operation.as_strategy())
        @settings(
            max_examples=FUZZ_EXAMPLES,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            database=None,
        )
        def run(case: Any) -> None:
            _check(case, fuzz_curator, tally)

        run()
    assert tally["requests"] >= FUZZ_EXAMPLES
    assert tally["2xx"] > 0 and tally["4xx"] > 0


# -- release nodes, mostly well formed -----------------------------------------------
#
# Each call starts from a node the facade built (support.RELEASES, so every
# node type of the codec's allow-list and its real field names) and changes
# some of its fields to other plausible values: columns (numeric, categorical,
# free text, unknown), privacy parameters (decimal strings from tiny to huge,
# fractions, rho), filters and derived columns, bounds, keys, categories and
# numeric parameters.  Most calls stay valid so that fuzzing reaches the
# release path; some break the format on purpose.
#
# Kept out on purpose, because they are dpframe bugs pinned (and reported) by
# test_protocol.py::test_nodes_the_facade_refuses_are_refused_before_the_charge:
# aggregates without bounds or value or with a key of no categories, keys
# with a category twice (the generator draws distinct ones), randomized
# response with a missing category, regressions with 0 steps, a zero-width
# feature or an iterative step size out of range, sparse-vector thresholds
# beyond 2**53 and extreme kde bandwidths (the generator draws none of
# these), long chains of derived columns (at most three steps here); and by
# test_protocol.py::test_explaining_a_huge_epsilon_is_answered: explanations
# of a huge epsilon.  Not pinned by a test, as they would hang the test or
# exhaust its memory: explanations of a tiny epsilon (an aggregate's at
# epsilon 1e-9 to 1/(2**64 - 1) never ends: _smallest_a in noise/distributions.py
# counts down one by one) and sanitized copies of a tiny epsilon, whose noisy
# length is unbounded (1e-11: 2e5 rows; 1/(2**64 - 1): MemoryError after the
# charge).  Add them here once those are fixed.

TEMPLATES: dict[str, dict[str, Any]] = {name: release_body(b) for name, b in RELEASES.items()}
NUMERIC = ["wage", "education", "experience", "person_id"]
CATEGORICAL = {
    "region": ["northeast", "midwest", "south", "west"],
    "smsa": ["yes", "no"],
    "ethnicity": ["cauc", "afam"],
    "parttime": ["yes", "no"],
}
COLUMNS = [*NUMERIC, *CATEGORICAL, "note", "nope"]
NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
    st.sampled_from([0, 1e-300, 0.01, 0.1, 1, 12, 4000, 1e300]),
)
SMALL_NUMBERS = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e4, max_value=1e4)


def _one_in(count: int, draw: st.DrawFn) -> bool:
    """True about once in ``count`` draws (the rare case at the top, where Hypothesis
    lands less often than at 0)."""
    return draw(st.integers(1, count)) == count


def _col(name: str) -> dict[str, Any]:
    return {"op": "col", "name": name}


def _lit(value: object) -> dict[str, Any]:
    return {"op": "lit", "value": value}


def _exact(low: Fraction, high: Fraction) -> st.SearchStrategy[str]:
    """Exact numbers in [low, high] as the codec writes them: short decimals or n/d."""
    return st.fractions(min_value=low, max_value=high, max_denominator=10**9).map(encode_exact)


HUGE = ("1e99", "1000")
TINY = ("1e-30", f"1/{2**64 - 1}")
#: ε as the analyst might send it: typical, tiny, huge, fractions, and a few refused forms.
EPSILONS = st.one_of(
    st.sampled_from(["1e-1", "5e-2", "0.01", "1/10", "1/3", "3/700", "0.125"]),
    _exact(Fraction(1, 10**4), Fraction(1, 2)),
    st.sampled_from([*TINY, "1e-99", *HUGE, "0.1" + "0" * 38 + "1"]),
    st.sampled_from(["0", "-1", "1e-400", "1" * 41, f"1/{2**64}", "1/0", "0x1", "inf", ""]),
)
DELTAS = st.sampled_from(["0", "0", "1e-9", "1e-12", "1/1000000000", "1e-6", "1/2", "1"])


def _bounds(draw: st.DrawFn) -> list[float]:
    kind = draw(st.integers(0, 5))
    if kind == 0:
        return [-1e300, 1e300]  # too wide to sum: refused
    if kind == 1:
        return sorted(draw(st.lists(NUMBERS, min_size=2, max_size=2)), reverse=True)  # reversed
    low, high = sorted(draw(st.lists(SMALL_NUMBERS, min_size=2, max_size=2)))
    return [low, high] if high > low else [low, low + 1.0]


def _categories(draw: st.DrawFn, column: str) -> list[Any]:
    kind = draw(st.integers(0, 3))
    if kind == 0 and column in CATEGORICAL:
        return list(CATEGORICAL[column])
    if kind == 1:
        return draw(st.lists(st.integers(-5, 50), min_size=1, max_size=5, unique=True))
    if kind == 2:
        return ["ordinary", "other", None]
    return draw(st.lists(st.text(max_size=8), min_size=1, max_size=4, unique=True))


def _key(draw: st.DrawFn) -> dict[str, Any]:
    column = draw(st.sampled_from(COLUMNS))
    categories = [] if _one_in(10, draw) else _categories(draw, column)
    return {"name": column, "expr": _col(column), "categories": categories}


def _value(draw: st.DrawFn) -> dict[str, Any]:
    column = _col(draw(st.sampled_from(COLUMNS)))
    if _one_in(4, draw):
        op = draw(st.sampled_from(["+", "-", "*", "/"]))
        return {"op": op, "left": column, "right": _lit(draw(NUMBERS))}
    return column


def _condition(draw: st.DrawFn) -> dict[str, Any]:
    column = draw(st.sampled_from(COLUMNS))
    kind = draw(st.integers(0, 3))
    if kind == 0:
        values = draw(st.lists(st.sampled_from(["south", "yes", "ordinary", 1, 12.5]), max_size=3))
        return {"op": "isin", "operand": _col(column), "values": values}
    if kind == 1:
        return {"op": "isnull", "operand": _col(column)}
    right = draw(st.one_of(NUMBERS, st.sampled_from(["south", "yes", "ordinary"])))
    op = draw(st.sampled_from([">", ">=", "<", "<=", "==", "!="]))
    return {"op": op, "left": _col(column), "right": _lit(right)}


def _plan_step(draw: st.DrawFn) -> dict[str, Any]:
    if _one_in(3, draw):
        name = draw(st.sampled_from(["derived", "wage", "note"]))  # new, or overwriting
        return {"assign": [name, _value(draw)]}
    return {"filter": _condition(draw)}


def _pair_of_bounds(draw: st.DrawFn) -> list[float]:
    low, high = sorted(draw(st.lists(SMALL_NUMBERS, min_size=2, max_size=2)))
    return [low, high if high > low else low + 1.0]


def _change(draw: st.DrawFn, node: dict[str, Any], field: str) -> None:
    """Give ``node[field]`` another plausible value (by the codec's field names)."""
    value = node[field]
    if field in ("expr", "value"):
        node[field] = _value(draw)
    elif field in ("bounds", "target_bounds"):
        node[field] = _bounds(draw)
    elif field in ("statistic", "agg"):
        node[field] = draw(st.sampled_from(["count", "sum", "mean", "var", "std", "median"]))
    elif field in ("by", "keys"):
        node[field] = [_key(draw) for _ in range(draw(st.integers(0, 2)))]
    elif field == "group":
        node[field] = _key(draw)
    elif field == "levels":
        node[field] = draw(st.lists(_exact(Fraction(0), Fraction(1)), max_size=3))
    elif field in ("column", "target"):
        node[field] = draw(st.sampled_from(COLUMNS))
    elif field == "conditions":
        count = draw(st.integers(0, 3))
        node[field] = [[f"q{i}", _condition(draw)] for i in range(count)]
    elif field == "threshold":
        node[field] = draw(st.floats(min_value=-1e9, max_value=1e9))
    elif field == "max_hits":
        node[field] = draw(st.integers(0, 4))
    elif field in ("numeric", "scalar"):
        node[field] = draw(st.booleans())
    elif field == "weights":
        share = draw(_exact(Fraction(1, 100), Fraction(99, 100)))
        rest = encode_exact(1 - decode_exact(share, "share"))
        node[field] = draw(st.sampled_from([[share, rest], [share, share], ["1", "0"]]))
    elif field == "columns":
        names = draw(st.lists(st.sampled_from(COLUMNS), min_size=0, max_size=3))
        node[field] = [[n, _col(n), _pair_of_bounds(draw)] for n in names]
    elif field == "kind":
        node[field] = draw(st.sampled_from(["rr", "laplace", "gaussian"]))
    elif field == "length_share":
        node[field] = draw(st.one_of(_exact(Fraction(1, 100), Fraction(1, 2)), st.just("1")))
    elif field == "categories":
        node[field] = _categories(draw, draw(st.sampled_from(COLUMNS)))
    elif field == "bandwidth":
        node[field] = draw(st.floats(min_value=1.0, max_value=1e4))
    elif field == "points":
        node[field] = draw(st.lists(SMALL_NUMBERS, min_size=0, max_size=20))
    elif field == "features":
        node[field] = draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=2))
        node["feature_bounds"] = [_pair_of_bounds(draw) for _ in node[field]]
    elif field == "radius":
        node[field] = draw(st.sampled_from([0.0, 0.5, 2.0, 10.0]))
    elif field == "steps":
        node[field] = draw(st.integers(1, 20))
    elif field == "passes":
        node[field] = draw(st.integers(1, 3))
    elif value in ("rdp", "iteration"):  # the regression's privacy analysis
        node[field] = draw(st.sampled_from(["rdp", "iteration"]))
        node["step_size"] = draw(st.one_of(st.none(), st.floats(min_value=0.01, max_value=2.0)))
    elif field in ("label", "name"):
        node[field] = draw(st.text(max_size=20))


def _keep_clear_of_known_bugs(body: dict[str, Any]) -> None:
    """Undo the changes that hit the dpframe bugs listed above (reported, pinned elsewhere)."""
    node = body["node"]
    if body.get("explain") and node["privacy"]["epsilon"] in (*HUGE, *TINY):
        node["privacy"]["epsilon"] = "1"
    if node["type"] == "sanitized_copy":
        node["categories"] = [c for c in node["categories"] if c is not None]
        if node["privacy"]["epsilon"] in TINY:  # a copy's length noise is unbounded
            node["privacy"]["epsilon"] = "1e-1"
    if node["type"] == "aggregate":
        if node["statistic"] != "count":
            node["expr"] = node["expr"] or _col("wage")
            node["bounds"] = node["bounds"] or [0.0, 5000.0]
        for key in node["by"]:
            key["categories"] = key["categories"] or ["x"]
    if node["type"] == "regression":
        node["feature_bounds"] = [
            [low, high] if high != low else [low, low + 1.0] for low, high in node["feature_bounds"]
        ]
        if node["step_size"] is not None and not 0 < node["step_size"] <= 2:
            node["step_size"] = None


@st.composite
def plausible_calls(draw: st.DrawFn) -> dict[str, Any]:
    """Release-node bodies that are mostly well formed, so the fuzzing reaches the release path."""
    body = copy.deepcopy(TEMPLATES[draw(st.sampled_from(sorted(TEMPLATES)))])
    node = body["node"]
    privacy = node["privacy"]
    if _one_in(6, draw):
        privacy["epsilon"], privacy["rho"] = None, draw(_exact(Fraction(1, 10**5), Fraction(1)))
    elif draw(st.booleans()):
        privacy["epsilon"] = draw(EPSILONS)
    if _one_in(5, draw):
        privacy["delta"] = draw(DELTAS)
    node["plan"] = node["plan"] + [_plan_step(draw) for _ in range(draw(st.integers(0, 2)))]
    fields = [f for f in node if f not in ("type", "plan", "privacy")]
    for field in fields:
        if _one_in(4, draw):
            _change(draw, node, field)
    if _one_in(5, draw):
        body["explain"] = True
    _keep_clear_of_known_bugs(body)
    breakage = draw(st.sampled_from(["none"] * 16 + ["drop", "type", "extra", "version"]))
    if breakage == "drop":  # a missing field
        del node[draw(st.sampled_from(fields))]
    elif breakage == "type":  # another node type, same fields
        node["type"] = draw(st.sampled_from(sorted(_KINDS)))
    elif breakage == "extra":  # a field the type does not have
        node[draw(st.sampled_from(["source", "privacy_unit", "__class__", "extra"]))] = 1
    elif breakage == "version":
        body["v"] = draw(st.sampled_from([0, 2, True, "1"]))
    return body


def test_plausible_calls_charge_exactly_when_they_release(
    fuzz_curator: Curator, tally: dict[str, int]
) -> None:
    client = TestClient(create_app(fuzz_curator))
    headers = {"Authorization": f"Bearer {ALICE}"}
    outcomes: dict[int, int] = {}
    released: dict[str, int] = {}

    def spent() -> Any:
        body = client.get("/v1/datasets/sentinel/budget", headers=headers).json()
        return decode_response(body["spent"])

    def ledger() -> Any:
        """The analyst's ledger, one row per charge: a tiny zCDP ρ may not move the
        reported (ε, δ) at all, so the budget alone cannot show every charge."""
        body = client.get("/v1/datasets/sentinel/ledger", headers=headers).json()
        return decode_response(body["ledger"])

    @given(call=plausible_calls())
    @settings(
        max_examples=FUZZ_EXAMPLES * 2,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def run(call: dict[str, Any]) -> None:
        before, rows_before = spent(), len(ledger())
        fresh = {**call, "fresh": True}  # each call a new release (issue 31)
        answer = client.post("/v1/datasets/sentinel/query", json=fresh, headers=headers)
        outcomes[answer.status_code] = outcomes.get(answer.status_code, 0) + 1
        assert answer.status_code < 500, answer.text
        assert SENTINEL_TEXT not in answer.text
        after, rows = spent(), ledger()
        if answer.status_code == 200 and not call.get("explain"):
            kind = call["node"]["type"]
            released[kind] = released.get(kind, 0) + 1
            assert len(rows) > rows_before  # describe() charges several releases
            assert set(rows["status"][rows_before:]) == {"released"}
            assert after.epsilon >= before.epsilon and after.delta >= before.delta
            cost = decode_response(answer.json()["cost"])
            privacy = call["node"]["privacy"]
            if privacy["epsilon"] is not None:
                assert cost.epsilon == decode_exact(privacy["epsilon"], "epsilon")
                assert cost.delta == decode_exact(privacy["delta"], "delta")
        else:
            assert (after, len(rows)) == (before, rows_before), answer.text + repr(call)
            if answer.status_code == 200:
                assert isinstance(decode_response(answer.json()["result"]), Explanation)
        assert fuzz_curator.unexpected_errors == 0

    run()
    print(f"\nplausible calls: {dict(sorted(outcomes.items()))}")
    print(f"released by node type: {dict(sorted(released.items()))}")
    assert outcomes.get(200, 0) > 0 and sum(outcomes.values()) >= FUZZ_EXAMPLES
    assert len(released) >= 6  # the fuzzing reached most node types' release paths
