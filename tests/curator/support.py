"""Shared helpers for the curator tests: catalogs, tokens, sentinel data and server processes."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from dpframe.curator.catalog import hash_token
from dpframe.engine.release_path import Node
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, cps1988_path, load_cps1988
from dpframe.plan.codec import encode_node

ALICE = "alice-token-" + "a" * 40
BOB = "bob-token-" + "b" * 42

#: Values planted in the private data; none may ever reach the analyst's process.
SENTINEL_TEXT = "Zq7-SENTINEL-" + "4f1c9e2b7a"
SENTINEL_FLOAT = 4321.123456789
SENTINEL_INT = 918273645

#: The sentinel and secret datasets' declared row ceiling (their file is far smaller).
SENTINEL_MAX_ROWS = 300_000


def sentinel_frame() -> pd.DataFrame:
    """The CPS data with planted sentinel values in a few rows."""
    data = load_cps1988().head(5000).copy()
    data["note"] = "ordinary"
    data.loc[data.index[:2], "note"] = SENTINEL_TEXT
    data["person_id"] = np.arange(len(data), dtype=np.int64)
    data.loc[data.index[7], "person_id"] = SENTINEL_INT
    data.loc[data.index[11], "wage"] = SENTINEL_FLOAT
    result: pd.DataFrame = data
    return result


def public_frame() -> pd.DataFrame:
    """Invented rows with the sentinel dataset's columns and dtypes (no private value)."""
    frame: pd.DataFrame = pd.DataFrame(
        {
            "wage": [500.0, 900.0, 1500.0],
            "education": [10, 12, 16],
            "experience": [3, 20, 41],
            "ethnicity": ["cauc", "afam", "cauc"],
            "smsa": ["yes", "no", "yes"],
            "region": ["south", "west", "midwest"],
            "parttime": ["no", "yes", "no"],
            "note": ["ordinary", "other", "ordinary"],
            "person_id": np.array([1, 2, 3], dtype=np.int64),
        }
    )
    return frame


class _Built(Exception):  # noqa: N818  (a signal, not an error)
    def __init__(self, node: Node) -> None:
        super().__init__("built")
        self.node = node


class _NodeRecorder(dp.Session):
    """A session that hands back the node of a release instead of running it."""

    def run(self, node: Node) -> Any:
        raise _Built(node)


def build_node(release: Callable[[dp.PrivateFrame], object]) -> Node:
    """The node that ``release(pf)`` builds for the facade frame ``pf`` of the curator's schema.

    ``pf`` is an embedded frame over :func:`public_frame` with the catalog's
    bounds and categories; the release is stopped at ``session.run`` (nothing
    is computed), so every node kind the facade can make is reachable.
    """
    session = _NodeRecorder(epsilon=1000, delta=1e-6, ledger=":memory:")
    numeric = dict.fromkeys(CPS1988_BOUNDS, "numeric")  # as the catalog declares them
    pf = session.private_frame(
        public_frame(), dict(CPS1988_BOUNDS), dict(CPS1988_CATEGORIES), dtypes=numeric
    )
    try:
        release(pf)
    except _Built as built:
        return built.node
    raise AssertionError("the function made no release")


def node_on(frame: pd.DataFrame, release: Callable[[dp.PrivateFrame], object], **load: Any) -> Node:
    """The node ``release(pf)`` builds over a public stand-in ``frame`` (loaded with ``load``)."""
    session = _NodeRecorder(epsilon=1000, delta=1e-6, ledger=":memory:")
    pf = session.private_frame(frame, **load)
    try:
        release(pf)
    except _Built as built:
        return built.node
    raise AssertionError("the function made no release")


def release_body(release: Callable[[dp.PrivateFrame], object]) -> dict[str, Any]:
    """The JSON body the client posts to ``/v1/datasets/{name}/query`` for ``release(pf)``."""
    return encode_node(build_node(release))


#: One facade release per node kind and variant, over the curator's schema (see build_node).
RELEASES: dict[str, Callable[[dp.PrivateFrame], object]] = {
    "count": lambda pf: pf.count(epsilon=0.1),
    "sum": lambda pf: pf["wage"].sum(epsilon=0.1),
    "mean": lambda pf: pf["wage"].mean(epsilon=0.1),
    "var": lambda pf: pf["education"].var(epsilon=0.1),
    "std": lambda pf: pf["experience"].std(epsilon=0.1),
    "grouped mean": lambda pf: pf.groupby(["region", "smsa"])["wage"].mean(epsilon=0.1),
    "filtered mean": lambda pf: pf[pf["education"] >= 12]["wage"].mean(epsilon=0.1),
    "derived sum": lambda pf: pf.assign(w=pf["wage"] * 2)["w"].sum(epsilon=0.1),
    "hist": lambda pf: pf["wage"].hist(bins=8, epsilon=0.1),
    "quantile": lambda pf: pf["wage"].quantile([0.1, 0.5, 0.9], epsilon=0.1),
    "median": lambda pf: pf["education"].median(epsilon=0.1),
    "quantile candidates": lambda pf: pf["wage"].median(epsilon=0.1, candidates=[100, 500, 900]),
    "grouped quantile": lambda pf: pf.groupby("region")["wage"].quantile([0.25, 0.75], epsilon=0.1),
    "grouped median": lambda pf: pf.groupby(["region", "smsa"])["education"].median(
        epsilon=0.1, candidates=range(21)
    ),
    "mode": lambda pf: pf["region"].mode(epsilon=0.1),
    "argmax": lambda pf: pf.groupby("region").argmax("mean", "wage", epsilon=0.1),
    "sparse vector": lambda pf: pf.above_threshold(
        {"rich": pf["wage"] > 4000, "odd": pf["note"] != "ordinary"}, 5, epsilon=0.1
    ),
    "discover keys": lambda pf: pf.discover_keys("note", epsilon=0.1, delta=1e-9),
    "discover then aggregate": lambda pf: pf.groupby("note")["wage"].mean(epsilon=0.1, delta=1e-9),
    "distinct count": lambda pf: pf.groupby("region")["wage"].nunique(epsilon=0.1),
    "frame distinct": lambda pf: pf[["wage", "region"]].nunique(epsilon=0.2),
    "describe": lambda pf: pf.describe(epsilon=0.3),
    "corr": lambda pf: pf[["wage", "education"]].corr(epsilon=0.3),
    "numpy, where, merge and key set": lambda pf: (
        pf.merge(pd.DataFrame({"region": ["south", "west"], "sun": [1.0, 0.8]}), on="region")
        .assign(lw=np.log1p(pf["wage"]).where(pf["education"] > 10, 0))
        .groupby(["region", "smsa"], keys=pd.DataFrame({"region": ["south"], "smsa": ["yes"]}))[
            "lw"
        ]
        .mean(epsilon=0.1)
    ),
    "agg": lambda pf: pf.agg({"wage": ["mean", "median"], "education": "sum"}, epsilon=0.3),
    "grouped agg": lambda pf: pf.groupby("region")["wage"].agg(["mean", "count"], epsilon=0.2),
    "randomized response": lambda pf: pf["region"].randomized_response(epsilon=1),
    "laplace copy": lambda pf: pf["wage"].laplace_copy(epsilon=1),
    "kde": lambda pf: pf["wage"].kde(200.0, epsilon=0.1),
    "approx bounds": lambda pf: pf["wage"].approx_bounds(epsilon=0.1),
    "synthesize": lambda pf: pf[["wage", "education", "region", "parttime"]].synthesize(
        epsilon=1, rows=200
    ),
    "linear regression": lambda pf: pf.linear_regression(
        ["education", "experience"], "wage", epsilon=1, steps=5
    ),
    "logistic regression": lambda pf: pf.assign(high=pf["wage"] > 600).logistic_regression(
        ["education"], "high", epsilon=1, steps=5
    ),
}


def cps_parquet_folder(folder: Path) -> Path:
    """The CPS extract as a folder of three Parquet files (``folder``, made here)."""
    data = load_cps1988()
    folder.mkdir()
    for i, start in enumerate(range(0, len(data), 10_000)):
        data.iloc[start : start + 10_000].to_parquet(folder / f"part-{i}.parquet", index=False)
    return folder


def cps_declarations() -> str:
    """The CPS dataset's bounds and categories as catalog lines."""
    bounds = {k: list(v) for k, v in CPS1988_BOUNDS.items()}
    categories = {k: list(v) for k, v in CPS1988_CATEGORIES.items()}
    return f"bounds = {_toml_value(bounds)}\ncategories = {_toml_value(categories)}\n"


def _toml_value(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, str):
        return '"' + value + '"'
    return repr(value)


#: The kinds of the sentinel columns that have neither bounds nor categories.
SENTINEL_DTYPES = {"note": "text", "person_id": "numeric"}
#: Every sentinel column's kind (the "secret" dataset declares no bounds or categories).
ALL_SENTINEL_DTYPES = {
    **dict.fromkeys(CPS1988_BOUNDS, "numeric"),
    **dict.fromkeys(CPS1988_CATEGORIES, "text"),
    **SENTINEL_DTYPES,
}


def write_catalog(
    folder: Path,
    *,
    alice_epsilon: float = 5.0,
    server: str = "",
    workers: int = 0,
    quantum_ms: int = 0,
    cps_max_rows: int | None = 30_000,
) -> Path:
    """A catalog with datasets cps, sentinel and secret; alice and bob with their grants.

    ``server`` holds more lines of the ``[server]`` table (e.g. limits).
    ``workers`` worker processes read the rows (0, the tests' default: the
    curator's own process; the worker tests and benchmarks ask for some).
    ``quantum_ms`` is the latency quantum (0, the tests' default: off, opted
    out explicitly; the curator's own default is on).  ``cps_max_rows`` is
    the cps dataset's declared row ceiling (the file has 28,155 rows; None:
    the curator's default, 10**6); sentinel and secret declare
    :data:`SENTINEL_MAX_ROWS`.
    """
    sentinel_path = folder / "sentinel.csv"
    sentinel_frame().to_csv(sentinel_path, index=False)
    bounds = {k: list(v) for k, v in CPS1988_BOUNDS.items()}
    cats = {k: list(v) for k, v in CPS1988_CATEGORIES.items()}
    lines = [
        "[server]",
        'ledger = "ledger.sqlite"',
        f"workers = {workers}",
        f"latency_quantum_ms = {quantum_ms}",
        server,
        "",
        "[datasets.cps]",
        f'path = "{cps1988_path()}"',
        "" if cps_max_rows is None else f"max_rows = {cps_max_rows}",
        f"bounds = {_toml_value(bounds)}",
        f"categories = {_toml_value(cats)}",
        "",
        "[datasets.sentinel]",
        'path = "sentinel.csv"',
        'version = "2024-06"',
        # Declared ceilings the tests' requests fit: key discovery over text is
        # priced per row (4e-5 s), so at the default 10**6 rows it would not fit.
        f"max_rows = {SENTINEL_MAX_ROWS}",
        f"bounds = {_toml_value(bounds)}",
        f"categories = {_toml_value(cats)}",
        f"dtypes = {_toml_value(SENTINEL_DTYPES)}",
        "",
        "[datasets.secret]",
        'path = "sentinel.csv"',
        f"max_rows = {SENTINEL_MAX_ROWS}",
        f"dtypes = {_toml_value(ALL_SENTINEL_DTYPES)}",
        "",
        "[analysts.alice]",
        f'token_sha256 = "{hash_token(ALICE)}"',
        f"budgets = {{ cps = {{ epsilon = {alice_epsilon!r}, delta = 1e-6 }}, "
        "sentinel = { epsilon = 100.0, delta = 1e-6 } }",
        "",
        "[analysts.bob]",
        f'token_sha256 = "{hash_token(BOB)}"',
        "budgets = { cps = { epsilon = 1.0 }, secret = { epsilon = 1.0 } }",
    ]
    path = folder / "catalog.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    """A curator running in its own process (`python -m dpframe serve`)."""

    process: subprocess.Popen[bytes]
    url: str
    catalog: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def start_server(catalog: Path, port: int | None = None) -> Server:
    """Start `dpframe serve` on loopback and wait until it answers.

    Without ``port``, a free one; if another process (a parallel test worker)
    takes it before the curator binds it, a new one, up to five times.
    """
    if port is not None:
        return _start_server(catalog, port)
    for _ in range(4):
        try:
            return _start_server(catalog, free_port())
        except RuntimeError as exc:
            if "address already in use" not in str(exc).lower():
                raise
    return _start_server(catalog, free_port())


def _start_server(catalog: Path, port: int) -> Server:
    env = {k: v for k, v in os.environ.items() if k != "DPFRAME_CLIENT_ONLY"}
    process = subprocess.Popen(
        [sys.executable, "-m", "dpframe", "serve", "--catalog", str(catalog), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            error = process.stderr.read().decode() if process.stderr else ""
            raise RuntimeError(f"curator exited: {error}")
        try:
            with urllib.request.urlopen(url + "/v1/health", timeout=1) as response:
                # Another test's curator may hold the port (taken between free_port() and
                # this bind): it answers too, so the answer counts only from our process.
                if response.status == 200 and listens(process.pid, port) is not False:
                    return Server(process, url, catalog)
        except OSError:
            pass
        time.sleep(0.2)
    process.kill()
    raise RuntimeError("curator did not start within 60 s")


def listens(pid: int, port: int) -> bool | None:
    """True when process ``pid`` holds a listening TCP socket on ``port`` (None: cannot tell).

    Linux's ``/proc``: the socket inodes listening on ``port`` (state 0A) and
    the process's open file descriptors.  A clean-clone CI run once talked to
    another test's curator that had taken the port of a killed one.
    """
    tables = [Path("/proc/net") / name for name in ("tcp", "tcp6")]
    if not tables[0].exists():
        return None
    inodes: set[str] = set()
    for table in tables:
        if not table.exists():
            continue
        for line in table.read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(fields[9])
    try:
        descriptors = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return None
    for descriptor in descriptors:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{descriptor}")
        except OSError:
            continue
        if target.startswith("socket:[") and target[len("socket:[") : -1] in inodes:
            return True
    return False
