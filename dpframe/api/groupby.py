"""``PrivateGroupBy``: aggregates per group of public keys.

A thin shell over a :class:`~dpframe.api.handle.GroupHandle`.  Keys must be
declared (``categories=``); the result has one row per declared key (or key
combination), in declaration order, including empty groups.  Rows whose key
is not declared are in no group; they are revealed only as a noisy count,
free (``result.dp.undeclared``, never an index entry), with a warning when
that count is clearly above its noise (a misspelled or differently cased
key).  Groups are disjoint, so one charge of ε covers every group (parallel
composition).

Results are plain pandas Series (one entry per declared key), so pandas'
own methods work on the released values as free post-processing:
``pf.groupby("region")["wage"].mean(epsilon=1).idxmax()`` names the region
with the largest *released* mean (``.nlargest(3)``, ``.sort_values()`` and
``.rank()`` likewise).  A group-by has no ``idxmax``: pandas' would name each
group's row with the largest value (a private row); ``argmax(...)`` selects
the key with the largest count, sum or mean privately, in one release.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from dpframe.api.fresh import fresh_aware
from dpframe.api.handle import GroupHandle
from dpframe.api.teaching import REVEALING, missing_attribute
from dpframe.api.verbs import aggregation, distinct, grouping
from dpframe.api.verbs.quantiles import grouped_quantile_node
from dpframe.api.verbs.requests import request_of
from dpframe.errors import SchemaError
from dpframe.plan.nodes import Statistic

if TYPE_CHECKING:
    from collections.abc import Iterable, Sequence

    from dpframe.plan.privacy import Number, Privacy, PrivacyRequest

__all__ = ["PrivateGroupBy", "groupby_of"]


def groupby_of(handle: GroupHandle) -> PrivateGroupBy:
    """The :class:`PrivateGroupBy` of a handle."""
    grouped = object.__new__(PrivateGroupBy)
    object.__setattr__(grouped, "_handle", handle)
    return grouped


class PrivateGroupBy:
    """A private frame split by public keys; aggregates return pandas Series."""

    __slots__ = ("_handle",)

    _handle: GroupHandle

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise SchemaError("Group a private frame with pf.groupby(column).")

    def __setattr__(self, name: str, value: Any) -> None:
        raise SchemaError("A PrivateGroupBy is immutable.")

    def __dpframe__(self) -> GroupHandle:
        """The group-by's handle (frame, keys, selected column): the protocol verbs read."""
        return self._handle

    def __getattr__(self, name: str) -> Any:
        schema = self._handle.frame.schema
        if not name.startswith("_") and name in schema and name not in REVEALING:
            return self[name]  # grouped.wage, as pandas
        names = dir(self) if not name.startswith("_") else ()  # dir() itself asks for _ names
        raise missing_attribute("PrivateGroupBy", name, names=names)

    def __dir__(self) -> list[str]:
        names = self._handle.frame.schema.names
        columns = {n for n in names if n.isidentifier() and n not in REVEALING}
        return sorted({n for n in super().__dir__() if not n.startswith("_")} | columns)

    def __getitem__(self, column: str) -> PrivateGroupBy:
        if not isinstance(column, str):
            raise SchemaError("Select one column: grouped[column].")
        return groupby_of(self._handle.selecting(column))

    def __repr__(self) -> str:
        keys = ", ".join(f"{k.name} ({len(k.categories)} keys)" for k in self._handle.keys)
        column = self._handle.column
        col = f"[{column!r}]" if column else ""
        return f"PrivateGroupBy(by {keys}){col}"

    def __len__(self) -> int:
        size = 1
        for key in self._handle.keys:
            size *= len(key.categories)
        return size

    def _aggregate(self, statistic: Statistic, request: PrivacyRequest) -> pd.Series:
        handle = self._handle
        if handle.column is None and statistic in ("sum", "mean", "var", "std"):
            return cast("pd.Series", self.agg(statistic, privacy=request))  # every bounded column
        result = handle.frame.runner.run(grouping.aggregate_node(handle, statistic, request))
        if not handle.keys[0].categories:  # keys discovered in the same release
            return cast("pd.Series", result)
        return cast("pd.Series", grouping.grouped_result(handle, result))

    @fresh_aware
    def agg(self, func: object = None, **kwargs: Any) -> Any:
        """Several statistics per group at once, as pandas' ``GroupBy.agg``, for one budget.

        Example:
            >>> pf.groupby("region")["wage"].agg(["count", "mean"], epsilon=0.4)  # doctest: +SKIP
            >>> by = pf.groupby("region")  # doctest: +SKIP
            >>> by.agg(n=("wage", "size"), m=("wage", "mean"), epsilon=0.4)  # doctest: +SKIP

        Privacy: one charge, split over the (column, aggregate) cells as
        :meth:`PrivateFrame.agg`; the groups are disjoint (parallel composition).

        Accuracy: each cell as the grouped aggregate alone at its share.
        """
        handle = self._handle
        weights = kwargs.pop("weights", None)
        request = request_of(
            kwargs.pop("epsilon", None),
            kwargs.pop("delta", None),
            kwargs.pop("rho", None),
            kwargs.pop("privacy", None),
        )
        if kwargs:  # named aggregation: agg(n=("col", "size"), m=("col", "mean"))
            if func is not None:
                raise SchemaError(
                    "agg() takes either aggregates (a name, list or dict) or named "
                    "aggregation (out=('column', 'aggregate')), not both."
                )
            named = aggregation.named_spec(handle, kwargs)
            whole = groupby_of(handle.selecting(None))  # a dict spec names its columns
            table = whole.agg(named.spec, privacy=request, weights=weights)
            return aggregation.named_result(table, named)
        if func is None:
            raise SchemaError(
                "agg() needs aggregates: agg('mean'), agg(['mean', 'std']), "
                "agg({'col': 'mean'}) or agg(out=('col', 'mean')), each with epsilon=."
            )
        if handle.column is not None and isinstance(func, str):  # the named method's Series
            return getattr(self, aggregation.named_aggregate(func, weights))(privacy=request)
        node = aggregation.grouped_agg_node(handle, func, request, weights)
        return grouping.relabelled(handle, handle.frame.runner.run(node))

    @fresh_aware
    def count(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.Series:
        """How many rows each group has (or present values of the selected column), with noise.

        Example:
            >>> pf.groupby("region")["wage"].count(epsilon=0.1)  # doctest: +SKIP

        Privacy: sensitivity 1; one charge for all groups (they are disjoint).

        Accuracy: each count has noise scale 1/ε (Laplace) or σ = 1/sqrt(2ρ).
        """
        return self._aggregate("count", request_of(epsilon, delta, rho, privacy))

    @fresh_aware
    def size(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.Series:
        """How many rows each group has, with noise, as pandas' ``size``.

        Example:
            >>> pf.groupby("region").size(epsilon=0.1)  # doctest: +SKIP

        Privacy: sensitivity 1; one charge for all groups (they are disjoint).

        Accuracy: each count has noise scale 1/ε (Laplace) or σ = 1/sqrt(2ρ).
        """
        whole = groupby_of(self._handle.selecting(None))
        return whole._aggregate("count", request_of(epsilon, delta, rho, privacy))

    @fresh_aware
    def sum(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.Series:
        """The total of the selected column in each group, with noise.

        Example:
            >>> pf.groupby("region")["wage"].sum(epsilon=0.1)  # doctest: +SKIP

        Privacy: values clamped to [L, U], sensitivity max(|L|, |U|); one charge for
        all groups.

        Accuracy: each total has noise scale max(|L|, |U|)/ε, as :meth:`PrivateSeries.sum`.
        """
        return self._aggregate("sum", request_of(epsilon, delta, rho, privacy))

    @fresh_aware
    def mean(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.Series:
        """The average of the selected column in each group, with noise.

        Example:
            >>> pf.groupby("region")["wage"].mean(epsilon=0.2)  # doctest: +SKIP

        Values are clamped to the bounds; each answer stays inside them, also for
        an empty group.

        Privacy and Accuracy: as :meth:`PrivateSeries.mean`, each group with its
        own privately chosen centre; one charge covers all groups (they are
        disjoint).

        The result is a pandas Series of released values: ``.idxmax()``,
        ``.nlargest(k)`` and ``.sort_values()`` on it are free post-processing.
        """
        return self._aggregate("mean", request_of(epsilon, delta, rho, privacy))

    @fresh_aware
    def var(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.Series:
        """How spread out the selected column is in each group (variance), with noise.

        Example:
            >>> pf.groupby("region")["wage"].var(epsilon=0.2)  # doctest: +SKIP

        Values are clamped to the bounds; Privacy and Accuracy as
        :meth:`PrivateSeries.var`, per group, one charge for all groups.
        """
        return self._aggregate("var", request_of(epsilon, delta, rho, privacy))

    @fresh_aware
    def std(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.Series:
        """The standard deviation of the selected column in each group, with noise.

        Example:
            >>> pf.groupby("region")["wage"].std(epsilon=0.2)  # doctest: +SKIP

        The square root of :meth:`var`.

        Privacy and Accuracy: as :meth:`var` (same cost and guarantee).
        """
        return self._aggregate("std", request_of(epsilon, delta, rho, privacy))

    @fresh_aware
    def quantile(
        self,
        q: float | Sequence[float] = 0.5,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        candidates: Iterable[float] | None = None,
    ) -> pd.Series:
        """The quantiles of the selected column in every group (e.g. quartiles), chosen privately.

        Example:
            >>> pf.groupby("region")["wage"].quantile([0.25, 0.75], epsilon=1)  # doctest: +SKIP

        As pandas: a scalar q gives a Series indexed by the keys; a list gives
        a Series indexed by (key, q).  Keys must be declared (refused before
        the charge otherwise).  Candidates as :meth:`PrivateSeries.quantile`:
        the 4,097-point grid over the bounds, the integers within the bounds
        for a column declared integer, or ``candidates=``.

        Args:
            q: a level in [0, 1], or a list of levels.
            epsilon: privacy cost (or ``rho=`` in zCDP sessions).
            delta: must be 0 except in approximate-DP sessions.
            rho: zCDP cost.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
            candidates: public candidate values (sorted, finite, within the bounds).
            fresh: True asks for a new, charged release; False (the default) answers a
                request the ledger already answered from it, free (marked ``from the ledger``).

        Privacy: ε-DP.  Per group and level a selection (permute-and-flip,
        utility sensitivity max(q, 1 − q) ranks) at half the level's ε and its
        95% interval's two ends at a quarter each (docs/proofs/quantile_intervals.md); the
        groups are disjoint, so each group's selections get the whole ε
        (parallel composition), and a list of q splits it evenly.  With a
        privacy unit of k rows each group's utility is calibrated to k rows
        and the unit's loss over the groups it reaches adds up to at most ε
        (docs/proofs/grouped_quantiles.md).  The rows whose key is not
        declared are counted, free, in ``result.dp.undeclared``.

        Accuracy: in each group, with probability 1 − β the released value's
        rank in its group misses q·n_group by at most (2·max(q, 1 − q)·k/ε_q)·
        ln(C/β) more than the best of the C candidates, ε_q half the level's ε
        (``explain`` states the 95% figure); a group with few rows is close to a
        uniform choice.  ``.dp.ci()``: each group's 95% value interval.
        """
        handle = self._handle
        request = request_of(epsilon, delta, rho, privacy)
        node = grouped_quantile_node(
            handle.frame, handle.keys, handle.column, q, request, candidates
        )
        result = handle.frame.runner.run(node)
        return cast("pd.Series", grouping.grouped_result(handle, result))

    @fresh_aware
    def median(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        candidates: Iterable[float] | None = None,
    ) -> pd.Series:
        """The middle value of the selected column in every group, chosen privately.

        Example:
            >>> pf.groupby("region")["wage"].median(epsilon=1).idxmax()  # doctest: +SKIP

        Candidates and keys as :meth:`quantile` at q = 0.5.

        Privacy: ε-DP, one charge for all groups (disjoint), as :meth:`quantile`.

        Accuracy: in each group, with probability 1 − β, the rank error is within
        (k/ε)·ln(C/β) of the best of the C candidates' (k: the privacy unit's row
        limit, 1 by default).
        """
        return self.quantile(
            0.5, epsilon=epsilon, delta=delta, rho=rho, privacy=privacy, candidates=candidates
        )

    @fresh_aware
    def nunique(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.Series:
        """How many different declared values the selected column has in each group.

        Example:
            >>> pf.groupby("region")["ethnicity"].nunique(epsilon=0.2)  # doctest: +SKIP

        As ``pandas.SeriesGroupBy.nunique``, one charge; the column needs public keys
        (declared categories, or an integer column's bounds).

        Privacy: one grouped count over the (group, column key) cells, which
        are disjoint (sensitivity 1 each); the threshold is post-processing.

        Accuracy: a key with no rows in a group is counted with probability
        ≤ 5% (the count noise's one-sided 95% quantile); a key with many more
        rows than that threshold is rarely missed.
        """
        request = request_of(epsilon, delta, rho, privacy)
        released = distinct.grouped_nunique(self._handle, request)
        return cast("pd.Series", grouping.relabelled(self._handle, released))

    @fresh_aware
    def argmax(
        self,
        agg: str = "count",
        column: str | None = None,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> Any:
        """Which group has the most rows (or the largest sum or mean); only its key is released.

        Example:
            >>> pf.groupby("region").argmax("mean", "wage", epsilon=0.2)  # doctest: +SKIP

        Args:
            agg: ``"count"``, ``"sum"`` or ``"mean"``.
            column: the column summed or averaged (default: the selected one).
            epsilon: privacy cost (or ``rho=`` in zCDP sessions).
            delta: must be 0 except in approximate-DP sessions.
            rho: zCDP cost.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
            fresh: True asks for a new, charged release; False (the default) answers a
                request the ledger already answered from it, free (marked ``from the ledger``).

        Privacy: counts and sums: ε-DP by permute-and-flip (report noisy max
        with exponential noise) over the declared keys, utility sensitivity 1
        for counts, max(|L|, |U|) for sums.  Means: the noisy means of
        ``groupby(...).mean(epsilon)`` (a noisy count and sum per key), of
        which only the argmax is shown (post-processing).  One charge for all keys.

        Accuracy: counts and sums: with probability 1 − β the chosen key's
        value is within (2Δ/ε)·ln(k/β) of the best of k keys.  Means: each
        key's mean is off by about (U − L)/(ε·n_key), so keys whose means
        differ by several of those are told apart.
        """
        handle = self._handle
        request = request_of(epsilon, delta, rho, privacy)
        node = grouping.argmax_node(handle, agg, column or handle.column, request)
        runner = handle.frame.runner
        found = runner.run(node)
        return grouping.argmax_result(handle, found, grouping.chosen_statement(runner, node))


PrivateGroupBy.agg.__doc__ = aggregation.AGG_DOC
