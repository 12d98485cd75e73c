r"""Text in expressions: the ``.str`` methods as expression nodes, with bounded work.

Four expression nodes (see :mod:`dpframe.plan.expressions` for what every node provides):

* :class:`StrMap`: ``lower``, ``upper``, ``strip``, ``lstrip``, ``rstrip``;
* :class:`StrReplace`: ``replace(pat, repl, n, case, regex)``;
* :class:`StrMatch`: ``contains``, ``startswith``, ``endswith`` (booleans);
* :class:`StrLen`: ``len`` (a number).

Each computes, for every text value, what pandas' ``Series.str`` method of
the same name computes for an ``object`` column (:func:`text_function` gives
the function of one value; the backends apply it to each distinct value of a
chunk).  Missing values, and values that are not text, give missing values
(``na=`` fills them for the matches, as in pandas).

Work never depends on private lengths or on the pattern in a way that can
blow up:

* A text column may declare a **maximum length** (``dtypes={"name":
  "text(40)"}``): longer values are truncated when the data is read, and the
  text a node makes (``upper`` of ``"ß"`` is ``"SS"``, a ``replace``) is
  truncated to it again, so every value of the column and of its derived
  columns has at most that many characters.  ``len`` needs it (its bounds
  are ``(0, max_length)``), and so does a ``replace`` that can lengthen
  values (a replacement longer than the pattern, an empty pattern, a regular
  expression); without it they are refused before the charge.
* ``regex=True`` runs on RE2 (``pip install 'dpframe[regex]'``,
  google-re2), whose time is linear in the text; Python's backtracking
  ``re`` is only used for patterns that are plain text (no metacharacter),
  where it is linear too.  Without RE2 a regular expression is refused
  before the charge.  RE2 has no backreferences or lookaround, its
  ``\d``, ``\w``, ``\s``, ``\b`` are ASCII (``\s`` is ``[\t\n\f\r ]``) and
  its ``$`` is the end of the text (Python's also matches before a final
  newline).  Text RE2 cannot read (lone surrogates) gives a missing value.
* Patterns, replacements and ``to_strip`` have at most :data:`MAX_PATTERN`
  characters; a replacement template may use ``\1``..``\99``,
  ``\g<name>``, ``\\``, ``\n``, ``\t``, ``\r``, ``\f``, ``\v``, ``\a``.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, ClassVar

from dpframe.errors import SchemaError
from dpframe.plan.columns import ColumnInfo, Derived, ValueKind, pandas_order
from dpframe.plan.expressions import Col, Expr

__all__ = [
    "LENGTH_KEYS",
    "MAX_PATTERN",
    "MAX_TEXT_LENGTH",
    "StrLen",
    "StrMap",
    "StrMatch",
    "StrReplace",
    "check_max_length",
    "part_of",
    "plain_pattern",
    "regex_engine",
    "text_from_dict",
    "text_function",
]

#: The largest declared maximum length of a text column (characters).
MAX_TEXT_LENGTH = 1_000_000
#: The most characters of a pattern, a replacement or ``to_strip``.
MAX_PATTERN = 1_000
#: ``len()`` of a column has the public keys 0..max_length when max_length is at most this.
LENGTH_KEYS = 4096
_MAPS = ("lower", "upper", "strip", "lstrip", "rstrip")
_MATCHES = ("contains", "startswith", "endswith")
_META = frozenset(".^$*+?{}[]\\|()")
_ESCAPES = {"\\": "\\", "n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v", "a": "\a"}
_GROUP = re.compile(r"\\(?:([1-9][0-9]?)|g<([^<>]{1,64})>)")
_OCTAL = re.compile(r"\\(?:0|[0-7]{3})")
_FIX = "declare it with dtypes={{{name!r}: 'text(40)'}} (the longest value, in characters)"


def _length_fix(operand: Expr, info: ColumnInfo) -> str:
    """What to declare for a maximum length: the column itself, or the one text it comes from.

    A text derived from one column (a part of a split, a lower-cased copy) is
    at most as long as that column, so the fix names the column the analyst
    can declare, never the derived expression's text.
    """
    read = operand.columns()
    if isinstance(operand, Col) or len(read) != 1:
        return f"{info.name!r} has no declared maximum length: " + _FIX.format(name=info.name)
    column = next(iter(read))
    return (
        f"{info.name!r} is at most as long as {column!r}, which has no declared maximum "
        "length: " + _FIX.format(name=column)
    )


def check_max_length(value: object, what: str) -> int:
    """A maximum text length: an integer from 1 to :data:`MAX_TEXT_LENGTH`."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise SchemaError(f"{what} must be an integer number of characters.")
    if not 1 <= value <= MAX_TEXT_LENGTH:
        raise SchemaError(f"{what} must be between 1 and {MAX_TEXT_LENGTH} characters.")
    return value


def regex_engine() -> ModuleType:
    """The linear-time regular expression engine (google-re2's ``re2``).

    Raises:
        SchemaError: it is not installed.
    """
    try:
        return importlib.import_module("re2")
    except ImportError:
        raise SchemaError(
            "regex=True needs a linear-time regular expression engine: pip install "
            "'dpframe[regex]' (google-re2). Python's own re can take exponential time on some "
            "patterns, so dpframe does not run it on private text; regex=False matches the "
            "pattern as plain text."
        ) from None


def _text(value: object, what: str, empty: bool = True) -> str:
    if not isinstance(value, str):
        raise SchemaError(f"{what} must be a string, not a {type(value).__name__}.")
    if len(value) > MAX_PATTERN:
        raise SchemaError(f"{what} has more than {MAX_PATTERN} characters.")
    if not empty and not value:
        raise SchemaError(f"{what} must not be empty.")
    return value


def _flag(value: object, what: str) -> bool:
    if not isinstance(value, bool):
        raise SchemaError(f"{what} must be True or False.")
    return value


def _length(value: object) -> int | None:
    return None if value is None else check_max_length(value, "max_length")


def plain_pattern(pattern: str) -> bool:
    """True when ``pattern`` has no regular-expression metacharacter (it matches itself)."""
    return not any(c in _META for c in pattern)


def part_of(value: str, sep: str | None, n: int, index: int, reverse: bool) -> str | None:
    """``value.split(sep, n)[index]`` (``rsplit`` with ``reverse``); None if there is no such part.

    As pandas' ``.str.split(sep, n=n).str[index]`` on one value (``n=-1``: every split).
    """
    parts = value.rsplit(sep, n) if reverse else value.split(sep, n)
    return parts[index] if -len(parts) <= index < len(parts) else None


def _compile(pattern: str, case: bool, regex: bool) -> Any:
    """A compiled pattern: Python's ``re`` for plain text, RE2 for a regular expression."""
    if not regex or plain_pattern(pattern):
        return re.compile(re.escape(pattern), 0 if case else re.IGNORECASE)
    engine = regex_engine()
    options = engine.Options()
    options.case_sensitive = case
    options.log_errors = False
    try:
        return engine.compile(pattern, options=options)
    except Exception as exc:  # re2.error, and anything else its compiler raises
        reason = exc.args[0] if exc.args else type(exc).__name__
        if isinstance(reason, bytes):
            reason = reason.decode("utf-8", "replace")
        raise SchemaError(
            f"The pattern is not a regular expression RE2 accepts ({reason}); RE2 has no "
            "backreferences or lookaround."
        ) from None


def _template(repl: str, compiled: Any) -> list[Any]:
    """A replacement template as alternating text and group references.

    ``[text, group, text, ..., text]``; every group is checked against ``compiled``'s.
    """
    pieces: list[Any] = []
    text: list[str] = []
    i = 0
    while i < len(repl):
        char = repl[i]
        if char != "\\":
            text.append(char)
            i += 1
            continue
        escape = repl[i + 1 : i + 2]
        if escape in _ESCAPES:
            text.append(_ESCAPES[escape])
            i += 2
            continue
        group = _GROUP.match(repl, i)
        if group is None or _OCTAL.match(repl, i):
            raise SchemaError(
                "A replacement may use \\1..\\99, \\g<name>, \\\\, \\n, \\t, \\r, \\f, \\v and "
                "\\a; write other characters as they are."
            )
        ref: int | str = group[1] or group[2]
        if isinstance(ref, str) and ref.isdigit():
            ref = int(ref)
        names = compiled.groupindex
        if (isinstance(ref, int) and ref > compiled.groups) or (
            isinstance(ref, str) and ref not in names
        ):
            raise SchemaError(f"The replacement refers to a group the pattern lacks ({ref!r}).")
        pieces.extend(("".join(text), ref))
        text = []
        i = group.end()
    pieces.append("".join(text))
    return pieces


def _expander(pieces: list[Any]) -> Callable[[Any], str]:
    def expand(match: Any) -> str:
        return "".join(p if i % 2 == 0 else (match[p] or "") for i, p in enumerate(pieces))

    return expand


def _truncated(function: Callable[[str], str], length: int | None) -> Callable[[str], str]:
    if length is None:
        return function
    return lambda value: function(value)[:length]


def text_function(tag: str, params: tuple[Any, ...]) -> Callable[[str], Any]:
    """The function of one text value that the node ``(tag, params)`` applies (see the module).

    Raises:
        SchemaError: a regular expression without the engine, or one it refuses.
    """
    if tag == "str_map":
        method, chars, length = params
        if method in ("strip", "lstrip", "rstrip"):
            bound = getattr(str, method)
            return _truncated(lambda value: bound(value, chars), length)
        return _truncated(getattr(str, method), length)
    if tag == "str_len":
        return len
    if tag == "str_part":
        sep, n, index, reverse, _ = params
        return lambda value: part_of(value, sep, n, index, reverse)
    if tag == "str_replace":
        pat, repl, n, case, regex, length = params
        if case and not regex:
            return _truncated(lambda value: value.replace(pat, repl, n), length)
        compiled = _compile(pat, case, regex)
        expand, count = _expander(_template(repl, compiled)), max(n, 0)
        return _truncated(lambda value: compiled.sub(expand, value, count=count), length)
    how, pats, case, regex, _ = params
    if how == "startswith":
        return lambda value: value.startswith(pats)
    if how == "endswith":
        return lambda value: value.endswith(pats)
    (pat,) = pats
    if not regex and case:
        return lambda value: pat in value
    if not regex:  # pandas: the upper-cased pattern in the upper-cased value
        upper = pat.upper()
        return lambda value: upper in value.upper()
    compiled = _compile(pat, case, regex)
    return lambda value: compiled.search(value) is not None


def _text_operand(operand: ValueKind, node: Expr, what: str) -> None:
    if operand != "text":
        raise SchemaError(
            f".str.{what}() needs text; {node.children()[0]} is not a text column (declare "
            "one with dtypes={'column': 'text'})."
        )


def _check_length(node: StrMap | StrReplace, operand: ColumnInfo) -> None:
    if node.max_length != operand.max_length:
        raise SchemaError(
            f"{node} truncates to {node.max_length} characters, but {operand.name!r} has a "
            f"maximum length of {operand.max_length}; build it from the column."
        )


def _mapped(node: StrMap | StrReplace, name: str, operand: ColumnInfo) -> ColumnInfo:
    """Text facts: the operand's keys mapped by the node's function (distinct, in order)."""
    _check_length(node, operand)
    keys: tuple[Hashable, ...] | None = None
    if operand.categories is not None:
        function = text_function(node.tag, node.params())
        keys = pandas_order(
            tuple(dict.fromkeys(function(k) for k in operand.categories if isinstance(k, str)))
        )
    if keys:
        return ColumnInfo(
            name, "categorical", "object", categories=keys, max_length=node.max_length
        )
    return ColumnInfo(name, "text", "object", max_length=node.max_length)


@dataclass(frozen=True, eq=False, repr=False)
class StrMap(Derived):
    """``operand.str.<method>(chars)`` for lower, upper, strip, lstrip, rstrip (see the module).

    ``max_length`` is the operand's (the result is truncated to it).

    Raises:
        SchemaError: an unknown method, ``chars`` for lower/upper or not a
            string, or a bad maximum length.
    """

    tag: ClassVar[str] = "str_map"
    method: str
    chars: str | None = None
    max_length: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.method not in _MAPS:
            raise SchemaError(f"Unknown text method {self.method!r}; one of {', '.join(_MAPS)}.")
        if self.chars is not None:
            if self.method in ("lower", "upper"):
                raise SchemaError(f"{self.method}() takes no characters.")
            _text(self.chars, "to_strip")
        _length(self.max_length)

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.method, self.chars, self.max_length)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {
            "op": "str_map",
            "operand": children[0],
            "method": self.method,
            "chars": self.chars,
            "max_length": self.max_length,
        }

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        chars = "" if self.chars is None else repr(self.chars)
        return (self.operand, f".str.{self.method}({chars})")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        _text_operand(operand, self, self.method)
        return "text"

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:
        """Text, keyed by the operand's keys mapped (if it has keys)."""
        return _mapped(self, name, operand)


@dataclass(frozen=True, eq=False, repr=False)
class StrReplace(Derived):
    """``operand.str.replace(pat, repl, n, case, regex)`` (see the module).

    Raises:
        SchemaError: a pattern or replacement that is not a string or too
            long, ``n`` not an integer, flags not booleans, a regular
            expression without the engine or that it refuses, a template
            that refers to a missing group, or a bad maximum length.
    """

    tag: ClassVar[str] = "str_replace"
    pat: str
    repl: str
    n: int = -1
    case: bool = True
    regex: bool = False
    max_length: int | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _text(self.pat, "The pattern")
        _text(self.repl, "The replacement")
        if isinstance(self.n, bool) or not isinstance(self.n, int):
            raise SchemaError("n must be an integer (-1: replace every match).")
        _flag(self.case, "case")
        _flag(self.regex, "regex")
        _length(self.max_length)
        text_function(self.tag, self.params())  # compiles the pattern, checks the template

    @property
    def lengthens(self) -> bool:
        """True when a value may get longer (then the maximum length is needed)."""
        if not self.repl:
            return False  # matches are removed
        if self.regex or not self.pat or (not self.case and "\\" in self.repl):
            return True  # a template (case=False) may repeat the match: \g<0>\g<0>
        return len(self.repl) > len(self.pat)

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.pat, self.repl, self.n, self.case, self.regex, self.max_length)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {
            "op": "str_replace",
            "operand": children[0],
            "pat": self.pat,
            "repl": self.repl,
            "n": self.n,
            "case": self.case,
            "regex": self.regex,
            "max_length": self.max_length,
        }

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        options = "".join(
            (
                "" if self.n == -1 else f", n={self.n}",
                "" if self.case else ", case=False",
                ", regex=True" if self.regex else "",
            )
        )
        return (self.operand, f".str.replace({self.pat!r}, {self.repl!r}{options})")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        _text_operand(operand, self, "replace")
        return "text"

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:
        """Text, keyed by the operand's keys replaced; a lengthening replace needs a max length."""
        if self.lengthens and operand.max_length is None:
            raise SchemaError(
                f"{self} can make values longer, so it needs a maximum length; "
                + _length_fix(self.operand, operand)
                + "."
            )
        return _mapped(self, name, operand)


@dataclass(frozen=True, eq=False, repr=False)
class StrMatch(Derived):
    """``contains(pat, case, regex, na)``, ``startswith(pats, na)``, ``endswith(pats, na)``.

    ``pats`` holds one pattern for ``contains``, one or more prefixes or
    suffixes (any matches) for the others; ``case`` and ``regex`` are for
    ``contains`` only; ``na`` fills missing and non-text values (None: missing).

    Raises:
        SchemaError: an unknown method, a pattern that is not a string, a
            regular expression without the engine or that it refuses.
    """

    tag: ClassVar[str] = "str_match"
    how: str
    pats: tuple[str, ...]
    case: bool = True
    regex: bool = False
    na: bool | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        if self.how not in _MATCHES:
            raise SchemaError(f"Unknown text match {self.how!r}; one of {', '.join(_MATCHES)}.")
        if not isinstance(self.pats, tuple) or not self.pats or len(self.pats) > 100:
            raise SchemaError(f"{self.how}() takes a pattern (or up to 100 of them in a tuple).")
        for pat in self.pats:
            _text(pat, "The pattern")
        _flag(self.case, "case")
        _flag(self.regex, "regex")
        if self.how != "contains" and (self.regex or not self.case):
            raise SchemaError(f"{self.how}() takes neither case= nor regex=.")
        if self.how == "contains" and len(self.pats) != 1:
            raise SchemaError("contains() takes one pattern.")
        if self.na is not None:
            _flag(self.na, "na")
        text_function(self.tag, self.params())  # compiles a regular expression

    def params(self) -> tuple[Any, ...]:  # noqa: D102
        return (self.how, self.pats, self.case, self.regex, self.na)

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {
            "op": "str_match",
            "operand": children[0],
            "how": self.how,
            "pats": list(self.pats),
            "case": self.case,
            "regex": self.regex,
            "na": self.na,
        }

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        pat = repr(self.pats[0]) if len(self.pats) == 1 else repr(self.pats)
        options = "".join(
            (
                "" if self.case else ", case=False",
                ", regex=True" if self.regex else "",
                "" if self.na is None else f", na={self.na}",
            )
        )
        return (self.operand, f".str.{self.how}({pat}{options})")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        _text_operand(operand, self, self.how)
        return "number"

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:
        """Boolean."""
        return ColumnInfo(name, "boolean", "bool", (0.0, 1.0), (False, True))


@dataclass(frozen=True, eq=False, repr=False)
class StrLen(Derived):
    """``operand.str.len()``: the number of characters (missing for missing values)."""

    tag: ClassVar[str] = "str_len"

    def node_dict(self, children: list[dict[str, Any]]) -> dict[str, Any]:  # noqa: D102
        return {"op": "str_len", "operand": children[0]}

    def pieces(self) -> tuple[str | Expr, ...]:  # noqa: D102
        return (self.operand, ".str.len()")

    def value_kind(self, operand: ValueKind) -> ValueKind:  # noqa: D102
        _text_operand(operand, self, "len")
        return "number"

    def facts(self, name: str, operand: ColumnInfo) -> ColumnInfo:
        """Numeric with bounds ``(0, max_length)``; a column without a max length is refused."""
        length = operand.max_length
        if length is None:
            raise SchemaError(
                ".str.len() needs a maximum length for its bounds; "
                + _length_fix(self.operand, operand)
                + "."
            )
        keys = tuple(range(length + 1)) if length <= LENGTH_KEYS else None
        return ColumnInfo(name, "numeric", "int64", (0.0, float(length)), keys)


def _fields(data: dict[str, Any], names: tuple[str, ...]) -> None:
    if set(data) != {"op", "operand", *names}:
        raise SchemaError(f"A {data['op']} node has the fields operand, {', '.join(names)}.")


def _optional_text(value: object, what: str) -> str | None:
    return None if value is None else _text(value, what)


def text_from_dict(data: dict[str, Any], operand: Expr) -> Expr:
    """Rebuild a ``str_*`` node from its :meth:`~Expr.node_dict` (strictly)."""
    op = data["op"]
    if op == "str_len":
        _fields(data, ())
        return StrLen(operand)
    if op == "str_map":
        _fields(data, ("method", "chars", "max_length"))
        chars = _optional_text(data["chars"], "chars")
        return StrMap(operand, _text(data["method"], "method"), chars, _length(data["max_length"]))
    if op == "str_replace":
        _fields(data, ("pat", "repl", "n", "case", "regex", "max_length"))
        n = data["n"]
        if isinstance(n, bool) or not isinstance(n, int) or abs(n) > 2**31:
            raise SchemaError("n must be an integer (-1: replace every match).")
        return StrReplace(
            operand,
            _text(data["pat"], "pat"),
            _text(data["repl"], "repl"),
            n,
            _flag(data["case"], "case"),
            _flag(data["regex"], "regex"),
            _length(data["max_length"]),
        )
    _fields(data, ("how", "pats", "case", "regex", "na"))
    pats = data["pats"]
    if not isinstance(pats, list):
        raise SchemaError("pats must be a list of strings.")
    na = data["na"]
    return StrMatch(
        operand,
        _text(data["how"], "how"),
        tuple(_text(p, "A pattern") for p in pats),
        _flag(data["case"], "case"),
        _flag(data["regex"], "regex"),
        None if na is None else _flag(na, "na"),
    )
