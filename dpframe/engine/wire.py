"""JSON encoding of what crosses between an analyst's kernel and a curator, and of stored answers.

Two directions, two codecs:

* **requests** (analyst → curator) are release nodes, encoded by
  :mod:`dpframe.plan.codec` (a strict, versioned format whose node types are
  the allow-list; no pickle, no code, no class names chosen by the sender);
  this module only parses the JSON (strict, depth-limited).
* **responses** (curator → analyst) carry releases: JSON scalars, exact
  fractions, tuples, expressions, numpy arrays, pandas Index/Series/DataFrame
  and the frozen dataclasses of a fixed list (:func:`_response_types`).

The same response encoding is how the ledger keeps a released answer
(:mod:`dpframe.engine.reruns`: a re-run request is answered from it), which
is why this module sits in the engine; :mod:`dpframe.remote.wire` re-exports
it for the analyst's client.

Non-finite floats travel as ``{"$float": "nan"}`` so that the JSON itself is
standard (no ``NaN`` literals), and large integers as strings.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import math
from collections.abc import Callable, Mapping
from decimal import Decimal
from fractions import Fraction
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from dpframe.errors import DPError
from dpframe.mechanisms.answers import DPValue
from dpframe.mechanisms.answers.results import as_answer
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import Expr
from dpframe.plan.temporal import period_from_json

__all__ = [
    "MAX_DEPTH",
    "MAX_ECHO",
    "ProtocolError",
    "check_depth",
    "decode_expr",
    "decode_response",
    "dumps",
    "duplicate_key",
    "encode_response",
    "loads",
    "short_name",
    "unique_keys",
]

#: Deepest nesting of JSON containers accepted in either direction.
MAX_DEPTH = 64
#: The most characters of a name sent by the other side that an error message repeats.
MAX_ECHO = 64
_INT_LIMIT = 2**53


class ProtocolError(DPError):
    """A message between analyst and curator does not follow the protocol.

    Attributes:
        code: a fixed, machine-readable error code.
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


def _reject_constant(name: str) -> Any:
    raise ProtocolError("invalid_json", f"Non-standard JSON constant {name}.")


def short_name(name: str) -> str:
    """``name`` cut to :data:`MAX_ECHO` characters (``…`` marks a cut), for an error message."""
    return name if len(name) <= MAX_ECHO else name[:MAX_ECHO] + "…"


def unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's pairs as a dict; a key given twice is refused (``object_pairs_hook``).

    Python's ``json`` keeps the last value of a repeated key, and other
    parsers keep the first: a body meaning one thing to a proxy or a log and
    another to the curator is refused instead.

    Raises:
        ProtocolError: ``invalid_json``, naming the key (cut to :data:`MAX_ECHO` characters).
    """
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise ProtocolError(
                "invalid_json",
                f"The JSON has the key {short_name(key)!r} twice in one object; send each key "
                "once.",
            )
        found[key] = value
    return found


def duplicate_key(text: str | bytes) -> ProtocolError | None:
    """The refusal of a JSON text with a key twice in one object (None: none, or not JSON).

    Only the repeated key is looked for; whether the text is valid JSON is
    left to the parser that reads it next.
    """
    try:
        json.loads(text, object_pairs_hook=unique_keys)
    except ProtocolError as error:
        return error
    except (ValueError, RecursionError):
        return None
    return None


def loads(text: str | bytes) -> Any:
    """Parse strict JSON, at most :data:`MAX_DEPTH` deep: no NaN/Infinity, no key twice."""
    try:
        value = json.loads(text, parse_constant=_reject_constant, object_pairs_hook=unique_keys)
    except ProtocolError:
        raise
    except RecursionError:
        raise ProtocolError("too_deep", f"The JSON nests deeper than {MAX_DEPTH}.") from None
    except (ValueError, UnicodeDecodeError):
        raise ProtocolError("invalid_json", "The body is not valid JSON.") from None
    check_depth(value)
    return value


def check_depth(value: Any) -> None:
    """Raise ``too_deep`` when containers nest deeper than :data:`MAX_DEPTH` (iteratively)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, (list, dict)):
            if depth > MAX_DEPTH:
                raise ProtocolError("too_deep", f"The JSON nests deeper than {MAX_DEPTH}.")
            children = item.values() if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)


def dumps(value: Any) -> str:
    """Serialize already-encoded data as compact standard JSON."""
    return _json_encoder().encode(value)


@functools.cache
def _json_encoder() -> json.JSONEncoder:
    """The encoder :func:`dumps` uses (``json.dumps``'s, made once: it keeps no state)."""
    return json.JSONEncoder(allow_nan=False, separators=(",", ":"))


# -- scalars shared by both directions ---------------------------------------------


def _encode_scalar(value: Any) -> Any:
    """Encode a JSON-representable scalar, or return ``NotImplemented``."""
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, np.generic):
        return _encode_scalar(value.item())
    if isinstance(value, int):
        return value if abs(value) < _INT_LIMIT else {"$int": str(value)}
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"$float": "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")}
    if isinstance(value, Fraction):
        return {"$fraction": f"{value.numerator}/{value.denominator}"}
    if isinstance(value, Decimal):
        return {"$fraction": _encode_scalar(Fraction(value))["$fraction"]}
    return NotImplemented


def _decode_tagged_scalar(tag: str, body: Any) -> Any:
    if tag == "$float" and body in ("nan", "inf", "-inf"):
        return float(body)
    if tag == "$int" and isinstance(body, str) and len(body) <= 400:
        try:
            return int(body)
        except ValueError:
            pass
    if tag == "$fraction" and isinstance(body, str) and len(body) <= 800:
        try:
            return Fraction(body)
        except (ValueError, ZeroDivisionError):
            pass
    raise ProtocolError("invalid_value", f"Malformed {tag} value.")


_SCALAR_TAGS = ("$float", "$int", "$fraction")


# -- requests ----------------------------------------------------------------------


def _encode_plain(value: Any, recurse: Callable[[Any], Any]) -> Any:
    """Scalars, expressions, tuples and lists (both directions); else ``NotImplemented``."""
    scalar = _encode_scalar(value)
    if scalar is not NotImplemented:
        return scalar
    if isinstance(value, Expr):
        return {"$expr": value.to_dict()}
    if isinstance(value, tuple):
        return {"$tuple": [recurse(v) for v in value]}
    if isinstance(value, list):
        return [recurse(v) for v in value]
    return NotImplemented


def decode_expr(data: Any) -> Expr:
    """Rebuild a column expression, turning any malformation into a :class:`ProtocolError`."""
    try:
        return expr_from_dict(data)
    except DPError as exc:
        raise ProtocolError("invalid_expression", str(exc)) from None
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError):
        raise ProtocolError("invalid_expression", "A column expression is malformed.") from None


# -- responses ---------------------------------------------------------------------


@functools.cache
def _response_types() -> Mapping[str, type[Any]]:
    """The dataclasses a response may hold: the common result types, and each family's own."""
    from dpframe.engine.recorded import RecordedRelease
    from dpframe.mechanisms.answers.results import (
        FrameRelease,
        GroupedRelease,
        NoInterval,
        Release,
        UndeclaredRows,
    )
    from dpframe.mechanisms.calibration.additive import NoiseSpec
    from dpframe.mechanisms.core.explanations import Explanation, MeasureExplanation
    from dpframe.mechanisms.core.family import family_classes
    from dpframe.mechanisms.core.floors import AccuracyFloor
    from dpframe.mechanisms.moments.aggregates import IntervalModel
    from dpframe.plan.privacy import Budget

    classes: list[type[Any]] = [
        Budget,
        RecordedRelease,
        Explanation,
        MeasureExplanation,
        NoiseSpec,
        IntervalModel,
        GroupedRelease,
        FrameRelease,
        NoInterval,
        Release,
        UndeclaredRows,
        AccuracyFloor,
    ]
    for family in family_classes():
        classes.extend(family().result_types())
    return MappingProxyType({cls.__name__: cls for cls in classes})


@functools.cache
def _field_names(name: str) -> tuple[str, ...]:
    """The field names of the response dataclass called ``name``, looked up once."""
    return tuple(f.name for f in dataclasses.fields(_response_types()[name]))


def encode_response(value: Any) -> Any:
    """Encode a release (or anything a facade method returns) for the analyst."""
    cls = type(value)
    if cls is str or cls is bool or value is None:
        return value
    if cls is float and math.isfinite(value):
        return value
    # The exact built-in types a release is made of, encoded as the general path
    # below would (it checks isinstance, in order): a re-run's stored answer
    # encodes every release, so its hundreds of small values are dispatched first.
    if cls is int:
        return value if abs(value) < _INT_LIMIT else {"$int": str(value)}
    if cls is tuple:
        return {"$tuple": [encode_response(v) for v in value]}
    if cls is list:
        return [encode_response(v) for v in value]
    if cls is Fraction:
        return {"$fraction": f"{value.numerator}/{value.denominator}"}
    if cls is np.ndarray:
        return _encode_array(value)
    name = cls.__name__
    if _response_types().get(name) is cls:  # a result dataclass: the common case
        fields = {field: encode_response(getattr(value, field)) for field in _field_names(name)}
        return {"$dc": name, "fields": fields}
    plain = _encode_plain(value, encode_response)
    if plain is not NotImplemented:
        return plain
    if isinstance(value, np.ndarray):
        return _encode_array(value)
    if isinstance(value, pd.Interval):
        return {
            "$interval": [encode_response(value.left), encode_response(value.right), value.closed]
        }
    if isinstance(value, pd.Period):  # the keys of .dt.to_period
        return {"$period": [str(value), value.freqstr]}
    if isinstance(value, pd.IntervalIndex):
        return {
            "$intervalindex": {
                "breaks": encode_response([[i.left, i.right] for i in value]),
                "closed": value.closed,
                "name": encode_response(value.name),
            }
        }
    if isinstance(value, pd.MultiIndex):  # levels and codes: arrays, not a tuple per row
        return {
            "$multiindex": {
                "levels": [encode_response(level) for level in value.levels],
                "codes": [_encode_array(np.asarray(codes)) for codes in value.codes],
                "names": encode_response(list(value.names)),
            }
        }
    if isinstance(value, pd.Index):
        kind = value.dtype.kind
        dtype = np.dtype(str(value.dtype)).str if kind in "biuf" else "object"
        values = value.tolist()
        # Plain strings go as they are (encoded one by one they would read the same).
        text = all(type(v) is str for v in values)
        return {
            "$index": {
                "values": values if text else encode_response(values),
                "name": encode_response(value.name),
                "dtype": dtype,
            }
        }
    if isinstance(value, pd.Series):
        return {
            "$series": {
                "values": encode_response(value.to_numpy()),
                "index": encode_response(value.index),
                "name": encode_response(value.name),
                "attrs": encode_response(dict(value.attrs)),
            }
        }
    if isinstance(value, pd.DataFrame):
        return {
            "$frame": {
                "columns": encode_response(value.columns),
                "index": encode_response(value.index),
                "data": [encode_response(_plain_cells(value[c].to_numpy())) for c in value.columns],
                "attrs": encode_response(dict(value.attrs)),
            }
        }
    if isinstance(value, Mapping):
        return {"$dict": [[encode_response(k), encode_response(v)] for k, v in value.items()]}
    raise ProtocolError("unencodable", f"A {name} cannot be sent to the analyst.")


def _plain_cells(values: np.ndarray) -> np.ndarray:
    """A column's values with released cells as their numbers (a frame's meta rebuilds them).

    A column of numbers and text (``describe(include="all")``'s) holds ``dp``
    cells among its text; the analyst's side gives them back their intervals
    from the frame's :class:`FrameRelease` (``as_answer``).
    """
    if values.dtype != object or not any(isinstance(v, DPValue) for v in values):
        return values
    return np.array([float(v) if isinstance(v, DPValue) else v for v in values], dtype=object)


#: Array kinds sent as their bytes (little-endian, base64): booleans, integers, floats.
_BINARY_KINDS = "biuf"


def _encode_array(value: np.ndarray) -> dict[str, Any]:
    """An array of numbers as its little-endian bytes in base64, anything else value by value.

    Bytes keep every float bit for bit (NaN and infinities included) and cost
    microseconds where a list of JSON numbers costs about 3 µs a value: the
    re-run store encodes every released table (:mod:`dpframe.engine.reruns`).
    """
    if value.dtype.kind in _BINARY_KINDS and value.ndim == 1:
        little = value.astype(value.dtype.newbyteorder("<"), copy=False)
        data = base64.b64encode(np.ascontiguousarray(little).tobytes()).decode("ascii")
        return {"$array": {"dtype": little.dtype.str, "bytes": data}}
    return {"$array": {"dtype": value.dtype.str, "data": encode_response(value.tolist())}}


def _all_text(values: list[Any]) -> bool:
    """True when every value is a plain ``str`` (JSON strings as they are)."""
    return all(type(v) is str for v in values)


def _decode_binary(dtype_text: Any, data: Any) -> np.ndarray:
    """The array :func:`_encode_array` sent as bytes; only number and boolean kinds."""
    if not (isinstance(dtype_text, str) and isinstance(data, str)):
        raise ProtocolError("invalid_value", "Malformed $array in the response.")
    dtype = np.dtype(dtype_text)
    if dtype.kind not in _BINARY_KINDS or dtype.byteorder == ">":
        raise ProtocolError("invalid_value", "A binary $array has a type that is not a number.")
    raw = base64.b64decode(data.encode("ascii"), validate=True)
    if len(raw) % dtype.itemsize:
        raise ProtocolError("invalid_value", "A binary $array's length is not whole values.")
    array: np.ndarray = np.frombuffer(raw, dtype=dtype).copy()
    return array


def decode_response(data: Any) -> Any:
    """Decode what :func:`encode_response` produced."""
    return _ResponseDecoder(_response_types()).decode(data)


class _ResponseDecoder:
    def __init__(self, types: Mapping[str, type[Any]]) -> None:
        self._types = types

    def decode(self, data: Any) -> Any:
        if data is None or isinstance(data, (bool, int, float, str)):
            return data
        if isinstance(data, list):
            return data if _all_text(data) else [self.decode(v) for v in data]
        if not (isinstance(data, dict) and data and next(iter(data)).startswith("$")):
            raise ProtocolError("invalid_value", "Malformed response value.")
        tag = next(iter(data))
        body = data[tag]
        if tag in _SCALAR_TAGS:
            return _decode_tagged_scalar(tag, body)
        handler = getattr(self, "_" + tag[1:], None)
        if handler is None:
            raise ProtocolError("invalid_value", f"Unknown response tag {tag!r}.")
        try:
            return handler(data, body)
        except ProtocolError:
            raise
        except (KeyError, TypeError, ValueError, DPError):
            raise ProtocolError("invalid_value", f"Malformed {tag} in the response.") from None

    def _expr(self, data: Any, body: Any) -> Expr:
        return decode_expr(body)

    def _tuple(self, data: Any, body: Any) -> tuple[Any, ...]:
        return tuple(self.decode(v) for v in body)

    def _dict(self, data: Any, body: Any) -> dict[Any, Any]:
        return {self.decode(k): self.decode(v) for k, v in body}

    def _array(self, data: Any, body: Any) -> np.ndarray:
        if "bytes" in body:
            return _decode_binary(body["dtype"], body["bytes"])
        return np.asarray(self.decode(body["data"]), dtype=np.dtype(body["dtype"]))

    def _index(self, data: Any, body: Any) -> pd.Index:
        dtype = np.dtype(body["dtype"]) if body["dtype"] != "object" else object
        index: pd.Index = pd.Index(
            self.decode(body["values"]), name=self.decode(body["name"]), dtype=dtype
        )
        return index

    def _interval(self, data: Any, body: Any) -> pd.Interval:
        left, right, closed = body
        interval: pd.Interval = pd.Interval(self.decode(left), self.decode(right), closed=closed)
        return interval

    def _period(self, data: Any, body: Any) -> pd.Period:
        return period_from_json(data, "A period")

    def _intervalindex(self, data: Any, body: Any) -> pd.IntervalIndex:
        pairs = self.decode(body["breaks"])
        return pd.IntervalIndex.from_tuples(
            [tuple(p) for p in pairs], closed=body["closed"], name=self.decode(body["name"])
        )

    def _multiindex(self, data: Any, body: Any) -> pd.MultiIndex:
        names = self.decode(body["names"])
        if "tuples" in body:  # the form of answers stored before levels and codes
            tuples = self.decode(body["tuples"])
            old: pd.MultiIndex = pd.MultiIndex.from_tuples(tuples, names=names)
            return old
        # Object levels are inferred again (periods, text), as from tuples they were.
        levels = [self.decode(level) for level in body["levels"]]
        levels = [pd.Index(lv.tolist()) if lv.dtype == object else lv for lv in levels]
        codes = [self.decode(c) for c in body["codes"]]
        if not all(isinstance(c, np.ndarray) and c.dtype.kind in "iu" for c in codes):
            raise ProtocolError("invalid_value", "A $multiindex's codes are not integers.")
        index: pd.MultiIndex = pd.MultiIndex(  # checks every code against its level
            levels=levels, codes=codes, names=names, verify_integrity=True
        )
        return index

    def _series(self, data: Any, body: Any) -> pd.Series:
        series: pd.Series = pd.Series(
            self.decode(body["values"]),
            index=self.decode(body["index"]),
            name=self.decode(body["name"]),
        )
        series.attrs.update(self.decode(body["attrs"]))
        answer: pd.Series = as_answer(series)  # a release's plain values back to the dp dtype
        return answer

    def _frame(self, data: Any, body: Any) -> pd.DataFrame:
        columns = self.decode(body["columns"])
        values = [self.decode(v) for v in body["data"]]
        frame: pd.DataFrame = pd.DataFrame(dict(zip(range(len(values)), values, strict=True)))
        frame.columns = columns
        frame.index = self.decode(body["index"])
        frame.attrs.update(self.decode(body["attrs"]))
        table: pd.DataFrame = as_answer(frame)  # a release's plain values back to the dp dtype
        return table

    def _dc(self, data: Any, body: Any) -> Any:
        cls = self._types.get(body) if isinstance(body, str) else None
        if cls is None:
            raise ProtocolError("invalid_value", "The response names an unknown type.")
        fields = {k: self.decode(v) for k, v in data["fields"].items()}
        if cls.__name__ == "Budget":
            return cls(fields["epsilon"], fields["delta"])
        return cls(**fields)
