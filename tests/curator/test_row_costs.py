"""The per-row prices of text and list nodes, and the public ceilings they rest on (issue 27)."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.row_costs import CASE_GROWTH, row_seconds
from dpframe.curator.service import Curator
from dpframe.curator.worst_case import CostModel, worst_case_seconds
from tests.curator.support import node_on, write_catalog

UNIT = CostModel(
    hash_row_seconds=1.0,
    list_item_seconds=10.0,
    text_value_seconds=100.0,
    regex_value_seconds=1_000.0,
    text_char_seconds=10_000.0,
    text_match_seconds=100_000.0,
)
STAND_IN = pd.DataFrame({"s": ["ab", "cd"], "u": ["x", "y"], "v": [1.0, 2.0]})
LOAD = {"bounds": {"v": (0, 2)}, "dtypes": {"s": "text(40)", "u": "text"}}


def _per_row(release: object, text_chars: int = 256) -> float:
    node = node_on(STAND_IN, release, **LOAD)  # type: ignore[arg-type]
    return row_seconds(node, UNIT, {"s": 40}, text_chars)


def test_each_text_node_is_priced_per_row_by_what_it_calls() -> None:
    # upper (plain Python, 40 characters), then a plain contains (40 characters)
    upper = _per_row(lambda pf: pf[pf["s"].str.upper().str.contains("A")].count(epsilon=1))
    assert upper == 2 * (100 + 40 * 10_000)
    # a regex replace: a compiled pattern, 40 characters, at most 41 matches
    regex = _per_row(
        lambda pf: pf[pf["s"].str.replace(r"(\w)", r"\1", regex=True).str.len() > 1].count(
            epsilon=1
        )
    )
    assert regex == (1_000 + 40 * 10_000 + 41 * 100_000) + (100 + 40 * 10_000)
    # text without a declared length: text_chars; a case mapping of it: 3 times as long
    undeclared = _per_row(lambda pf: pf[pf["u"].str.lower().str.contains("x")].count(epsilon=1))
    assert undeclared == (100 + 256 * 10_000) + (100 + 3 * 256 * 10_000)
    assert _per_row(lambda pf: pf[pf["u"].str.contains("x")].count(epsilon=1), 1_000) == (
        100 + 1_000 * 10_000
    )


def test_list_nodes_are_priced_per_row_and_item() -> None:
    names = [f"n{i}" for i in range(500)]
    assert _per_row(lambda pf: pf[pf["u"].isin(names)].count(epsilon=1)) == 1 + 500 * 10
    assert _per_row(lambda pf: pf["v"].mean(epsilon=1)) == 0  # vectorized only


def test_the_estimate_grows_with_text_nodes_and_rows() -> None:
    def chain(count: int) -> object:
        def release(pf: object) -> object:
            s = pf["s"]  # type: ignore[index]
            for _ in range(count):
                s = s.str.upper()
            return pf[s.str.contains("A")].count(epsilon=1)  # type: ignore[index]

        return release

    one, ten = (node_on(STAND_IN, chain(n), **LOAD) for n in (1, 10))  # type: ignore[arg-type]
    model = CostModel()
    at = {
        n: worst_case_seconds(node, 10**5, model, lengths={"s": 40})
        for n, node in ((1, one), (10, ten))
    }
    per_node = 10**5 * (model.text_value_seconds + 40 * model.text_char_seconds)
    assert at[10] - at[1] == pytest.approx(9 * (per_node + 10**5 * model.row_op_seconds))


def test_case_mappings_make_text_at_most_three_times_as_long() -> None:
    # every code point whose case mapping changes its length, through chains of the maps
    maps = (str.upper, str.lower, str.strip, str.lstrip, str.rstrip)
    growing = [
        chr(c)
        for c in range(sys.maxunicode + 1)
        if len(chr(c).upper()) > 1 or len(chr(c).lower()) > 1
    ]
    assert growing  # "ß".upper() == "SS", "İ".lower() == "i̇", ...
    for char in growing:
        frontier, seen = {char}, {char}
        while frontier:
            step = {op(s) for s in frontier for op in maps} - seen
            assert all(len(s) <= CASE_GROWTH for s in step), char
            seen |= step
            frontier = step


def test_undeclared_text_over_its_ceiling_refuses_to_start(tmp_path: Path) -> None:
    # the sentinel dataset's note column has no declared length: 5,000 rows of
    # "ordinary" (8 characters); a ceiling of 2 characters per row refuses it
    catalog = write_catalog(tmp_path, server="text_chars = 2")
    with pytest.raises(CatalogError, match=r"column '\w+' holds more text than text_chars"):
        Curator(Catalog.load(catalog))
    fine = tmp_path / "fine"
    fine.mkdir()
    Curator(Catalog.load(write_catalog(fine, server="text_chars = 64"))).close()
