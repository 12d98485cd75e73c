"""The release engine: one path from a release node to a released answer.

:meth:`ReleasePath.run` is the only way anything private is released, for
every kind of release, embedded or behind a curator:

1. **validate**: the node validated itself when it was built; its privacy
   request is turned into a charge and a noise allocation by the accountant;
2. **privacy map**: the node's mechanism family computes its noise plan from
   the allocation (public inputs only; computed once and reused by the
   release), refusing unusable parameters;
3. **charge**: the accountant's filter admits the charge and the ledger
   records it in one transaction, or refuses (nothing has touched the data);
4. **compute and release**: the family evaluates the plan on the backend
   and adds noise;
5. **record and notify**: the ledger row is completed (with the answer
   itself, kept so that the same request is answered again for free) and
   listeners (the budget meter) hear of the release.

Between steps 2 and 3, a request the ledger already answered (the same node
by value, privacy parameters and data; :mod:`dpframe.engine.reruns`) is
answered from the ledger instead: nothing is charged and no data is read.

:meth:`ReleasePath.explain` is the same path stopped before the charge.  Each
family (one per kind of node, :class:`dpframe.mechanisms.core.family.Family`) lives
with its mechanisms and says how to do steps 2, 4 and the explanation;
:func:`family_of` finds it.  :meth:`ReleasePath.admit_batch` and
:meth:`ReleasePath.finish` split :meth:`ReleasePath.run` for ``session.batch()``.
Each session owns one :class:`ReleasePath`: its accountant, ledger, loaded
data and random source, held nowhere else.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from dpframe.accounting.accountants import Charge
from dpframe.engine.joins import joined_backend, joined_schema
from dpframe.engine.reruns import pack, request_key, unpack
from dpframe.errors import DPError, InvalidBudgetError, QueryFailedError, SchemaError
from dpframe.mechanisms.calibration.recorded import encode, recording
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.core.explanations import Explanation, plain_number
from dpframe.mechanisms.core.family import Asked, Family, Node, Released, discover
from dpframe.plan.estimate import (
    ResourceEstimate,
    ResourceLimits,
    check_resources,
    estimate,
    public_lists,
)
from dpframe.plan.nodes import Join, Source, lineage
from dpframe.plan.privacy import Budget, PrivacyRequest
from dpframe.plan.releases import (
    ReleaseNode,
)
from dpframe.plan.schema import Schema
from dpframe.plan.validate import validate_node

if TYPE_CHECKING:
    from dpframe.accounting.accountants import Accountant
    from dpframe.accounting.ledger import Ledger
    from dpframe.backends.base import Backend
    from dpframe.noise import SecureRandom

__all__ = [
    "Admission",
    "Asked",
    "Family",
    "Node",
    "ReleasePath",
    "Released",
    "families",
    "family_of",
    "size_of",
]


def _families() -> Mapping[type, Family[Any]]:
    return MappingProxyType(discover())


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


@dataclass(frozen=True)
class Admission:
    """A node admitted and charged (its ledger row written), not yet computed.

    ``request`` is the request's key (:func:`~dpframe.engine.reruns.request_key`;
    None: its answer is not kept for a re-run).
    """

    admitted: _Admitted
    backend: Backend
    release_id: int
    request: str | None = None


def size_of(node: Node, limits: ResourceLimits | None = None) -> ResourceEstimate:
    """The work a node asks for, from public inputs only (never the data or its row count).

    With ``limits``, a node over the cheap sizes (cells, lists) is answered early.
    """
    return estimate(node.plan, node.expressions(), node.cells(), public_lists(node), limits)


def _node_parts(node: Node) -> tuple[Node, ...]:
    return node.parts() if isinstance(node, ReleaseNode) else ()


def _source(node: Node) -> Source:
    return lineage(node.plan)[0]


def _parts(admitted: _Admitted) -> list[tuple[str, Charge]] | None:
    """A composite's parts for the ledger: each part's label and charge."""
    return [(p.node.label, p.charge) for p in admitted.parts] or None


def _unit_text(source: Source) -> str | None:
    """The privacy-unit setting of a source, for the ledger (None: one row per person)."""
    if source.unit_rows == 1 and not source.unit_column:
        return None
    text = f"{source.unit_column}: at most {source.unit_rows} rows, {source.unit_groups} keys"
    if source.join is not None:
        text += f" (a join in ID space {source.id_space!r})"
    return text


@dataclass
class ReleasePath:
    """One session's release engine: its accountant, ledger, data and random source.

    The session (:class:`dpframe.engine.session.Session`) builds one and hands
    it every node; the data it loads is registered here by its source key
    (dataset, view).  Nothing else holds these collaborators.

    Attributes:
        name: the session's name in the ledger.
        accountant: the session's accountant (its filter admits every charge).
        ledger: the session's ledger (charges, then completed rows).
        limits: the largest request a release may make (sized before the charge).
        families: every release node type and its family.
        rng: the session's secure random source.
        notify: called after every release with its label, its cost and, for a
            request answered from the ledger, its note (else None).
        keep_answers: keep each answer in the ledger with its request's key
            (a curator keeps them itself, in the same form, within its limits).
        schemas: the public schema of each loaded source.
        backends: the backend of each loaded source.
        joins: the backend of each private join released on so far.
        join_rows: each join's kept rows and dropped rows (one draw), computed once
            (after a charge).
    """

    name: str
    accountant: Accountant
    ledger: Ledger
    limits: ResourceLimits
    families: Mapping[type, Family[Any]]
    rng: SecureRandom
    notify: Callable[[str, Budget, str | None], None]
    keep_answers: bool = True
    schemas: dict[tuple[str, str], Schema] = field(default_factory=dict)
    backends: dict[tuple[str, str], Backend] = field(default_factory=dict)
    joins: dict[Join, Backend] = field(default_factory=dict)
    join_rows: dict[Join, tuple[Backend, Backend]] = field(default_factory=dict)

    # -- the public data of a source -------------------------------------------

    def source_schema(self, source: Source) -> Schema:
        """The public schema of a source (a join's from its sides'; another session's refused)."""
        if source.join is not None:
            return joined_schema(self, source)
        schema = self.schemas.get((source.dataset, source.view))
        if schema is None:
            raise DPError("This frame belongs to another session.")
        return schema

    def source_backend(self, source: Source) -> Backend:
        """The backend of a source (a join's rows are computed once, then kept)."""
        if source.join is not None:
            return joined_backend(self, source)
        backend = self.backends.get((source.dataset, source.view))
        if backend is None:
            raise DPError("This frame belongs to another session.")
        return backend

    def schema_of(self, node: Node) -> Schema:
        """The public schema of the data ``node`` reads (refused for another session's)."""
        return self.source_schema(_source(node))

    def backend_of(self, node: Node, family: Family[Any] | None = None) -> Backend:
        """The backend of the data ``node`` reads (checked against ``family``'s needs)."""
        backend = self.source_backend(_source(node))
        reason = None if family is None else family.rows_needed(node)
        if reason is not None and not backend.holds_rows:
            raise SchemaError(
                f"{reason[0].upper()}{reason[1:]}, so it runs on in-memory pandas data only; "
                "load the data as a pandas DataFrame for it."
            )
        return backend

    # -- before the charge ---------------------------------------------------

    def _delta_of_its_own(self, family: Family[Any], node: Node) -> bool:
        """The release spends a δ of its own: by its mechanism, or (GDP) a Rényi-only one."""
        if family.delta_of_its_own(node):
            return True
        return self.accountant.kind == "gdp" and family.renyi_only(node)

    def admit(self, node: Node, template: bool = False) -> _Admitted:
        """Validate ``node`` and its parts and compute their privacy maps (before the charge).

        A composite's parts must cost exactly its charge together (checked in exact
        arithmetic), so one charge covers them all and the ledger can list them.
        A ``template`` part (completed from an earlier part's release, e.g. keys
        found privately) is sized and costed now, and validated in full when it is
        completed, before it reads anything.
        """
        family = family_of(node, self.families)
        check_resources(size_of(node, self.limits), self.limits)  # sized first
        if not template:
            validate_node(node, self.schema_of(node))
        request = _request(node)
        charge, allocation = self.accountant.allocate(
            request, mechanism_delta=self._delta_of_its_own(family, node)
        )
        noise = family.privacy_map(node, allocation)
        templates = node.templates() if isinstance(node, ReleaseNode) else ()
        parts = tuple(self.admit(part, i in templates) for i, part in enumerate(_node_parts(node)))
        if parts:
            total = Charge()
            for part in parts:
                total = total + part.charge
            if total != charge:
                raise DPError("The parts of this release do not add up to its cost.")
        return _Admitted(node, family, request, charge, allocation, noise, parts)

    def explain(self, node: Node) -> Explanation:
        """What ``node`` would cost and release; nothing is charged and no data is read.

        A composite (``describe``, ``agg``, ...) also lists each part's own
        accuracy line at its share (:attr:`Explanation.outputs`).
        """
        found = self._explain_one(node)
        parts = _node_parts(node)
        if not parts or found.outputs:
            return found
        templates = node.templates() if isinstance(node, ReleaseNode) else ()
        outputs = []
        for i, part in enumerate(parts):
            if i in templates:  # completed from an earlier part's release: known only then
                outputs.append((part.label, "its keys come from an earlier part's release"))
                continue
            each = self._explain_one(part, validate=True)
            line = each.headline or _measures_line(each)
            outputs.append((part.label, line))
        return dataclasses.replace(found, outputs=tuple(outputs))

    def _explain_one(self, node: Node, validate: bool = True) -> Explanation:
        """One node's explanation by its family (a composite's parts not looked into)."""
        family = family_of(node, self.families)
        check_resources(size_of(node, self.limits), self.limits)  # sized first
        if validate:
            validate_node(node, self.schema_of(node))
        request = _request(node)
        charge, allocation = self.accountant.allocate(
            request, mechanism_delta=self._delta_of_its_own(family, node)
        )
        self.backend_of(node, family)
        accountant, spent = self.accountant, self.ledger.spent(self.name)
        asked = Asked(
            request,
            allocation,
            accountant.cost(request, charge),
            float(charge.rho) if charge.rho and accountant.kind == "zcdp" else None,
            accountant.remaining(spent),
            accountant.remaining(spent + charge) if accountant.admits(spent, charge) else None,
        )
        return family.explain(node, asked)

    # -- the charge ----------------------------------------------------------

    def run(self, node: Node, fresh: bool = False) -> Any:
        """Release ``node``: validate, privacy map, charge, compute, release, record, notify.

        A request the ledger already answered is answered from it after the
        privacy map and before the charge (nothing charged, no data read),
        unless ``fresh`` asks for a new, charged release.
        """
        with recording() as noted:  # the calibrations of the privacy map and the release
            admitted = self.admit(node)
            request = self.request_of(node)
            if request is not None and not fresh:
                answered = self._answered(admitted, request)
                if answered is not None:
                    return answered
            backend = self.backend_of(node, admitted.family)
            backend.preflight()  # e.g. Dask workers that cannot run dpframe: refused, no charge
            accountant = self.accountant
            release_id = self.ledger.charge(
                self.name,
                _source(node).dataset,
                admitted.charge,
                lambda spent: accountant.check(spent, admitted.charge, admitted.request),
                node.label,
                admitted.family.mechanism_of(node, admitted.allocation),
                parts=_parts(admitted),
                privacy_unit=_unit_text(_source(node)),
                request=request,
            )
            return self.finish(Admission(admitted, backend, release_id, request), noted)

    def request_of(self, node: Node) -> str | None:
        """The key of ``node``'s request (public inputs and the data's identity only)."""
        source = _source(node)
        return request_key(node, source, self.source_schema(source))

    def _answered(self, admitted: _Admitted, request: str) -> Any:
        """The ledger's answer to ``request``, marked and announced at no cost; None if none.

        Reads the ledger only: never the data, whether or not it changed.
        """
        found = self.ledger.recorded_answer(self.name, request)
        if found is None:
            return None
        _, recorded_at, body = found
        rebuilt = unpack(body, recorded_at)
        if rebuilt is None:  # an answer that no longer decodes: released anew
            return None
        result, note = rebuilt
        self.notify(admitted.node.label, Budget(), note)
        return result

    def admit_batch(self, nodes: list[Node]) -> list[Admission]:
        """Admit every node at once, or none: one filter check of the total, one ledger commit."""
        from dpframe.accounting.ledger import PendingCharge

        admitted = [self.admit(node) for node in nodes]
        backends = [self.backend_of(a.node, a.family) for a in admitted]
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
        requests = [self.request_of(a.node) for a in admitted]
        accountant = self.accountant
        if accountant.kind in ("zcdp", "gdp"):  # charges in ρ (GDP: ρ = μ²/2)
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
                request=request,
            )
            for a, request in zip(admitted, requests, strict=True)
        ]
        ids = self.ledger.charge_many(
            self.name,
            datasets.pop(),
            items,
            lambda spent: accountant.check(spent, total, asked),
        )
        return [
            Admission(a, b, i, r)
            for a, b, i, r in zip(admitted, backends, ids, requests, strict=True)
        ]

    def abandon(self, admission: Admission) -> None:
        """Mark an admitted release that was never computed as failed (its charge stands)."""
        self.ledger.complete(admission.release_id, "", status="failed")

    # -- after the charge ----------------------------------------------------

    def finish(self, admission: Admission, noted: list[dict[str, Any]] | None = None) -> Any:
        """Compute and release an admitted, charged node; complete its ledger row and notify.

        ``noted``: the calibrations recorded so far for this release (its
        privacy map's); those of the release itself are added, and the row
        records them all (``noise``, checked by ``dpframe ledger verify``).
        """
        admitted, backend, release_id = admission.admitted, admission.backend, admission.release_id
        cost = self.accountant.cost(admitted.request, admitted.charge)
        try:
            if noted is None:
                with recording() as noted:
                    released, shown = self._release(admitted, backend, cost)
            else:
                released, shown = self._release(admitted, backend, cost)
        except DPError:
            self.ledger.complete(release_id, "", status="failed")
            raise
        except Exception:
            self.ledger.complete(release_id, "", status="failed")
            raise QueryFailedError(
                "The query failed while reading the data; its charge stands. No detail is "
                "shown, not even the kind of failure, because it could depend on private "
                "values: check the column types used in the query's conditions and expressions."
            ) from None
        answer = None
        if admission.request is not None and self.keep_answers:
            answer = pack(released, cost, admitted.node.label)
        self.ledger.complete(release_id, shown, answer=answer, noise=encode(noted))
        self.notify(admitted.node.label, cost, None)
        return released

    def _release(self, admitted: _Admitted, backend: Backend, cost: Budget) -> Any:
        """Compute and release an admitted node (its charge stands); parts on demand."""
        accountant = self.accountant
        zcdp = accountant.kind == "zcdp"
        statics = {id(p.node): p for p in admitted.parts}
        templates = list(admitted.parts)

        def part(node: Node) -> Any:
            known = statics.get(id(node))
            if known is None:
                # A part built from an earlier part's release (e.g. an aggregate over
                # discovered keys): it must cost exactly what its template was admitted at.
                template = next(
                    (
                        t
                        for t in templates
                        if type(t.node) is type(node) and t.request == node.privacy
                    ),
                    None,
                )
                if template is None:
                    raise DPError("A part of this release was not admitted with it.")
                templates.remove(template)
                known = self.admit(node)
                if known.charge != template.charge:
                    raise DPError("A part of this release was not admitted with it.")
            part_cost = accountant.cost(known.request, known.charge)
            released, _ = self._release(known, backend, part_cost)
            return released

        run_ = Released(
            admitted.node,
            backend,
            admitted.allocation,
            admitted.noise,
            cost,
            admitted.charge.rho if zcdp else None,
            self.rng,
            accountant.kind,
            tuple(p.node for p in admitted.parts),
            part,
        )
        return admitted.family.release(run_)


def families() -> Mapping[type, Family[Any]]:
    """Every release node type and its family (read-only)."""
    return _families()


def _measures_line(found: Explanation) -> str:
    """A part without a plain accuracy line: its widest noisy measure, or its mechanism."""
    if not found.measures:
        return "accuracy as its method's docstring states (no additive noise to show)"
    widest = max(found.measures, key=lambda m: m.half_width_95)
    return (
        f"its noisiest measure ({widest.name}) is within ±{plain_number(widest.half_width_95)} "
        "at 95%"
    )
