"""The curator on an existing Dask cluster: ``[server] dask_scheduler = "tcp://host:port"``.

When the catalog names a scheduler, the curator connects to it when it
starts (:func:`connect_cluster`), within ``dask_connect_seconds``, and makes
that ``distributed.Client`` the process's default client: every
``backend = "dask"`` dataset is then read and computed by the cluster's
workers, exactly as an embedded session computes with an active client
(:mod:`dpframe.backends.dask_backend`, :mod:`dpframe.backends.cluster`):

- the workers' versions of dpframe, pandas and numpy are checked against
  the curator's before the curator serves (and again before a release
  whenever the set of workers changed), so a cluster that cannot run
  dpframe's tasks stops the start with a :class:`CatalogError`;
- the row ceiling (``max_rows``) is counted on the workers at start, and the
  largest partition (from the Parquet footers) is checked against the
  workers' memory;
- a release runs as tasks on the workers; only per-partition partial
  totals, combined in a tree on the workers, come back to the curator (see
  :mod:`dpframe.backends.dask_backend` for exactly what returns); its wait
  on the cluster is bounded by ``[server].release_seconds`` (the dask
  option ``dpframe.release-timeout``, set while the curator is connected):
  past it the computation is cancelled and the release ends ``failed``.

The workers read the dataset's path themselves: it must name the same files
on every worker (a shared file system).  One curator process talks to one
scheduler (the client is the process's default).  Without ``dask_scheduler``
a Dask dataset is computed with Dask's local threads inside the curator's
process, as before, and :func:`local_threads_lines` says so at start.
"""

from __future__ import annotations

import contextlib
from typing import Any

from dpframe.curator.catalog import Catalog, CatalogError

__all__ = ["DaskCluster", "connect_cluster", "local_threads_lines"]


class DaskCluster:
    """The curator's connection to its Dask scheduler (the process's default client).

    Attributes:
        address: the scheduler's address, as the catalog names it.
        client: the ``distributed.Client``.
        workers: the worker addresses checked at start.
    """

    def __init__(
        self, address: str, client: Any, workers: frozenset[str], settings: Any = None
    ) -> None:
        self.address = address
        self.client = client
        self.workers = workers
        self._settings = settings  # the dask options set for the curator's life (or None)

    def lines(self) -> list[str]:
        """What ``dpframe serve`` prints at start about the cluster."""
        return [
            f"Dask datasets run on the cluster at {self.address} "
            f"({len(self.workers)} worker{'s' if len(self.workers) != 1 else ''}, versions checked)"
        ]

    def close(self) -> None:
        """Disconnect (the cluster itself keeps running: it is the owner's)."""
        with contextlib.suppress(Exception):  # the scheduler may be gone already
            self.client.close()
        if self._settings is not None:
            self._settings.__exit__(None, None, None)  # the dask options as they were
            self._settings = None


def connect_cluster(catalog: Catalog) -> DaskCluster | None:
    """Connect to ``[server].dask_scheduler`` and check its workers (None: no scheduler named).

    Raises:
        CatalogError: distributed is not installed, the scheduler does not
            answer within ``dask_connect_seconds``, it has no worker, or a
            worker cannot run dpframe's tasks as the curator would (other
            versions of dpframe, pandas or numpy).  The message names the
            address and the fix; nothing is served.
    """
    settings = catalog.settings
    address = settings.dask_scheduler
    if address is None:
        return None
    wait = settings.dask_connect_seconds
    try:
        from distributed import Client

        from dpframe.backends.cluster import ClusterNotReadyError, check_workers
    except ImportError:
        raise CatalogError(
            "[server].dask_scheduler needs dask's distributed package: pip install 'dpframe[dask]'."
        ) from None
    try:
        client: Any = Client(address, timeout=wait, set_as_default=True)  # type: ignore[no-untyped-call]
    except Exception as exc:  # OSError, TimeoutError, ...: no scheduler there
        raise CatalogError(
            f"[server].dask_scheduler: no Dask scheduler answered at {address} within "
            f"{wait:g} s ({type(exc).__name__}). Start it (`dask scheduler`), check the "
            "address and port, or raise [server].dask_connect_seconds."
        ) from None
    try:
        workers = check_workers(client, timeout=wait)
    except ClusterNotReadyError as exc:
        with contextlib.suppress(Exception):
            client.close()
        raise CatalogError(f"[server].dask_scheduler {address}: {exc}") from None
    import dask

    from dpframe.backends.cluster import RELEASE_TIMEOUT_OPTION

    # A release on the cluster ends (cancelled, ClusterFailedError) at the curator's own
    # wall-clock limit, not at the backend's default hour.
    options = dask.config.set({RELEASE_TIMEOUT_OPTION: settings.release_seconds})
    return DaskCluster(address, client, workers, options)


def local_threads_lines(catalog: Catalog) -> list[str]:
    """The start's warning when Dask datasets have no cluster (computed in the curator)."""
    names = sorted(e.name for e in catalog.datasets.values() if e.backend == "dask")
    if not names or catalog.settings.dask_scheduler is not None:
        return []
    return [
        f"WARNING: the Dask dataset{'s' if len(names) > 1 else ''} {', '.join(names)} "
        "run on Dask's local threads inside this process (no [server].dask_scheduler): "
        "their rows stream through the curator"
    ]
