"""The curator's limits, from the catalog's ``[server]`` table (stricter defaults than embedded).

Example::

    [server]
    ledger = "curator-ledger.sqlite"
    releases_per_minute = 120          # per analyst, on each dataset
    max_ledger_rows = 10000            # per analyst, on each dataset
    min_epsilon = "1e-6"               # the least ε (share) one release may cost
    busy_retry_seconds = 1             # Retry-After of a busy seat's 429
    stored_answers_mb = 64             # answers kept for recovery, per analyst and dataset
    release_seconds = 300              # wall-clock limit of one release (a server fault)
    abandoned_to_suspend = 3           # abandoned releases before a seat is suspended

    [server.limits]                    # the resource estimate's limits (ResourceLimits)
    max_cells = 100000
    max_list_items = 10000

Every setting has a default (:class:`ServerSettings`); the resource limits
default to :meth:`dpframe.plan.estimate.ResourceLimits.remote`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

from dpframe.errors import DPError
from dpframe.plan.estimate import ResourceLimits

__all__ = ["SERVER_KEYS", "ServerSettings", "server_settings"]


@dataclass(frozen=True)
class ServerSettings:
    """What a curator allows each analyst (all public; the catalog's ``[server]`` table).

    Attributes:
        limits: the largest request evaluated (sized before the charge).
        releases_per_minute: releases (charged) one analyst may make on one
            dataset in any 60 seconds; more are refused with ``rate_limited``
            (429), uncharged.
        max_ledger_rows: releases one analyst may record on one dataset in
            total; more are refused with ``ledger_full`` (429), uncharged.
        min_epsilon: the least ε one release may cost, in the session's
            share units (the ε of the request; under zCDP its share of the
            session's ε); a request below it is refused (``invalid_budget``),
            uncharged.
        busy_retry_seconds: the ``Retry-After`` of a 429 ``busy`` answer.
        stored_answers_mb: MiB of compressed answers kept for recovery per
            analyst and dataset; later answers are sent but not kept.
        release_seconds: the wall-clock limit of one release, far above the
            slowest request within the limits; when it fires (a server fault)
            the charge stands, the row says ``abandoned`` and the answer is
            ``limit_exceeded``.
        abandoned_to_suspend: abandoned releases (wall-clock limit, or a
            failure on the data after the charge) after which a seat is
            suspended until the curator restarts (logged for the operator).
    """

    limits: ResourceLimits = field(default_factory=ResourceLimits.remote)
    releases_per_minute: int = 120
    max_ledger_rows: int = 10_000
    min_epsilon: Fraction = Fraction(1, 10**6)
    busy_retry_seconds: int = 1
    stored_answers_mb: int = 64
    release_seconds: float = 300.0
    abandoned_to_suspend: int = 3


#: The keys of ``[server]`` (besides the settings above: the ledger path and latency quantum).
SERVER_KEYS = frozenset(
    {"ledger", "latency_quantum_ms", "limits"}
    | {f.name for f in fields(ServerSettings) if f.name != "limits"}
)


def server_settings(server: Mapping[str, Any], error: type[DPError]) -> ServerSettings:
    """Parse the settings of a ``[server]`` table; every problem raises ``error``."""
    limits_raw = server.get("limits", {})
    if not isinstance(limits_raw, Mapping):
        raise error("[server].limits must be a table of limits.")
    known = {f.name for f in fields(ResourceLimits)}
    unknown = set(limits_raw) - known
    if unknown:
        raise error(
            f"[server].limits has unknown keys: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(known))})."
        )
    try:
        limits = ResourceLimits(**{**vars(ResourceLimits.remote()), **dict(limits_raw)})
    except DPError as exc:
        raise error(f"[server].limits: {exc}") from None
    defaults = ServerSettings()
    counts = {
        name: _positive(server.get(name, getattr(defaults, name)), name, error)
        for name in (
            "releases_per_minute",
            "max_ledger_rows",
            "busy_retry_seconds",
            "stored_answers_mb",
            "abandoned_to_suspend",
        )
    }
    seconds = server.get("release_seconds", defaults.release_seconds)
    if (
        isinstance(seconds, bool)
        or not isinstance(seconds, (int, float))
        or not 0 < seconds < math.inf
    ):
        raise error("[server].release_seconds must be a number of seconds > 0.")
    return ServerSettings(
        limits=limits,
        min_epsilon=_fraction(server.get("min_epsilon", defaults.min_epsilon), error),
        release_seconds=float(seconds),
        **counts,
    )


def _positive(value: Any, name: str, error: type[DPError]) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise error(f"[server].{name} must be a positive integer.")
    return value


def _fraction(value: Any, error: type[DPError]) -> Fraction:
    try:
        if isinstance(value, bool) or not isinstance(value, (int, float, str, Fraction)):
            raise ValueError
        exact = Fraction(str(value)) if not isinstance(value, Fraction) else value
    except (ValueError, ZeroDivisionError):
        raise error('[server].min_epsilon must be a number, e.g. "1e-6" or 0.') from None
    if exact < 0:
        raise error("[server].min_epsilon must be >= 0 (0: no minimum).")
    return exact
