"""Gaussian counts at (ε, δ) in other DP libraries: the adapters of ``field_gaussian_worker``.

Runs inside each library's virtual environment (``.bench-venvs/<lib>``):
standard library, numpy, pandas and the library measured only; never dpframe.

Every adapter gets the table, a total budget (ε, δ) and a number ``k`` of
count releases that share it (``k = 1``: one count; ``k = 100``: a
workload of 100 counts of the same kind), and returns one or more
:class:`Variant`: a way the library calibrates the noise (its accounting),
the σ it exposes (None where it does not), the total cost it reports and a
callable that makes the ``k`` releases once (all of them sharing the budget)
and returns the ``k`` released counts.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["ADAPTERS", "Variant"]

#: Releases one workload: ``k`` released counts that share the budget.
Run = Callable[[], list[float]]


@dataclass
class Variant:
    """One way a library releases ``k`` counts at a total (ε, δ)."""

    name: str
    api: str
    run: Run | None
    #: the per-count σ the library exposes (None where it exposes none).
    sigma: float | None = None
    sigma_source: str = ""
    #: the total (ε, δ) the library reports for the whole workload.
    cost: tuple[float, float] | None = None
    noise: str = ""
    notes: list[str] = field(default_factory=list)
    #: why there is no release (then ``run`` is None).
    na: str = ""
    #: values of a workload already released while setting the variant up.
    first: list[float] = field(default_factory=list)


def _bisect(ok: Callable[[float], bool], low: float, high: float, iters: int = 80) -> float:
    """The largest x in [low, high] with ok(x) (ok monotone: true below, false above)."""
    for _ in range(iters):
        mid = (low + high) / 2
        if ok(mid):
            low = mid
        else:
            high = mid
    return low


# --------------------------------------------------------------------------- OpenDP


def opendp_variants(df: pd.DataFrame, epsilon: float, delta: float, k: int) -> list[Variant]:
    """OpenDP's core API: ``make_count >> then_gaussian(σ)`` (discrete Gaussian on an integer).

    zCDP is the Gaussian's native measure: ``k`` counts compose in zCDP
    (``make_composition``, ρ adds up), then ``make_zCDP_to_approxDP`` (OpenDP's
    conversion of ρ to an ε(δ) curve) and ``make_fix_delta(δ)``.  σ is the
    smallest scale whose privacy map admits (ε, δ) at one row added or removed
    (``binary_search_param``); the cost is the map of the measurement built.
    The Polars ``Context`` with ``loss_of(epsilon, delta)`` uses integer
    Laplace for ``dp.len()`` (checked with ``summarize()``), so it is not used.
    """
    import opendp.prelude as dp  # type: ignore[import-not-found, unused-ignore]

    dp.enable_features("contrib")
    space = dp.vector_domain(dp.atom_domain(T=float)), dp.symmetric_distance()
    data = df.iloc[:, 0].astype(np.float64).fillna(0.0).tolist()

    def chain(scale: float) -> Any:
        one = dp.t.make_count(*space) >> dp.m.then_gaussian(scale)
        measured = one if k == 1 else dp.c.make_composition([one] * k)
        return dp.c.make_fix_delta(dp.c.make_zCDP_to_approxDP(measured), delta)

    scale = float(dp.binary_search_param(chain, d_in=1, d_out=(epsilon, delta), T=float))
    meas = chain(scale)
    spent = meas.map(1)

    def run() -> list[float]:
        out = meas(data)
        return [float(x) for x in (out if k > 1 else [out])]

    composed = "make_composition([count >> gaussian] × k) >> " if k > 1 else ""
    return [
        Variant(
            "zCDP -> approxDP",
            f"{composed}make_zCDP_to_approxDP >> make_fix_delta(δ); σ by binary_search_param",
            run,
            sigma=scale,
            sigma_source="the scale found by binary_search_param",
            cost=(float(spent[0]), float(spent[1])),
            noise="discrete Gaussian",
        )
    ]


# --------------------------------------------------------------------------- diffprivlib


def diffprivlib_variants(df: pd.DataFrame, epsilon: float, delta: float, k: int) -> list[Variant]:
    """diffprivlib's ``GaussianAnalytic`` (Balle & Wang 2018) on the exact row count.

    diffprivlib's ``tools`` have no count, so the mechanism is applied to
    ``len(df)`` (continuous Gaussian noise; the count is not rounded).  Each
    release spends (ε_i, δ_i) on a ``BudgetAccountant(ε, δ, slack)``, which
    raises if the total goes over.  ``k = 1``: (ε, δ).  ``k > 1``: basic
    composition (slack 0: ε/k, δ/k each) and the accountant's advanced
    composition (Kairouz et al. 2015, heterogeneous; ``accountant.total``) with
    the slack that gives the smallest σ (slack = s·δ for s on a grid of 0.05,
    the rest of δ split evenly, the largest ε_i admitted found by bisection).
    """
    from diffprivlib.accountant import BudgetAccountant  # type: ignore[import-not-found, unused-ignore]
    from diffprivlib.mechanisms import GaussianAnalytic  # type: ignore[import-not-found, unused-ignore]

    n = float(len(df))

    def variant(name: str, slack: float, eps_i: float, delta_i: float, how: str) -> Variant:
        sigma = float(GaussianAnalytic(epsilon=eps_i, delta=delta_i, sensitivity=1)._scale)

        def run() -> list[float]:
            accountant = BudgetAccountant(epsilon=epsilon, delta=delta, slack=slack)
            out = []
            for _ in range(k):
                accountant.spend(eps_i, delta_i)  # raises BudgetError when over
                mech = GaussianAnalytic(epsilon=eps_i, delta=delta_i, sensitivity=1)
                out.append(float(mech.randomise(n)))
            return out

        total = BudgetAccountant(epsilon=epsilon, delta=delta, slack=slack).total(
            spent_budget=[(eps_i, delta_i)] * k, slack=slack
        )
        return Variant(
            name,
            f"BudgetAccountant(ε, δ, slack={slack:.3g}); {k} × "
            f"GaussianAnalytic(ε_i={eps_i:.4g}, δ_i={delta_i:.3g}).randomise(len(df)) ({how})",
            run,
            sigma=sigma,
            sigma_source="GaussianAnalytic._scale",
            cost=(float(total[0]), float(total[1])),
            noise="continuous Gaussian (analytic)",
        )

    if k == 1:
        return [variant("GaussianAnalytic", 0.0, epsilon, delta, "one release")]

    def largest_epsilon(slack: float, delta_i: float) -> float:
        def admits(eps_i: float) -> bool:
            acc = BudgetAccountant(epsilon=epsilon, delta=delta, slack=slack)
            total = acc.total(spent_budget=[(eps_i, delta_i)] * k, slack=slack)
            return bool(total[0] <= epsilon and total[1] <= delta)

        return _bisect(admits, 0.0, epsilon, 60)

    # δ_i and ε_i a hair under δ/k, ε/k: the accountant's float sums must stay within.
    basic_delta = delta / k * (1 - 1e-9)
    out = [
        variant(
            "basic composition",
            0.0,
            largest_epsilon(0.0, basic_delta),
            basic_delta,
            "slack 0: about ε/k, δ/k",
        )
    ]
    best: tuple[float, float, float, float] | None = None  # (σ, slack, ε_i, δ_i)
    for step in range(1, 20):
        slack = delta * step / 20
        delta_i = (delta - slack) / k * (1 - 1e-9)
        eps_i = largest_epsilon(slack, delta_i)
        if eps_i <= 0:
            continue
        sigma = float(GaussianAnalytic(epsilon=eps_i, delta=delta_i, sensitivity=1)._scale)
        if best is None or sigma < best[0]:
            best = (sigma, slack, eps_i, delta_i)
    if best is not None:
        out.append(variant("advanced composition", best[1], best[2], best[3], "best slack"))
    return out


# --------------------------------------------------------------------------- PipelineDP


def pipelinedp_variants(df: pd.DataFrame, epsilon: float, delta: float, k: int) -> list[Variant]:
    """PipelineDP's ``DPEngine`` (``LocalBackend``), ``NoiseKind.GAUSSIAN``, public partition.

    One engine and one accountant per workload: ``k`` ``COUNT`` aggregations
    (one contribution per row, row index as privacy id, a single public
    partition) are declared, then ``compute_budgets()`` sets their noise,
    then the results are computed.  ``NaiveBudgetAccountant`` splits (ε, δ)
    evenly (basic composition); PipelineDP's Gaussian σ for (ε_i, δ_i) comes
    from PyDP's ``GaussianMechanism`` (``dp_computations.compute_sigma``).
    ``PLDBudgetAccountant`` (needs ``dp_accounting``; documented as
    experimental) composes the declared mechanisms' privacy loss
    distributions and sets their noise standard deviation directly; it is a
    non-adaptive accountant (all aggregations declared before any result).
    σ: ``compute_sigma(eps, delta, 1)`` of the naive accountant's spec, the
    PLD spec's ``noise_standard_deviation``.
    """
    import pipeline_dp  # type: ignore[import-not-found, unused-ignore]
    from pipeline_dp import dp_computations  # type: ignore[import-not-found, unused-ignore]

    rows = list(range(len(df)))
    backend = pipeline_dp.LocalBackend()
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r,
        partition_extractor=lambda r: 0,
        value_extractor=lambda r: 0,
    )
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.GAUSSIAN,
        metrics=[pipeline_dp.Metrics.COUNT],
        max_partitions_contributed=1,
        max_contributions_per_partition=1,
    )

    def workload(make: Callable[[], Any]) -> tuple[list[float], Any]:
        accountant = make()
        engine = pipeline_dp.DPEngine(accountant, backend)
        pending = [
            engine.aggregate(rows, params, extractors, public_partitions=[0]) for _ in range(k)
        ]
        accountant.compute_budgets()
        values = []
        for result in pending:
            ((_, stats),) = list(result)
            values.append(float(stats[0]))
        return values, accountant

    def naive() -> Any:
        return pipeline_dp.NaiveBudgetAccountant(total_epsilon=epsilon, total_delta=delta)

    def pld() -> Any:
        return pipeline_dp.PLDBudgetAccountant(total_epsilon=epsilon, total_delta=delta)

    out: list[Variant] = []
    for name, make in (("NaiveBudgetAccountant", naive), ("PLDBudgetAccountant", pld)):
        try:
            first, accountant = workload(make)
        except Exception as exc:  # report, do not abort the other accountant
            out.append(Variant(name, "", None, na=f"{type(exc).__name__}: {exc}"[:300]))
            continue
        specs = list(accountant.mechanism_specs)
        spec = specs[0]
        if name == "NaiveBudgetAccountant":
            sigma = float(dp_computations.compute_sigma(spec.eps, spec.delta, 1.0))
            source = f"compute_sigma(eps={spec.eps:.4g}, delta={spec.delta:.3g}, 1)"
            cost = (sum(s.eps * s.count for s in specs), sum(s.delta * s.count for s in specs))
        else:
            sigma = float(spec.noise_standard_deviation)
            source = "mechanism_specs[i].noise_standard_deviation"
            cost = (epsilon, delta)

        def run(make: Callable[[], Any] = make) -> list[float]:
            return workload(make)[0]

        out.append(
            Variant(
                name,
                f"{name}(ε, δ); {k} × DPEngine.aggregate(COUNT, GAUSSIAN, public_partitions=[0])",
                run,
                sigma=sigma,
                sigma_source=source,
                cost=cost,
                noise="Gaussian (PyDP)",
                notes=[f"{len(specs)} mechanism specs"],
                first=first,
            )
        )
    return out


# --------------------------------------------------------------------------- SmartNoise SQL


def smartnoise_variants(df: pd.DataFrame, epsilon: float, delta: float, k: int) -> list[Variant]:
    """SmartNoise SQL: ``SELECT COUNT(*)`` with ``Mechanism.gaussian`` mapped to counts.

    ``Privacy(epsilon, delta, mechanisms)`` applies to every query; SmartNoise's
    Gaussian mechanism calibrates its σ through OpenDP (continuous Gaussian,
    zCDP -> approxDP, ``fix_delta``).  Its odometer
    (``reader.get_privacy_cost``: Kairouz et al. heterogeneous composition
    with a tolerance term δ/2) reports the total; each variant's (ε_i, δ_i) is
    the largest that keeps the reported total within (ε, δ): for one count
    δ_i = δ/1.5 (the odometer adds δ_i/2); for ``k`` counts δ_i on a grid of
    fractions of δ/(k + 0.5) and the largest ε_i by bisection, keeping the
    smallest σ.  ``k = 1`` also runs ``Privacy(ε, δ)`` as given (the odometer
    then reports 1.5δ).  The Gaussian's noise scale is memoised per (ε, δ)
    in this process: SmartNoise searches it anew (about 0.9 s) on every
    query; the memo changes no noise.
    """
    import snsql  # type: ignore[import-not-found, unused-ignore]
    from snsql.sql._mechanisms.base import Mechanism  # type: ignore[import-not-found, unused-ignore]
    from snsql.sql._mechanisms.gaussian import Gaussian  # type: ignore[import-not-found, unused-ignore]
    from snsql.sql.odometer import OdometerHeterogeneous  # type: ignore[import-not-found, unused-ignore]
    from snsql.sql.privacy import Mechanisms, Stat  # type: ignore[import-not-found, unused-ignore]

    _memoise_scale(Gaussian)
    mechanisms = Mechanisms()
    mechanisms.map[Stat.count] = Mechanism.gaussian
    frame = pd.DataFrame({"x": np.zeros(len(df))})
    table: dict[str, Any] = {
        "row_privacy": True,
        "rows": len(df),
        "censor_dims": False,
        "max_ids": 1,
    }
    table["x"] = {"type": "float", "lower": 0.0, "upper": 1.0, "nullable": False}
    meta = {"Data": {"Schema": {"T": table}}}

    def privacy(eps_i: float, delta_i: float) -> Any:
        return snsql.Privacy(epsilon=eps_i, delta=delta_i, mechanisms=mechanisms)

    reader = snsql.from_df(frame, privacy=privacy(epsilon, delta), metadata=meta)
    query = "SELECT COUNT(*) FROM Schema.T"

    def reported(eps_i: float, delta_i: float) -> tuple[float, float]:
        """What ``reader.get_privacy_cost([query] * k)`` returns, without building k mechanisms.

        ``get_privacy_cost`` spends each query's mechanism costs on an
        ``OdometerHeterogeneous(reader.privacy)``; a count's cost is (ε_i, δ_i)
        (checked against the reader below).
        """
        odo = OdometerHeterogeneous(privacy(eps_i, delta_i))
        for _ in range(k):
            odo.spend(snsql.Privacy(epsilon=eps_i, delta=delta_i))
        e, d = odo.spent
        return float(e), float(d)

    def checked(eps_i: float, delta_i: float) -> tuple[float, float]:
        reader.privacy = privacy(eps_i, delta_i)
        e, d = reader.get_privacy_cost([query] * k)
        if (float(e), float(d)) != reported(eps_i, delta_i):
            raise RuntimeError("the odometer replica disagrees with reader.get_privacy_cost")
        return float(e), float(d)

    def sigma_of(eps_i: float, delta_i: float) -> float:
        reader.privacy = privacy(eps_i, delta_i)
        reader._refresh_options()
        subquery, _ = reader._rewrite(query)
        (mech,) = [m for m in reader._get_mechanisms(subquery) if m]
        return float(mech.scale)

    def variant(name: str, eps_i: float, delta_i: float) -> Variant:
        chosen = privacy(eps_i, delta_i)

        def run() -> list[float]:
            reader.privacy = chosen
            return [float(reader.execute(query)[1][0]) for _ in range(k)]

        return Variant(
            name,
            f'{k} × reader.execute("{query}") at Privacy(ε={eps_i:.4g}, δ={delta_i:.3g}), '
            "count -> Mechanism.gaussian",
            run,
            sigma=sigma_of(eps_i, delta_i),
            sigma_source="the reader's Gaussian mechanism .scale",
            cost=checked(eps_i, delta_i),
            noise="continuous Gaussian (via OpenDP)",
        )

    if k == 1:
        within = _bisect(lambda d: reported(epsilon, d)[1] <= delta, 0.0, delta, 60)
        return [
            variant("odometer within (ε, δ)", epsilon, within),
            variant("Privacy(ε, δ) as given", epsilon, delta),
        ]
    best: tuple[float, float, float] | None = None  # (σ, ε_i, δ_i)

    def delta_within(d: float) -> bool:
        return reported(epsilon / k, d)[1] <= delta

    delta_max = _bisect(delta_within, 0.0, delta, 50)
    for frac in (0.1, 0.25, 0.5, 0.75, 0.9, 0.99):
        delta_i = delta_max * frac

        def eps_within(e: float, d: float = delta_i) -> bool:
            return reported(e, d)[0] <= epsilon

        eps_i = _bisect(eps_within, 0.0, epsilon, 40)
        if eps_i <= 0 or reported(eps_i, delta_i)[1] > delta:
            continue
        sigma = sigma_of(eps_i, delta_i)
        if best is None or sigma < best[0]:
            best = (sigma, eps_i, delta_i)
    if best is None:
        return [Variant("odometer", "", None, na="no (ε_i, δ_i) found within the total")]
    return [variant("odometer (advanced composition)", best[1], best[2])]


def _memoise_scale(gaussian: Any) -> None:
    """Cache SmartNoise's Gaussian noise-scale search per parameters (same scale, no search)."""
    original = gaussian._compute_noise_scale
    if getattr(original, "memoised", False):
        return
    memo: dict[tuple[Any, ...], float] = {}

    def compute(self: Any) -> None:
        key = (self.epsilon, self.delta, self.lower, self.upper, self.max_contrib, self.bit_depth)
        if self.scale is None and key in memo:
            self.scale = memo[key]
            return
        original(self)
        memo[key] = self.scale

    compute.memoised = True  # type: ignore[attr-defined]
    gaussian._compute_noise_scale = compute


Adapter = Callable[[pd.DataFrame, float, float, int], list[Variant]]

#: library name -> (distribution name, adapter).
ADAPTERS: dict[str, tuple[str, Adapter]] = {
    "opendp": ("opendp", opendp_variants),
    "diffprivlib": ("diffprivlib", diffprivlib_variants),
    "pipeline-dp": ("pipeline-dp", pipelinedp_variants),
    "smartnoise-sql": ("smartnoise-sql", smartnoise_variants),
}
