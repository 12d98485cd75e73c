"""Releases of one private column: counts, sums, means, quantiles, histograms, copies.

The part of :class:`~dpframe.PrivateSeries` that spends budget: each method
builds a node with a verb of :mod:`dpframe.api.verbs` and hands it to the
session, which charges it before reading anything.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from dpframe.api.fresh import fresh_aware
from dpframe.api.handle import SeriesHandle
from dpframe.api.thin import warn_if_thin
from dpframe.api.verbs import aggregates, aggregation, copies, grouping, relations, tables
from dpframe.api.verbs.aggregates import MAX_DRAWN_BINS, drawn
from dpframe.api.verbs.quantiles import quantile_node
from dpframe.api.verbs.requests import request_of
from dpframe.mechanisms.answers.winner import ChosenKey
from dpframe.plan.expressions import Col

if TYPE_CHECKING:
    from dpframe.mechanisms.answers import DPArray, DPValue
    from dpframe.mechanisms.answers.results import Release
    from dpframe.plan.privacy import Number, Privacy

__all__ = ["MAX_DRAWN_BINS", "ColumnReleases"]


class ColumnReleases:
    """Released statistics of a column; each is one charge."""

    __slots__ = ()

    _handle: SeriesHandle

    def _run(self, node: Any) -> Any:
        return self._handle.runner.run(node)

    def _aggregate(self, statistic: Any, request: Any) -> Release:
        return cast(
            "Release", self._run(aggregates.aggregate_node(self._handle, statistic, request))
        )

    @fresh_aware
    def count(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> Release:
        """How many values of the column are present (not missing), with noise.

        Example:
            >>> pf["wage"].count(epsilon=0.1)  # doctest: +SKIP
            Release(28,... ± 30, ...)

        Privacy: sensitivity 1; discrete Laplace (ε) or discrete Gaussian (ρ).

        Accuracy: unbiased, noise scale 1/ε (Laplace) or 1/sqrt(2ρ) (Gaussian σ).
        """
        return self._aggregate("count", request_of(epsilon, delta, rho, privacy))

    @fresh_aware
    def sum(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> Release:
        """The total of the column's values, with noise.

        Values are clamped to the column's declared bounds [L, U] first.

        Example:
            >>> pf["wage"].sum(epsilon=0.1)  # doctest: +SKIP

        Privacy: sensitivity max(|L|, |U|) (missing values add nothing, ±inf
        is clamped); discrete Laplace (ε) or discrete Gaussian (ρ) on a
        power-of-two grid.

        Accuracy: unbiased up to clamping; noise scale max(|L|, |U|)/ε
        (+0.1% grid widening).  A boolean column (``isna()``, a comparison) is
        summed as a count of its true rows: a whole number, noise scale 1/ε.
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
    ) -> Release:
        """The column's average, with noise.

        Values are clamped to the declared bounds [L, U]; the answer stays inside
        them, also when no row is selected.

        Example:
            >>> pf["wage"].mean(epsilon=0.1)  # doctest: +SKIP
            Release(603.5 ± 4.0, ...)
            >>> pf[pf["education"] >= 12]["wage"].mean(epsilon=0.1)  # doctest: +SKIP

        Privacy: a twentieth of the budget to the non-missing count
        (sensitivity 1), a twentieth to a first sum of values minus the
        midpoint (sensitivity (U − L)/2) that locates the data, the rest to
        the sum of values minus that rough mean ĉ (sensitivity
        max(U − ĉ, ĉ − L)); on small data (noisy count under 10 noise SDs) a
        second count and the midpoint sum share the rest instead
        (``dpframe/mechanisms/moments/mean.py``; per group, each cell on its own).

        Accuracy: error about max(U − ĉ, ĉ − L)/(0.9·ε·n) for n values, i.e.
        0.56–1.11 × (U − L)/(ε·n); ``ci()`` is a conservative
        (Bonferroni, interval-arithmetic) interval.
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
    ) -> Release:
        """How spread out the column's values are (the population variance), with noise.

        Values are clamped to [L, U]; the answer is within [0, ((U − L)/2)²].

        Example:
            >>> pf["wage"].var(epsilon=0.2)  # doctest: +SKIP

        Privacy: thirds of the budget to the count (sensitivity 1), the centred
        sum ((U − L)/2) and the centred sum of squares (((U − L)/2)²).

        Accuracy: error about 3·((U − L)/2)²/(ε·n); ``ci()`` is conservative.
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
    ) -> Release:
        """How spread out the column's values are (the standard deviation), with noise.

        Example:
            >>> pf["wage"].std(epsilon=0.2)  # doctest: +SKIP

        Privacy and Accuracy: as :meth:`var` (its square root; the same cost).
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
    ) -> Any:
        """The value below which a share ``q`` of the column lies (a quantile), chosen privately.

        Example:
            >>> pf["wage"].quantile([0.25, 0.75], epsilon=0.5)  # doctest: +SKIP

        The answer is one of public candidate values: by default 4,097 equally
        spaced values over the declared bounds; for a column declared integer
        (``dtypes={col: "integer"}``) the integers within the bounds (or 4,097
        equally spaced integers when more would fit); ``candidates=`` gives your own.

        Args:
            q: a level in [0, 1], or a list of levels (as pandas).
            epsilon: privacy cost (or ``rho=`` in zCDP sessions).
            delta: must be 0 except in approximate-DP sessions.
            rho: zCDP cost.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
            candidates: public candidate values, sorted, finite and within the
                bounds, at most 4,097 (refused before anything is charged otherwise).
            fresh: True asks for a new, charged release; False (the default) answers a
                request the ledger already answered from it, free (marked ``from the ledger``).

        Returns:
            A :class:`Release` for a scalar q, a Series indexed by q for a list.

        Privacy: ε-DP: a list of q splits ε evenly; each level's ε_q goes half to
        the value (permute-and-flip, utility sensitivity max(q, 1 − q) ranks times
        the unit's row limit) and a quarter to each end of its 95% interval
        (docs/proofs/quantile_intervals.md).  Only public inputs choose candidates.

        Accuracy: with probability 1 − β the rank error exceeds the best
        candidate's by at most (4·max(q, 1 − q)/ε_q)·ln(C/β) (``release.scale``:
        the 95% figure); ``ci()`` gives the 95% interval in the column's units,
        which holds a true q-quantile with probability ≥ 95% for every data set.
        """
        request = request_of(epsilon, delta, rho, privacy)
        return self._run(quantile_node(self._handle, q, request, candidates))

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
    ) -> Release:
        """The middle value of the column (the median), chosen privately among public candidates.

        Example:
            >>> pf["wage"].median(epsilon=0.5, candidates=range(0, 5001, 10))  # doctest: +SKIP

        Privacy: as :meth:`quantile` at q = 0.5 (ε-DP: half selects the value).

        Accuracy: rank error at most (2k/ε)·ln(C/β) beyond the best of the C candidates
        (k: the unit's row limit, 1 by default); ``ci()``: its 95% value interval.
        """
        request = request_of(epsilon, delta, rho, privacy)
        return cast("Release", self._run(quantile_node(self._handle, 0.5, request, candidates)))

    @fresh_aware
    def describe(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.Series:
        """A summary of the column (count, mean, spread, quartiles), as ``Series.describe``.

        Example:
            >>> pf["wage"].describe(epsilon=0.5)  # doctest: +SKIP

        Numbers: count, mean, std and the quartiles (no min and max: they are
        rows; ``quantile([0, 1], epsilon=...)`` estimates them privately).  A
        column with declared keys: count, unique, top and freq.

        Privacy and Accuracy: as :meth:`PrivateFrame.describe` on this one
        column (half the request to the moments, half to the quartiles).
        """
        request = request_of(epsilon, delta, rho, privacy)
        table = self._run(aggregates.describe_series_node(self._handle, request))
        column = table[self._handle.info.name]
        if "unique" in column.index:  # keys: pandas' four rows of a categorical summary
            column = column.loc[["count", "unique", "top", "freq"]]
        return cast("pd.Series", column)

    @fresh_aware
    def approx_bounds(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> tuple[float, float]:
        """Bounds to declare for a column, suggested privately: ``(low, high)``.

        Found from a noisy histogram, without anyone looking at the data; charged
        like any release.

        Example:
            >>> pf.with_bounds(wage=pf["wage"].approx_bounds(epsilon=0.1))  # doctest: +SKIP

        Pass the result to ``with_bounds``; the column needs no bounds of its own.

        Privacy: one noisy histogram of the column over 101 fixed public bins
        ±2^k (k = −10…40, a zero bin, values beyond ±2^40 in the end bins):
        the cost of one grouped count; the choice of bins is post-processing.

        Accuracy: with probability ≥ 95% no empty bin widens the result, so it
        is at most a factor 2 wider than the occupied bins; bins too sparse to
        clear the noise (rare extremes) are left out and their values clamped.
        With too few rows for the budget it warns and returns ``(-2**40, 2**40)``.
        See :class:`~dpframe.mechanisms.moments.bounds_family.ApproxBoundsFamily`.
        """
        node = aggregates.approx_bounds_node(self._handle, request_of(epsilon, delta, rho, privacy))
        return cast("tuple[float, float]", self._run(node))

    @fresh_aware
    def mode(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.Series:
        """The most common value among the declared keys, as ``Series.mode`` returns it.

        Only the key is released (report noisy max), never its count.

        Example:
            >>> pf["region"].mode(epsilon=0.1)  # doctest: +SKIP

        ``pf["region"].mode(epsilon=...)[0]`` is the key, as ``df["region"].mode()[0]``:
        one key (pandas lists every tied key; a private release names one).

        Privacy: ε-DP by permute-and-flip on the counts (sensitivity 1), the same
        distribution as report-noisy-max with exponential noise; one charge for
        all categories.

        Accuracy: with probability 1 − β the returned key's count is within
        (2/ε)·ln(k/β) of the largest count, for k categories.
        """
        node = aggregates.mode_node(self._handle, request_of(epsilon, delta, rho, privacy))
        found: pd.Series = pd.Series([self._run(node)], name=self._handle.info.name)
        statement = grouping.chosen_statement(self._handle.frame.runner, node)
        found.attrs["dpframe"] = ChosenKey(statement)
        return found

    @fresh_aware
    def value_counts(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        sort: bool = True,
        normalize: bool = False,
    ) -> pd.Series:
        """How many rows have each declared value, with noise, as ``Series.value_counts``.

        One charge for all categories (they are disjoint).

        Example:
            >>> pf["region"].value_counts(epsilon=0.1)  # doctest: +SKIP
            >>> pf["region"].value_counts(epsilon=0.1, normalize=True)  # doctest: +SKIP

        Privacy: sensitivity 1 per disjoint cell; discrete Laplace (ε) or Gaussian (ρ).
        ``normalize=True`` (shares, as pandas) and sorting are post-processing: free.

        Accuracy: each count has noise scale 1/ε; ``dp.ci(result)`` gives intervals
        (for shares, intervals that hold for every share at once:
        ``dpframe/mechanisms/tables/shares.py``).
        """
        request = request_of(epsilon, delta, rho, privacy)
        counts = self._run(aggregates.value_counts_node(self._handle, request))
        if isinstance(self._handle.expr, Col):
            grouping.warn_undeclared(counts)
        return aggregates.value_counts_result(counts, sort, normalize)

    @fresh_aware
    def hist(
        self,
        bins: int | Sequence[float] = 10,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        draw: bool | None = None,
    ) -> pd.Series:
        """A histogram of the column: noisy counts per public bin, drawn with error bars.

        Example:
            >>> pf["wage"].hist(bins=10, epsilon=0.2)  # doctest: +SKIP

        ``bins=k`` cuts the declared bounds into k equal bins and clamps values
        beyond them into the end bins; explicit increasing ``bins`` edges count
        only values inside them (as ``pandas.cut``).  In IPython and Jupyter
        the chart is drawn, as pandas draws it (``draw=None``, the default;
        ``draw=True`` draws anywhere matplotlib is installed, ``draw=False``
        never; at most :data:`MAX_DRAWN_BINS` bars); ``dp.plot(result)`` draws
        it again.  The counts are returned, so they stay available.

        Privacy: bins are disjoint, so one charge of ε covers all (sensitivity 1).

        Accuracy: each count has noise scale 1/ε (Laplace) or σ = 1/sqrt(2ρ).
        """
        request = request_of(epsilon, delta, rho, privacy)
        node, edges = aggregates.histogram_node(self._handle, bins, request)
        counts = aggregates.histogram_result(self._handle, self._run(node), edges)
        if drawn(draw, len(counts)):
            from dpframe.plotting import plot  # matplotlib is loaded on first use only

            plot(counts)
        return counts

    def nunique(
        self,
        *,
        epsilon: Any = None,
        delta: Any = None,
        rho: Any = None,
        privacy: Any = None,
    ) -> Release:
        """How many different declared values the column takes, as ``Series.nunique``.

        Example:
            >>> pf["region"].nunique(epsilon=0.2)  # doctest: +SKIP

        A key counts when its noisy count clears the count noise's one-sided 95%
        quantile (:func:`dpframe.mechanisms.moments.describe_family.unique_threshold`),
        as ``describe(include="all")``'s unique.

        Privacy: one grouped count over the declared keys (sensitivity 1 per
        disjoint cell); the rest is post-processing.

        Accuracy: a key without rows is counted with probability ≤ 5%; a key with
        many more rows than the threshold is rarely missed.  No value interval:
        ``ci()`` explains why.
        """
        return tables.nunique(self._handle, request_of(epsilon, delta, rho, privacy))

    @fresh_aware
    def agg(
        self,
        func: object,
        *,
        epsilon: Any = None,
        delta: Any = None,
        rho: Any = None,
        privacy: Any = None,
        weights: object = None,
    ) -> Any:
        """Several statistics of the column at once, as ``Series.agg``, for one budget.

        Example:
            >>> pf["wage"].agg(["mean", "std", "median"], epsilon=0.6)  # doctest: +SKIP

        Privacy and Accuracy: as :meth:`PrivateFrame.agg` (the request split over the cells).
        """
        request = request_of(epsilon, delta, rho, privacy)
        if isinstance(func, str):  # pandas: a scalar, as the named method gives it
            return getattr(self, aggregation.named_aggregate(func, weights))(privacy=request)
        return self._run(aggregation.series_agg_node(self._handle, func, request, weights))

    @fresh_aware
    def corr(
        self,
        other: object,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> DPValue[DPArray]:
        """How two columns move together (their correlation), as ``Series.corr``, with noise.

        Example:
            >>> pf["wage"].corr(pf["education"], epsilon=1.0)  # doctest: +SKIP

        Privacy and Accuracy: as :meth:`PrivateFrame.corr` on the two columns.  The
        number keeps its interval: it prints as ``value ± half-width`` and
        ``dp.ci(r)`` gives (low, high).
        """
        request = request_of(epsilon, delta, rho, privacy)
        node = relations.pair_moments_node(self._handle, other, "corr", request)
        return cast("DPValue[DPArray]", relations.pair_value(warn_if_thin(self._run(node))))

    @fresh_aware
    def cov(
        self,
        other: object,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> DPValue[DPArray]:
        """How two columns move together (their covariance), as ``Series.cov``, with noise.

        Example:
            >>> pf["wage"].cov(pf["education"], epsilon=1.0)  # doctest: +SKIP

        Privacy and Accuracy: as :meth:`PrivateFrame.cov` on the two columns; the
        number keeps its interval (``dp.ci``).
        """
        request = request_of(epsilon, delta, rho, privacy)
        node = relations.pair_moments_node(self._handle, other, "cov", request)
        return cast("DPValue[DPArray]", relations.pair_value(self._run(node)))

    @fresh_aware
    def randomized_response(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        length_share: float = 0.05,
    ) -> pd.Series:
        """A copy of a categorical column safe to share: some values swapped at random.

        Example:
            >>> pf["region"].randomized_response(epsilon=1.0).value_counts()  # doctest: +SKIP

        Privacy: (ε, δ)-DP for the whole copy, charged once.  Each row reports
        its category with probability 1 − m·p and each of the other m declared
        categories with p ≥ (1 − δ)/(m + e^ε_v) (ε-local DP per row); the
        copy's length is a noisy count (``length_share`` of the request) and
        its order is random, so the number of rows stays private.

        Accuracy: a report is correct with probability 1 − m·p (see
        ``copy.attrs["dpframe_copy"]``);
        ``dpframe.mechanisms.copies.copy_family.estimate_frequencies``
        debiases the counts.  Source: Warner 1965; the seed texts of issue 8.
        """
        request = request_of(epsilon, delta, rho, privacy)
        return cast(
            "pd.Series", self._run(copies.copy_node(self._handle, "rr", request, length_share))
        )

    @fresh_aware
    def laplace_copy(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        length_share: float = 0.05,
    ) -> pd.Series:
        """A copy of a numeric column safe to share: each value plus random noise (Laplace).

        Example:
            >>> pf["education"].laplace_copy(epsilon=1.0).describe()  # doctest: +SKIP

        Privacy: (ε, δ)-DP for the whole copy, charged once.  Values are
        clamped to the bounds [L, U] and get noise of scale
        b = (U − L)/(ε_v − ln(1 − δ)) (discrete Laplace on a fine public
        power-of-two grid); the length is a noisy count (``length_share``).

        Accuracy: unbiased for the clamped values; noise standard deviation
        about sqrt(2)·b per value.  Source: Dwork, McSherry, Nissim, Smith
        2006; the seed texts of issue 8.
        """
        request = request_of(epsilon, delta, rho, privacy)
        node = copies.copy_node(self._handle, "laplace", request, length_share)
        return cast("pd.Series", self._run(node))

    @fresh_aware
    def kde(
        self,
        bandwidth: float,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        grid: int | Sequence[float] = 256,
    ) -> pd.Series:
        """A smooth curve of how the column's values are spread (a density estimate), with noise.

        Example:
            >>> pf["wage"].kde(bandwidth=100.0, epsilon=0.5)  # doctest: +SKIP

        Privacy: Gaussian-process noise whose covariance is the kernel, so
        the released curve is smooth; the RKHS sensitivity of the kernel sum
        is (2πh²)^{-1/2} per row, calibrated through zCDP (valid for all ε);
        the row count used to normalise is a noisy count.  Needs δ > 0
        (an approx or zCDP session).

        Accuracy: pointwise standard deviation in ``result.attrs["dpframe_kde"].std``;
        ``.plot()`` draws it.  Source: Hall, Rinaldo, Wasserman 2013.
        """
        request = request_of(epsilon, delta, rho, privacy)
        node = copies.kde_node(self._handle, bandwidth, grid, request)
        return cast("pd.Series", self._run(node))


ColumnReleases.agg.__doc__ = aggregation.AGG_DOC
