"""Frame transformations as pandas spells them: ``query``, ``rename``, ``dropna`` (all free).

``pf.query("age > 30 and region == 'south'")`` is parsed with Python's own
parser into an abstract syntax tree and translated node by node into
dpframe expressions — comparisons (chained too), ``and``/``or``/``not``,
column names (backquoted names with spaces, as pandas), literals, ``+ - * /``
and unary minus, and ``in`` / ``not in`` with a list literal.  Nothing is
ever evaluated (no ``eval``): any other syntax is refused, before anything
is charged, naming what it found.
"""

from __future__ import annotations

import ast
import io
import operator
import re
import tokenize
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from dpframe.api.handle import FrameHandle, SeriesHandle
from dpframe.api.verbs.columns import binary, isin, wrap
from dpframe.api.verbs.frames import assign, filter_rows, select
from dpframe.errors import SchemaError

__all__ = ["dropna", "query", "rename"]

_COMPARE: dict[type[ast.cmpop], str] = {
    ast.Eq: "==",
    ast.NotEq: "!=",
    ast.Lt: "<",
    ast.LtE: "<=",
    ast.Gt: ">",
    ast.GtE: ">=",
}
_ARITHMETIC: dict[type[ast.operator], str] = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.Div: "/",
}
#: Python's operators on two literals.
_PYTHON: dict[str, Callable[[Any, Any], Any]] = {
    "==": operator.eq,
    "!=": operator.ne,
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
    "&": operator.and_,
    "|": operator.or_,
}
#: A comparison with the column on the right, turned around (``5 < x`` is ``x > 5``).
_TURNED = {"==": "==", "!=": "!=", "<": ">", "<=": ">=", ">": "<", ">=": "<="}
_BACKQUOTED = re.compile(r"`([^`]*)`")
#: The longest query string accepted (characters).
MAX_QUERY = 10_000


def _refuse(node: ast.AST, text: str) -> SchemaError:
    found = ast.get_source_segment(text, node) or type(node).__name__
    return SchemaError(
        f"query() understands comparisons, and/or/not, column names, literals, + - * / and "
        f"in [...]; not {found!r}. Write other conditions with expressions: pf[cond]."
    )


def _literal(node: ast.AST, text: str) -> Any:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float, str, bool)):
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        value = _literal(node.operand, text)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return -value
    raise _refuse(node, text)


def _apply(op: str, left: Any, right: Any) -> Any:
    """``left <op> right`` where either side may be a column (as Python's operators dispatch)."""
    if isinstance(left, SeriesHandle):
        return binary(left, right, op)
    if isinstance(right, SeriesHandle):
        if op in _TURNED:
            return binary(right, left, _TURNED[op])
        return binary(right, left, op, reverse=True)
    return _PYTHON[op](left, right)


def _unary(node: ast.UnaryOp, operand: Any, text: str) -> Any:
    if isinstance(operand, SeriesHandle):
        return wrap(operand, ~operand.expr if isinstance(node.op, ast.Not) else -operand.expr)
    if isinstance(operand, int):  # as Python: ~True is -2, -True is -1
        return ~operand if isinstance(node.op, ast.Not) else -operand
    if isinstance(operand, float) and isinstance(node.op, ast.USub):
        return -operand
    raise _refuse(node, text)


def _translate(node: ast.AST, frame: FrameHandle, names: Mapping[str, str], text: str) -> Any:
    if isinstance(node, ast.BoolOp):
        combine = "&" if isinstance(node.op, ast.And) else "|"
        parts = [_translate(v, frame, names, text) for v in node.values]
        result = parts[0]
        for part in parts[1:]:
            result = _apply(combine, result, part)
        return result
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, (ast.Not, ast.USub)):
            return _unary(node, _translate(node.operand, frame, names, text), text)
        raise _refuse(node, text)
    if isinstance(node, ast.Compare):
        left = _translate(node.left, frame, names, text)
        result = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right_node, (ast.List, ast.Tuple)):
                    raise _refuse(right_node, text)
                values = [_literal(v, text) for v in right_node.elts]
                if not isinstance(left, SeriesHandle):
                    raise _refuse(node, text)
                step = isin(left, values)
                step = wrap(step, ~step.expr) if isinstance(op, ast.NotIn) else step
                right = None
            else:
                compare = _COMPARE.get(type(op))
                if compare is None:
                    raise _refuse(node, text)
                right = _translate(right_node, frame, names, text)
                step = _apply(compare, left, right)
            result = step if result is None else _apply("&", result, step)
            left = right
        return result
    if isinstance(node, ast.BinOp):
        arithmetic = _ARITHMETIC.get(type(node.op))
        if arithmetic is None:
            raise _refuse(node, text)
        return _apply(
            arithmetic,
            _translate(node.left, frame, names, text),
            _translate(node.right, frame, names, text),
        )
    if isinstance(node, ast.Name):
        column = names.get(node.id, node.id)
        if column in ("True", "False"):
            return column == "True"
        return frame.column(column)  # an unknown column is refused here, naming the columns
    return _literal(node, text)


def _pandas_operators(text: str) -> str:
    """``&``, ``|`` and ``~`` outside string literals as ``and``, ``or``, ``not``.

    That is pandas' precedence in ``query``: they bind like the words, looser
    than comparisons.
    """
    words = {"&": "and", "|": "or", "~": "not"}
    tokens = []
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type == tokenize.OP and token.string in words:
            tokens.append((tokenize.NAME, words[token.string]))
        else:
            tokens.append((token.type, token.string))
    return tokenize.untokenize(tokens).strip()


def _local_variables(expr: str, text: str, names: Mapping[str, str]) -> None:
    """Refuse ``@name`` (pandas reads the caller's variable ``name``), naming what to write.

    dpframe's ``query`` never evaluates code, so it reads no variable; the
    message gives the value written into the string (``f"... {m!r}"``) and,
    for ``column <op> @name``, the same condition as an expression.
    """
    try:
        tokens = [
            t
            for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type not in (tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.NL)
        ]
    except (SyntaxError, tokenize.TokenError):
        return
    found = [
        tokens[i + 1].string
        for i, t in enumerate(tokens[:-1])
        if t.type == tokenize.OP and t.string == "@" and tokens[i + 1].type == tokenize.NAME
    ]
    if not found:
        return
    written = expr
    for name in found:
        written = re.sub(rf"@{re.escape(name)}\b", f"{{{name}!r}}", written)
    shapes = [(t.type, t.string) for t in tokens]
    if len(shapes) == 4 and shapes[0][0] == tokenize.NAME and shapes[2] == (tokenize.OP, "@"):
        column = names.get(shapes[0][1], shapes[0][1])
        condition = f"pf[pf[{column!r}] {shapes[1][1]} {found[0]}]"
    else:
        condition = "pf[condition] with the variables as values, e.g. pf[pf['col'] > m]"
    raise SchemaError(
        f"query(): @{found[0]} names a Python variable, which dpframe's query() does not "
        "read (it never evaluates code). Write the value into the string, "
        f"pf.query(f{written!r}), or write the condition as an expression: {condition}. "
        "Nothing was charged."
    )


def query(self: FrameHandle, expr: str) -> FrameHandle:
    """The rows where ``expr`` holds, as ``pandas.DataFrame.query`` (free; never ``eval``).

    Columns by name (backquoted if they hold spaces), literals, comparisons
    (also chained: ``18 <= age < 65``), ``and``/``or``/``not`` (or ``&``,
    ``|``, ``~``), ``+ - * /`` and ``in [...]`` / ``not in [...]``.
    """
    if not isinstance(expr, str) or not expr.strip():
        raise SchemaError("query() takes a condition as a non-empty string.")
    if len(expr) > MAX_QUERY:
        raise SchemaError(f"query(): a condition of at most {MAX_QUERY} characters.")
    names: dict[str, str] = {}

    def name_for(match: re.Match[str]) -> str:
        token = f"__column_{len(names)}"
        names[token] = match.group(1)
        return token

    text = _BACKQUOTED.sub(name_for, expr)
    _local_variables(expr, text.strip(), names)
    try:
        text = _pandas_operators(text.strip())
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, tokenize.TokenError):
        raise SchemaError(f"query(): {expr!r} is not a condition dpframe can read.") from None
    condition = _translate(tree.body, self, names, text)
    return filter_rows(self, condition)


def rename(self: FrameHandle, columns: Mapping[str, str] | None = None) -> FrameHandle:
    """Columns under new names, as ``pandas.DataFrame.rename(columns=...)`` (free).

    Each renamed column keeps its declared facts (bounds, categories); the
    old name is gone from the result.
    """
    if not isinstance(columns, Mapping) or not columns:
        raise SchemaError("rename() takes columns={old: new, ...}.")
    for old, new in columns.items():
        self.schema.get(old)  # an unknown column is refused here
        if not isinstance(new, str) or not new:
            raise SchemaError(f"rename(): the new name of {old!r} must be a non-empty string.")
    final = [columns.get(name, name) for name in self.schema.names]
    if len(set(final)) != len(final):
        raise SchemaError("rename(): two columns would have the same name.")
    renamed = assign(self, {new: self.column(old) for old, new in columns.items() if new != old})
    return select(renamed, final)


def dropna(self: FrameHandle, subset: Sequence[str] | None = None) -> FrameHandle:
    """The rows with no missing value in ``subset`` (default: every column), as pandas (free)."""
    names = list(self.schema.names) if subset is None else list(subset)
    if not names or not all(isinstance(n, str) for n in names):
        raise SchemaError("dropna(subset=...) takes a list of column names.")
    condition = _present(self.column(names[0]))
    for name in names[1:]:
        condition = binary(condition, _present(self.column(name)), "&")
    return filter_rows(self, condition)


def _present(series: SeriesHandle) -> SeriesHandle:
    return wrap(series, series.expr.notna())
