"""``PrivateGroupBy``: aggregates per group of public keys.

Keys must be declared (``categories=``); the result has one row per declared
key (or key combination), in declaration order, including empty groups.
Rows whose key is not declared are in no group; they are revealed only as a
noisy count, free (``result.dp.undeclared``, never an index entry), with a
warning when that count is clearly above its noise (a misspelled or
differently cased key).  Groups are disjoint, so one charge of ε covers every
group (parallel composition).

Results are plain pandas Series (one entry per declared key), so pandas'
own methods work on the released values as free post-processing:
``pf.groupby("region")["wage"].mean(epsilon=1).idxmax()`` names the region
with the largest *released* mean (``.nlargest(3)``, ``.sort_values()`` and
``.rank()`` likewise).  A group-by has no ``idxmax``: pandas' would name each
group's row with the largest value (a private row); ``argmax(...)`` selects
the key with the largest count, sum or mean privately, in one release.
"""

from __future__ import annotations

import sys
import warnings
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from dpframe.api import aggregation
from dpframe.api.frame import PrivateFrame
from dpframe.api.keysets import combination_key, relabel
from dpframe.api.node_builders import (
    argmax_node,
    grouped_quantile_node,
    request_of,
    require_bounds,
)
from dpframe.api.teaching import REVEALING, missing_attribute
from dpframe.errors import SchemaError
from dpframe.mechanisms.results import GroupedRelease
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, GroupKey, Statistic, describe_plan
from dpframe.plan.releases import DiscoverKeys, DiscoverThenAggregate

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from dpframe.plan.privacy import Number, Privacy, PrivacyRequest

__all__ = ["PrivateGroupBy"]


class PrivateGroupBy:
    """A private frame split by public keys; aggregates return pandas Series."""

    __slots__ = ("_column", "_frame", "_index", "_keys", "_names", "_table")

    _frame: PrivateFrame
    _keys: tuple[GroupKey, ...]
    _column: str | None
    _names: tuple[str, ...]
    _table: Any  # the public key set (a pandas DataFrame) given as keys=, or None
    _index: pd.Index | None  # its combinations, the result's index

    @classmethod
    def _create(
        cls, frame: PrivateFrame, names: tuple[str, ...], column: str | None, table: Any = None
    ) -> PrivateGroupBy:
        if not names:
            raise SchemaError("groupby() needs at least one column.")
        keys = []
        index = None
        if table is not None:
            key, index = combination_key(frame, names, table)
            names_left: tuple[str, ...] = ()
            keys.append(key)
        else:
            names_left = names
        for name in names_left:
            info = frame._schema.get(name)
            if info.categories is None and len(names) > 1:
                raise SchemaError(
                    f"groupby({list(names)!r}) needs the public keys of {name!r} when grouping "
                    f"by several columns: pass categories={{{name!r}: [...]}} when loading, or "
                    f"call pf.with_categories({name}=[...]), or give the allowed combinations "
                    f"as keys= (a public DataFrame; pf.discover_keys({list(names)!r}, epsilon=..., "
                    "delta=...) finds them privately)."
                )
            # Undeclared keys (one column): found privately at release time.
            keys.append(GroupKey(name, Col(name), info.categories or ()))
        if column is not None:
            frame._schema.get(column)
        group = object.__new__(cls)
        object.__setattr__(group, "_frame", frame)
        object.__setattr__(group, "_keys", tuple(keys))
        object.__setattr__(group, "_column", column)
        object.__setattr__(group, "_names", names)
        object.__setattr__(group, "_table", table)
        object.__setattr__(group, "_index", index)
        return group

    def _relabel(self, result: Any) -> Any:
        """A release over a keys= set, indexed by its combinations (post-processing)."""
        if self._index is None:
            return result
        return relabel(result, self._index, self._keys[0].categories)

    def __setattr__(self, name: str, value: Any) -> None:
        raise SchemaError("A PrivateGroupBy is immutable.")

    def __getattr__(self, name: str) -> Any:
        frame = self._frame
        if not name.startswith("_") and name in frame._schema and name not in REVEALING:
            return self[name]  # grouped.wage, as pandas
        raise missing_attribute("PrivateGroupBy", name)

    def __dir__(self) -> list[str]:
        columns = {n for n in self._frame._schema.names if n.isidentifier() and n not in REVEALING}
        return sorted({n for n in super().__dir__() if not n.startswith("_")} | columns)

    def __getitem__(self, column: str) -> PrivateGroupBy:
        if not isinstance(column, str):
            raise SchemaError("Select one column: grouped[column].")
        return PrivateGroupBy._create(self._frame, self._names, column, self._table)

    def __repr__(self) -> str:
        keys = ", ".join(f"{k.name} ({len(k.categories)} keys)" for k in self._keys)
        col = f"[{self._column!r}]" if self._column else ""
        return f"PrivateGroupBy(by {keys}){col}"

    def __len__(self) -> int:
        size = 1
        for key in self._keys:
            size *= len(key.categories)
        return size

    def _aggregate(
        self,
        statistic: Statistic,
        request: PrivacyRequest,
    ) -> pd.Series:
        frame = self._frame
        if self._column is None:
            if statistic in ("sum", "mean", "var", "std"):  # every bounded numeric column
                return cast("pd.Series", self.agg(statistic, privacy=request))
            if statistic != "count":
                raise SchemaError(f"Select a column first: grouped['column'].{statistic}(...).")
            expr, bounds = None, None
            what = "count()"
        else:
            info = frame._schema.get(self._column)
            expr = Col(self._column)
            bounds = None if statistic == "count" else require_bounds(info, statistic)
            what = f"{statistic}({self._column})"
        if not self._keys[0].categories:
            name = self._keys[0].name
            node: Any
            if statistic == "count" and expr is None:
                node = DiscoverKeys(plan=frame._plan, privacy=request, column=name)
            else:
                node = DiscoverThenAggregate(
                    plan=frame._plan,
                    privacy=request,
                    column=name,
                    statistic=statistic,
                    value=expr,
                    bounds=bounds,
                )
            return cast("pd.Series", frame._session.run(node))
        by = ", ".join(k.name for k in self._keys)
        label = f"{what} by {by}{describe_plan(frame._plan)}"
        agg = Aggregate(
            frame._plan, statistic, expr, bounds, self._keys, label, request, undeclared=True
        )
        result = cast("pd.Series", frame._session.run(agg))
        warn_undeclared(result)
        return cast("pd.Series", self._relabel(result))

    def agg(self, func: object, **kwargs: Any) -> Any:
        """Several aggregates in one charge, as pandas' ``GroupBy.agg`` (``api.aggregation``).

        Privacy and Accuracy: as :func:`dpframe.api.aggregation.groupby_agg`.
        """
        return self._relabel(aggregation.groupby_agg(self, func, **kwargs))

    def count(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> pd.Series:
        """Rows per group (or non-missing values of the selected column); sensitivity 1."""
        return self._aggregate("count", request_of(epsilon, delta, rho, privacy))

    def size(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> pd.Series:
        """Rows per group (pandas' ``size``); sensitivity 1."""
        return PrivateGroupBy._create(self._frame, self._names, None, self._table)._aggregate(
            "count", request_of(epsilon, delta, rho, privacy)
        )

    def sum(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> pd.Series:
        """Clamped sum per group; sensitivity max(|L|, |U|), one charge for all groups."""
        return self._aggregate("sum", request_of(epsilon, delta, rho, privacy))

    def mean(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> pd.Series:
        """Clamped mean per group: always inside the bounds, also for empty groups.

        Privacy and Accuracy: as :meth:`PrivateSeries.mean`, each group with its
        own privately chosen centre; one charge covers all groups (they are
        disjoint).

        The result is a pandas Series of released values: ``.idxmax()``,
        ``.nlargest(k)`` and ``.sort_values()`` on it are free post-processing.
        """
        return self._aggregate("mean", request_of(epsilon, delta, rho, privacy))

    def var(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> pd.Series:
        """Clamped variance per group."""
        return self._aggregate("var", request_of(epsilon, delta, rho, privacy))

    def std(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> pd.Series:
        """Clamped standard deviation per group."""
        return self._aggregate("std", request_of(epsilon, delta, rho, privacy))

    def quantile(
        self,
        q: float | Sequence[float] = 0.5,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        candidates: Iterable[float] | None = None,
    ) -> pd.Series:
        """The q-quantile(s) of the selected column in every group, in one charge.

        As pandas: a scalar q gives a Series indexed by the keys; a list gives
        a Series indexed by (key, q).  Keys must be declared (refused before
        the charge otherwise).  Candidates as :meth:`PrivateSeries.quantile`:
        the 4,097-point grid over the bounds, the integers within the bounds
        for a column declared integer, or ``candidates=``.

        Privacy: ε-DP.  One exponential-mechanism selection (permute-and-flip,
        utility sensitivity max(q, 1 − q) ranks) per group and level; the
        groups are disjoint, so each group's selections get the whole ε
        (parallel composition), and a list of q splits it evenly.  With a
        privacy unit of k rows each group's utility is calibrated to k rows
        and the unit's loss over the groups it reaches adds up to at most ε
        (docs/proofs/grouped_quantiles.md).  The rows whose key is not
        declared are counted, free, in ``result.dp.undeclared``.

        Accuracy: in each group, with probability 1 − β the released value's
        rank in its group misses q·n_group by at most (2·max(q, 1 − q)·k/ε_q)·
        ln(C/β) more than the best of the C candidates (``explain`` states the
        95% figure); a group with few rows is close to a uniform choice.

        Args:
            q: a level in [0, 1], or a list of levels.
            epsilon: privacy cost (or ``rho=`` in zCDP sessions).
            delta: must be 0 except in approximate-DP sessions.
            rho: zCDP cost.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
            candidates: public candidate values (sorted, finite, within the bounds).

        Example:
            >>> pf.groupby("region")["wage"].quantile([0.25, 0.75], epsilon=1)  # doctest: +SKIP
        """
        node = grouped_quantile_node(
            self._frame,
            self._keys,
            self._column,
            q,
            request_of(epsilon, delta, rho, privacy),
            candidates,
        )
        result = cast("pd.Series", self._frame._session.run(node))
        warn_undeclared(result)
        return cast("pd.Series", self._relabel(result))

    def median(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        candidates: Iterable[float] | None = None,
    ) -> pd.Series:
        """The median of the selected column in every group (see :meth:`quantile`).

        Privacy: ε-DP, one charge for all groups (disjoint).  Accuracy: in each
        group the rank error is within (2k/ε)·ln(C/β) of the best candidate's
        with probability 1 − β.

        Example:
            >>> pf.groupby("region")["wage"].median(epsilon=1).idxmax()  # doctest: +SKIP
        """
        return self.quantile(
            0.5, epsilon=epsilon, delta=delta, rho=rho, privacy=privacy, candidates=candidates
        )

    def argmax(
        self,
        agg: str = "count",
        column: str | None = None,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
    ) -> Any:
        """The key whose count, sum or mean is largest; only the key is released.

        Privacy: counts and sums: ε-DP by permute-and-flip (report noisy max
        with exponential noise) over the declared keys, utility sensitivity 1
        for counts, max(|L|, |U|) for sums.  Means: the noisy means of
        ``groupby(...).mean(epsilon)`` (a noisy count and sum per key), of
        which only the argmax is shown (post-processing).  One charge for all keys.

        Accuracy: counts and sums: with probability 1 − β the chosen key's
        value is within (2Δ/ε)·ln(k/β) of the best of k keys.  Means: each
        key's mean is off by about (U − L)/(ε·n_key), so keys whose means
        differ by several of those are told apart.

        Args:
            agg: ``"count"``, ``"sum"`` or ``"mean"``.
            column: the column summed or averaged (default: the selected one).
            epsilon: privacy cost (or ``rho=`` in zCDP sessions).
            delta: must be 0 except in approximate-DP sessions.
            rho: zCDP cost.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
        """
        if not self._keys[0].categories:
            raise SchemaError(
                f"argmax needs declared keys for {self._keys[0].name!r}; find them first with "
                f"pf.discover_keys({self._keys[0].name!r}, ...)."
            )
        request = request_of(epsilon, delta, rho, privacy)
        node = argmax_node(self._frame, self._keys, agg, column or self._column, request)
        found = self._frame._session.run(node)
        if self._index is None:
            return found
        return self._index[list(self._keys[0].categories).index(found)]


def warn_undeclared(result: Any) -> None:
    """Warn when a group-by's noisy count of rows with undeclared keys is clearly above noise.

    The message names the key columns and a rounded noisy count, never a value
    (see :class:`~dpframe.mechanisms.results.UndeclaredRows`).  It is raised in
    the analyst's process (also in curator mode: the count crosses the wire).
    """
    meta = result.attrs.get("dpframe") if isinstance(result, pd.Series) else None
    if not isinstance(meta, GroupedRelease) or meta.undeclared is None:
        return
    if meta.undeclared.clearly_present:
        warnings.warn(meta.undeclared.message(), UserWarning, stacklevel=_outside_dpframe())


def _outside_dpframe() -> int:
    """The stacklevel of the first caller outside dpframe (the analyst's line)."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_globals.get("__name__", "").startswith("dpframe."):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level
