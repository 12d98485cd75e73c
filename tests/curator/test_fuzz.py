"""The curator's API fuzzed with Schemathesis from its own OpenAPI schema.

Every generated request (valid and invalid bodies, odd path names) must get
a 4xx or 2xx answer, never a 5xx; no answer may contain a planted value; an
answer that is not a release must leave the budget untouched; and the
curator must never hit an error its validation did not anticipate.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from tests.curator.support import ALICE, SENTINEL_TEXT, write_catalog

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


COLUMNS = ["wage", "education", "experience", "region", "smsa", "note", "person_id", "nope"]
METHODS = {
    "frame": ["count", "describe", "discover_keys", "above_threshold", "linear_regression"],
    "series": ["count", "sum", "mean", "var", "std", "quantile", "median", "mode", "hist"],
    "groupby": ["count", "size", "sum", "mean", "argmax"],
}
NUMBERS = st.one_of(
    st.floats(allow_nan=False, allow_infinity=False, min_value=-1e6, max_value=1e6),
    st.sampled_from([0, 1e-300, 0.01, 0.1, 1, 1e300]),
)


@st.composite
def plausible_calls(draw: st.DrawFn) -> dict[str, Any]:
    """Calls that are mostly well formed, so the fuzzing reaches the release path."""
    kind = draw(st.sampled_from(sorted(METHODS)))
    receiver: dict[str, Any] = {"kind": kind}
    if kind == "series":
        receiver["expr"] = {"op": "col", "name": draw(st.sampled_from(COLUMNS))}
    if kind == "groupby":
        receiver["by"] = draw(st.lists(st.sampled_from(COLUMNS), min_size=1, max_size=2))
        receiver["column"] = draw(st.one_of(st.none(), st.sampled_from(COLUMNS)))
    arguments: dict[str, Any] = {
        "epsilon": draw(st.one_of(st.sampled_from([0.01, 0.05, 0.1]), NUMBERS))
    }
    if draw(st.integers(0, 3)) == 0:
        arguments["delta"] = draw(st.sampled_from([0, 1e-9, 0.5, 1]))
    if draw(st.integers(0, 3)) == 0:
        arguments[draw(st.sampled_from(["q", "bins", "column", "threshold", "queries"]))] = draw(
            st.one_of(NUMBERS, st.sampled_from(COLUMNS), st.lists(NUMBERS, max_size=3))
        )
    steps = []
    if draw(st.booleans()):
        steps.append(
            {
                "kind": "filter",
                "predicate": {
                    "op": draw(st.sampled_from([">", "<=", "=="])),
                    "left": {"op": "col", "name": draw(st.sampled_from(COLUMNS))},
                    "right": {"op": "lit", "value": draw(NUMBERS)},
                },
            }
        )
    return {
        "steps": steps,
        "receiver": receiver,
        "method": draw(st.sampled_from(METHODS[kind])),
        "arguments": arguments,
    }


def test_plausible_calls_charge_exactly_when_they_release(
    fuzz_curator: Curator, tally: dict[str, int]
) -> None:
    from fastapi.testclient import TestClient

    from dpframe.remote.wire import decode_response

    client = TestClient(create_app(fuzz_curator))
    headers = {"Authorization": f"Bearer {ALICE}"}
    outcomes: dict[int, int] = {}

    def spent() -> Any:
        body = client.get("/v1/datasets/sentinel/budget", headers=headers).json()
        return decode_response(body["spent"])

    def charges() -> int:
        """Rows in the analyst's ledger, one per charge: a tiny zCDP ρ may not move the
        reported (ε, δ) at all, so the budget alone cannot show every charge."""
        body = client.get("/v1/datasets/sentinel/ledger", headers=headers).json()
        return len(decode_response(body["ledger"]))

    @given(call=plausible_calls())
    @settings(
        max_examples=FUZZ_EXAMPLES * 2,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        database=None,
    )
    def run(call: dict[str, Any]) -> None:
        before, rows_before = spent(), charges()
        answer = client.post("/v1/datasets/sentinel/query", json=call, headers=headers)
        outcomes[answer.status_code] = outcomes.get(answer.status_code, 0) + 1
        assert answer.status_code < 500, answer.text
        assert SENTINEL_TEXT not in answer.text
        after, rows_after = spent(), charges()
        if answer.status_code == 200:
            assert rows_after > rows_before  # describe() charges several releases
            assert after.epsilon >= before.epsilon and after.delta >= before.delta
        else:
            assert (after, rows_after) == (before, rows_before), answer.text
        assert fuzz_curator.unexpected_errors == 0

    run()
    print(f"\nplausible calls: {dict(sorted(outcomes.items()))}")
    assert outcomes.get(200, 0) > 0 and sum(outcomes.values()) >= FUZZ_EXAMPLES
