"""What an expression node costs per row beyond one vectorized pass: its lists and its text.

The worst-case estimate (:mod:`dpframe.curator.worst_case`) counts one
vectorized pass over the rows per evaluation node.  Two kinds of node cost
more, and what they cost is read here from the plan's DAG
(:class:`~dpframe.plan.dag.DagBuilder`, the instructions the backend
evaluates, each once) and from public facts only:

* a node with a list of public values (``isin`` values, ``cut``/bucket
  edges, ``map``/``replace`` sources) hashes or searches each row against
  it: ``hash_row_seconds`` per row and ``list_item_seconds`` per row and
  item (an ``isin`` of 10,000 text values took 0.6 µs per row, 15 times one
  of 100; a ``map`` of 4 text keys 0.11 µs per row on the loaded machine);
* a text node (:mod:`dpframe.plan.text`) calls Python once per *distinct*
  value of a chunk, and distinct values can be as many as rows (ids, free
  text): ``text_value_seconds`` per row (``regex_value_seconds`` for a node
  that runs a compiled pattern: ``regex=True``, or a ``replace`` with
  ``case=False``), ``text_char_seconds`` per row and character, and for a
  ``replace`` that calls Python once per match (``regex=True``, or
  ``case=False``) ``text_match_seconds`` per row and possible match (a value
  of n characters has at most n + 1).  Before issue
  27 a text node was priced as a vectorized pass (5e-8 s per row): ten regex
  replaces over 200,000 distinct ids were estimated at 0.19 s and ran 111 s.

The characters of a value are bounded by public facts: a text column's
declared maximum length (``text(40)``; every node making text from it
truncates to it), else the curator's ``text_chars`` (the most characters of a
text column without a declared length, per row on average; the curator
checks it when it starts, like ``max_rows``).  A case mapping makes a value
at most 3 times as long (Unicode's longest case expansion; chains of
``upper``/``lower``/``strip`` grow no further, checked over every code point
in the tests), so text derived from undeclared text counts 3 times its
characters.

Example:
    >>> row_seconds(node, CostModel(), {"name": 40}, 256)  # doctest: +SKIP
    4.2e-06
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from dpframe.plan.dag import DagBuilder, TooLargeError
from dpframe.plan.estimate import VISIT_CAP

__all__ = ["CASE_GROWTH", "LIST_TAGS", "TEXT_TAGS", "UnitCosts", "row_seconds"]

#: How many times longer a case mapping (``upper``, ``lower``) can make a value.
CASE_GROWTH = 3
#: Expression nodes whose work per row grows with a public list (its first parameter).
LIST_TAGS = frozenset({"isin", "bucket", "bin", "recode"})
#: The characters that make a pattern a regular expression (else it is matched as text).
_META = frozenset(".^$*+?{}[]\\|()")
#: Expression nodes that call Python once per distinct text value.
TEXT_TAGS = frozenset({"str_map", "str_replace", "str_match", "str_len", "str_part"})


class UnitCosts(Protocol):
    """The seconds per unit of work this module prices (a :class:`CostModel` has them)."""

    @property
    def hash_row_seconds(self) -> float: ...  # noqa: D102

    @property
    def list_item_seconds(self) -> float: ...  # noqa: D102

    @property
    def text_value_seconds(self) -> float: ...  # noqa: D102

    @property
    def regex_value_seconds(self) -> float: ...  # noqa: D102

    @property
    def text_char_seconds(self) -> float: ...  # noqa: D102

    @property
    def text_match_seconds(self) -> float: ...  # noqa: D102


def row_seconds(part: Any, model: UnitCosts, lengths: Mapping[str, int], text_chars: int) -> float:
    """The most seconds per row that ``part``'s nodes cost beyond a vectorized pass each.

    Args:
        part: a release node (or a part of one): its plan and expressions.
        model: the seconds per unit of work.
        lengths: the declared maximum length of each text column that has one.
        text_chars: the most characters per row of a text column without one.

    Returns:
        Seconds per row (0 for a request too large to compile: the resource
        limits refuse it first).
    """
    builder = DagBuilder(part.plan, max_visits=VISIT_CAP)
    try:
        builder.filters()
        builder.assigns()
        for expr in part.expressions():
            if expr is not None:
                builder.add(expr)
    except TooLargeError:
        return 0.0
    seconds = 0.0
    chars: list[float] = []  # the most characters per row of each node's value, as text
    for tag, params, args in builder.instructions:
        if tag == "source":
            chars.append(float(lengths.get(params[0], text_chars)))
            continue
        operand = chars[args[0]] if args else 0.0
        chars.append(_chars(tag, params, operand, text_chars))
        if tag in LIST_TAGS:
            seconds += model.hash_row_seconds + len(params[0]) * model.list_item_seconds
        elif tag in TEXT_TAGS:
            pattern = _compiled(tag, params)
            seconds += model.regex_value_seconds if pattern else model.text_value_seconds
            seconds += operand * model.text_char_seconds
            if tag == "str_replace" and pattern:  # Python once per match
                seconds += (operand + 1) * model.text_match_seconds
    return seconds


def _chars(tag: str, params: tuple[Any, ...], operand: float, text_chars: int) -> float:
    """The most characters per row of a node's value (when it is text)."""
    if tag in ("str_map", "str_replace"):
        length = params[-1]  # the declared maximum length, which the node truncates to
        if length is not None:
            return float(length)
        return operand * CASE_GROWTH if tag == "str_map" else operand  # replace: not longer
    if tag == "str_part":
        return operand  # a part is never longer than its value
    if tag == "lit":
        return float(len(params[0])) if isinstance(params[0], str) else 0.0
    return float(CASE_GROWTH * text_chars)  # text from where, recode, ...: not tracked


def _compiled(tag: str, params: tuple[Any, ...]) -> bool:
    """True for a node that runs a compiled pattern (:func:`dpframe.plan.text.text_function`).

    A match with ``regex=True`` and a pattern that is not plain text, and a
    replace with ``regex=True`` or ``case=False`` (which also calls Python
    once per match); plain text otherwise uses ``str`` methods or one search.
    """
    if tag == "str_match":
        _, patterns, _, regex, _ = params
        return bool(regex) and any(_META & set(p) for p in patterns)  # plain text: str methods
    if tag == "str_replace":
        _, _, _, case, regex, _ = params
        return bool(regex or not case)
    return False
