"""The field codecs of the wire format (:mod:`dpframe.plan.codec`): exact numbers, typed values.

Each codec encodes a node field to JSON and decodes it strictly: a value of
the wrong type, size or form is a :class:`NodeFormatError` naming the field,
never a value from the data.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import pandas as pd

from dpframe.errors import DPError
from dpframe.plan.expr_codec import expr_from_dict
from dpframe.plan.expressions import Expr
from dpframe.plan.recode import label_from_json, label_to_json, plain_label
from dpframe.plan.temporal import period_from_json, period_to_json

__all__ = [
    "BOOLEAN",
    "BOUNDS",
    "EXACT",
    "EXPR",
    "INTEGER",
    "KEYS",
    "NUMBER",
    "TEXT",
    "NodeFormatError",
    "decode_exact",
    "encode_exact",
]

_MAX_DIGITS = 40
_MAX_EXPONENT = 99
_MAX_PART = 2**64
_MAX_TEXT = 1_000
_DECIMAL = re.compile(r"(\d+)(?:\.(\d+))?(?:[eE]([-+]?\d{1,3}))?")
_FRACTION = re.compile(r"(\d+)/(\d+)")


class NodeFormatError(DPError):
    """An encoded release node does not follow the format (nothing was charged)."""


def _bad(message: str) -> NodeFormatError:
    return NodeFormatError(message)


# -- exact numbers -------------------------------------------------------------------


def encode_exact(value: Fraction) -> str:
    """A fraction as a short exact decimal when it has one, else ``"n/d"``."""
    d = value.denominator
    twos = fives = 0
    while d % 2 == 0:
        d //= 2
        twos += 1
    while d % 5 == 0:
        d //= 5
        fives += 1
    if d == 1:
        places = max(twos, fives)
        digits = str(value.numerator * 10**places // value.denominator)
        if len(digits.lstrip("-0")) <= _MAX_DIGITS and places <= _MAX_EXPONENT:
            return f"{digits}e-{places}" if places else digits
    return f"{value.numerator}/{value.denominator}"


def decode_exact(text: object, what: str) -> Fraction:
    """Read a privacy parameter: a bounded decimal string or a fraction of 64-bit parts."""
    if not isinstance(text, str) or len(text) > 200:
        raise _bad(f"{what} must be a decimal string or a fraction 'n/d'.")
    fraction = _FRACTION.fullmatch(text)
    if fraction is not None:
        n, d = int(fraction[1]), int(fraction[2])
        if d == 0 or n >= _MAX_PART or d >= _MAX_PART:
            raise _bad(f"{what}: a fraction needs a nonzero denominator and parts below 2**64.")
        return Fraction(n, d)
    decimal = _DECIMAL.fullmatch(text)
    if decimal is None:
        raise _bad(f"{what} must be a decimal string or a fraction 'n/d'.")
    whole, part, exponent = decimal[1], decimal[2] or "", int(decimal[3] or 0)
    digits = (whole + part).lstrip("0")
    if len(digits) > _MAX_DIGITS or abs(exponent) > _MAX_EXPONENT:
        raise _bad(
            f"{what} has more than {_MAX_DIGITS} significant digits or an exponent beyond "
            f"±{_MAX_EXPONENT}."
        )
    return Fraction(int(whole + part), 10 ** len(part)) * Fraction(10) ** exponent


# -- field codecs --------------------------------------------------------------------


@dataclass(frozen=True)
class _Codec:
    encode: Callable[[Any], Any]
    decode: Callable[[Any, str], Any]


def _identity(value: Any) -> Any:
    return value


def _number(value: object, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _bad(f"{what} must be a number.")
    if not math.isfinite(value):
        raise _bad(f"{what} must be finite.")
    return float(value)


def _integer(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise _bad(f"{what} must be an integer.")
    return value


def _boolean(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise _bad(f"{what} must be true or false.")
    return value


def _text(value: object, what: str) -> str:
    if not isinstance(value, str) or len(value) > _MAX_TEXT:
        raise _bad(f"{what} must be a string of at most {_MAX_TEXT} characters.")
    return value


def _expr(value: object, what: str) -> Expr:
    try:
        return expr_from_dict(value)  # type: ignore[arg-type]
    except DPError as exc:
        raise _bad(f"{what}: {exc}") from None
    except (KeyError, TypeError, ValueError, OverflowError, RecursionError):
        raise _bad(f"{what} is not a valid column expression.") from None


def _optional(codec: _Codec) -> _Codec:
    return _Codec(
        lambda v: None if v is None else codec.encode(v),
        lambda v, what: None if v is None else codec.decode(v, what),
    )


def _tuple_of(codec: _Codec, limit: int = 100_000) -> _Codec:
    def decode(value: object, what: str) -> tuple[Any, ...]:
        if not isinstance(value, list) or len(value) > limit:
            raise _bad(f"{what} must be a list of at most {limit} items.")
        return tuple(codec.decode(v, f"{what}[{i}]") for i, v in enumerate(value))

    return _Codec(lambda v: [codec.encode(x) for x in v], decode)


def _pair(first: _Codec, second: _Codec) -> _Codec:
    def decode(value: object, what: str) -> tuple[Any, Any]:
        if not isinstance(value, list) or len(value) != 2:
            raise _bad(f"{what} must be a pair.")
        return first.decode(value[0], what), second.decode(value[1], what)

    return _Codec(lambda v: [first.encode(v[0]), second.encode(v[1])], decode)


def _choice(*options: str) -> _Codec:
    def decode(value: object, what: str) -> str:
        if value not in options:
            raise _bad(f"{what} must be one of {', '.join(options)}.")
        return str(value)

    return _Codec(_identity, decode)


def _key_value(value: object, what: str) -> Hashable:
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float) and math.isfinite(value):
        return value
    if isinstance(value, dict) and set(value) == {"$float"} and value["$float"] == "nan":
        return float("nan")
    if isinstance(value, dict) and set(value) == {"$interval"}:
        try:
            return label_from_json(value, what)  # the keys of a binned column (cut)
        except DPError as exc:
            raise _bad(str(exc)) from None
    if isinstance(value, dict) and set(value) == {"$period"}:
        try:
            return period_from_json(value, what)  # the keys of .dt.to_period
        except DPError as exc:
            raise _bad(str(exc)) from None
    raise _bad(f"{what} must be a string, number, boolean, null or interval (or period).")


def _encode_key_value(value: Any) -> Any:
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:  # most keys: as they are
        return value
    if isinstance(value, float) and math.isnan(value):
        return {"$float": "nan"}
    if isinstance(value, pd.Interval):
        return label_to_json(plain_label(value))
    if isinstance(value, pd.Period):
        return period_to_json(value)
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        return value.item()
    return value


NUMBER = _Codec(_identity, _number)
INTEGER = _Codec(_identity, _integer)
BOOLEAN = _Codec(_identity, _boolean)
TEXT = _Codec(_identity, _text)
EXPR = _Codec(lambda e: e.to_dict(), _expr)
EXACT = _Codec(encode_exact, decode_exact)
BOUNDS = _pair(NUMBER, NUMBER)


def _encode_keys(values: Any) -> list[Any]:
    """A tuple of keys as :func:`_tuple_of` encodes it, text passed through inline."""
    return [v if type(v) is str else _encode_key_value(v) for v in values]


KEYS = _Codec(_encode_keys, _tuple_of(_Codec(_encode_key_value, _key_value), 2**24).decode)


def _fixed(codecs: tuple[_Codec, ...]) -> _Codec:
    def decode(value: object, what: str) -> tuple[Any, ...]:
        if not isinstance(value, list) or len(value) != len(codecs):
            raise _bad(f"{what} must be a list of {len(codecs)} items.")
        return tuple(c.decode(v, what) for c, v in zip(codecs, value, strict=True))

    return _Codec(lambda v: [c.encode(x) for c, x in zip(codecs, v, strict=True)], decode)


def _fields(
    data: object, what: str, names: tuple[str, ...], optional: frozenset[str] = frozenset()
) -> dict[str, Any]:
    """``data`` as an object with exactly ``names`` (those in ``optional`` may be absent)."""
    if not isinstance(data, dict):
        raise _bad(f"{what} must be an object.")
    if not set(names) - optional <= set(data) <= set(names):
        unknown = sorted(set(map(str, data)) - set(names))[:5]
        missing = sorted(set(names) - optional - set(data))
        raise _bad(
            f"{what} has exactly the fields {', '.join(names)}"
            + (f"; unknown: {', '.join(unknown)}" if unknown else "")
            + (f"; missing: {', '.join(missing)}" if missing else "")
            + "."
        )
    return data
