"""Budget guard rails in embedded mode (issue 16): one privacy-unit setting, a new-name warning.

Before: the privacy-unit check was keyed by the data's fingerprint (a hash of
every row in order), so a column subset or a shuffled copy of the same data
loaded row-level in a unit-level session ran at sensitivity 1; and a new
session name silently started a fresh budget for the same people.
"""

from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
import textwrap
import warnings
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting.ledger import Ledger
from dpframe.accounting.ledger_sketches import sketch_path

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


# -- a warning when data like this was spent on under another name ---------------------------


def _with_gaps(cps: pd.DataFrame) -> pd.DataFrame:
    """CPS with 1% of its wages missing (what a dropna() removes)."""
    frame: pd.DataFrame = cps.assign(wage=cps["wage"].mask(cps.index % 97 == 5))
    return frame


def _reloaded_after_dropna(frame: pd.DataFrame, folder: Path) -> pd.DataFrame:
    """frame.dropna() written to CSV and read back (int64 and str columns, as pandas reads them)."""
    path = folder / "clean.csv"
    frame.dropna().to_csv(path, index=False)
    return pd.read_csv(path)


COPIES: dict[str, Callable[[pd.DataFrame, Path], pd.DataFrame]] = {
    "one row dropped": lambda df, _: df.drop(index=df.index[17]),
    "a 99% sample": lambda df, _: df.sample(frac=0.99, random_state=4),
    "one row appended": lambda df, _: pd.concat([df, df.iloc[[3]].assign(wage=1234.5)]),
    "dropna() before reloading": _reloaded_after_dropna,
    "shuffled, renamed, retyped": lambda df, _: (
        df.sample(frac=1.0, random_state=2)
        .rename(columns=str.upper)
        .astype({"EDUCATION": float, "REGION": "category"})
    ),
}


@pytest.mark.fresh_releases
@pytest.mark.parametrize("copy", list(COPIES))
def test_a_near_copy_under_a_new_name_warns_with_the_session_and_similarity(
    ledger_path: Path, cps: pd.DataFrame, tmp_path: Path, copy: str
) -> None:
    data = _with_gaps(cps)
    first = dp.Session(epsilon=1, ledger=ledger_path, name="wages-2026")
    pf = first.private_frame(data)
    pf.count(epsilon=0.1)
    pf.count(epsilon=0.1)
    copied = COPIES[copy](data, tmp_path)
    with pytest.warns(dp.BudgetResetWarning) as caught:
        dp.Session(epsilon=1, ledger=ledger_path, name="fresh").private_frame(copied)
    (message,) = [str(w.message) for w in caught if w.category is dp.BudgetResetWarning]
    found = re.search(r"'wages-2026': 2 releases \(rows in common: about (\d+)%[;)]", message)
    assert found is not None, message
    assert 95 <= int(found.group(1)) <= 100
    assert "session 'fresh' starts a separate budget" in message


@pytest.mark.fresh_releases
def test_a_column_subset_warns_with_the_matching_columns(
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


def test_the_same_data_under_a_new_name_is_named_as_such(
    ledger_path: Path, cps: pd.DataFrame
) -> None:
    dp.Session(epsilon=1, ledger=ledger_path, name="a").private_frame(cps).count(epsilon=0.1)
    with pytest.warns(dp.BudgetResetWarning, match=r"'a': 1 release \(the same data\)"):
        dp.Session(epsilon=1, ledger=ledger_path, name="b").private_frame(cps)


def _unrelated(cps: pd.DataFrame) -> pd.DataFrame:
    """A table of the same shape and columns whose rows are other people's."""
    rng = np.random.default_rng(11)
    n = len(cps)
    data: pd.DataFrame = pd.DataFrame(
        {
            "wage": np.round(rng.lognormal(6.0, 0.7, n), 2),
            "education": rng.integers(0, 19, n),
            "experience": rng.integers(-4, 64, n),
            "ethnicity": rng.choice(["cauc", "afam"], n),
            "smsa": rng.choice(["yes", "no"], n),
            "region": rng.choice(["northeast", "midwest", "south", "west"], n),
            "parttime": rng.choice(["yes", "no"], n),
        }
    )
    return data


@pytest.mark.parametrize(
    "case",
    [
        "same name resumes",
        "other session has no releases",
        "other data",
        "another table like it",
        "in-memory ledger",
    ],
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
    if case == "another table like it":
        data = _unrelated(cps)
    name = "a" if case == "same name resumes" else "b"
    shared = first._ledger if case == "in-memory ledger" else ledger
    with warnings.catch_warnings():
        warnings.simplefilter("error", dp.BudgetResetWarning)
        dp.Session(epsilon=1, ledger=shared, name=name).private_frame(data)


def test_a_curator_records_no_digests_and_reads_no_key(tmp_path: Path) -> None:
    from dpframe.curator.catalog import Catalog
    from dpframe.curator.service import Curator
    from tests.curator.support import ALICE, write_catalog

    curator = Curator(Catalog.load(write_catalog(tmp_path)))
    try:
        curator.describe(curator.authenticate(f"Bearer {ALICE}"), "cps")  # a seat loads the data
        ledger = Path(curator.catalog.ledger)
        with Ledger(ledger)._transaction() as conn:
            assert conn.execute("SELECT COUNT(*) FROM budgets").fetchone()[0] == 1
            assert conn.execute("SELECT COUNT(*) FROM unkeyed_digests").fetchone()[0] == 0
        assert not sketch_path(ledger).exists()
        assert not Path(os.environ["DPFRAME_KEY"]).exists()
    finally:
        curator.close()


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
