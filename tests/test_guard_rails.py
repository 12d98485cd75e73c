"""Budget guard rails in embedded mode (issue 16): one privacy-unit setting, a new-name warning.

Before: the privacy-unit check was keyed by the data's fingerprint (a hash of
every row in order), so a column subset or a shuffled copy of the same data
loaded row-level in a unit-level session ran at sensitivity 1; and a new
session name silently started a fresh budget for the same people.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dpframe as dp
from dpframe.accounting.ledger import Ledger
from dpframe.backends.column_digests import column_digest, column_digests

UNIT = dp.PrivacyUnit("person", 2)


@pytest.fixture(scope="module")
def people(cps: pd.DataFrame) -> pd.DataFrame:
    frame: pd.DataFrame = cps.assign(person=np.arange(len(cps)) // 2)
    return frame


# -- one privacy-unit setting per session ----------------------------------------------------


@pytest.mark.parametrize(
    "copy",
    [
        pytest.param(lambda df: df[["wage", "person"]], id="column subset"),
        pytest.param(lambda df: df.sample(frac=1.0, random_state=3), id="shuffled copy"),
        pytest.param(lambda df: df.astype({"education": float}), id="other dtype"),
    ],
)
def test_a_row_level_copy_of_unit_data_is_refused_before_any_charge(
    ledger_path: Path, people: pd.DataFrame, copy: object
) -> None:
    session = dp.Session(epsilon=1, ledger=ledger_path)
    units = session.private_frame(people, privacy_unit=UNIT)
    units.count(epsilon=0.1)
    with pytest.raises(dp.SchemaError, match=r"protects privacy unit 'person', at most 2 rows"):
        session.private_frame(copy(people))  # type: ignore[operator]
    assert len(session.ledger) == 1
    assert session.spent == dp.Budget(0.1)


def test_a_unit_frame_in_a_row_level_session_is_refused(
    ledger_path: Path, people: pd.DataFrame
) -> None:
    session = dp.Session(epsilon=1, ledger=ledger_path)
    session.private_frame(people[["wage", "region"]])
    with pytest.raises(dp.SchemaError, match=r"protects one row per person .* asks for privacy"):
        session.private_frame(people, privacy_unit=UNIT)
    with pytest.raises(dp.SchemaError, match="asks for privacy unit 'person', at most 3 rows"):
        session.private_frame(people, privacy_unit="person", max_rows_per_unit=3)
    assert len(session.ledger) == 0


def test_the_same_setting_on_other_data_is_admitted(
    ledger_path: Path, people: pd.DataFrame
) -> None:
    session = dp.Session(epsilon=1, ledger=ledger_path)
    session.private_frame(people, privacy_unit=UNIT).count(epsilon=0.1)
    other = people[people["region"] == "south"]
    session.private_frame(other, privacy_unit=dp.PrivacyUnit("person", 2)).count(epsilon=0.1)
    assert session.spent == dp.Budget(0.2)


def test_the_setting_is_in_the_ledger_and_binds_another_process(
    ledger_path: Path, people: pd.DataFrame, tmp_path: Path
) -> None:
    dp.Session(epsilon=1, ledger=ledger_path, name="study").private_frame(people, privacy_unit=UNIT)
    data = tmp_path / "people.parquet"
    people.sample(frac=1.0, random_state=1)[["wage", "region"]].to_parquet(data)
    script = textwrap.dedent(
        f"""
        import pandas as pd
        import dpframe as dp
        session = dp.Session(epsilon=1, ledger={str(ledger_path)!r}, name="study")
        try:
            session.private_frame(pd.read_parquet({str(data)!r})).count(epsilon=0.1)
        except dp.SchemaError as error:
            print("refused:", error)
        print("releases:", len(session.ledger))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True
    ).stdout
    assert "refused: Session 'study' protects privacy unit 'person', at most 2 rows" in out
    assert "releases: 0" in out


def test_an_in_memory_session_keeps_the_rule(people: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    session.private_frame(people, privacy_unit=UNIT)
    with pytest.raises(dp.SchemaError, match="protects privacy unit"):
        session.private_frame(people.iloc[::-1])


def test_the_first_frame_fixes_the_setting_once(ledger_path: Path) -> None:
    ledger = Ledger(ledger_path)
    ledger.register("s", "pure", dp.Budget(1))
    assert ledger.fix_privacy_unit("s", "rows") == "rows"
    assert ledger.fix_privacy_unit("s", "unit 'p', at most 2 rows") == "rows"
    assert Ledger(ledger_path).fix_privacy_unit("s", "unit 'p', at most 2 rows") == "rows"


# -- a warning when the same data was spent on under another name ------------------------------


def test_a_new_session_name_on_spent_data_warns_with_the_old_name(
    ledger_path: Path, cps: pd.DataFrame
) -> None:
    first = dp.Session(epsilon=1, ledger=ledger_path, name="wages-2026")
    pf = first.private_frame(cps)
    pf.count(epsilon=0.1)
    pf.count(epsilon=0.1)
    copy = cps[["wage", "education"]].sample(frac=1.0, random_state=2)
    copy = copy.rename(columns={"wage": "weekly_wage"}).astype({"education": float})
    with pytest.warns(
        dp.BudgetResetWarning,
        match=r"'wages-2026': 2 releases \(matching columns: education, weekly_wage\)",
    ):
        dp.Session(epsilon=1, ledger=ledger_path, name="fresh").private_frame(copy)


@pytest.mark.parametrize(
    "case",
    ["same name resumes", "other session has no releases", "other data", "in-memory ledger"],
)
def test_no_warning_when_no_other_budget_was_spent_on_the_data(
    ledger_path: Path, cps: pd.DataFrame, case: str
) -> None:
    ledger: str | Path = ":memory:" if case == "in-memory ledger" else ledger_path
    first = dp.Session(epsilon=1, ledger=ledger, name="a")
    pf = first.private_frame(cps)
    if case != "other session has no releases":
        pf.count(epsilon=0.1)
    data = cps
    if case == "other data":
        data = pd.DataFrame({"wage": cps["wage"] + 1.0, "region": cps["region"].str.upper()})
    name = "a" if case == "same name resumes" else "b"
    shared = first._ledger if case == "in-memory ledger" else ledger
    with warnings.catch_warnings():
        warnings.simplefilter("error", dp.BudgetResetWarning)
        dp.Session(epsilon=1, ledger=shared, name=name).private_frame(data)


def test_a_curator_records_no_digests(tmp_path: Path) -> None:
    from dpframe.curator.catalog import Catalog
    from dpframe.curator.service import Curator
    from tests.curator.support import ALICE, write_catalog

    curator = Curator(Catalog.load(write_catalog(tmp_path)))
    try:
        curator.describe(curator.authenticate(f"Bearer {ALICE}"), "cps")  # a seat loads the data
        with Ledger(curator.catalog.ledger)._transaction() as conn:
            assert conn.execute("SELECT COUNT(*) FROM budgets").fetchone()[0] == 1
            assert conn.execute("SELECT COUNT(*) FROM digests").fetchone()[0] == 0
    finally:
        curator.close()


# -- the digests ------------------------------------------------------------------------------


def test_digests_ignore_order_dtype_and_name(cps: pd.DataFrame) -> None:
    base = column_digests(cps)
    shuffled = cps.sample(frac=1.0, random_state=5).reset_index(drop=True)
    other = shuffled.astype({"education": float, "region": "category", "parttime": "object"})
    assert column_digests(other.rename(columns=str.upper)) == {
        k.upper(): v for k, v in base.items()
    }


def test_one_changed_value_changes_the_digest(cps: pd.DataFrame) -> None:
    wage = cps["wage"].copy()
    before = column_digest(wage)
    wage.iloc[17] += 0.01
    assert column_digest(wage) != before
    assert column_digest(cps["wage"].iloc[1:]) != before  # one person fewer


def test_kinds_do_not_collide() -> None:
    assert column_digest(pd.Series([1, 2])) != column_digest(pd.Series(["1", "2"]))
    dates = pd.to_datetime(pd.Series(["2020-01-01", None]))
    assert column_digest(dates) != column_digest(pd.Series([dates.iloc[0].value, None]))


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.one_of(st.integers(-(2**40), 2**40), st.none()), min_size=1, max_size=40),
    st.randoms(use_true_random=False),
)
def test_digest_of_a_permutation_is_the_same(values: list[int | None], rng: object) -> None:
    series = pd.Series(values, dtype="float64")
    permuted = list(values)
    rng.shuffle(permuted)  # type: ignore[attr-defined]
    assert column_digest(pd.Series(permuted, dtype="Int64")) == column_digest(series)


# -- an embedded ledger's files are its owner's only ------------------------------------------


posix_only = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@posix_only
def test_an_embedded_ledger_is_0600_in_a_0700_folder(tmp_path: Path, cps: pd.DataFrame) -> None:
    old = os.umask(0o022)
    try:
        session = dp.Session(epsilon=1, ledger=tmp_path / "state" / "ledger.sqlite")
        session.private_frame(cps).count(epsilon=0.1)
    finally:
        os.umask(old)
    folder = tmp_path / "state"
    assert _mode(folder) == 0o700
    files = sorted(p.name for p in folder.iterdir())
    assert "ledger.sqlite" in files
    assert {name: _mode(folder / name) for name in files} == dict.fromkeys(files, 0o600)


@posix_only
def test_an_existing_embedded_ledger_open_to_others_is_made_0600(ledger_path: Path) -> None:
    Ledger(ledger_path).close()
    os.chmod(ledger_path, 0o644)
    with pytest.warns(RuntimeWarning, match=r"was readable by others; it is now 0600"):
        dp.Session(epsilon=1, ledger=ledger_path)
    assert _mode(ledger_path) == 0o600


@posix_only
def test_a_file_that_is_no_ledger_is_refused_and_left_as_it_was(ledger_path: Path) -> None:
    ledger_path.write_bytes(b"not a ledger" * 100)
    os.chmod(ledger_path, 0o644)
    with pytest.raises(dp.LedgerError, match="not a readable SQLite database"):
        dp.Session(epsilon=1, ledger=ledger_path)
    assert _mode(ledger_path) == 0o644  # refused files are never changed, not even their mode
