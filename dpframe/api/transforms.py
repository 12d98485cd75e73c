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
from typing import TYPE_CHECKING, Any

from dpframe.errors import SchemaError

if TYPE_CHECKING:
    from dpframe.api.frame import PrivateFrame

__all__ = ["dropna", "query", "rename"]

_COMPARE: dict[type[ast.cmpop], Callable[[Any, Any], Any]] = {
    ast.Eq: operator.eq,
    ast.NotEq: operator.ne,
    ast.Lt: operator.lt,
    ast.LtE: operator.le,
    ast.Gt: operator.gt,
    ast.GtE: operator.ge,
}
_ARITHMETIC: dict[type[ast.operator], Callable[[Any, Any], Any]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}
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


def _translate(node: ast.AST, frame: PrivateFrame, names: Mapping[str, str], text: str) -> Any:
    if isinstance(node, ast.BoolOp):
        combine = operator.and_ if isinstance(node.op, ast.And) else operator.or_
        parts = [_translate(v, frame, names, text) for v in node.values]
        result = parts[0]
        for part in parts[1:]:
            result = combine(result, part)
        return result
    if isinstance(node, ast.UnaryOp):
        if isinstance(node.op, ast.Not):
            return ~_translate(node.operand, frame, names, text)
        if isinstance(node.op, ast.USub):
            return -_translate(node.operand, frame, names, text)
        raise _refuse(node, text)
    if isinstance(node, ast.Compare):
        left = _translate(node.left, frame, names, text)
        result = None
        for op, right_node in zip(node.ops, node.comparators, strict=True):
            if isinstance(op, (ast.In, ast.NotIn)):
                if not isinstance(right_node, (ast.List, ast.Tuple)):
                    raise _refuse(right_node, text)
                values = [_literal(v, text) for v in right_node.elts]
                step = left.isin(values)
                step = ~step if isinstance(op, ast.NotIn) else step
                right = None
            else:
                compare = _COMPARE.get(type(op))
                if compare is None:
                    raise _refuse(node, text)
                right = _translate(right_node, frame, names, text)
                step = compare(left, right)
            result = step if result is None else result & step
            left = right
        return result
    if isinstance(node, ast.BinOp):
        arithmetic = _ARITHMETIC.get(type(node.op))
        if arithmetic is None:
            raise _refuse(node, text)
        return arithmetic(
            _translate(node.left, frame, names, text), _translate(node.right, frame, names, text)
        )
    if isinstance(node, ast.Name):
        column = names.get(node.id, node.id)
        if column in ("True", "False"):
            return column == "True"
        return frame[column]  # an unknown column is refused here, naming the columns
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


def query(self: PrivateFrame, expr: str) -> PrivateFrame:
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
    try:
        text = _pandas_operators(text.strip())
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, tokenize.TokenError):
        raise SchemaError(f"query(): {expr!r} is not a condition dpframe can read.") from None
    condition = _translate(tree.body, self, names, text)
    return self.filter(condition)


def rename(self: PrivateFrame, columns: Mapping[str, str] | None = None) -> PrivateFrame:
    """Columns under new names, as ``pandas.DataFrame.rename(columns=...)`` (free).

    Each renamed column keeps its declared facts (bounds, categories); the
    old name is gone from the result.
    """
    if not isinstance(columns, Mapping) or not columns:
        raise SchemaError("rename() takes columns={old: new, ...}.")
    for old, new in columns.items():
        self._schema.get(old)  # an unknown column is refused here
        if not isinstance(new, str) or not new:
            raise SchemaError(f"rename(): the new name of {old!r} must be a non-empty string.")
    final = [columns.get(name, name) for name in self.columns]
    if len(set(final)) != len(final):
        raise SchemaError("rename(): two columns would have the same name.")
    renamed = self.assign(**{new: self[old] for old, new in columns.items() if new != old})
    return renamed.select(final)


def dropna(self: PrivateFrame, subset: Sequence[str] | None = None) -> PrivateFrame:
    """The rows with no missing value in ``subset`` (default: every column), as pandas (free)."""
    names = list(self.columns) if subset is None else list(subset)
    if not names or not all(isinstance(n, str) for n in names):
        raise SchemaError("dropna(subset=...) takes a list of column names.")
    condition = self[names[0]].notna()
    for name in names[1:]:
        condition = condition & self[name].notna()
    return self.filter(condition)
