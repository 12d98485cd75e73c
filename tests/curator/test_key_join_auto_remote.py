"""``k="auto"`` through a curator: the rank table travels as a join (``rows="per_key"``).

The curator rebuilds the rank table's source from its catalog (m_L + m_R rows
per person from the declared limits), computes the grouped quantile on its
own rows, and charges the seat the request was sent to, once.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import dpframe as dp
from dpframe.curator.catalog import Catalog
from dpframe.curator.join_costs import join_cost
from dpframe.curator.service import Curator
from dpframe.curator.worst_case import CostModel
from dpframe.plan.codec import decode_node, encode_node
from dpframe.plan.columns import ColumnInfo
from dpframe.plan.estimate import ResourceLimits
from dpframe.plan.joins import id_join
from dpframe.plan.nodes import Source, lineage
from dpframe.plan.schema import Schema
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE
from tests.curator.test_joins_remote import (
    VISITS_LIMIT,
    _Built,
    _people,
    _Recorder,
    _sides,
    _visits,
    write_join_catalog,
)


def test_auto_k_through_a_curator_is_one_charge_on_the_catalogs_limits(tmp_path: Path) -> None:
    curator = Curator(Catalog.load(write_join_catalog(tmp_path)))
    analyst = curator.authenticate(f"Bearer {ALICE}")
    recorder = _Recorder(epsilon=10**6, ledger=":memory:")
    people = recorder.private_frame(
        _people(), privacy_unit=dp.PrivacyUnit("person_id", 1, id_space="persons")
    )
    visits = recorder.private_frame(  # the client's claim of 1 row per person is not used
        _visits(), privacy_unit=dp.PrivacyUnit("person_id", 1, id_space="persons")
    )
    with pytest.raises(_Built) as built:
        people.merge(visits, left_on="age", right_on="cost", k="auto", bound_epsilon=1000)
    body = encode_node(built.value.node)
    left, right = _sides(body)
    left[0]["dataset"], right[0]["dataset"] = "people", "visits"
    seat = curator._seats.get(analyst, "people")
    node = decode_node(
        body, seat.source, lambda name: curator._seats.join_side(seat, analyst, name)
    )
    assert lineage(node.plan)[0].unit_rows == 1 + VISITS_LIMIT  # m_L + m_R from the catalog
    answer = curator.answer(analyst, "people", body)
    chosen = decode_response(answer["result"])
    assert list(chosen.index) == ["left", "right"]
    assert seat.session.spent == dp.Budget(1000) and len(seat.session.ledger) == 1


def test_the_rank_tables_ceiling_is_one_row_per_side_row() -> None:
    schema = Schema((ColumnInfo("pid", "numeric", "int64"), ColumnInfo("hh", "numeric", "int64")))
    left = Source("a", unit_rows=1, view="u", unit_column="pid", id_space="p")
    right = Source("b", unit_rows=3, view="u", unit_column="pid", id_space="p")
    ceilings = {"a": 1_000, "b": 4_000}

    def leaf(source: Source) -> tuple[int, dict[str, int]]:
        return ceilings[source.dataset], {}

    def rows(k: int, table: str = "kept") -> int:
        source, _ = id_join(
            left, schema, right, schema, how="inner", on="hh", rows=table, k_left=k, k_right=k
        )
        return join_cost(source, leaf, CostModel(), ResourceLimits.remote(), 256).rows

    assert rows(100, "per_key") == 1_000 + 4_000
    assert rows(100) == min(1_000 * 100, 4_000 * 100)  # the join itself
