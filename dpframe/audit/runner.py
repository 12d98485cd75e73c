"""Drawing many releases from neighbouring datasets and voting on the (ε, δ) claim.

:func:`audit` draws releases from a pair of datasets; :func:`audit_pairs`
does it for many pairs that share a base dataset (its draws are reused by
every pair in a vote); :func:`audit_query` runs a query written against a
:class:`~dpframe.PrivateFrame` through the full public release path, in fresh
sessions with an in-memory ledger.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from dpframe.audit.hockey_stick import Feature, Vote, as_features, hockey_stick_vote, vote_level
from dpframe.audit.neighbours import NeighbourPair
from dpframe.engine.reruns import fresh_release
from dpframe.errors import BudgetExceededError, InvalidArgumentError

__all__ = ["AuditResult", "SessionSampler", "audit", "audit_pairs", "audit_query"]

#: ``sampler(data, n)`` returns ``n`` independent releases computed on ``data``.
Sampler = Callable[[Any, int], Sequence[object]]


@dataclass(frozen=True)
class AuditResult:
    """The verdict of the auditor on one pair of neighbouring datasets.

    Attributes:
        name: the pair's name.
        epsilon: the claimed ε.
        delta: the claimed δ.
        votes: the independent votes.
        samples: releases drawn per dataset per vote (pilot and test together).
        alpha: the bound on the probability that a correct mechanism is
            reported as a violation (false alarm).
        level: the per-direction false-alarm level of one vote.
    """

    name: str
    epsilon: float
    delta: float
    votes: tuple[Vote, ...]
    samples: int
    alpha: float
    level: float

    @property
    def flags(self) -> int:
        """How many votes flagged a violation."""
        return sum(v.flagged for v in self.votes)

    @property
    def violation(self) -> bool:
        """True when a majority of the votes flagged the claim as violated."""
        return self.flags > len(self.votes) / 2

    @property
    def passed(self) -> bool:
        """True when no majority flagged a violation."""
        return not self.violation

    @property
    def delta_hat(self) -> float:
        """The median over votes of the larger direction's δ̂ (test samples only)."""
        estimates = sorted(v.delta_hat for v in self.votes)
        return estimates[len(estimates) // 2]

    def __repr__(self) -> str:
        verdict = "VIOLATION" if self.violation else "passed"
        lines = [
            f"AuditResult({self.name or 'pair'}: {verdict} — claim ε={self.epsilon:g}, "
            f"δ={self.delta:g}; {self.flags}/{len(self.votes)} votes flagged; "
            f"{self.samples} releases per dataset per vote; false-alarm bound {self.alpha:.1g})"
        ]
        for i, vote in enumerate(self.votes, 1):
            parts = []
            for label, d in (("D1 vs D0", vote.forward), ("D0 vs D1", vote.backward)):
                mark = " FLAG" if d.flagged else ""
                parts.append(
                    f"{label}: δ̂={d.delta_hat:+.4f} (tolerance {d.tolerance:.4f}, "
                    f"{d.cells} bins){mark}"
                )
            lines.append(f"  vote {i}: " + "; ".join(parts))
        return "\n".join(lines)


def _check(epsilon: float, delta: float, samples: int, votes: int, pilot: float) -> None:
    if isinstance(epsilon, bool) or not isinstance(epsilon, (int, float)) or not epsilon >= 0:
        raise InvalidArgumentError("epsilon (the claim to test) must be a number >= 0.")
    if not math.isfinite(epsilon) or epsilon > 50:
        raise InvalidArgumentError("epsilon must be finite and at most 50 to be testable.")
    if isinstance(delta, bool) or not isinstance(delta, (int, float)) or not 0 <= delta < 1:
        raise InvalidArgumentError("delta (the claim to test) must be a number in [0, 1).")
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 4:
        raise InvalidArgumentError("samples must be an integer >= 4 (pilot + test per vote).")
    if isinstance(votes, bool) or not isinstance(votes, int) or votes < 1:
        raise InvalidArgumentError("votes must be an integer >= 1 (an odd number avoids ties).")
    if not 0 < pilot < 1:
        raise InvalidArgumentError("pilot must be the fraction of samples used to find events.")


def _one_at_a_time(release_fn: Callable[[Any], object]) -> Sampler:
    def sampler(data: Any, n: int) -> list[object]:
        with fresh_release(True):  # each sample a new release, never the ledger's answer
            return [release_fn(data) for _ in range(n)]

    return sampler


def _draw(
    sampler: Sampler,
    data: Any,
    samples: int,
    n_pilot: int,
    max_coords: int,
    drawn: dict[int, tuple[list[Feature], list[Feature]]],
) -> tuple[list[Feature], list[Feature]]:
    """Pilot and test features of ``data``, drawn once per vote (cached by object identity)."""
    key = id(data)
    if key not in drawn:
        outputs = list(sampler(data, samples))
        if len(outputs) != samples:
            raise InvalidArgumentError(
                f"The batched release function returned {len(outputs)} release(s) "
                f"instead of {samples}."
            )
        feats = as_features(outputs, max_coords)
        drawn[key] = (feats[:n_pilot], feats[n_pilot:])
    return drawn[key]


def audit_pairs(
    release_fn: Callable[..., Any],
    pairs: Iterable[NeighbourPair] | Mapping[str, tuple[Any, Any]],
    *,
    epsilon: float,
    delta: float = 0.0,
    samples: int = 2000,
    votes: int = 5,
    alpha: float = 1e-7,
    bins: int = 20,
    pilot: float = 0.5,
    max_coords: int = 3,
    batched: bool = False,
) -> dict[str, AuditResult]:
    """Audit one (ε, δ) claim on several neighbouring pairs at once.

    Pairs whose base dataset is the same object share its draws within a
    vote, so k pairs on one base cost k + 1 (not 2k) datasets' worth of
    releases.  Each pair's verdict keeps the false-alarm bound ``alpha``.

    Args:
        release_fn: ``release_fn(data)`` returns one release computed on
            ``data``; with ``batched=True``, ``release_fn(data, n)`` returns
            ``n`` independent releases.
        pairs: :class:`NeighbourPair` objects (e.g. from :func:`neighbours`)
            or a mapping ``{name: (d0, d1)}``.
        epsilon: the claimed ε.
        delta: the claimed δ.
        samples: releases per dataset per vote (split into pilot and test).
        votes: independent votes; the verdict is their majority.
        alpha: the false-alarm bound of each pair's verdict.
        bins: about how many bins numeric outputs are cut into.
        pilot: the fraction of ``samples`` used to learn bins and events.
        max_coords: the most numbers kept from a grouped (Series) release.
        batched: see ``release_fn``.

    Returns:
        ``{name: AuditResult}``.
    """
    _check(epsilon, delta, samples, votes, pilot)
    items = (
        [(name, d0, d1) for name, (d0, d1) in pairs.items()]
        if isinstance(pairs, Mapping)
        else [(p.name, p.base, p.neighbour) for p in pairs]
    )
    if not items:
        raise InvalidArgumentError("audit_pairs() needs at least one pair of datasets.")
    sampler: Sampler = release_fn if batched else _one_at_a_time(release_fn)
    level = vote_level(alpha, votes)
    n_pilot = max(2, min(samples - 2, round(samples * pilot)))
    collected: dict[str, list[Vote]] = {name: [] for name, _, _ in items}
    for _ in range(votes):
        drawn: dict[int, tuple[list[Feature], list[Feature]]] = {}
        for name, d0, d1 in items:
            pilot0, test0 = _draw(sampler, d0, samples, n_pilot, max_coords, drawn)
            pilot1, test1 = _draw(sampler, d1, samples, n_pilot, max_coords, drawn)
            collected[name].append(
                hockey_stick_vote(
                    pilot0,
                    pilot1,
                    test0,
                    test1,
                    epsilon=float(epsilon),
                    delta=float(delta),
                    level=level,
                    bins=bins,
                )
            )
    return {
        name: AuditResult(
            name, float(epsilon), float(delta), tuple(collected[name]), samples, alpha, level
        )
        for name, _, _ in items
    }


def audit(
    release_fn: Callable[..., Any],
    d0: Any,
    d1: Any,
    *,
    epsilon: float,
    delta: float = 0.0,
    samples: int = 2000,
    votes: int = 5,
    alpha: float = 1e-7,
    bins: int = 20,
    pilot: float = 0.5,
    max_coords: int = 3,
    batched: bool = False,
    name: str = "",
) -> AuditResult:
    """Test whether a release is (ε, δ)-DP on one pair of neighbouring datasets.

    Draws ``votes × samples`` releases from each dataset and runs the
    hockey-stick test of :mod:`dpframe.audit.hockey_stick` in each vote; the
    claim is reported violated when a majority of the votes flag it.

    Statistics:
        False alarm: a mechanism that satisfies the claim on this pair is
        reported as a violation with probability at most ``alpha`` (exact
        Clopper–Pearson bounds on an event chosen from independent pilot
        draws, and the binomial tail of the majority).  Misses: a violation
        is found only if it shows on the bins (a lower bound of the true
        divergence) by more than the tolerance; with ``n = samples/2`` test
        draws the tolerance is about z·(√(p1/n) + e^ε·√(p0/n)) with
        z ≈ 3.3 at the defaults — see ``docs/audit.md`` for measured rates.

    Args:
        release_fn: the release, run as ``release_fn(d0)`` and ``release_fn(d1)``
            (or ``release_fn(data, n)`` with ``batched=True``).
        d0: the base dataset.
        d1: its neighbour.
        epsilon: the claimed ε.
        delta: the claimed δ.
        samples: releases per dataset per vote.
        votes: independent votes.
        alpha: the false-alarm bound.
        bins: about how many bins numeric outputs are cut into.
        pilot: the fraction of each sample used to find the events.
        max_coords: the most numbers kept from a grouped release.
        batched: whether ``release_fn`` draws many releases per call.
        name: a label for the result.

    Returns:
        An :class:`AuditResult`.

    Example:
        >>> import dpframe as dp
        >>> result = dp.audit.audit_query(
        ...     lambda pf: pf.count(epsilon=1), df, df.iloc[1:], epsilon=1
        ... )  # doctest: +SKIP
        >>> result.passed  # doctest: +SKIP
        True
    """
    results = audit_pairs(
        release_fn,
        {name: (d0, d1)},
        epsilon=epsilon,
        delta=delta,
        samples=samples,
        votes=votes,
        alpha=alpha,
        bins=bins,
        pilot=pilot,
        max_coords=max_coords,
        batched=batched,
    )
    return results[name]


class SessionSampler:
    """Runs a query written against a PrivateFrame through the full public release path.

    Each dataset is loaded into a fresh :class:`~dpframe.Session` with a large
    budget and an in-memory ledger; the session (and so the contribution
    bounding of a privacy unit) is renewed every ``reload_every`` releases, and
    when its budget runs out.

    Args:
        query: ``query(pf)`` makes one release.
        bounds: as for :meth:`Session.private_frame`.
        categories: as for :meth:`Session.private_frame`.
        privacy_unit: as for :meth:`Session.private_frame`.
        max_rows_per_unit: as for :meth:`Session.private_frame`.
        accounting: the sessions' accounting (default: pure when ``delta == 0``).
        delta: the sessions' total δ (needed for releases that charge δ).
        reload_every: releases per session.
        session_budget: each session's total (ε, δ) instead of a large budget:
            under Gaussian DP and zCDP a query's ``epsilon=`` is a share of the
            session, so a query that spends a whole session of (ε, δ) audits
            the guarantee (ε, δ) itself.
    """

    def __init__(
        self,
        query: Callable[[Any], object],
        *,
        bounds: Mapping[str, tuple[float, float]] | None = None,
        categories: Mapping[str, Sequence[Hashable]] | None = None,
        privacy_unit: str | None = None,
        max_rows_per_unit: int | None = None,
        accounting: str | None = None,
        delta: float = 0.0,
        reload_every: int = 200,
        session_budget: tuple[float, float] | None = None,
    ) -> None:
        self._query = query
        self._load: dict[str, Any] = {
            "bounds": bounds,
            "categories": categories,
            "privacy_unit": privacy_unit,
            "max_rows_per_unit": max_rows_per_unit,
        }
        self._accounting = accounting
        self._delta = 0.5 if delta > 0 else 0
        self._epsilon: float = 10**9
        if session_budget is not None:
            self._epsilon, self._delta = session_budget
        self._reload_every = max(1, reload_every)

    def _frame(self, data: pd.DataFrame) -> Any:
        from dpframe.api.session import Session

        session = Session(
            epsilon=self._epsilon, delta=self._delta, ledger=":memory:", accounting=self._accounting
        )
        return session.private_frame(data, **self._load)

    def __call__(self, data: pd.DataFrame, n: int) -> list[object]:
        """``n`` releases of the query on ``data``."""
        outputs: list[object] = []
        frame = None
        with fresh_release(True):  # each sample a new release, never the ledger's answer
            for i in range(n):
                if i % self._reload_every == 0:
                    frame = self._frame(data)
                try:
                    outputs.append(self._query(frame))
                except BudgetExceededError:
                    frame = self._frame(data)
                    outputs.append(self._query(frame))
        return outputs


def audit_query(
    query: Callable[[Any], object],
    pairs: Iterable[NeighbourPair] | Mapping[str, tuple[Any, Any]] | pd.DataFrame,
    d1: pd.DataFrame | None = None,
    *,
    epsilon: float,
    delta: float = 0.0,
    bounds: Mapping[str, tuple[float, float]] | None = None,
    categories: Mapping[str, Sequence[Hashable]] | None = None,
    privacy_unit: str | None = None,
    max_rows_per_unit: int | None = None,
    accounting: str | None = None,
    samples: int = 2000,
    votes: int = 5,
    alpha: float = 1e-7,
    bins: int = 20,
    max_coords: int = 3,
    session_budget: tuple[float, float] | None = None,
) -> Any:
    """Audit a query written against a PrivateFrame, e.g. ``lambda pf: pf["wage"].mean(epsilon=1)``.

    Every release goes through the public path (validate, charge a fresh
    session's in-memory ledger, evaluate, add noise, record), exactly as a
    user's query would.

    Args:
        query: ``query(pf)`` makes one release from a PrivateFrame.
        pairs: the base DataFrame (then give ``d1``), or pairs as for
            :func:`audit_pairs` (e.g. ``dp.audit.neighbours(df, bounds=...)``).
        d1: the neighbour, when ``pairs`` is one DataFrame.
        epsilon: the claimed ε (usually the ε the query spends).
        delta: the claimed δ.
        bounds: the public bounds the data is loaded with.
        categories: the public categories the data is loaded with.
        privacy_unit: the privacy unit column, if any.
        max_rows_per_unit: the contribution limit, with ``privacy_unit``.
        accounting: the sessions' accounting (``"zcdp"`` for Gaussian noise).
        samples: releases per dataset per vote.
        votes: independent votes.
        alpha: the false-alarm bound per pair.
        bins: about how many bins numeric outputs are cut into.
        max_coords: the most numbers kept from a grouped release.
        session_budget: each fresh session's total (ε, δ) (default: a large
            budget); see :class:`SessionSampler`.

    Returns:
        One :class:`AuditResult` for a single pair (``pairs`` a DataFrame),
        else ``{name: AuditResult}``.
    """
    sampler = SessionSampler(
        query,
        bounds=bounds,
        categories=categories,
        privacy_unit=privacy_unit,
        max_rows_per_unit=max_rows_per_unit,
        accounting=accounting,
        delta=delta,
        session_budget=session_budget,
    )
    options: dict[str, Any] = {
        "epsilon": epsilon,
        "delta": delta,
        "samples": samples,
        "votes": votes,
        "alpha": alpha,
        "bins": bins,
        "max_coords": max_coords,
        "batched": True,
    }
    if isinstance(pairs, pd.DataFrame):
        if d1 is None:
            raise InvalidArgumentError("Give the neighbour dataset d1 with a base DataFrame.")
        return audit(sampler, pairs, d1, name="pair", **options)
    if d1 is not None:
        raise InvalidArgumentError("d1 is only for a single base DataFrame, not with pairs.")
    return audit_pairs(sampler, pairs, **options)
