"""Release nodes: every kind of differentially private release, as plain data.

A release node is a frozen dataclass that says *what* to release (the plan of
rows, the columns and public parameters) and *at what privacy cost* (its
:class:`~dpframe.plan.privacy.PrivacyRequest`).  It holds no data and no
callables, so it can be compared by value (``key()``), explained, sized,
serialized and sent to a curator before anything is read.  The engine
(:meth:`dpframe.Session.run`) turns a node into a release:
validate → privacy map → charge → compute → release → record → notify.

Count, sum, mean, var and std (overall or per group, histograms and value
counts included) are :class:`~dpframe.plan.nodes.Aggregate` nodes; the other
kinds are defined in this package.  Composite nodes (:class:`Agg`, :class:`Describe`,
:class:`DiscoverThenAggregate`) are charged once for their total; their parts
and the budget split between them are part of the node (:meth:`parts`).

Every node validates its public parameters in ``__post_init__`` (structure,
ranges and types); checks that need the schema or a mechanism's limits run in
the engine, still before the charge.
"""

from dpframe.plan.releases.aggregations import Agg
from dpframe.plan.releases.base import QUANTILE_BINS, ReleaseNode, canonical, privacy_key
from dpframe.plan.releases.copies import SanitizedCopy
from dpframe.plan.releases.discovery import DiscoverKeys, DiscoverThenAggregate, SparseVector
from dpframe.plan.releases.distinct import DistinctCount, FrameDistinct
from dpframe.plan.releases.models import KernelDensity, Regression
from dpframe.plan.releases.moments import Moments
from dpframe.plan.releases.selection import (
    MAX_CANDIDATES,
    ArgMax,
    GroupedQuantile,
    Mode,
    Quantile,
)
from dpframe.plan.releases.summaries import ApproxBounds, Describe, bounds_edges
from dpframe.plan.releases.synthesis import Synthesize

__all__ = [
    "MAX_CANDIDATES",
    "QUANTILE_BINS",
    "Agg",
    "ApproxBounds",
    "ArgMax",
    "Describe",
    "DiscoverKeys",
    "DiscoverThenAggregate",
    "DistinctCount",
    "FrameDistinct",
    "GroupedQuantile",
    "KernelDensity",
    "Mode",
    "Moments",
    "Quantile",
    "Regression",
    "ReleaseNode",
    "SanitizedCopy",
    "SparseVector",
    "Synthesize",
    "bounds_edges",
    "canonical",
    "privacy_key",
]
