"""Private joins through a real curator process: the catalog's ID spaces, one seat's budget.

The catalog declares ``people`` (one row per person) and ``visits`` (at most
4 rows per person) in the ID space ``persons``, ``jobs`` in another space
(``employers``), and ``plain`` with a privacy unit but no ID space.  The
analyst's client ships ``visits.merge(people, ...)`` as a plan; the curator
resolves both datasets from its catalog, recomputes the join's row limit per
ID from them, charges the seat the request was sent to (the left frame's),
and refuses, before any charge, joins across ID spaces, datasets it does not
serve or grant, and hand-made requests that break the rules.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.curator.catalog import hash_token
from dpframe.curator.join_costs import JoinCost, join_cost, joined_rows
from dpframe.curator.worst_case import CostModel
from dpframe.plan.codec import MAX_JOINS, NodeFormatError, decode_node, encode_node
from dpframe.plan.estimate import ResourceLimits
from dpframe.plan.nodes import Source, lineage
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, BOB, Server, start_server

EPS = 1000  # noise far below rounding: the answer is the exact truncated count
VISITS_LIMIT = 4
PEOPLE = 120


def _people() -> pd.DataFrame:
    rng = np.random.default_rng(7)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "person_id": np.arange(PEOPLE, dtype=np.int64),
            "region": rng.choice(["north", "south"], PEOPLE),
            "age": rng.integers(20, 80, PEOPLE).astype(np.int64),
        }
    )
    return frame


def _visits() -> pd.DataFrame:
    rng = np.random.default_rng(11)
    per_person = rng.integers(0, VISITS_LIMIT + 1, PEOPLE)  # within the limit: no load-time cut
    ids = np.repeat(np.arange(PEOPLE, dtype=np.int64), per_person)
    costs = rng.integers(0, 100, len(ids)).astype(float)
    frame: pd.DataFrame = pd.DataFrame({"person_id": ids, "cost": costs})
    return frame


def _jobs() -> pd.DataFrame:
    frame: pd.DataFrame = pd.DataFrame(
        {"person_id": np.arange(PEOPLE, dtype=np.int64), "salary": np.full(PEOPLE, 10.0)}
    )
    return frame


GRANTS = ", ".join(
    f"{d} = {{ epsilon = 1000000.0 }}" for d in ("people", "visits", "jobs", "plain")
)


def write_join_catalog(folder: Path) -> Path:
    _people().to_csv(folder / "people.csv", index=False)
    _visits().to_csv(folder / "visits.csv", index=False)
    _jobs().to_csv(folder / "jobs.csv", index=False)
    text = f"""
[server]
ledger = "ledger.sqlite"
workers = 0
latency_quantum_ms = 0

[datasets.people]
path = "people.csv"
max_rows = 1000
privacy_unit = "person_id"
max_rows_per_unit = 1
id_space = "persons"
bounds = {{ age = [0, 100] }}
categories = {{ region = ["north", "south"] }}
dtypes = {{ person_id = "numeric" }}

[datasets.visits]
path = "visits.csv"
max_rows = 4000
privacy_unit = "person_id"
max_rows_per_unit = {VISITS_LIMIT}
id_space = "persons"
bounds = {{ cost = [0, 100] }}
dtypes = {{ person_id = "numeric" }}

[datasets.jobs]
path = "jobs.csv"
max_rows = 1000
privacy_unit = "person_id"
max_rows_per_unit = 2
id_space = "employers"
bounds = {{ salary = [0, 100] }}
dtypes = {{ person_id = "numeric" }}

[datasets.plain]
path = "jobs.csv"
max_rows = 1000
privacy_unit = "person_id"
max_rows_per_unit = 2
bounds = {{ salary = [0, 100] }}
dtypes = {{ person_id = "numeric" }}

[analysts.alice]
token_sha256 = "{hash_token(ALICE)}"
budgets = {{ {GRANTS} }}

[analysts.bob]
token_sha256 = "{hash_token(BOB)}"
budgets = {{ visits = {{ epsilon = 10.0 }} }}
"""
    path = folder / "catalog.toml"
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    running = start_server(write_join_catalog(tmp_path_factory.mktemp("joins")))
    yield running
    running.stop()


def _truncated_inner(k: int) -> int:
    """The exact count of ``visits ⋈ people`` with at most ``k`` rows per person."""
    sizes = _visits().groupby("person_id").size()
    return int(np.minimum(sizes.to_numpy(), k).sum())


def _post(server: Server, dataset: str, body: dict[str, Any], token: str = ALICE) -> Any:
    request = urllib.request.Request(
        f"{server.url}/v1/datasets/{dataset}/query",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read())


class _Built(Exception):  # noqa: N818  (a signal, not an error)
    def __init__(self, node: Any) -> None:
        super().__init__("built")
        self.node = node


class _Recorder(dp.Session):
    """A session that hands back the node of a release instead of running it."""

    def run(self, node: Any) -> Any:
        raise _Built(node)


def _join_body(max_rows: int = 2, how: str = "inner") -> dict[str, Any]:
    """The body a client sends for ``visits.merge(people, ...).count(epsilon=EPS)``."""
    session = _Recorder(epsilon=10**6, ledger=":memory:")
    visits = session.private_frame(
        _visits(), privacy_unit=dp.PrivacyUnit("person_id", VISITS_LIMIT, id_space="persons")
    )
    people = session.private_frame(
        _people(), privacy_unit=dp.PrivacyUnit("person_id", 1, id_space="persons")
    )
    joined = visits.merge(people, on="person_id", how=how, max_rows=max_rows)
    with pytest.raises(_Built) as built:
        joined.count(epsilon=EPS)
    body = encode_node(built.value.node)
    left, right = _sides(body)  # named by catalog name, as a remote client's frames are
    left[0]["dataset"], right[0]["dataset"] = "visits", "people"
    return body


def _sides(body: dict[str, Any]) -> tuple[list[Any], list[Any]]:
    join = body["node"]["plan"][0]["join"]
    return join["left"], join["right"]


# -- end to end ---------------------------------------------------------------------


def test_remote_join_answers_the_truncated_count_and_charges_the_left_seat(
    server: Server,
) -> None:
    conn = dp.connect(server.url, token=ALICE)
    visits, people = conn.open("visits"), conn.open("people")
    joined = visits.merge(people, on="person_id", max_rows=2)
    release = joined.count(epsilon=EPS)
    assert abs(float(release) - _truncated_inner(2)) < 1
    # the stated noise: at most 2 rows per person after the join, so scale 2/ε
    embedded = dp.Session(epsilon=10**6, ledger=":memory:")
    ev = embedded.private_frame(
        _visits(), privacy_unit=dp.PrivacyUnit("person_id", VISITS_LIMIT, id_space="persons")
    )
    ep = embedded.private_frame(
        _people(), privacy_unit=dp.PrivacyUnit("person_id", 1, id_space="persons")
    )
    local = ev.merge(ep, on="person_id", max_rows=2).count(epsilon=EPS)
    assert release.scale == pytest.approx(local.scale, rel=1e-12)
    assert release.scale >= 2 / EPS * 0.999  # never the noise of a smaller stability
    assert visits.session.spent.epsilon == pytest.approx(EPS)
    assert people.session.spent.epsilon == 0  # one seat pays: the one the join was sent to
    ledger = visits.session.ledger
    assert "join" in str(ledger["query"].iloc[-1])


def test_remote_join_grouped_mean_by_a_people_column(server: Server) -> None:
    conn = dp.connect(server.url, token=ALICE)
    joined = conn.open("visits").merge(conn.open("people"), on="person_id", how="inner")
    means = joined.groupby("region")["cost"].mean(epsilon=EPS)
    exact = _visits().merge(_people(), on="person_id").groupby("region")["cost"].mean()
    for region in ("north", "south"):
        assert abs(float(means[region]) - float(exact[region])) < 0.5


def test_remote_join_with_a_default_limit_keeps_every_row(server: Server) -> None:
    conn = dp.connect(server.url, token=ALICE)
    release = conn.open("visits").merge(conn.open("people"), how="left").count(epsilon=EPS)
    assert abs(float(release) - len(_visits())) < 2  # product of the limits: 4 x 1, no cut
    assert release.scale == pytest.approx(VISITS_LIMIT / EPS * 2, rel=0.5)  # noise of k = 4


def test_join_through_the_wire_recomputes_the_limit_from_the_catalog(server: Server) -> None:
    """The wire carries no row limit of a side: a client claiming visits has 1 row per person
    gets a join of at most 1·1 = 1 row per person only by asking max_rows=1 (and the curator
    truncates to it); with the default limit the curator uses the catalog's 4."""
    body = _join_body(max_rows=4)
    left, right = _sides(body)
    assert left[0] == {"dataset": "visits"} and right[0] == {"dataset": "people"}
    status, answer = _post(server, "visits", body)
    assert status == 200
    assert abs(float(decode_response(answer["result"])) - _truncated_inner(4)) < 1


# -- refusals before any charge -------------------------------------------------------


def _refused(server: Server, dataset: str, body: dict[str, Any], token: str = ALICE) -> Any:
    conn = dp.connect(server.url, token=token)
    before = conn.open(dataset).session.spent.epsilon
    status, answer = _post(server, dataset, body, token)
    assert 400 <= status < 500, answer
    assert conn.open(dataset).session.spent.epsilon == before  # nothing charged
    return status, answer["error"]


def test_join_across_id_spaces_is_refused_before_any_charge(server: Server) -> None:
    conn = dp.connect(server.url, token=ALICE)
    with pytest.raises(dp.DPError, match="two ID spaces"):
        conn.open("visits").merge(conn.open("jobs"), on="person_id")
    body = _join_body()
    _sides(body)[1][0]["dataset"] = "jobs"  # a hand-made request: the curator checks too
    status, error = _refused(server, "visits", body)
    assert status == 400 and "two ID spaces" in error["message"]


def test_join_of_a_dataset_without_id_space_is_refused(server: Server) -> None:
    conn = dp.connect(server.url, token=ALICE)
    with pytest.raises(dp.DPError, match="has no ID space"):
        conn.open("visits").merge(conn.open("plain"), on="person_id")
    body = _join_body()
    _sides(body)[1][0]["dataset"] = "plain"
    status, error = _refused(server, "visits", body)
    assert status == 400 and "declared no ID space" in error["message"]


@pytest.mark.parametrize(
    ("name", "token"), [("nosuch", ALICE), ("people", BOB)], ids=["not in catalog", "not granted"]
)
def test_join_of_an_unknown_or_ungranted_dataset_is_refused(
    server: Server, name: str, token: str
) -> None:
    body = _join_body()
    _sides(body)[1][0]["dataset"] = name
    status, error = _refused(server, "visits", body, token)
    assert status == 404 and error["code"] == "unknown_dataset"


def test_join_sent_to_a_dataset_it_does_not_read_is_refused(server: Server) -> None:
    status, error = _refused(server, "jobs", _join_body())
    assert status == 400 and "does not read the dataset" in error["message"]


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda j: j.update(max_rows=0), "max_rows"),
        (lambda j: j.update(left_on=["cost"], right_on=["age"]), "must match the ID columns"),
        (lambda j: j.update(how="cross"), "how="),
        (lambda j: j.update(left_columns=["person_id", "secret"]), "secret"),
        (lambda j: j.update(rows="everything"), "rows="),
    ],
    ids=["max_rows 0", "non-ID key", "cross", "unknown column", "rows"],
)
def test_hand_made_joins_are_refused_before_any_charge(
    server: Server, change: Any, match: str
) -> None:
    body = _join_body()
    change(body["node"]["plan"][0]["join"])
    _, error = _refused(server, "visits", body)
    assert match in error["message"]


def test_too_many_joins_are_refused(server: Server) -> None:
    body = _join_body()
    join = body["node"]["plan"][0]["join"]
    for _ in range(MAX_JOINS):  # nest the join in its own left side
        join["left"] = [{"join": json.loads(json.dumps(join))}]
    _, error = _refused(server, "visits", body)
    assert f"at most {MAX_JOINS} private joins" in error["message"]


def test_decoding_a_join_without_a_catalog_is_refused() -> None:
    with pytest.raises(NodeFormatError, match="does not accept"):
        decode_node(_join_body(), Source("visits"))


def test_decoding_takes_the_resolvers_limits_not_the_senders() -> None:
    sources = {
        "visits": Source("v", unit_rows=3, unit_column="person_id", id_space="persons"),
        "people": Source("p", unit_rows=2, unit_column="person_id", id_space="persons"),
    }
    node = decode_node(_join_body(max_rows=6), Source("x"), sources.__getitem__)
    joined = lineage(node.plan)[0]
    assert joined.unit_rows == 6 and joined.id_space == "persons"
    with pytest.raises(dp.DPError, match="within max_rows"):  # 3 x 2 = 6 rows at most
        body = _join_body(max_rows=6)
        body["node"]["plan"][0]["join"]["rows"] = "dropped"
        decode_node(body, Source("x"), sources.__getitem__)


# -- the worst case ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("how", "expected"),
    [
        ("inner", min(1000 * 1, 4000 * 4)),
        ("left", 1000 * 1),
        ("right", 4000 * 4),
        ("outer", min(1000, 16000) + 1000 + 4000),
        ("semi", 1000),
        ("anti", 1000),
    ],
)
def test_joined_rows_ceiling(how: str, expected: int) -> None:
    # left: 1,000 rows of at most 4 per ID; right: 4,000 rows of at most 1 per ID
    assert joined_rows(how, 1000, 4000, 4, 1) == expected


def _leaf(source: Source) -> tuple[int, dict[str, int]]:
    return {"v": 4000, "p": 1000}[source.dataset], {}


def _cost(max_rows: int, how: str = "inner") -> JoinCost:
    sources = {
        "visits": Source("v", unit_rows=4, unit_column="person_id", id_space="persons"),
        "people": Source("p", unit_rows=1, unit_column="person_id", id_space="persons"),
    }
    node = decode_node(_join_body(max_rows, how), Source("x"), sources.__getitem__)
    return join_cost(lineage(node.plan)[0], _leaf, CostModel(), ResourceLimits(), 256)


def test_join_cost_prices_both_sides_the_match_and_the_truncation() -> None:
    inner, outer = _cost(2), _cost(2, "outer")
    assert inner.rows == min(4000 * 1, 1000 * 4)
    assert outer.rows == inner.rows + 5000
    model = CostModel()
    # at least one pass over both sides and the matched rows
    assert inner.seconds >= (4000 + 1000 + inner.rows) * model.row_op_seconds
    assert outer.seconds > inner.seconds


def test_a_join_over_the_estimate_is_refused_before_any_charge(
    tmp_path: Path,
) -> None:
    catalog = write_join_catalog(tmp_path)
    text = catalog.read_text().replace(
        "latency_quantum_ms = 0", "latency_quantum_ms = 0\nrelease_estimate_seconds = 0.06"
    )
    catalog.write_text(text)
    running = start_server(catalog)
    try:
        conn = dp.connect(running.url, token=ALICE)
        visits = conn.open("visits")
        visits.count(epsilon=1)  # one table: within the estimate
        joined = visits.merge(conn.open("people"), how="outer")
        with pytest.raises(dp.DPError, match="could take up to"):
            joined.count(epsilon=1)
        assert visits.session.spent.epsilon == 1
    finally:
        running.stop()


def test_a_join_in_a_curator_with_worker_processes(tmp_path: Path) -> None:
    """The seat's own dataset is read by worker processes: the join reads its rows here."""
    catalog = write_join_catalog(tmp_path)
    catalog.write_text(catalog.read_text().replace("workers = 0", "workers = 1"))
    running = start_server(catalog)
    try:
        conn = dp.connect(running.url, token=ALICE)
        visits = conn.open("visits")
        release = visits.merge(conn.open("people"), max_rows=3).count(epsilon=EPS)
        assert abs(float(release) - _truncated_inner(3)) < 1
        assert float(visits.count(epsilon=EPS)) == pytest.approx(len(_visits()), abs=1)
    finally:
        running.stop()


def test_remote_auto_bound_and_dropped_rows(server: Server) -> None:
    conn = dp.connect(server.url, token=ALICE)
    visits, people = conn.open("visits"), conn.open("people")
    before = visits.session.spent.epsilon
    joined = visits.merge(people, max_rows="auto", bound_epsilon=EPS)  # a charged quantile
    assert visits.session.spent.epsilon == before + EPS
    assert "rows per ID" in str(visits.session.ledger["query"].iloc[-1])
    dropped = visits.merge(people, max_rows=1, rows="dropped").count(epsilon=EPS)
    sizes = _visits().groupby("person_id").size().to_numpy()
    assert abs(float(dropped) - int(np.maximum(sizes - 1, 0).sum())) < 1
    assert float(joined.count(epsilon=EPS)) > 0


def test_remote_join_on_another_key(server: Server) -> None:
    """people ⋈ people on region, k = 2 per side: 2·2 rows per region, stability 2(1·2 + 1·2)."""
    conn = dp.connect(server.url, token=ALICE)
    people = conn.open("people")
    joined = people.merge(conn.open("people"), on="region", k=2)
    release = joined.count(epsilon=EPS)
    assert abs(float(release) - 2 * 2 * 2) < 1  # two regions, each with more than 2 people
    embedded = dp.Session(epsilon=10**6, ledger=":memory:")
    local = embedded.private_frame(
        _people(), privacy_unit=dp.PrivacyUnit("person_id", 1, id_space="persons")
    )
    want = local.merge(local, on="region", k=2).count(epsilon=EPS)
    assert release.scale == pytest.approx(want.scale, rel=1e-12)
    assert release.scale >= 8 / EPS * 0.999
