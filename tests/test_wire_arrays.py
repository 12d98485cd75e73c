"""The response codec's binary arrays and level-coded MultiIndexes (the re-run store's form).

Arrays of numbers travel as their little-endian bytes in base64 and indexes
with several levels as levels and codes; both must rebuild exactly what was
released, read the older forms (lists of values, tuples) that ledgers already
hold, and refuse a malformed body with a ``ProtocolError``.
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from typing import Any

import numpy as np
import pandas as pd
import pytest

from dpframe.engine import reruns
from dpframe.engine.wire import ProtocolError, decode_response, dumps, encode_response, loads
from dpframe.plan.privacy import Budget


def round_trip(value: Any) -> Any:
    return decode_response(loads(dumps(encode_response(value))))


@pytest.mark.parametrize(
    "array",
    [
        np.array([0.1, -0.0, math.inf, -math.inf, math.nan, 5e-324, 1.7976931348623157e308]),
        np.array([-(2**63), 0, 2**63 - 1], dtype=np.int64),
        np.array([0, 255], dtype=np.uint8),
        np.array([True, False, True]),
        np.array([1.5, 2.5], dtype=np.float32),
        np.array([], dtype=np.float64),
    ],
    ids=["float64-specials", "int64-extremes", "uint8", "bool", "float32", "empty"],
)
def test_number_arrays_travel_as_bytes_and_come_back_bit_for_bit(array: np.ndarray) -> None:
    encoded = encode_response(array)
    assert set(encoded["$array"]) == {"dtype", "bytes"}
    back = round_trip(array)
    assert back.dtype == array.dtype
    assert back.tobytes() == array.tobytes()  # every bit, NaN's and -0.0's included
    assert back.flags.writeable


def test_a_big_endian_array_is_sent_little_endian_with_the_same_values() -> None:
    array = np.array([1.25, -3.0], dtype=">f8")
    back = round_trip(array)
    assert back.dtype == np.dtype("<f8")
    np.testing.assert_array_equal(back, array)


def test_object_arrays_still_travel_value_by_value() -> None:
    array = np.array(["a", None, 3], dtype=object)
    assert "data" in encode_response(array)["$array"]
    assert list(round_trip(array)) == ["a", None, 3]


def test_the_list_form_stored_before_bytes_is_still_read() -> None:
    old = {"$array": {"dtype": "<f8", "data": [1.0, {"$float": "nan"}, 2.5]}}
    back = decode_response(old)
    assert back.dtype == np.float64 and back[0] == 1.0 and math.isnan(back[1])


@pytest.mark.parametrize(
    ("dtype", "data", "message"),
    [
        ("|O", base64.b64encode(b"\0" * 8).decode(), "not a number"),
        (">f8", base64.b64encode(b"\0" * 8).decode(), "not a number"),
        ("<f8", base64.b64encode(b"\0" * 7).decode(), "whole values"),
        ("<f8", "not base64!", "Malformed"),
        ("<f8", 12, "Malformed"),
    ],
    ids=["object", "big-endian", "ragged", "bad-base64", "not-text"],
)
def test_a_malformed_binary_array_is_a_protocol_error(dtype: str, data: Any, message: str) -> None:
    with pytest.raises(ProtocolError, match=message):
        decode_response({"$array": {"dtype": dtype, "bytes": data}})


@pytest.mark.parametrize(
    "index",
    [
        pd.MultiIndex.from_tuples([("a", 1), ("a", 2), ("b", 1)], names=["x", "y"]),
        pd.MultiIndex.from_tuples([("a", 1.5), (None, 2.0), ("b", math.nan)], names=["x", None]),
        pd.MultiIndex.from_product([pd.Index(["p", "q"]), [True, False]], names=["c", "b"]),
        pd.MultiIndex.from_product([pd.period_range("2020-01", periods=2, freq="M"), ["u"]]),
    ],
    ids=["text-int", "missing", "bool", "period"],
)
def test_a_multiindex_travels_as_levels_and_codes(index: pd.MultiIndex) -> None:
    body = encode_response(index)["$multiindex"]
    assert set(body) == {"levels", "codes", "names"}
    back = round_trip(index)
    assert back.equals(index) and list(back.names) == list(index.names)
    # the level types are those rebuilding from tuples gives (as answers stored before did)
    from_tuples = pd.MultiIndex.from_tuples(list(index), names=index.names)
    assert [lv.dtype for lv in back.levels] == [lv.dtype for lv in from_tuples.levels]


def test_the_tuple_form_of_a_multiindex_stored_before_is_still_read() -> None:
    index = pd.MultiIndex.from_tuples([("a", 1), ("b", 2)], names=["x", "y"])
    old = {"$multiindex": {"tuples": encode_response(list(index)), "names": ["x", "y"]}}
    assert decode_response(old).equals(index)


def test_a_multiindex_code_outside_its_level_is_refused() -> None:
    body = json.loads(dumps(encode_response(pd.MultiIndex.from_tuples([("a", 1), ("b", 2)]))))
    codes = np.array([0, 7], dtype=np.int8)
    body["$multiindex"]["codes"][0] = encode_response(codes)
    with pytest.raises(ProtocolError, match=r"Malformed \$multiindex"):
        decode_response(body)


def test_text_index_values_go_as_they_are_but_missing_values_are_tagged() -> None:
    plain = encode_response(pd.Index(["a", "b"]))["$index"]["values"]
    assert plain == ["a", "b"]
    with_nan = encode_response(pd.Index(["a", math.nan]))["$index"]["values"]
    assert with_nan == ["a", {"$float": "nan"}]
    assert dumps(encode_response(pd.Index(["a", math.nan])))  # standard JSON: no NaN literal


def test_stored_answers_are_json_and_zlib_bodies_of_older_ledgers_are_read() -> None:
    series = pd.Series([1.0, 2.0], index=pd.Index(["a", "b"], name="k"), name="v")
    body = reruns.pack(series, Budget(1, 0), "sum(v) by k")
    assert body is not None and body[:1] == b"{"
    old_body = zlib.compress(body, 6)  # how answers were stored until now
    for stored in (body, old_body):
        unpacked = reruns.unpack(stored, recorded_at=0.0)
        assert unpacked is not None
        result, note = unpacked
        assert list(result.index) == ["a", "b"] and note.startswith("from the ledger")
        np.testing.assert_array_equal(np.asarray(result, dtype=float), [1.0, 2.0])
