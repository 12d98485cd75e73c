"""Latency that curator mode adds over embedded mode, on loopback; and the curator under load.

Runs a curator (`python -m dpframe serve`) in its own process on the bundled
CPS data, then times the same releases embedded and through `dp.connect`.
Prints median and 99th-percentile latency per query and the difference.

With ``--load``: N analysts release at once (p50/p99 latency), then again
with a hostile analyst (in a process of its own) sending the doubling chain,
a 10**7-bin histogram and the heaviest chain the curator admits, then again
with one of the curator's worker processes SIGKILLed mid-load; every analyst's recorded spend is
checked against what was charged.  Last, the curator itself is SIGKILLed
mid-load and restarted on the same ledger: every release an analyst received
must be in its spend.  The ledger's ``PRAGMA integrity_check`` after the run.

    python -m benchmarks.run_curator [--repeats 300]
    python -m benchmarks.run_curator --load [--analysts 16 --releases 50 --quantum-ms 0]
    python -m benchmarks.run_curator --soak 600 [--analysts 4]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import dpframe as dp
from benchmarks.releases import new_releases
from benchmarks.report import save_results
from dpframe.curator.catalog import hash_token
from dpframe.errors import DPError, QueryFailedError
from dpframe.examples.datasets import (
    CPS1988_BOUNDS,
    CPS1988_CATEGORIES,
    cps1988_path,
    load_cps1988,
)
from dpframe.remote.client import CuratorUnavailableError
from tests.curator.support import ALICE, free_port, start_server, write_catalog

QUERIES: dict[str, Callable[[Any], Any]] = {
    "count": lambda pf: pf.count(epsilon=1e-4),
    "mean(wage)": lambda pf: pf["wage"].mean(epsilon=1e-4),
    "filtered mean": lambda pf: pf[pf["education"] >= 12]["wage"].mean(epsilon=1e-4),
    "groupby(region) mean": lambda pf: pf.groupby("region")["wage"].mean(epsilon=1e-4),
    "quantile(0.5)": lambda pf: pf["wage"].quantile(0.5, epsilon=1e-4),
}


def _times(query: Callable[[Any], Any], pf: Any, repeats: int) -> np.ndarray:
    query(pf)  # warm
    out = np.empty(repeats)
    for i in range(repeats):
        start = time.perf_counter()
        query(pf)
        out[i] = time.perf_counter() - start
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=300)
    parser.add_argument("--load", action="store_true", help="the load and fault run")
    parser.add_argument("--analysts", type=int, default=16)
    parser.add_argument("--releases", type=int, default=50, help="per analyst and phase")
    parser.add_argument("--quantum-ms", type=int, default=0)
    parser.add_argument("--workers", type=int, default=2, help="the curator's worker processes")
    parser.add_argument("--soak", type=int, default=0, help="seconds of the soak run (0: none)")
    parser.add_argument("--heavy-workers", type=int, default=1, help="the heavy lane's workers")
    parser.add_argument("--hostile", default="", help=argparse.SUPPRESS)  # the attacker process
    args = parser.parse_args()
    if args.hostile:
        hostile(args.hostile)
        return
    if args.soak:
        soak(args)
        return
    if args.load:
        load(args)
        return
    started = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="dpframe-curator-bench-"))
    catalog = write_catalog(
        folder, alice_epsilon=1000.0, server="releases_per_minute = 1000000", workers=args.workers
    )
    server = start_server(catalog)  # its own worker processes and latency quantum: off
    try:
        remote = dp.connect(server.url, token=ALICE).open("cps")
        session = dp.Session(epsilon=1000.0, delta=1e-6, ledger=folder / "embedded.sqlite")
        embedded = session.private_frame(
            load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
        )
        rows = []
        for name, query in QUERIES.items():
            local = _times(query, embedded, args.repeats) * 1000
            far = _times(query, remote, args.repeats) * 1000
            rows.append(
                {
                    "query": name,
                    "embedded_median_ms": float(np.median(local)),
                    "embedded_p99_ms": float(np.percentile(local, 99)),
                    "curator_median_ms": float(np.median(far)),
                    "curator_p99_ms": float(np.percentile(far, 99)),
                    "added_median_ms": float(np.median(far) - np.median(local)),
                }
            )
    finally:
        server.stop()
    lines = [
        f"# Curator latency on loopback ({args.repeats} releases per query, CPS 28,155 rows, "
        f"{args.workers} worker processes, latency quantum off)",
        "",
        f"Machine: {platform.machine()}, {platform.processor() or 'cpu'}, "
        f"Python {platform.python_version()}; both ledgers are SQLite files.",
        "",
        "| query | embedded median ms | embedded p99 ms | curator median ms | curator p99 ms "
        "| added median ms |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['query']} | {row['embedded_median_ms']:.2f} | {row['embedded_p99_ms']:.2f} "
            f"| {row['curator_median_ms']:.2f} | {row['curator_p99_ms']:.2f} "
            f"| {row['added_median_ms']:.2f} |"
        )
    text = "\n".join(lines) + "\n"
    print(text)
    results = {"rows": rows, "repeats": args.repeats, "wall_s": time.perf_counter() - started}
    save_results(results, text, Path(__file__).parent / "results", f"curator_w{args.workers}")


# -- load and faults (issue 16) ------------------------------------------------------------


def _load_catalog(folder: Path, analysts: int, quantum_ms: int, heavy_workers: int = 1) -> Path:
    """``analysts`` analysts per phase (p0a0, ...) and a hostile one, on the bundled CPS data."""
    bounds = {k: list(v) for k, v in CPS1988_BOUNDS.items()}
    categories = {k: list(v) for k, v in CPS1988_CATEGORIES.items()}
    lines = [
        "[server]",
        'ledger = "ledger.sqlite"',
        "workers = 2",
        f"heavy_workers = {heavy_workers}",
        f"latency_quantum_ms = {quantum_ms}",
        "releases_per_minute = 1000000",
        "max_ledger_rows = 1000000",
        "release_seconds = 20",
        "release_estimate_seconds = 20",
        "abandoned_to_suspend = 1000",
        "",
        "[datasets.cps]",
        f'path = "{cps1988_path()}"',
        "max_rows = 30000",  # the owner's public ceiling (the file has 28,155 rows)
        f"bounds = {_toml(bounds)}",
        f"categories = {_toml(categories)}",
    ]
    names = [f"p{p}a{i}" for p in range(4) for i in range(analysts)]
    for name in [*names, "mallory"]:
        lines += [
            "",
            f"[analysts.{name}]",
            f'token_sha256 = "{hash_token(_token(name))}"',
            "budgets = { cps = { epsilon = 50.0 } }",
        ]
    path = folder / "catalog.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _toml(value: object) -> str:
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _token(name: str) -> str:
    return f"{name}-token-" + "x" * 40


_SERVE = (sys.executable, "-m", "dpframe", "serve")


def _serve(catalog: Path, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    port = free_port()
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [*_SERVE, "--catalog", str(catalog), "--port", str(port)],
            stdout=sink,
            stderr=sink,
        )
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            with urllib.request.urlopen(url + "/v1/health", timeout=1):
                return process, url
        except OSError:
            if time.monotonic() > deadline or process.poll() is not None:
                process.kill()
                raise RuntimeError(f"the curator did not start; see {log}") from None
            time.sleep(0.2)


def _children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (the curator's workers), from /proc."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.append(int(entry.name))
    return found


def _analyst(url: str, name: str, releases: int, out: dict[str, Any]) -> None:
    """One analyst's releases, one after another: latencies and outcomes."""
    pf = dp.connect(url, token=_token(name), timeout=120).open("cps")
    latencies, failed, epsilon = [], 0, 0.0
    for i in range(releases):
        query = LOAD_QUERIES[i % len(LOAD_QUERIES)]
        started = time.perf_counter()
        try:
            query(pf)
            epsilon += 1e-3
        except QueryFailedError:  # limit_exceeded: the charge stands, the row is abandoned
            failed += 1
            epsilon += 1e-3
        latencies.append(time.perf_counter() - started)
    out[name] = {"latencies": latencies, "failed": failed, "charged": epsilon, "pf": pf}


LOAD_QUERIES: list[Callable[[Any], Any]] = [
    lambda pf: pf["wage"].mean(epsilon=1e-3),
    lambda pf: pf.groupby("region")["wage"].mean(epsilon=1e-3),
    lambda pf: pf[pf["education"] >= 12].count(epsilon=1e-3),
    lambda pf: pf["wage"].quantile(0.5, epsilon=1e-3),
]


def _hostile(url: str, stop: threading.Event, out: dict[str, Any]) -> None:
    """The hostile analyst in a process of its own (its client work holds no victim's GIL)."""
    process = subprocess.Popen(
        [sys.executable, "-m", "benchmarks.run_curator", "--hostile", url],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    stop.wait()
    answer, _ = process.communicate("stop\n", timeout=300)  # it ends after its current attack
    out["mallory"] = json.loads(answer.strip().splitlines()[-1])


def hostile(url: str) -> None:
    """A hostile analyst: the doubling chain, a 10**7-bin histogram, the heaviest admitted chain.

    Attacks until a line arrives on stdin, then prints its outcomes as JSON.
    """
    stop = threading.Event()

    def wait_for_stop() -> None:
        sys.stdin.readline()
        stop.set()

    threading.Thread(target=wait_for_stop, daemon=True).start()
    out: dict[str, Any] = {}
    _attack(url, stop, out)
    print(json.dumps(out["mallory"]), flush=True)


def _attack(url: str, stop: threading.Event, out: dict[str, Any]) -> None:
    """The hostile analyst's loop (see :func:`hostile`)."""
    pf = dp.connect(url, token=_token("mallory"), timeout=120).open("cps")
    doubled = pf.assign(a0=pf["wage"])
    for i in range(1, 60):
        doubled = doubled.assign(**{f"a{i}": doubled[f"a{i - 1}"] + doubled[f"a{i - 1}"]})
    heavy = pf.assign(c0=pf["wage"])
    for i in range(1, 990):
        heavy = heavy.assign(**{f"c{i}": (heavy[f"c{i - 1}"] * 1.0001).clip(0, 5000)})
    attacks: dict[str, Callable[[], Any]] = {
        "doubling chain": lambda: doubled["a59"].mean(epsilon=1e-3),
        "hist 10**7": lambda: pf["wage"].hist(bins=10_000_000, epsilon=1e-3),
        "heaviest admitted chain": lambda: heavy["c989"].mean(epsilon=1e-3),
    }
    counts: dict[str, dict[str, int]] = {k: {} for k in attacks}
    while not stop.is_set():
        for what, attack in attacks.items():
            try:
                attack()
                outcome = "released"
            except DPError as exc:
                outcome = type(exc).__name__
            counts[what][outcome] = counts[what].get(outcome, 0) + 1
    out["mallory"] = counts


def _phase(
    url: str, phase: int, analysts: int, releases: int, hostile: bool, kill: int | None
) -> dict[str, Any]:
    out: dict[str, Any] = {}
    stop = threading.Event()
    threads = [
        threading.Thread(target=_analyst, args=(url, f"p{phase}a{i}", releases, out))
        for i in range(analysts)
    ]
    bad = threading.Thread(target=_hostile, args=(url, stop, out)) if hostile else None
    started = time.perf_counter()
    for thread in threads + ([bad] if bad else []):
        thread.start()
    killed: list[int] = []
    if kill is not None:  # SIGKILL one of the curator's workers mid-load
        time.sleep(2.0)
        workers = _children(kill)
        if workers:
            os.kill(workers[0], signal.SIGKILL)
            killed.append(workers[0])
    for thread in threads:
        thread.join()
    stop.set()
    if bad:
        bad.join()
    wall = time.perf_counter() - started
    latencies = np.array([t for k, v in out.items() if k != "mallory" for t in v["latencies"]])
    return {
        "wall_s": wall,
        "releases": int(latencies.size),
        "p50_ms": float(np.percentile(latencies, 50) * 1000),
        "p99_ms": float(np.percentile(latencies, 99) * 1000),
        "failed": sum(v["failed"] for k, v in out.items() if k != "mallory"),
        "killed_workers": killed,
        "hostile": out.get("mallory"),
        "analysts": {k: v for k, v in out.items() if k != "mallory"},
    }


def _until_stopped(url: str, name: str, out: dict[str, Any]) -> None:
    """One analyst releasing until the curator stops answering: the releases returned."""
    pf = dp.connect(url, token=_token(name), timeout=120).open("cps")
    returned = 0
    try:
        while True:
            LOAD_QUERIES[returned % len(LOAD_QUERIES)](pf)
            returned += 1
    except CuratorUnavailableError:  # the curator was killed
        out[name] = returned
    except DPError:  # any other way the release failed: it was charged, not answered
        out[name] = returned


def _server_killed(catalog: Path, folder: Path, analysts: int) -> dict[str, Any]:
    """SIGKILL the curator mid-load, restart it on the same ledger, compare spend with answers.

    Every release an analyst received must be in its recorded spend; at most
    the one request in flight per analyst was charged without its answer.
    """
    process, url = _serve(catalog, folder / "server-killed.log")
    out: dict[str, int] = {}
    threads = [
        threading.Thread(target=_until_stopped, args=(url, f"p3a{i}", out)) for i in range(analysts)
    ]
    for thread in threads:
        thread.start()
    time.sleep(8.0)
    process.send_signal(signal.SIGKILL)
    process.wait(30)
    for thread in threads:
        thread.join(180)
    restarted, url = _serve(catalog, folder / "server-restarted.log")
    try:
        recorded = {
            name: round(
                float(dp.connect(url, token=_token(name)).open("cps").session.spent.epsilon) / 1e-3
            )
            for name in out
        }
    finally:
        restarted.terminate()
        restarted.wait(30)
    returned = sum(out.values())
    missing = sum(1 for n in out if recorded[n] < out[n])  # a returned release not recorded
    unanswered = sum(recorded[n] - out[n] for n in out)
    return {
        "returned": returned,
        "recorded": sum(recorded.values()),
        "analysts_missing_a_release": missing,
        "charged_not_answered": unanswered,
        "analysts_over_one_unanswered": sum(1 for n in out if recorded[n] - out[n] > 1),
        "analysts_cut_off": len(out),
    }


def _overspend(phase: dict[str, Any]) -> tuple[int, float]:
    """Analysts whose recorded spend differs from what they were charged; the largest gap."""
    worst, wrong = 0.0, 0
    for data in phase["analysts"].values():
        session = data["pf"].session
        spent = float(session.spent.epsilon)
        ledger = session.ledger
        gap = abs(spent - float(ledger["epsilon"].sum()))
        released = int((ledger["status"] == "released").sum())
        if gap > 1e-9 or released + data["failed"] != len(ledger) or spent > 50:
            wrong += 1
        worst = max(worst, gap)
    return wrong, worst


def _rss_mb(pids: list[int]) -> float:
    """Resident memory of ``pids`` together, in MiB, from /proc."""
    total = 0
    for pid in pids:
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def soak(args: argparse.Namespace) -> None:
    """Releases without pause for ``--soak`` seconds; the curator's memory sampled every 5 s."""
    folder = Path(tempfile.mkdtemp(prefix="dpframe-curator-soak-"))
    catalog = _load_catalog(folder, args.analysts, args.quantum_ms)
    process, url = _serve(catalog, folder / "server.log")
    samples: list[tuple[float, float]] = []
    stop = threading.Event()
    counts: dict[str, int] = {}

    def analyst(name: str) -> None:
        pf = dp.connect(url, token=_token(name), timeout=120).open("cps")
        done = 0
        while not stop.is_set():
            LOAD_QUERIES[done % len(LOAD_QUERIES)](pf)
            done += 1
        counts[name] = done

    threads = [threading.Thread(target=analyst, args=(f"p0a{i}",)) for i in range(args.analysts)]
    started = time.perf_counter()
    try:
        for thread in threads:
            thread.start()
        while time.perf_counter() - started < args.soak:
            pids = [process.pid, *_children(process.pid)]
            samples.append((time.perf_counter() - started, _rss_mb(pids)))
            time.sleep(5)
        stop.set()
        for thread in threads:
            thread.join()
    finally:
        stop.set()
        process.terminate()
        process.wait(30)
    first = [mb for t, mb in samples if t < 30]
    last = [mb for t, mb in samples if t >= args.soak - 30]
    text = (
        f"# Curator soak: {args.analysts} analysts releasing without pause for {args.soak} s\n\n"
        f"Releases: {sum(counts.values())}. Curator and workers' resident memory: "
        f"{max(first):.0f} MiB at most in the first 30 s, {max(last):.0f} MiB at most in the "
        f"last 30 s, {max(mb for _, mb in samples):.0f} MiB at most overall "
        f"({len(samples)} samples every 5 s).\n"
    )
    print(text)
    results = {
        "samples": samples,
        "releases": sum(counts.values()),
        "seconds": args.soak,
        "wall_s": time.perf_counter() - started,
    }
    save_results(results, text, Path(__file__).parent / "results", "curator_soak")


def load(args: argparse.Namespace) -> None:
    """N analysts at once; with a hostile analyst; with a worker SIGKILLed mid-load."""
    started = time.perf_counter()
    folder = Path(tempfile.mkdtemp(prefix="dpframe-curator-load-"))
    catalog = _load_catalog(folder, args.analysts, args.quantum_ms, args.heavy_workers)
    process, url = _serve(catalog, folder / "server.log")
    try:
        phases = {
            "load": _phase(url, 0, args.analysts, args.releases, False, None),
            "load + hostile": _phase(url, 1, args.analysts, args.releases, True, None),
            "load + a worker killed": _phase(
                url, 2, args.analysts, args.releases, False, process.pid
            ),
        }
        checks = {name: _overspend(phase) for name, phase in phases.items()}
    finally:
        process.terminate()
        process.wait(30)
    killed = _server_killed(catalog, folder, args.analysts)
    with sqlite3.connect(folder / "ledger.sqlite") as db:
        integrity = db.execute("PRAGMA integrity_check").fetchone()[0]
    lines = [
        f"# Curator under load on loopback ({args.analysts} analysts x {args.releases} releases, "
        f"2 worker processes and {args.heavy_workers} heavy-lane worker(s), latency quantum "
        f"{args.quantum_ms} ms, "
        "CPS 28,155 rows)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores shared with other jobs, "
        f"Python {platform.python_version()}.",
        "",
        "| phase | releases | wall s | p50 ms | p99 ms | limit_exceeded | overspent analysts |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for name, phase in phases.items():
        lines.append(
            f"| {name} | {phase['releases']} | {phase['wall_s']:.1f} | {phase['p50_ms']:.1f} "
            f"| {phase['p99_ms']:.1f} | {phase['failed']} | {checks[name][0]} |"
        )
    hostile = phases["load + hostile"]["hostile"]
    lines += ["", f"Hostile analyst's outcomes: {hostile}"]
    lines += [f"Workers SIGKILLed: {phases['load + a worker killed']['killed_workers']}"]
    lines += [
        "",
        f"Curator SIGKILLed after 8 s of load by {killed['analysts_cut_off']} analysts, then "
        f"restarted on the same ledger: {killed['returned']} releases returned, "
        f"{killed['recorded']} recorded; analysts with a returned release missing from the "
        f"ledger: {killed['analysts_missing_a_release']}; charged but not answered: "
        f"{killed['charged_not_answered']} (analysts with more than the one in flight: "
        f"{killed['analysts_over_one_unanswered']}).",
        f"Ledger PRAGMA integrity_check after the run: {integrity}",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    results = {
        "phases": {
            k: {key: v for key, v in p.items() if key != "analysts"} for k, p in phases.items()
        },
        "overspend": checks,
        "integrity": integrity,
        "server_killed": killed,
        "wall_s": time.perf_counter() - started,
    }
    save_results(results, text, Path(__file__).parent / "results", "curator_load")


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
