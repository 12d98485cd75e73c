"""Public keys of a number computed from one keyed column: the image of its keys.

``pf.groupby(pf["age"] // 10 * 10)`` groups by a derived column.  When the
expression reads one column whose keys are public and finite (declared
numeric categories, or an integer column's whole numbers within its bounds)
and is built from arithmetic only, its keys are the expression evaluated on
those keys: ``{10, 20, ..., 90}`` for ages 18..90.  Nothing is read from the
rows, so the keys are public.  A row whose value is not one of the source's
keys (outside the bounds, not whole) may map outside the image: it is in no
group, as undeclared keys are.

The image is computed with the same numpy operations the backends apply to
the rows (float64 arithmetic, :func:`numpy.clip`, the ufuncs of
:data:`dpframe.plan.elementwise.UFUNCS`), so a row whose value is a key gets
exactly one of the image's values.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Hashable, Mapping

import numpy as np

from dpframe.plan.columns import ColumnInfo
from dpframe.plan.elementwise import UFunc
from dpframe.plan.expressions import Abs, Arith, Clip, Col, Expr, Lit, Neg

__all__ = ["INTEGER_DTYPE", "MAX_DERIVED_KEYS", "key_image", "source_keys"]

#: The most keys a derived column gets from its source's (more: no public keys).
MAX_DERIVED_KEYS = 10_000
#: The declared dtype of an integer column (its bounds declare its whole numbers as keys).
INTEGER_DTYPE = "Int64"

_ARITH: Mapping[str, Callable[[np.ndarray, np.ndarray], np.ndarray]] = {
    "+": operator.add,
    "-": operator.sub,
    "*": operator.mul,
    "/": operator.truediv,
}


def source_keys(info: ColumnInfo) -> tuple[float, ...] | None:
    """The finite numeric keys of a column: numeric categories, or its whole numbers in bounds."""
    if info.categories is not None:
        keys = info.categories
        if not keys or len(keys) > MAX_DERIVED_KEYS or not all(_real(k) for k in keys):
            return None
        return tuple(float(k) for k in keys)  # type: ignore[arg-type]
    if info.dtype != INTEGER_DTYPE or info.bounds is None:
        return None
    low, high = math.ceil(info.bounds[0]), math.floor(info.bounds[1])
    if not low <= high or high - low + 1 > MAX_DERIVED_KEYS:
        return None
    return tuple(float(k) for k in range(low, high + 1))


def _real(value: object) -> bool:
    return (
        isinstance(value, (int, float, np.integer, np.floating))
        and not isinstance(value, (bool, np.bool_))
        and math.isfinite(float(value))
    )


def key_image(order: list[Expr], infos: Mapping[str, ColumnInfo]) -> tuple[Hashable, ...] | None:
    """The public keys of ``order[-1]`` (nodes in post-order), or None.

    None unless the expression reads exactly one column with :func:`source_keys`,
    every node is arithmetic (``+ - * /``, negation, ``abs``, ``clip``, a
    numpy ufunc) on it and number literals, and the image has at most
    :data:`MAX_DERIVED_KEYS` finite values.  Whole values are given as
    ``int`` (``10`` rather than ``10.0``), as pandas shows an integer column's.
    """
    names = {node.name for node in order if isinstance(node, Col)}
    if len(names) != 1:
        return None
    keys = source_keys(infos[next(iter(names))])
    if keys is None:
        return None
    source = np.asarray(keys, dtype=np.float64)
    values: dict[int, np.ndarray] = {}
    with np.errstate(all="ignore"):
        for node in order:
            value = _node_values(node, source, values)
            if value is None:
                return None
            values[id(node)] = value
    result = np.broadcast_to(values[id(order[-1])], source.shape)
    image = np.unique(result[np.isfinite(result)])
    if not 0 < len(image) <= MAX_DERIVED_KEYS:
        return None
    return tuple(int(v) if float(v).is_integer() else float(v) for v in image)


def _node_values(
    node: Expr, source: np.ndarray, values: Mapping[int, np.ndarray]
) -> np.ndarray | None:
    """One node's values on the source keys (children already computed), or None: not arithmetic."""
    if isinstance(node, Col):
        return source
    if isinstance(node, Lit):
        return np.asarray(node.value, dtype=np.float64) if _real(node.value) else None
    children = [values[id(child)] for child in node.children()]
    if isinstance(node, Arith) and node.op in _ARITH:
        return np.asarray(_ARITH[node.op](children[0], children[1]), dtype=np.float64)
    if isinstance(node, Neg):
        return np.asarray(np.negative(children[0]), dtype=np.float64)
    if isinstance(node, Abs):
        return np.asarray(np.abs(children[0]), dtype=np.float64)
    if isinstance(node, Clip):
        return np.asarray(np.clip(children[0], node.lower, node.upper), dtype=np.float64)
    if isinstance(node, UFunc):
        return np.asarray(getattr(np, node.name)(children[0]), dtype=np.float64)
    return None
