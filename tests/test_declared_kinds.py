"""Declared column kinds: the data is read as declared; no kind is inferred from private values."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import dpframe as dp

EXACT = 1e6  # a huge epsilon: the noise is far below the quantities compared


def _session() -> dp.Session:
    return dp.Session(epsilon=1e8, ledger=":memory:")


def test_a_bounded_column_is_read_as_numbers_and_a_stray_word_is_missing() -> None:
    dirty = pd.DataFrame({"age": ["30", "41", "unknown", None, "55"]})
    pf = _session().private_frame(dirty, bounds={"age": (0, 100)})
    assert pf.column_info("age").kind == "numeric"
    assert float(pf["age"].count(epsilon=EXACT)) == pytest.approx(3, abs=0.01)
    assert float(pf["age"].sum(epsilon=EXACT)) == pytest.approx(126, abs=0.01)
    assert dirty["age"].tolist()[2] == "unknown"  # the caller's frame is not modified


def test_the_public_schema_does_not_depend_on_the_values() -> None:
    clean = pd.DataFrame({"age": np.array([30, 41, 55], dtype=np.int64), "flag": [1, 0, 1]})
    dirty = pd.DataFrame({"age": [30.0, None, "n/a"], "flag": [True, None, "yes"]})
    for kind, shown in (("numeric", "float64"), ("integer", "Int64")):
        declared = {"bounds": {"age": (0, 100)}, "dtypes": {"flag": "boolean", "age": kind}}
        one = _session().private_frame(clean, **declared)  # type: ignore[arg-type]
        other = _session().private_frame(dirty, **declared)  # type: ignore[arg-type]
        assert one.schema.equals(other.schema)
        assert one.column_info("age").dtype == shown


def test_a_bounded_integer_column_is_integer_without_a_declaration() -> None:
    """The kind follows the dtype of the frame passed (issue 26): never its values.

    An integer dtype (numpy's or pandas' nullable one) with bounds is an
    integer column, as if declared ``"integer"``: its median is a whole
    number.  A float column stays numeric, even when it holds whole numbers
    (as ``read_csv`` makes an integer column with a missing value): declare
    ``dtypes={"age": "integer"}`` for it (a curator's catalog declares every kind).
    """
    ages = np.arange(20, 61)
    frames = {
        "int64": pd.DataFrame({"age": ages.astype(np.int64)}),
        "Int64": pd.DataFrame({"age": pd.array(ages, dtype="Int64")}),
        "int16": pd.DataFrame({"age": ages.astype(np.int16)}),
    }
    for name, frame in frames.items():
        pf = _session().private_frame(frame, bounds={"age": (0, 100)})
        assert pf.column_info("age").dtype == "Int64", name
        median = float(pf["age"].median(epsilon=EXACT))
        assert median.is_integer() and abs(median - 40) <= 1, name
    floats = _session().private_frame(
        pd.DataFrame({"age": ages.astype(np.float64)}), bounds={"age": (0, 100)}
    )
    assert floats.column_info("age").dtype == "float64"
    flags = _session().private_frame(pd.DataFrame({"f": [True, False]}), bounds={"f": (0, 1)})
    assert flags.column_info("f").dtype == "float64"  # booleans with bounds: numbers, as before


def test_numbers_declared_as_text_are_keys() -> None:
    frame = pd.DataFrame({"zip": [1000, 2000, 2000, None]})
    pf = _session().private_frame(
        frame, dtypes={"zip": "text"}, categories={"zip": ["1000", "2000"]}
    )
    counts = pf.groupby("zip").size(epsilon=EXACT)
    assert counts.round().tolist() == [1, 2]


def test_boolean_declaration_reads_true_false_one_zero() -> None:
    frame = pd.DataFrame({"flag": [True, 1, 0, "x", None, False]})
    pf = _session().private_frame(frame, dtypes={"flag": "boolean"})
    assert float(pf["flag"].count(epsilon=EXACT)) == pytest.approx(4, abs=0.01)
    assert float(pf["flag"].sum(epsilon=EXACT)) == pytest.approx(2, abs=0.01)


@pytest.mark.parametrize(
    ("declared", "match"),
    [
        ({"dtypes": {"nope": "numeric"}}, "Unknown column 'nope' in dtypes="),
        ({"dtypes": {"x": "complex"}}, "must be 'numeric', 'integer', 'boolean' or 'text'"),
        ({"dtypes": ["x"]}, "dtypes= takes a dict"),
        ({"dtypes": {"x": "text"}, "bounds": {"x": (0, 1)}}, "declared as text"),
    ],
)
def test_bad_declarations_are_refused(declared: dict[str, object], match: str) -> None:
    session = _session()
    with pytest.raises(dp.SchemaError, match=match):
        session.private_frame(pd.DataFrame({"x": [1, 2]}), **declared)  # type: ignore[arg-type]
    assert session.ledger.empty


def test_read_csv_takes_declared_kinds(tmp_path: object) -> None:
    from pathlib import Path

    path = Path(str(tmp_path)) / "people.csv"
    path.write_text("age,zip\n30,1000\nunknown,2000\n50,\n", encoding="utf-8")
    pf = _session().read_csv(path, bounds={"age": (0, 100)}, dtypes={"zip": "text"})
    assert pf.column_info("zip").kind == "text"
    assert float(pf["age"].count(epsilon=EXACT)) == pytest.approx(2, abs=0.01)


def test_bounds_on_a_text_column_read_it_as_numbers() -> None:
    """A bounded column is numeric by declaration (was refused as text before the declared
    schema): its words are missing values, and the release is still correct."""
    pf = _session().private_frame(pd.DataFrame({"region": ["a", "b"]}), bounds={"region": (0, 1)})
    assert pf.column_info("region").kind == "numeric"
    assert float(pf["region"].count(epsilon=EXACT)) == pytest.approx(0, abs=0.01)


@pytest.mark.parametrize(
    "values",
    [pd.to_datetime(["2020-01-01"]), pd.to_timedelta([1], unit="s"), [1 + 2j]],
    ids=["datetime", "timedelta", "complex"],
)
def test_bounds_on_dates_durations_and_complex_numbers_stay_refused(values: object) -> None:
    session = _session()
    with pytest.raises(dp.SchemaError, match="not numeric"):
        session.private_frame(pd.DataFrame({"x": values}), bounds={"x": (0, 1)})
