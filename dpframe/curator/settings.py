"""The curator's limits, from the catalog's ``[server]`` table (stricter defaults than embedded).

Example::

    [server]
    ledger = "curator-ledger.sqlite"
    signing_key = "curator.ed25519"    # signs chain heads (default: beside the ledger)
    releases_per_minute = 120          # per analyst, on each dataset
    max_ledger_rows = 10000            # per analyst, on each dataset
    min_epsilon = "1e-6"               # the least ε (share) one release may cost
    busy_retry_seconds = 1             # Retry-After of a busy seat's 429
    stored_answers_mb = 64             # answers kept for recovery, per analyst and dataset
    release_seconds = 300              # wall-clock limit of one release (a server fault)
    release_estimate_seconds = 30      # refuse (uncharged) a worst-case estimate over this
    max_rows = 1000000                 # default public row ceiling of a dataset
    text_chars = 256                   # most characters per row of text without text(N)
    workers = 2                        # worker processes reading the rows (killable; 0: none)
    heavy_workers = 1                  # niced worker processes for heavy releases (0: none)
    heavy_seconds = 1.0                # the worst-case estimate from which a release is heavy
    abandoned_to_suspend = 3           # abandoned releases before a seat is suspended
    kept_join_rows = 20000000          # rows of joins kept per analyst and dataset (ceilings)
    dask_scheduler = "tcp://10.0.0.5:8786"  # backend = "dask" datasets run on this cluster
    dask_connect_seconds = 30          # the wait for it (and its workers' check) at start

    [server.limits]                    # the resource estimate's limits (ResourceLimits)
    max_cells = 100000
    max_list_items = 10000

    [server.cost]                      # the worst-case estimate's cost model (CostModel)
    row_op_seconds = 5e-8
    cell_seconds = 4e-5
    row_noise_seconds = 2e-6

Every setting has a default (:class:`ServerSettings`); the resource limits
default to :meth:`dpframe.plan.estimate.ResourceLimits.remote`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

from dpframe.curator.worst_case import TEXT_CHARS, CostModel
from dpframe.errors import DPError
from dpframe.plan.estimate import ResourceLimits

__all__ = ["SERVER_KEYS", "ServerSettings", "server_settings"]

#: A Dask scheduler's address: a protocol, then host and port (``tcp://10.0.0.5:8786``).
_ADDRESS = re.compile(r"^(tcp|tls|ucx|inproc)://[^\s/]+$")


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
        release_estimate_seconds: the largest worst-case time admitted: a
            request whose estimate (:mod:`dpframe.curator.worst_case`, from the
            declared row ceiling) is over it is refused ``resource_limit``,
            uncharged.  At most ``release_seconds``.
        max_rows: the public row ceiling of a dataset without its own
            ``max_rows``; the curator refuses to start on a file with more rows.
        text_chars: the most characters per row, on average over the rows
            ceiling, of a text column without a declared maximum length
            (``text(40)``): the worst-case estimate prices text nodes by it,
            and the curator refuses to start on a column with more
            characters in all than ``text_chars`` x the row ceiling.
        workers: worker processes that read the rows for releases (shared
            by all seats; a release past the wall-clock limit has its worker
            killed, :mod:`dpframe.curator.workers`); 0 computes in the
            curator's process, where a runaway release cannot be stopped.
        heavy_workers: worker processes, at a lower CPU priority (nice
            +10), that compute the heavy releases, so that one analyst's
            heavy requests never hold the workers everyone else waits for
            (0: heavy releases share ``workers``).
        heavy_seconds: the worst-case estimate (public) from which a release
            is heavy.
        cost: the worst-case estimate's seconds per unit of work.
        kept_join_rows: the most rows of private joins one seat keeps, each
            join counted at its public row ceiling (from the declared row
            ceilings, :mod:`dpframe.curator.kept_joins`); the least recently
            used are dropped beyond it, and a request whose joins alone are
            over it is refused ``resource_limit``, uncharged.
        dask_scheduler: the address of an existing Dask scheduler
            (``tcp://host:port``); the ``backend = "dask"`` datasets are read
            and computed on its workers (None: Dask's local threads in the
            curator's process).  Connected to, and its workers' versions
            checked, when the curator starts (:mod:`dpframe.curator.dask_cluster`).
        dask_connect_seconds: how long the start waits for the scheduler and
            its workers' answers.
    """

    limits: ResourceLimits = field(default_factory=ResourceLimits.remote)
    releases_per_minute: int = 120
    max_ledger_rows: int = 10_000
    min_epsilon: Fraction = Fraction(1, 10**6)
    busy_retry_seconds: int = 1
    stored_answers_mb: int = 64
    release_seconds: float = 300.0
    abandoned_to_suspend: int = 3
    release_estimate_seconds: float = 30.0
    max_rows: int = 1_000_000
    text_chars: int = TEXT_CHARS
    workers: int = 2
    heavy_workers: int = 1
    heavy_seconds: float = 1.0
    cost: CostModel = field(default_factory=CostModel)
    kept_join_rows: int = 20_000_000
    dask_scheduler: str | None = None
    dask_connect_seconds: float = 30.0


#: The keys of ``[server]`` (besides the settings above: the ledger and signing key paths, the
#: latency quantum).
SERVER_KEYS = frozenset(
    {"ledger", "latency_quantum_ms", "signing_key"} | {f.name for f in fields(ServerSettings)}
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
            "max_rows",
            "text_chars",
            "kept_join_rows",
        )
    }
    workers = server.get("workers", defaults.workers)
    if isinstance(workers, bool) or not isinstance(workers, int) or not 0 <= workers <= 256:
        raise error("[server].workers must be an integer in [0, 256] (0: compute in-process).")
    heavy = server.get("heavy_workers", defaults.heavy_workers)
    if isinstance(heavy, bool) or not isinstance(heavy, int) or not 0 <= heavy <= 256:
        raise error("[server].heavy_workers must be an integer in [0, 256] (0: none).")
    heavy_seconds = _seconds(
        server.get("heavy_seconds", defaults.heavy_seconds), "heavy_seconds", error
    )
    seconds = _seconds(
        server.get("release_seconds", defaults.release_seconds), "release_seconds", error
    )
    estimate = _seconds(
        server.get("release_estimate_seconds", min(seconds, defaults.release_estimate_seconds)),
        "release_estimate_seconds",
        error,
    )
    if estimate > seconds:
        raise error(
            "[server].release_estimate_seconds must be at most release_seconds (the wall-clock "
            "limit is set far above the largest worst case admitted)."
        )
    return ServerSettings(
        dask_scheduler=_scheduler(server.get("dask_scheduler"), error),
        dask_connect_seconds=_seconds(
            server.get("dask_connect_seconds", defaults.dask_connect_seconds),
            "dask_connect_seconds",
            error,
        ),
        limits=limits,
        min_epsilon=_fraction(server.get("min_epsilon", defaults.min_epsilon), error),
        release_seconds=seconds,
        release_estimate_seconds=estimate,
        cost=_cost(server.get("cost", {}), error),
        workers=workers,
        heavy_workers=heavy,
        heavy_seconds=heavy_seconds,
        **counts,
    )


def _scheduler(value: Any, error: type[DPError]) -> str | None:
    """A Dask scheduler's address, ``protocol://host:port`` (None: no cluster)."""
    if value is None:
        return None
    if not isinstance(value, str) or not _ADDRESS.match(value):
        raise error(
            '[server].dask_scheduler must be a Dask scheduler\'s address, e.g. "tcp://host:8786" '
            "(what `dask scheduler` prints as 'Scheduler at:')."
        )
    return value


def _seconds(value: Any, name: str, error: type[DPError]) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < math.inf:
        raise error(f"[server].{name} must be a number of seconds > 0.")
    return float(value)


def _cost(raw: Any, error: type[DPError]) -> CostModel:
    if not isinstance(raw, Mapping):
        raise error("[server].cost must be a table of seconds per unit of work.")
    known = {f.name for f in fields(CostModel)}
    unknown = set(raw) - known
    if unknown:
        raise error(
            f"[server].cost has unknown keys: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(known))})."
        )
    for name, value in raw.items():
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value < 1e3:
            raise error(f"[server].cost.{name} must be a number of seconds >= 0.")
    return CostModel(**{name: float(value) for name, value in raw.items()})


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
