"""Issue 29's grouping and filter items through the curator (pure DP, the analyst's kernel).

The keys of a column the data owner declared integer come from its bounds in
the analyst's process (public facts of the schema the curator sent), so
``groupby("education")`` needs no δ remotely either (a float column is
refused before the charge, saying how to declare it); a filter value that is not a declared key is
refused in the analyst's process, before anything crosses the wire.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import dpframe as dp
from tests.curator.support import BOB, Server, write_catalog


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tests' catalog, with education declared integer by the data owner."""
    path = write_catalog(tmp_path_factory.mktemp("curator"))
    text = path.read_text(encoding="utf-8")
    declared = '[datasets.cps]\ndtypes = { education = "integer" }\n'
    path.write_text(text.replace("[datasets.cps]\n", declared, 1), encoding="utf-8")
    return path


@pytest.fixture(scope="module")
def remote(server: Server) -> Any:
    return dp.connect(server.url, token=BOB).open("cps")  # pure DP, ε = 1 in total


def test_mean_wage_by_education_needs_no_delta_remotely(remote: Any) -> None:
    before = remote.session.spent
    got = remote.groupby("education")["wage"].mean(epsilon=0.25)
    assert list(got.index) == list(range(21))
    assert remote.session.spent == before + dp.Budget(0.25)
    assert 400 < float(got[12]) < 800  # 8,000-odd rows: noise of a few dollars


def test_a_misspelled_key_is_refused_before_anything_is_sent(remote: Any) -> None:
    before = remote.session.spent
    with pytest.raises(dp.SchemaError, match=r"'South' is not a declared key.*'south'"):
        remote[remote["region"] == "South"]["wage"].mean(epsilon=0.25)
    with pytest.raises(dp.SchemaError, match=r"'Wesst' is not a declared key.*'west'"):
        remote.query("region in ['west', 'Wesst']").count(epsilon=0.25)
    assert remote.session.spent == before


def test_a_float_column_says_how_to_declare_its_keys(remote: Any) -> None:
    before = remote.session.spent
    with pytest.raises(dp.SchemaError, match=r"groupby\('experience'\) needs the public keys"):
        remote.groupby("experience")["wage"].mean(epsilon=0.25)
    assert remote.session.spent == before


def test_a_derived_integer_column_groups_remotely_without_delta(remote: Any) -> None:
    before = remote.session.spent
    got = remote.groupby(remote["education"] // 4 * 4)["wage"].mean(epsilon=0.2)
    assert list(got.index) == [0, 4, 8, 12, 16, 20]
    assert remote.session.spent == before + dp.Budget(0.2)
    assert 400 < float(got[12]) < 800


def test_a_part_of_split_text_counts_remotely(remote: Any) -> None:
    before = remote.session.spent
    got = remote["region"].str.split("th").str[0].value_counts(epsilon=0.2, sort=False)
    assert list(got.index) == ["midwest", "nor", "sou", "west"]  # pandas' order (sorted)
    assert remote.session.spent == before + dp.Budget(0.2)
    assert 8_000 < float(got["sou"]) < 10_000  # 8,760 people live in the south


def test_a_public_table_merges_on_differently_named_keys_remotely(remote: Any) -> None:
    import pandas as pd

    table = pd.DataFrame({"area": ["northeast", "midwest", "south", "west"], "n": [1, 2, 3, 4]})
    merged = remote.merge(table, left_on="region", right_on="area")
    assert list(merged.columns)[-2:] == ["area", "n"]
    before = remote.session.spent
    got = merged["n"].sum(epsilon=0.2)
    assert remote.session.spent == before + dp.Budget(0.2)
    assert 70_000 < float(got) < 71_700  # 1·6,441 + 2·6,863 + 3·8,760 + 4·6,091 = 70,811


def test_a_keyless_column_has_a_distinct_count_remotely(remote: Any) -> None:
    before = remote.session.spent
    got = remote["wage"].nunique(epsilon=0.05)
    assert remote.session.spent == before + dp.Budget(0.05)
    assert 5_000 < float(got) < 7_000  # the CPS has 5,970 distinct weekly wages
