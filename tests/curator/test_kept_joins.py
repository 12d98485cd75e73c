"""The joins a curator keeps per seat, within ``[server] kept_join_rows`` (public row ceilings).

Each kept join counts its public row ceiling (from the catalog); beyond the
ceiling the least recently used joins of the seat are dropped (a later release
on one computes it again, with a new random draw), and a request whose own
joins are over the ceiling is refused ``resource_limit`` before any charge.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.codes import ServiceError
from dpframe.curator.kept_joins import KeptJoins, check_keepable
from dpframe.curator.service import Curator
from dpframe.curator.settings import ServerSettings
from dpframe.errors import ResourceLimitError
from dpframe.plan.nodes import Join, Source
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE
from tests.curator.test_joins_remote import _join_body, _truncated_inner, write_join_catalog


def _join(max_rows: int) -> Join:
    columns = ("pid",)
    return Join(Source("a"), Source("b"), columns, columns, "inner", max_rows, columns, columns)


def test_the_least_recently_used_joins_are_dropped_beyond_the_ceiling() -> None:
    kept = KeptJoins()
    forgotten: list[Join] = []
    a, b, c = _join(1), _join(2), _join(3)
    assert kept.admit({a: 40}, 100, forgotten.append) == []
    assert kept.admit({b: 50}, 100, forgotten.append) == []
    assert kept.admit({a: 40}, 100, forgotten.append) == []  # a used again: b is now oldest
    assert kept.admit({c: 30}, 100, forgotten.append) == [b]
    assert forgotten == [b] and list(kept.rows) == [a, c] and kept.total == 70
    assert kept.admit({b: 50, c: 30}, 100, forgotten.append) == [a]  # a request's joins fit
    assert list(kept.rows) == [b, c]


def test_a_request_whose_joins_alone_are_over_the_ceiling_is_refused() -> None:
    kept = KeptJoins()
    kept.admit({_join(1): 10}, 100, list.append)  # type: ignore[arg-type]
    with pytest.raises(ResourceLimitError, match=r"up to 101 rows .* at most 100 rows of joins"):
        kept.admit({_join(2): 60, _join(3): 41}, 100, lambda join: None)
    assert list(kept.rows) == [_join(1)]  # nothing dropped, nothing added
    check_keepable({_join(2): 100}, 100)  # at the ceiling: kept


def test_the_setting_has_a_default_and_is_checked(tmp_path: Path) -> None:
    assert ServerSettings().kept_join_rows == 20_000_000
    catalog = write_join_catalog(tmp_path)
    text = catalog.read_text()
    for bad in ("0", '"many"', "true"):
        catalog.write_text(
            text.replace(
                "latency_quantum_ms = 0", f"latency_quantum_ms = 0\nkept_join_rows = {bad}"
            )
        )
        with pytest.raises(CatalogError, match=r"\[server\]\.kept_join_rows must be a positive"):
            Catalog.load(catalog)


def _curator(tmp_path: Path, ceiling: int) -> Curator:
    catalog = write_join_catalog(tmp_path)
    text = catalog.read_text().replace(
        "latency_quantum_ms = 0", f"latency_quantum_ms = 0\nkept_join_rows = {ceiling}"
    )
    catalog.write_text(text)
    return Curator(Catalog.load(catalog))


def _kept(curator: Curator, analyst: Any) -> list[Join]:
    seat = curator._seats.get(analyst, "visits")
    return list(seat.session._path.joins)


def test_a_curator_keeps_joins_within_its_ceiling(tmp_path: Path) -> None:
    # visits (4,000 rows, 4 per person) ⋈ people (1,000, 1): inner ceiling min(4000, 4000)
    curator = _curator(tmp_path, ceiling=5_000)
    analyst = curator.authenticate(f"Bearer {ALICE}")
    seat = curator._seats.get(analyst, "visits")
    bodies = {k: _join_body(max_rows=k) for k in (2, 3)}
    first = curator.answer(analyst, "visits", bodies[2])
    assert len(_kept(curator, analyst)) == 1 and seat.kept_joins.total == 4_000
    curator.answer(analyst, "visits", bodies[3])  # a second join: the first is dropped
    kept = _kept(curator, analyst)
    assert len(kept) == 1 and kept[0].max_rows == 3 and seat.kept_joins.total == 4_000
    assert len(seat.session._path.join_rows) == 1
    again = curator.answer(analyst, "visits", {**bodies[2], "fresh": True})  # computed again
    assert [j.max_rows for j in _kept(curator, analyst)] == [2]
    assert first.keys() == again.keys()
    spent = seat.session.spent
    with pytest.raises(ServiceError, match="at most 5,000 rows of joins per analyst"):
        curator.answer(analyst, "visits", _join_body(max_rows=2, how="outer"))  # 9,000 rows
    assert seat.session.spent == spent  # refused before any charge
    assert [j.max_rows for j in _kept(curator, analyst)] == [2]  # and nothing dropped


def test_a_dropped_join_answers_its_truncated_count_again(tmp_path: Path) -> None:
    curator = _curator(tmp_path, ceiling=5_000)
    analyst = curator.authenticate(f"Bearer {ALICE}")
    answers = [
        curator.answer(analyst, "visits", {**_join_body(max_rows=k), "fresh": True})
        for k in (2, 3, 2)  # the third computes the first join again (it was dropped)
    ]
    values = [float(decode_response(a["result"])) for a in answers]
    for k, value in zip((2, 3, 2), values, strict=True):
        assert abs(value - _truncated_inner(k)) < 1  # ε = 1000: the exact truncated count
    seat = curator._seats.get(analyst, "visits")
    assert len(seat.session.ledger) == 3  # each one charged (fresh)
