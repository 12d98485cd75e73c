"""What a mechanism family provides to the engine: its privacy map, release and explanation.

Every kind of release node has one family (:mod:`dpframe.engine.release_path` finds it).
A family turns the node's noise allocation into a noise plan before the
charge (the privacy map: public inputs only, raising for unusable
parameters), releases from the backend's exact values once the charge
stands, and explains the release without reading data.  The families live
with their mechanisms (the ``*_family`` modules of this package) and import this module,
never the engine.
"""

from __future__ import annotations

import functools
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.mechanisms.core.explanations import CostView, Explanation, explain_cost
from dpframe.mechanisms.core.work import Work
from dpframe.noise import SecureRandom
from dpframe.plan.nodes import Aggregate
from dpframe.plan.privacy import Budget
from dpframe.plan.releases import ReleaseNode

if TYPE_CHECKING:
    from dpframe.backends.base import Backend

__all__ = ["Asked", "Family", "Node", "Released", "discover", "family_classes"]

Node = Aggregate | ReleaseNode
N = TypeVar("N", bound=Node)


class Asked(CostView):
    """A request as the accountant sees it, before any charge: for explanations."""

    def cost_only(self, label: str) -> Explanation:
        """An explanation of the cost alone (for mechanisms without additive noise)."""
        return explain_cost(label, self)


@dataclass(frozen=True)
class Released(Generic[N]):
    """What a family's release gets once the charge stands.

    Attributes:
        node: the node released.
        backend: the data's backend (exact, non-private evaluation).
        allocation: the noise allocation of the whole node.
        noise: the family's privacy map for this allocation (computed before the charge).
        cost: the (ε, δ) charged.
        rho: the zCDP ρ charged, in zCDP sessions (else None).
        rng: the session's secure random source.
        accounting: the session's accounting kind.
        parts: the parts of a composite node, as admitted with it.
        part: releases one part of a composite node (charged with the whole).
    """

    node: N
    backend: Backend
    allocation: NoiseAllocation
    noise: Any
    cost: Budget
    rho: Fraction | None
    rng: SecureRandom
    accounting: str
    parts: tuple[Node, ...]
    part: Callable[[Node], Any] = field(repr=False)


class Family(ABC, Generic[N]):
    """How one kind of release node is released; subclasses live with their mechanisms.

    A family is found by the engine from its class alone (:func:`discover`):
    ``node_type`` names the release node it releases,
    :meth:`result_types` the classes its results hold (the wire's allow-list
    grows by them) and :meth:`work` its worst-case work (a curator's estimate
    before the charge).  Adding a release kind touches three files: its node
    (``dpframe/plan/releases/``), its family (here, beside its mechanisms) and
    its facade method (``dpframe/api/``); nothing else lists them.

    Attributes:
        node_type: the release node class this family releases.
        mechanism: the mechanism's name for the ledger (None: the allocation's noise).
        mechanism_delta: the mechanism has a δ of its own (the request's δ is charged as is).
    """

    node_type: ClassVar[type]
    mechanism: str | None = None
    mechanism_delta: bool = False

    def result_types(self) -> tuple[type, ...]:
        """The classes this family's results hold besides the common ones (allowed on the wire)."""
        return ()

    def mechanism_of(self, node: N, allocation: NoiseAllocation) -> str:
        """The mechanism's name for the ledger."""
        if self.mechanism is not None:
            return self.mechanism
        return "discrete Laplace" if allocation.kind == "laplace" else "discrete Gaussian"

    def delta_of_its_own(self, node: N) -> bool:
        """True when the mechanism has a δ of its own (charged as requested)."""
        return self.mechanism_delta

    def renyi_only(self, node: N) -> bool:
        """True when the mechanism's privacy is analysed only in Rényi DP / zCDP.

        A Gaussian DP session admits it as an (ε, δ)-DP release with a δ of its
        own (docs/proofs/gdp_accounting.md §3); other sessions ignore this.
        """
        return False

    def rows_needed(self, node: N) -> str | None:
        """Why the release needs the rows in this process (pandas only), or None.

        Checked before the charge: on other backends the release is refused
        with this reason.
        """
        return None

    def privacy_map(self, node: N, allocation: NoiseAllocation) -> Any:
        """The noise plan for ``allocation`` (public inputs only); raise if unusable."""
        return None

    @abstractmethod
    def work(self, node: N) -> Work:
        """The release's work beyond one evaluation of its plan and a draw per cell.

        From public inputs only; a curator prices it with its cost model and
        the declared row ceiling (:mod:`dpframe.curator.worst_case`) and
        refuses, before the charge, a request whose worst case is too long.
        Every family declares it (:data:`~dpframe.mechanisms.core.work.PLAIN`
        when there is nothing beyond the common work), so a new kind cannot be
        sized as a cheap one by omission.
        """

    @abstractmethod
    def release(self, run: Released[N]) -> tuple[Any, str]:
        """Compute and release; returns the result and a short public text for the ledger."""

    def explain(self, node: N, asked: Asked) -> Explanation:
        """What the release would cost and how accurate it would be (no data read)."""
        return asked.cost_only(node.label)


@functools.cache
def family_classes() -> tuple[type[Family[Any]], ...]:
    """Every concrete family class, found from the classes themselves (computed once).

    Imports each family module of :mod:`dpframe.mechanisms` (named ``family``
    or ``*_family``, at any depth), then walks :class:`Family`'s subclasses.
    Two families claiming one node type, or a family that names its node type
    but leaves a method of :class:`Family` undeclared (e.g. :meth:`Family.work`),
    is a programming error.
    """
    import importlib
    import pkgutil

    import dpframe.mechanisms as package

    for info in pkgutil.walk_packages(package.__path__, f"{package.__name__}."):
        last = info.name.rsplit(".", 1)[-1]
        if last == "family" or last.endswith("_family"):
            importlib.import_module(info.name)
    found: dict[type, type[Family[Any]]] = {}
    stack: list[type[Family[Any]]] = list(Family.__subclasses__())
    while stack:
        cls = stack.pop()
        stack.extend(cls.__subclasses__())
        if "node_type" not in vars(cls):
            continue
        missing = sorted(getattr(cls, "__abstractmethods__", ()))
        if missing:
            raise TypeError(f"{cls.__name__} does not declare {', '.join(missing)}.")
        if cls.node_type in found:
            raise TypeError(f"Two families release {cls.node_type.__name__}.")
        found[cls.node_type] = cls
    return tuple(found.values())


def discover() -> dict[type, Family[Any]]:
    """Every family, by the node type it releases: one fresh instance each (a session's own)."""
    return {cls.node_type: cls() for cls in family_classes()}
