"""``map`` and ``replace`` on a private column, as pandas spells them (free).

Both are a :class:`~dpframe.plan.recode.Recode` expression over public values:
``map({...})`` gives the mapped label for each listed value and a missing
value for every other (pandas' ``Series.map`` with a dict); ``replace``
changes the listed values and keeps the rest.  The result's public keys are
the labels (and, for ``replace``, the column's other declared keys), so
``value_counts`` and ``groupby`` on it need no declaration.  Python functions
are refused: they cannot run on private rows.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dpframe.api.handle import SeriesHandle
from dpframe.api.verbs.columns import keep_name
from dpframe.errors import SchemaError
from dpframe.plan.recode import Recode

__all__ = ["map_values", "replace_values"]


def _recoded(series: SeriesHandle, pairs: Mapping[Any, Any], keep: bool) -> SeriesHandle:
    if not pairs:
        raise SchemaError("A recoding needs at least one value: {value: label, ...}.")
    expr = Recode(series.expr, tuple(pairs), tuple(pairs.values()), keep=keep)
    return keep_name(series, expr)


def map_values(self: SeriesHandle, arg: object, na_action: object = None) -> SeriesHandle:
    """Each listed value's label, missing for any other (``pandas.Series.map`` with a dict).

    Privacy: a public recoding of each row's value: free, nothing charged.
    """
    if callable(arg):
        raise SchemaError(
            "map() takes a dict {value: label}: Python functions cannot run on private rows."
        )
    if not isinstance(arg, Mapping):
        raise SchemaError("map() takes a dict {value: label, ...}.")
    if na_action not in (None, "ignore"):
        raise SchemaError("map(na_action=...) takes None or 'ignore' (missing stays missing).")
    return _recoded(self, arg, keep=False)


def replace_values(self: SeriesHandle, to_replace: object, value: object = None) -> SeriesHandle:
    """The listed values replaced, the others kept (``pandas.Series.replace``).

    ``replace({old: new, ...})``, ``replace(old, new)`` or
    ``replace([old, ...], new)``.  Privacy: free (a public recoding).
    """
    if isinstance(to_replace, Mapping):
        if value is not None:
            raise SchemaError("replace({old: new}) takes no value=; the dict holds the new values.")
        return _recoded(self, to_replace, keep=True)
    if isinstance(to_replace, Sequence) and not isinstance(to_replace, (str, bytes)):
        return _recoded(self, dict.fromkeys(to_replace, value), keep=True)
    return _recoded(self, {to_replace: value}, keep=True)
