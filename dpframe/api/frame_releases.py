"""Releases of a whole private frame: counts, per-column summaries, relations, models, copies.

The part of :class:`~dpframe.PrivateFrame` that spends budget: each method
builds a node with a verb of :mod:`dpframe.api.verbs` and hands it to the
session, which charges it before reading anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

import pandas as pd

from dpframe.api.fresh import fresh_aware
from dpframe.api.handle import FrameHandle
from dpframe.api.verbs import (
    aggregates,
    aggregation,
    distinct,
    models,
    relations,
    tables,
    thresholds,
)
from dpframe.api.verbs.keysets import discover_combinations
from dpframe.api.verbs.requests import request_of
from dpframe.api.verbs.synthesis import synthesis_node
from dpframe.errors import SchemaError

if TYPE_CHECKING:
    from dpframe.mechanisms.answers.results import Release
    from dpframe.plan.privacy import Number, Privacy

__all__ = ["FrameReleases"]


class FrameReleases:
    """Released statistics of a frame; each is one charge."""

    __slots__ = ()

    _handle: FrameHandle

    def _run(self, node: Any) -> Any:
        return self._handle.runner.run(node)

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
        """How many rows the frame has (after its filters), with noise.

        This counts rows, as ``len(df)``; pandas' ``df.count()`` counts each
        column's present values (here ``pf[col].count(...)``).

        Example:
            >>> pf.count(epsilon=0.1)  # doctest: +SKIP
            Release(28,... ± 30, ...)
            >>> pf[pf["region"] == "south"].count(epsilon=0.1)  # doctest: +SKIP

        Privacy: sensitivity 1 (one row added or removed); ε-DP with discrete
        Laplace noise of scale 1/ε, or ρ-zCDP with discrete Gaussian σ² = 1/(2ρ).

        Accuracy: unbiased; ``release.ci(level)`` gives the exact interval.
        """
        request = request_of(epsilon, delta, rho, privacy)
        return cast("Release", self._run(aggregates.count_node(self._handle, request)))

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
        """The sum of every boolean or bounded numeric column, with noise, for one budget."""
        request = request_of(epsilon, delta, rho, privacy)
        return cast(
            "pd.Series", self._run(relations.frame_cells_node(self._handle, "sum", request))
        )

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
        """The mean of every boolean or bounded numeric column, with noise, for one budget."""
        request = request_of(epsilon, delta, rho, privacy)
        node = relations.frame_cells_node(self._handle, "mean", request)
        return cast("pd.Series", self._run(node))

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
        """Several statistics at once, as pandas' ``agg``, for one budget.

        Example:
            >>> pf.agg({"wage": ["mean", "std"], "education": "sum"}, epsilon=1)  # doctest: +SKIP

        The result has pandas' shape; ``dp.ci(result)`` gives every cell's
        interval (a median's: NaN).  The same on a column and a group-by.

        Args:
            func: an aggregate name (count, sum, mean, var, std, median), a list
                of names, or a dict ``{column: name or [names]}``.
            epsilon: the cost of the whole call (or ``rho=`` in zCDP sessions).
            delta: must be 0 except in approximate-DP sessions.
            rho: the cost as a zCDP ρ.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
            weights: positive integers, one per (column, aggregate) in the order
                asked, splitting the request; equal shares by default.

        Privacy: one charge of the request, split over the (column, aggregate)
        cells by the weights; each cell is the named release at its share
        (sequential composition; per group, disjoint cells compose in
        parallel). The split is in ``explain`` and in the ledger's parts.

        Accuracy: each cell as its own release at its share: with k equal
        cells each gets ε/k, so k times the noise scale of the aggregate asked
        alone (ρ/k: √k times the Gaussian σ).
        """
        request = request_of(epsilon, delta, rho, privacy)
        return self._run(aggregation.agg_node(self._handle, func, request, weights=weights))

    @fresh_aware
    def describe(
        self,
        *,
        include: str | None = None,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.DataFrame:
        """A summary (count, mean, std, quartiles) of every bounded numeric column, as ``describe``.

        Example:
            >>> pf.describe(epsilon=1)  # doctest: +SKIP

        pandas' rows but min and max, which are one row's value each;
        ``pf[col].quantile([0, 1], epsilon=...)`` estimates them privately
        (a value with few rows beyond it, between the data and the declared bound).

        Privacy: the request is split evenly over the columns, and within a
        column half to the moments (one ``var`` release) and half to the
        quartiles (one ``quantile`` release); the parts add up to the request.
        The whole request is checked against the budget before the first part.

        With ``include="all"`` (as pandas), the columns with declared
        categories join: count, unique, top and freq from one noisy histogram
        over the declared keys each (one more part of the split); unique counts
        the keys whose noisy count clears the count noise's one-sided 95%
        quantile (see ``dpframe/mechanisms/moments/describe_family.py``).

        Columns declared not null (``dtypes={"wage": "numeric not null"}``)
        show one row count: the inverse-variance average of their variance
        releases' counts (free post-processing), whose interval is that of the
        weighted sum of their noises (about 1/√k as wide for k columns).  Counts
        and an integer column's quartiles are shown as whole numbers.

        Accuracy: as for :meth:`PrivateSeries.var` and :meth:`PrivateSeries.quantile`
        at their shares of the budget; ``dp.ci(result)`` gives count, mean and
        std intervals.
        """
        request = request_of(epsilon, delta, rho, privacy)
        node = aggregates.describe_node(self._handle, request, include)
        return cast("pd.DataFrame", self._run(node))

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
        """How many different declared values each column takes, as ``DataFrame.nunique``.

        Example:
            >>> pf[["region", "ethnicity"]].nunique(epsilon=0.2)  # doctest: +SKIP

        Every column needs public keys (declared categories, or an integer
        column's bounds); select them first otherwise (``pf[cols].nunique(...)``).

        Privacy: one noisy histogram per column over its declared keys
        (sensitivity 1 per disjoint cell), the request split evenly over the
        columns (``describe(include="all")``'s unique).

        Accuracy: a key without rows is counted with probability ≤ 5%; a key
        with many more rows than the threshold is rarely missed.
        """
        request = request_of(epsilon, delta, rho, privacy)
        return distinct.frame_nunique(self._handle, request)

    @fresh_aware
    def corr(
        self,
        method: str = "pearson",
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.DataFrame:
        """How the numeric columns move together: their correlation matrix, with noise.

        Example:
            >>> pf[["wage", "education"]].corr(epsilon=1.0)  # doctest: +SKIP

        As ``DataFrame.corr`` (Pearson), over rows with no missing value; bounds needed.

        Privacy: ε-DP (ρ-zCDP), one charge split equally over m = 1 + k + k(k+1)/2
        noisy moments of the k clamped columns (count, sums, sums of products;
        sensitivities 1, h_i, h_i·h_j, h_i the half-width of column i's bounds).

        Accuracy: a covariance is off by about 1.4·m·h_i·h_j/(ε·n) for n rows
        (m = 6 for two columns); a correlation by that over σ_i·σ_j.
        ``dp.ci(result)`` gives each entry a conservative interval.
        """
        if method != "pearson":
            raise SchemaError("corr(): only method='pearson' is available privately.")
        request = request_of(epsilon, delta, rho, privacy)
        node = relations.moments_node(self._handle, "corr", request)
        return cast("pd.DataFrame", self._run(node))

    @fresh_aware
    def cov(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> pd.DataFrame:
        """How the numeric columns move together: their covariance matrix, with noise.

        Example:
            >>> pf[["wage", "education"]].cov(epsilon=1.0)  # doctest: +SKIP

        As ``DataFrame.cov`` (Pearson), over rows with no missing value; bounds needed.

        Privacy: ε-DP (ρ-zCDP), one charge split equally over m = 1 + k + k(k+1)/2
        noisy moments of the k clamped columns (count, sums, sums of products;
        sensitivities 1, h_i, h_i·h_j, h_i the half-width of column i's bounds).

        Accuracy: a covariance is off by about 1.4·m·h_i·h_j/(ε·n) for n rows
        (m = 6 for two columns); a correlation by that over σ_i·σ_j.
        ``dp.ci(result)`` gives each entry a conservative interval.
        """
        request = request_of(epsilon, delta, rho, privacy)
        node = relations.moments_node(self._handle, "cov", request)
        return cast("pd.DataFrame", self._run(node))

    @fresh_aware
    def pivot_table(
        self,
        values: str,
        index: str,
        columns: str | None = None,
        aggfunc: str | Sequence[str] = "mean",
        margins: bool = False,
        margins_name: str = "All",
        *,
        epsilon: Any = None,
        delta: Any = None,
        rho: Any = None,
        privacy: Any = None,
    ) -> pd.DataFrame:
        """A table of ``values`` summarised per pair of keys, as ``pandas.pivot_table``.

        Example:
            >>> pf.pivot_table("wage", "region", "smsa", epsilon=0.5)  # doctest: +SKIP

        One charge: a grouped ``agg`` over the key pairs (a list of aggregates
        splits the request evenly, as :meth:`PrivateFrame.agg`); columns are the
        column keys, or (aggregate, key) pairs for a list, as pandas.
        ``margins=True`` (``count``, ``sum`` or ``mean``) adds the totals
        ``margins_name``, derived from the released cells: free, each interval
        the sum of the cells'.  With ``mean`` every entry is a released sum over
        a released count (the request split between them), so the margins are
        ratios of the totals; the cells are then ratio estimates rather than
        the adaptive mean of ``aggfunc="mean"`` without margins.  Without
        ``columns`` it is refused, naming the group-by that is that table.

        Privacy and Accuracy: as the grouped aggregate(s) at their share.
        """
        request = request_of(epsilon, delta, rho, privacy)
        return tables.pivot_table(
            self._handle, values, index, columns, aggfunc, request, margins, margins_name
        )

    @fresh_aware
    def above_threshold(
        self,
        queries: Any,
        threshold: float,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        max_hits: int = 1,
        numeric: bool = False,
    ) -> Any:
        """Which of many row conditions hold for more than ``threshold`` rows, for one budget.

        Example:
            >>> pf.above_threshold(  # doctest: +SKIP
            ...     {"graduates": pf["education"] >= 16, "high wage": pf["wage"] > 3000},
            ...     threshold=100, epsilon=0.5, max_hits=2)

        The conditions are examined in order and the names of those found above
        the threshold are returned, stopping after ``max_hits``; the cost does
        not grow with the number of conditions (the sparse vector technique).

        Args:
            queries: a dict ``{name: condition}`` or a list of conditions.
            threshold: the public row count to compare against.
            epsilon: privacy cost of the whole run (or ``rho=`` in zCDP sessions).
            delta: must be 0 except in approximate-DP sessions.
            rho: the cost as a zCDP ρ.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
            max_hits: stop after this many conditions are found above (c below).
            numeric: also release a noisy count of each condition found.
            fresh: True asks for a new, charged release; False (the default)
                answers a request the ledger already answered from it, free.

        Returns:
            The list of names found above the threshold; with ``numeric=True`` a
            Series of their noisy counts.

        Privacy: ε-DP in total however many queries are asked (Lyu, Su, Li 2017,
        Alg. 1): ε/2 for the noisy threshold (scale 2/ε), ε/2 for the queries
        (scale 4c/ε, c = ``max_hits``).  ``numeric=True`` splits ε in thirds and
        also releases a noisy count of each hit (scale 3c/ε).

        Accuracy: with probability 1 − β every reported query has a count above
        threshold − α and every passed-over one below threshold + α, with
        α = 8c·(ln k + ln(4c/β))/ε for k queries (12c·... for ``numeric``).
        """
        request = request_of(epsilon, delta, rho, privacy)
        node = thresholds.sparse_vector_node(
            self._handle, queries, threshold, max_hits, numeric, request
        )
        return self._run(node)

    @fresh_aware
    def discover_keys(
        self,
        column: str | Sequence[str],
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
    ) -> Any:
        """The values a column takes often enough to be shown safely, sorted (keys to group by).

        Example:
            >>> keys = pf.discover_keys("education", epsilon=0.1, delta=1e-6)  # doctest: +SKIP
            >>> pf.with_categories(education=keys).groupby("education")  # doctest: +SKIP

        A list of columns finds the combinations that occur, as a DataFrame
        for ``groupby(columns, keys=...)`` (``dpframe.api.verbs.keysets``).
        Values with only a few rows stay hidden: showing them would reveal those rows.

        Privacy: (ε, δ)-DP and needs δ > 0: discrete Laplace counts (scale 1/ε)
        per key, released only above the smallest threshold τ with
        P(1 + noise ≥ τ) ≤ δ (Korolova et al. 2009; Desfontaines et al. 2022).
        With a privacy unit of k rows in at most g keys: scale k/ε, and each
        new key must clear P(k + noise ≥ τ) ≤ δ/g.

        Accuracy: a key with true count c is shown with probability
        P(c + noise ≥ τ) (see
        ``dpframe.mechanisms.thresholds.partition_selection.release_probability``);
        keys with a handful of rows are usually hidden.
        """
        request = request_of(epsilon, delta, rho, privacy)
        if not isinstance(column, str):
            return discover_combinations(self._handle, column, request)
        node = thresholds.discover_keys_node(self._handle, column, request)
        return list(self._run(node).index)

    @fresh_aware
    def linear_regression(
        self,
        features: Sequence[str],
        target: str,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        analysis: str = "rdp",
        radius: float = 2.0,
        steps: int = 50,
        passes: int = 1,
        step_size: float | None = None,
        progress: bool = True,
        accounting: str | None = None,
    ) -> Any:
        """A linear model predicting ``target`` from ``features``, fitted privately (least squares).

        Example:
            >>> model = pf.linear_regression(["education"], "wage", epsilon=1)  # doctest: +SKIP
            >>> model.coef_, model.intercept_  # doctest: +SKIP

        Returns a model with ``coef_``, ``intercept_`` and ``predict``, fitted by
        noisy projected gradient descent.

        Args:
            features: the predicting columns (bounded numeric or boolean).
            target: the predicted column (bounded).
            epsilon: privacy cost (the session needs δ > 0: Gaussian noise).
            delta: the request's δ where the accounting takes one (not Gaussian DP).
            rho: the cost as a zCDP ρ, instead of ``epsilon``.
            privacy: the cost as one ``dp.Privacy(...)`` (instead of the three above).
            analysis: ``"rdp"`` (full-batch steps) or ``"iteration"`` (noisy SGD
                passes, amplification by iteration); see Privacy.
            radius: the bound R on the parameters' norm (normalized units).
            steps: full-batch steps (``analysis="rdp"``).
            passes: passes over the rows (``analysis="iteration"``).
            step_size: the step η (default: chosen from the loss's smoothness).
            progress: show a progress bar while fitting.
            accounting: deprecated name of ``analysis`` (a FutureWarning).
            fresh: True asks for a new, charged release; False (the default)
                answers a request the ledger already answered from it, free.

        Privacy: features and target are clamped to their declared bounds and
        rescaled (design vectors of norm ≤ 1, target in [−1, 1]); parameters
        stay in a ball of ``radius`` (per-row gradient norm ≤ radius + 1).
        ``analysis="rdp"``: ``steps`` full-batch steps, each a discrete
        Gaussian release of the gradient sum, composed in zCDP (in a
        Gaussian-DP session each step is charged its μ², for the discrete
        Gaussian actually sampled).
        ``analysis="iteration"``: ``passes`` of per-row noisy SGD, only the
        final weights released, charged by amplification by iteration
        (Feldman, Mironov, Talwar, Thakurta 2018, Thm 22, worst row).  A noisy
        count (1/10 of ρ) normalises the gradients / sets the pass length.
        Needs δ > 0 (Gaussian noise).

        Accuracy: with ``analysis="rdp"`` each step's averaged gradient has noise
        of standard deviation about k·L·sqrt(T/(2ρ))/ñ per coordinate (T steps,
        ñ the noisy count, L = R + 1); see ``dpframe.mechanisms.models.regression``.
        The notebook ``notebooks/regression.ipynb`` compares with ordinary least squares.
        """
        options = {
            "analysis": models.analysis_of(analysis, accounting),
            "radius": radius,
            "steps": steps,
            "passes": passes,
            "step_size": step_size,
            "progress": progress,
        }
        request = request_of(epsilon, delta, rho, privacy)
        node = models.regression_node(self._handle, "squared", features, target, request, options)
        return self._run(node)

    @fresh_aware
    def logistic_regression(
        self,
        features: Sequence[str],
        target: str,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        analysis: str = "rdp",
        radius: float = 2.0,
        steps: int = 50,
        passes: int = 1,
        step_size: float | None = None,
        progress: bool = True,
        accounting: str | None = None,
    ) -> Any:
        """A model of the chance that ``target`` is true given ``features``, fitted privately.

        Example:
            >>> high = pf.assign(high=pf["wage"] > 1000)  # doctest: +SKIP
            >>> model = high.logistic_regression(["education"], "high", epsilon=1)  # doctest: +SKIP

        Logistic regression (a boolean or [0, 1] target) by noisy projected
        gradient descent; Args as :meth:`linear_regression`.

        Privacy: as :meth:`linear_regression`, with the logistic loss
        (per-row gradient norm ≤ 1, smoothness 1/4).

        Accuracy: as :meth:`linear_regression` with L = 1; see
        ``dpframe.mechanisms.models.regression``.
        """
        options = {
            "analysis": models.analysis_of(analysis, accounting),
            "radius": radius,
            "steps": steps,
            "passes": passes,
            "step_size": step_size,
            "progress": progress,
        }
        request = request_of(epsilon, delta, rho, privacy)
        node = models.regression_node(self._handle, "logistic", features, target, request, options)
        return self._run(node)

    @fresh_aware
    def synthesize(
        self,
        *,
        epsilon: Number | None = None,
        delta: Number | None = None,
        rho: Number | None = None,
        privacy: Privacy | None = None,
        fresh: bool = False,
        method: str = "mst",
        bins: int | Mapping[str, int | Sequence[float]] | None = None,
        rows: int | None = None,
        progress: bool = True,
    ) -> pd.DataFrame:
        """A made-up table with the frame's columns and similar statistics, safe to share.

        Example:
            >>> copy = pf.synthesize(epsilon=1.0)  # doctest: +SKIP
            >>> copy.groupby("education")["wage"].mean()  # doctest: +SKIP

        Args:
            epsilon: the cost of the whole copy (ε; converted to ρ in zCDP sessions).
            delta: the δ of the request (default: the session's).
            rho: the cost as a zCDP ρ, instead of ``epsilon``.
            privacy: the cost as ``dp.Privacy(...)``, instead of the three above.
            method: ``"mst"`` (a tree of pairs; fast) or ``"aim"`` (adaptively
                chosen 2- and 3-way marginals, a junction-tree model; slower,
                closer on pairs outside MST's tree).
            bins: numeric columns' bins: a number for every numeric column, or
                ``{column: number or list of edges}``; default: one bin per value
                for integer columns with at most 32 values, else 16 equal bins
                over the declared bounds.
            rows: the copy's length; None (default) draws it from the noisy
                marginals (the row count stays private).
            progress: show a progress bar while fitting (``tqdm.auto``).
            fresh: True asks for a new, charged release; False (the default) answers a
                request the ledger already answered from it, free (marked ``from the ledger``).

        Privacy: the request (ε, or ρ in zCDP sessions) is split as MST does: a
        third for the noisy 1-way marginals of every column, a third for
        choosing d − 1 pairs of columns (a spanning tree, by permute-and-flip on
        how far each pair is from independence), a third for the noisy 2-way
        marginals of those pairs.  Each marginal has sensitivity 1 (k rows per
        privacy unit: k).  The rows are then sampled from a tree model fitted to
        the noisy marginals (post-processing).  McKenna, Miklau, Sheldon 2021.
        ``method="aim"`` (McKenna, Mullins, Sheldon, Miklau 2022): a tenth for
        the 1-way marginals, 3/20 for 2d selections (permute-and-flip among all
        pairs and small triples, by AIM's score), the rest for the 2d chosen
        marginals in two stages of d (the second with four times the budget
        each); a junction-tree model is fitted (post-processing).  Every part
        keeps the session's currency (Gaussian DP, zCDP or pure ε).
        Proof: docs/proofs/synthesis.md.

        Accuracy: every released marginal cell has noise of the standard deviation
        in ``copy.attrs["dpframe_synth"]``; ``dpframe.synth_report(copy)`` gives
        the error bars and the pairs the model kept.  Pairs of columns not joined
        in the tree are modelled as conditionally independent along the tree.
        """
        request = request_of(epsilon, delta, rho, privacy)
        node = synthesis_node(self._handle, request, method, bins, rows, progress)
        return cast("pd.DataFrame", self._run(node))


FrameReleases.agg.__doc__ = aggregation.AGG_DOC
FrameReleases.corr.__doc__ = relations.CORR_DOC.format(what="correlation", name="corr")
FrameReleases.cov.__doc__ = relations.CORR_DOC.format(what="covariance", name="cov")
FrameReleases.sum.__doc__ = relations.FRAME_DOC.format(
    name="sum", detail="A boolean column (``pf.isna()``) is summed as a count: whole numbers."
)
FrameReleases.mean.__doc__ = relations.FRAME_DOC.format(
    name="mean", detail="A boolean column gives the share of true flags (``pf.notna().mean``)."
)
