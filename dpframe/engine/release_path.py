"""The release engine: one path from a release node to a released answer.

:func:`run` is the only way anything private is released, for every kind of
release, embedded or behind a curator:

1. **validate**: the node validated itself when it was built; its privacy
   request is turned into a charge and a noise allocation by the accountant;
2. **privacy map**: the node's mechanism family computes its noise plan from
   the allocation (public inputs only; computed once and reused by the
   release), refusing unusable parameters;
3. **charge**: the accountant's filter admits the charge and the ledger
   records it in one transaction, or refuses (nothing has touched the data);
4. **compute and release**: the family evaluates the plan on the backend
   and adds noise;
5. **record and notify**: the ledger row is completed and listeners (the
   budget meter) hear of the release.

:func:`explain` is the same path stopped before the charge.  Each family
(one per kind of node, :class:`dpframe.mechanisms.family.Family`) lives with its
mechanisms and says how to do steps 2, 4 and the explanation;
:func:`family_of` finds it.  :func:`admit_batch` and :func:`finish` split
:func:`run` for ``session.batch()``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from dpframe.accounting.accountants import Charge
from dpframe.errors import DPError, InvalidBudgetError, QueryFailedError, SchemaError
from dpframe.mechanisms.allocation import NoiseAllocation
from dpframe.mechanisms.explanations import Explanation
from dpframe.mechanisms.family import Asked, Family, Node, Released
from dpframe.plan.estimate import (
    ResourceEstimate,
    ResourceLimits,
    check_resources,
    estimate,
    public_lists,
)
from dpframe.plan.nodes import Aggregate, Source, lineage
from dpframe.plan.privacy import Budget, PrivacyRequest
from dpframe.plan.releases import (
    ReleaseNode,
)
from dpframe.plan.schema import Schema
from dpframe.plan.validate import validate_node

if TYPE_CHECKING:
    from dpframe.backends.base import Backend
    from dpframe.engine.session import Session

__all__ = [
    "Admission",
    "Asked",
    "Family",
    "Node",
    "Released",
    "abandon",
    "admit_batch",
    "explain",
    "family_of",
    "finish",
    "run",
]


def _families() -> Mapping[type, Family[Any]]:
    from dpframe.mechanisms.agg_family import AggFamily
    from dpframe.mechanisms.aggregate_family import AggregateFamily
    from dpframe.mechanisms.bounds_family import ApproxBoundsFamily
    from dpframe.mechanisms.copy_family import SanitizedCopyFamily
    from dpframe.mechanisms.describe_family import DescribeFamily
    from dpframe.mechanisms.discovery_family import (
        DiscoverKeysFamily,
        DiscoverThenAggregateFamily,
        SparseVectorFamily,
    )
    from dpframe.mechanisms.model_family import KernelDensityFamily, RegressionFamily
    from dpframe.mechanisms.moments_family import MomentsFamily
    from dpframe.mechanisms.quantile_family import GroupedQuantileFamily, QuantileFamily
    from dpframe.mechanisms.selection_family import ArgMaxFamily, ModeFamily
    from dpframe.mechanisms.synth_family import SynthesisFamily
    from dpframe.plan import releases as r

    return MappingProxyType(
        {
            Aggregate: AggregateFamily(),
            r.Quantile: QuantileFamily(),
            r.GroupedQuantile: GroupedQuantileFamily(),
            r.Mode: ModeFamily(),
            r.ArgMax: ArgMaxFamily(),
            r.Describe: DescribeFamily(),
            r.Agg: AggFamily(),
            r.ApproxBounds: ApproxBoundsFamily(),
            r.SparseVector: SparseVectorFamily(),
            r.DiscoverKeys: DiscoverKeysFamily(),
            r.DiscoverThenAggregate: DiscoverThenAggregateFamily(),
            r.SanitizedCopy: SanitizedCopyFamily(),
            r.KernelDensity: KernelDensityFamily(),
            r.Regression: RegressionFamily(),
            r.Moments: MomentsFamily(),
            r.Synthesize: SynthesisFamily(),
        }
    )


def family_of(node: object, families: Mapping[type, Family[Any]]) -> Family[Any]:
    """The family that releases ``node``; an error for anything that is not a release node."""
    family = families.get(type(node))
    if family is None:
        raise DPError(
            f"A {type(node).__name__} is not a release node; build one with a PrivateFrame's "
            "release methods (e.g. pf['x'].mean(...)) or from dpframe.plan.releases."
        )
    return family


def _request(node: Node) -> PrivacyRequest:
    if node.privacy is None:
        raise InvalidBudgetError(
            "This node has no privacy cost: give it privacy=PrivacyRequest(epsilon=...)."
        )
    return node.privacy


@dataclass(frozen=True)
class _Admitted:
    """A node's charge, allocation and privacy map, computed once before the charge."""

    node: Node
    family: Family[Any]
    request: PrivacyRequest
    charge: Charge
    allocation: NoiseAllocation
    noise: Any
    parts: tuple[_Admitted, ...]


def _admit(session: Session, node: Node, template: bool = False) -> _Admitted:
    """Validate ``node`` and its parts and compute their privacy maps (before the charge).

    A composite's parts must cost exactly its charge together (checked in exact
    arithmetic), so one charge covers them all and the ledger can list them.
    A ``template`` part (completed from an earlier part's release, e.g. keys
    found privately) is sized and costed now, and validated in full when it is
    completed, before it reads anything.
    """
    family = family_of(node, session._families)
    check_resources(size_of(node, session._limits), session._limits)  # sized first
    if not template:
        validate_node(node, _schema(session, node))
    request = _request(node)
    charge, allocation = session._accountant.allocate(
        request, mechanism_delta=_delta_of_its_own(session, family, node)
    )
    noise = family.privacy_map(node, allocation)
    templates = node.templates() if isinstance(node, ReleaseNode) else ()
    parts = tuple(_admit(session, part, i in templates) for i, part in enumerate(_node_parts(node)))
    if parts:
        total = Charge()
        for part in parts:
            total = total + part.charge
        if total != charge:
            raise DPError("The parts of this release do not add up to its cost.")
    return _Admitted(node, family, request, charge, allocation, noise, parts)


def size_of(node: Node, limits: ResourceLimits | None = None) -> ResourceEstimate:
    """The work a node asks for, from public inputs only (never the data or its row count).

    With ``limits``, a node over the cheap sizes (cells, lists) is answered early.
    """
    return estimate(node.plan, node.expressions(), node.cells(), public_lists(node), limits)


def _node_parts(node: Node) -> tuple[Node, ...]:
    return node.parts() if isinstance(node, ReleaseNode) else ()


def _source(node: Node) -> Source:
    return lineage(node.plan)[0]


def _schema(session: Session, node: Node) -> Schema:
    source = _source(node)
    schema = session._schemas.get((source.dataset, source.view))
    if schema is None:
        raise DPError("This frame belongs to another session.")
    return schema


def _backend(session: Session, node: Node, family: Family[Any]) -> Backend:
    source = _source(node)
    backend = session._backends.get((source.dataset, source.view))
    if backend is None:
        raise DPError("This frame belongs to another session.")
    reason = family.rows_needed(node)
    if reason is not None and not backend.holds_rows:
        raise SchemaError(
            f"{reason[0].upper()}{reason[1:]}, so it runs on in-memory pandas data only; "
            "load the data as a pandas DataFrame for it."
        )
    return backend


def explain(session: Session, node: Node) -> Explanation:
    """What ``node`` would cost and release; nothing is charged and no data is read."""
    family = family_of(node, session._families)
    check_resources(size_of(node, session._limits), session._limits)  # sized first
    validate_node(node, _schema(session, node))
    request = _request(node)
    charge, allocation = session._accountant.allocate(
        request, mechanism_delta=_delta_of_its_own(session, family, node)
    )
    _backend(session, node, family)
    accountant, spent = session._accountant, session._charges()
    asked = Asked(
        request,
        allocation,
        accountant.cost(request, charge),
        float(charge.rho) if charge.rho and session.accounting == "zcdp" else None,
        accountant.remaining(spent),
        accountant.remaining(spent + charge) if accountant.admits(spent, charge) else None,
    )
    return family.explain(node, asked)


def run(session: Session, node: Node) -> Any:
    """Release ``node``: validate, privacy map, charge, compute, release, record, notify."""
    admitted = _admit(session, node)
    backend = _backend(session, node, admitted.family)
    backend.preflight()  # e.g. Dask workers that cannot run dpframe: refused, nothing charged
    label = node.label
    accountant = session._accountant
    release_id = session._ledger.charge(
        session.name,
        _source(node).dataset,
        admitted.charge,
        lambda spent: accountant.check(spent, admitted.charge, admitted.request),
        label,
        admitted.family.mechanism_of(node, admitted.allocation),
        parts=_parts(admitted),
        privacy_unit=_unit_text(_source(node)),
    )
    return finish(session, Admission(admitted, backend, release_id))


@dataclass(frozen=True)
class Admission:
    """A node admitted and charged (its ledger row written), not yet computed."""

    admitted: _Admitted
    backend: Backend
    release_id: int


def admit_batch(session: Session, nodes: list[Node]) -> list[Admission]:
    """Admit every node at once, or none: one filter check of the total, one ledger commit."""
    from dpframe.accounting.ledger import PendingCharge

    admitted = [_admit(session, node) for node in nodes]
    backends = [_backend(session, a.node, a.family) for a in admitted]
    for backend in {id(b): b for b in backends}.values():
        backend.preflight()
    datasets = {_source(a.node).dataset for a in admitted}
    if len(datasets) > 1:
        raise DPError("A batch's releases must all read the same data.")
    if not admitted:
        return []
    total = Charge()
    for entry in admitted:
        total = total + entry.charge
    accountant = session._accountant
    if session.accounting in ("zcdp", "gdp"):  # charges in ρ (GDP: ρ = μ²/2)
        asked = PrivacyRequest(rho=total.rho) if total.rho else PrivacyRequest(epsilon=1)
    else:
        asked = PrivacyRequest(epsilon=total.epsilon, delta=total.delta)
    items = [
        PendingCharge(
            a.charge,
            a.node.label,
            a.family.mechanism_of(a.node, a.allocation),
            parts=_parts(a),
            privacy_unit=_unit_text(_source(a.node)),
        )
        for a in admitted
    ]
    ids = session._ledger.charge_many(
        session.name,
        datasets.pop(),
        items,
        lambda spent: accountant.check(spent, total, asked),
    )
    return [Admission(a, b, i) for a, b, i in zip(admitted, backends, ids, strict=True)]


def abandon(session: Session, admission: Admission) -> None:
    """Mark an admitted release that was never computed as failed (its charge stands)."""
    session._ledger.complete(admission.release_id, "", status="failed")


def _parts(admitted: _Admitted) -> list[tuple[str, Charge]] | None:
    """A composite's parts for the ledger: each part's label and charge."""
    return [(p.node.label, p.charge) for p in admitted.parts] or None


def _unit_text(source: Source) -> str | None:
    """The privacy-unit setting of a source, for the ledger (None: one row per person)."""
    if source.unit_rows == 1 and not source.unit_column:
        return None
    return f"{source.unit_column}: at most {source.unit_rows} rows, {source.unit_groups} keys"


def finish(session: Session, admission: Admission) -> Any:
    """Compute and release an admitted, charged node; complete its ledger row and notify."""
    admitted, backend, release_id = admission.admitted, admission.backend, admission.release_id
    label, accountant = admitted.node.label, session._accountant
    cost = accountant.cost(admitted.request, admitted.charge)
    try:
        released, shown = _release(session, admitted, backend, cost)
    except DPError:
        session._ledger.complete(release_id, "", status="failed")
        raise
    except Exception:
        session._ledger.complete(release_id, "", status="failed")
        raise QueryFailedError(
            "The query failed while reading the data; its charge stands. No detail is "
            "shown, not even the kind of failure, because it could depend on private "
            "values: check the column types used in the query's conditions and expressions."
        ) from None
    session._ledger.complete(release_id, shown)
    session._notify(label, cost)
    return released


def _release(session: Session, admitted: _Admitted, backend: Backend, cost: Budget) -> Any:
    """Compute and release an admitted node (its charge stands); parts are released on demand."""
    accountant = session._accountant
    zcdp = session.accounting == "zcdp"
    statics = {id(p.node): p for p in admitted.parts}
    templates = list(admitted.parts)

    def part(node: Node) -> Any:
        known = statics.get(id(node))
        if known is None:
            # A part built from an earlier part's release (e.g. an aggregate over
            # discovered keys): it must cost exactly what its template was admitted at.
            template = next(
                (t for t in templates if type(t.node) is type(node) and t.request == node.privacy),
                None,
            )
            if template is None:
                raise DPError("A part of this release was not admitted with it.")
            templates.remove(template)
            known = _admit(session, node)
            if known.charge != template.charge:
                raise DPError("A part of this release was not admitted with it.")
        part_cost = accountant.cost(known.request, known.charge)
        released, _ = _release(session, known, backend, part_cost)
        return released

    run_ = Released(
        admitted.node,
        backend,
        admitted.allocation,
        admitted.noise,
        cost,
        admitted.charge.rho if zcdp else None,
        session._rng,
        session.accounting,
        tuple(p.node for p in admitted.parts),
        part,
    )
    return admitted.family.release(run_)


def families() -> Mapping[type, Family[Any]]:
    """Every release node type and its family (read-only)."""
    return _families()


def _delta_of_its_own(session: Session, family: Family[Any], node: Node) -> bool:
    """The release spends a δ of its own: by its mechanism, or (Gaussian DP) a Rényi-only one."""
    if family.delta_of_its_own(node):
        return True
    return session.accounting == "gdp" and family.renyi_only(node)
