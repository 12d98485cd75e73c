"""pandas keywords a release method does not take: accepted when they mean dpframe's behaviour.

pandas' statistics take keywords that a private release cannot honour
(``value_counts(bins=5)`` cuts the data's own range, ``quantile(interpolation=...)``
reads two neighbouring rows) or whose other values are dpframe's only behaviour
(``mean(skipna=True)``).  Every release method checks its keywords before it runs
(:func:`check_keywords`, called by :func:`dpframe.api.fresh.fresh_aware`):

* a keyword the method does not take, given the value that is dpframe's only
  behaviour (:data:`ACCEPTED`: ``skipna=True``, ``ddof=0``, ``dropna=True``...),
  is accepted and dropped;
* any other keyword the method does not take is refused with
  :class:`~dpframe.errors.InvalidArgumentError`: the message names the keyword,
  what to write instead (:data:`ADVICE`), and the keywords the method takes.

Nothing is forwarded to pandas, and nothing is charged: the refusal comes
before the method runs.  Messages are built from names and the caller's own
arguments, never from data.
"""

from __future__ import annotations

import inspect
import keyword
from collections.abc import Mapping, Sequence

from dpframe.errors import InvalidArgumentError
from dpframe.plan.expressions import Col

__all__ = [
    "ACCEPTED",
    "ADVICE",
    "check_keywords",
    "column_label",
    "declare_call",
    "keyword_names",
    "subject",
]

_SKIPS = ("sum", "mean", "var", "std", "median")

#: (method, keyword) -> the one value accepted: pandas' meaning is dpframe's only behaviour.
ACCEPTED: dict[tuple[str, str], object] = {
    **{(name, "skipna"): True for name in _SKIPS},  # missing values never enter a release
    ("var", "ddof"): 0,  # the population variance
    ("std", "ddof"): 0,
    ("value_counts", "dropna"): True,  # a missing value is never a declared key
    ("nunique", "dropna"): True,
}

_MISSING = "count the missing values with {col}.isna().sum(epsilon=...)"

#: keyword -> why dpframe does not take it (the value given otherwise) and what to write instead.
#: ``{col}`` is the column (``pf['wage']``), ``{value}`` the value given, ``{method}`` the method.
ADVICE: dict[str, str] = {
    "bins": "pandas would cut the data's own range, which is private. Instead: "
    "{col}.hist(bins={value}, epsilon=...) (equal bins over the declared bounds, or your "
    "edges), or {col}.cut(bins).value_counts(epsilon=...) (public bins, as pd.cut; cutting "
    "is free)",
    "dropna": "{method}() counts the declared keys, and a missing value is never one "
    "(pandas' dropna=True, which is accepted); " + _MISSING,
    "skipna": "dpframe always skips missing values (pandas' skipna=True, which is accepted); "
    + _MISSING,
    "interpolation": "a private quantile is not interpolated between two rows: it is chosen "
    "privately among public candidate values (candidates=[...] sets them; by default a fine "
    "grid over the declared bounds)",
    "percentiles": "describe() releases the quartiles; for other levels ask "
    "{col}.quantile({value}, epsilon=...)",
    "ddof": "{method}() releases the population figure (ddof=0, which is accepted); the "
    "sample variance is var·n/(n − 1), which differs from it by far less than the noise "
    "unless n is tiny",
    "numeric_only": "dpframe summarises every bounded numeric (and boolean) column; select "
    "the columns first: pf[['a', 'b']].{method}(epsilon=...)",
}

_GENERIC = "dpframe does not forward keywords to pandas"


def keyword_names(signature: inspect.Signature) -> tuple[str, ...] | None:
    """The keywords a signature takes, in its order, or None when it takes any (``**kwargs``)."""
    names = []
    for parameter in signature.parameters.values():
        if parameter.kind is inspect.Parameter.VAR_KEYWORD:
            return None
        if (
            parameter.kind
            in (
                inspect.Parameter.POSITIONAL_OR_KEYWORD,
                inspect.Parameter.KEYWORD_ONLY,
            )
            and parameter.name != "self"
        ):
            names.append(parameter.name)
    return tuple(names)


def column_label(owner: object) -> str:
    """The column a message names, as code: ``'wage'``, or ``'col'`` when there is no one column.

    A private column of the frame gives its name, as does a group-by's selected
    column or a frame of one column; a derived column or a wider frame the placeholder.
    """
    handle = getattr(owner, "_handle", None)
    expr = getattr(handle, "expr", None)
    if isinstance(expr, Col):
        return repr(expr.name)
    selected = getattr(handle, "column", None)  # a group-by's selected column
    if isinstance(selected, str):
        return repr(selected)
    names: Sequence[str] = getattr(getattr(handle, "schema", None), "names", ())
    return repr(names[0]) if len(names) == 1 else "'col'"


def subject(owner: object) -> str:
    """How a message shows the column asked about: ``pf['wage']``, or ``pf['col']``."""
    return f"pf[{column_label(owner)}]"


def _accepted(method: str, name: str, value: object) -> bool:
    """True when ``name=value`` asks for what ``method`` always does."""
    key = (method, name)
    if key not in ACCEPTED:
        return False
    expected = ACCEPTED[key]
    if isinstance(expected, bool) or isinstance(value, bool):
        return value is expected
    return type(value) is type(expected) and value == expected


def _shown(value: object) -> str:
    """The caller's value as code, shortened (it is theirs, never data)."""
    text = repr(value)
    return text if len(text) <= 40 else "[...]"


def check_keywords(
    method: str, accepted: tuple[str, ...] | None, owner: object, kwargs: Mapping[str, object]
) -> list[str]:
    """The keywords to drop from a call of ``method`` (accepted pandas forms), or a refusal.

    ``accepted`` are the keywords the method takes (:func:`keyword_names`);
    ``owner`` is the object it is called on (names the column in the advice).

    Raises:
        InvalidArgumentError: a keyword the method does not take, unless
            :data:`ACCEPTED` holds its value for this method; nothing is charged.
    """
    if accepted is None:
        return []
    dropped = []
    for name, value in kwargs.items():
        if name in accepted:
            continue
        if _accepted(method, name, value):
            dropped.append(name)
            continue
        advice = ADVICE.get(name, _GENERIC).format(
            col=subject(owner), value=_shown(value), method=method
        )
        takes = ", ".join(accepted)
        raise InvalidArgumentError(
            f"{method}() does not take {name}={_shown(value)}: {advice}. Nothing was charged; "
            f"{method}() takes {takes}."
        )
    return dropped


def declare_call(method: str, name: str, value: str) -> str:
    """The call that declares a fact of a column, valid Python for any column name.

    ``declare_call("with_bounds", "wage", "(low, high)")`` is
    ``pf.with_bounds(wage=(low, high))``; a name that is not an identifier
    (``"yrs.since.phd"``) or is a Python keyword is passed as
    ``pf.with_bounds(**{'yrs.since.phd': (low, high)})``.
    """
    if name.isidentifier() and not keyword.iskeyword(name):
        return f"pf.{method}({name}={value})"
    return f"pf.{method}(**{{{name!r}: {value}}})"
