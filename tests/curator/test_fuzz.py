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
