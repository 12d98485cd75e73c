"""Issue 16's attacks on the curator, part 1: helpers and the request-shaped attacks (1-5).

Used by :mod:`benchmarks.run_curator_attacks` (which runs them all and saves the table).
"""

import http.client
import json
import re
import subprocess
import threading
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

import dpframe as dp
from benchmarks.run_curator import _children, _rss_mb, _serve, _toml
from dpframe.backends.pandas_backend import PandasBackend
from dpframe.curator.catalog import Catalog, hash_token
from dpframe.curator.data import read_declared
from dpframe.errors import DPError
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, BOB, release_body

EPS = 1e-3
BOUNDS = {k: list(v) for k, v in CPS1988_BOUNDS.items()}
CATEGORIES = {k: list(v) for k, v in CPS1988_CATEGORIES.items()}
Row = tuple[str, str, str]  # attack, before, after
Answer = tuple[int, dict[str, str], str, float]  # status, headers, body, seconds
State = tuple[int, Fraction]  # ledger rows, ε spent
#: A run of 12+ hex digits with letters and digits (as tests/curator/test_no_free_bits.py).
HEX_RUN = re.compile(
    r"(?<![0-9a-z.])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{12,}(?![0-9a-z.+-])"
)


def _row(attack: str, before: str, held: bool, after: str) -> Row:
    return attack, before, ("" if held else "**FAILED** ") + after


def _http(
    url: str,
    method: str,
    path: str,
    token: str | None = ALICE,
    body: bytes | None = None,
    headers: dict[str, str] | None = None,
    timeout: float = 120,
) -> Answer:
    """One raw request (the path sent exactly as given)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=timeout)
    sent = dict(headers or {})
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    if body is not None:
        sent.setdefault("Content-Type", "application/json")
    started = time.perf_counter()
    try:
        conn.request(method, path, body=body, headers=sent)
        answer = conn.getresponse()
        text = answer.read().decode("utf-8", "replace")
        return answer.status, dict(answer.getheaders()), text, time.perf_counter() - started
    finally:
        conn.close()


def _code(text: str) -> str:
    """The error code of an answer ("released" for an answer without one)."""
    try:
        if "error" not in json.loads(text):
            return "released"
        return str(json.loads(text)["error"]["code"])
    except (ValueError, KeyError, TypeError):
        return "-"


def _post(url: str, body: dict[str, Any], name: str = "cps", token: str = ALICE) -> Answer:
    return _http(url, "POST", f"/v1/datasets/{name}/query", token, json.dumps(body).encode())


def _ledger(url: str, token: str = ALICE, name: str = "cps", limit: str = "") -> list[Any]:
    """Every page of ``/ledger`` (``limit`` rows a page, e.g. "&limit=250")."""
    pages, after = [], 0
    while True:
        _, _, text, _ = _http(url, "GET", f"/v1/datasets/{name}/ledger?after={after}{limit}", token)
        page = json.loads(text)
        pages.append(decode_response(page["ledger"]))
        if page["next"] is None:
            return pages
        after = int(page["next"])


def _state(url: str, token: str = ALICE, name: str = "cps") -> State:
    """Ledger rows (every page of /ledger) and ε spent (from /budget) of one seat."""
    rows = sum(len(page) for page in _ledger(url, token, name))
    _, _, text, _ = _http(url, "GET", f"/v1/datasets/{name}/budget", token)
    return rows, Fraction(json.loads(text)["spent"]["fields"]["epsilon"]["$fraction"])


def _delta(before: State, after: State) -> str:
    return (
        f"ledger rows {before[0]}→{after[0]}, ε spent {float(before[1]):.4g}→{float(after[1]):.4g}"
    )


def _mean_body(epsilon: str = "1e-3") -> dict[str, Any]:
    body = release_body(lambda pf: pf["wage"].mean(epsilon=EPS))
    body["node"]["privacy"]["epsilon"] = epsilon
    return body


def _client_try(release: Callable[[], object]) -> tuple[str, float]:
    started = time.perf_counter()
    try:
        release()
        outcome = "released"
    except DPError as exc:
        message = str(exc).replace(
            "This request is too large to evaluate; nothing was charged. ", ""
        )
        outcome = f"{type(exc).__name__}: {message[:60]}"
    return outcome, time.perf_counter() - started


def _chain(pf: Any, steps: int, step: Callable[[Any], Any]) -> Any:
    frame = pf.assign(c0=pf["wage"])
    for i in range(1, steps):
        frame = frame.assign(**{f"c{i}": step(frame[f"c{i - 1}"])})
    return frame[f"c{steps - 1}"]


# -- 1. one request stalls the server ------------------------------------------------------------


def attack_stall(url: str) -> list[Row]:
    alice = dp.connect(url, token=ALICE, timeout=120).open("cps")
    bob = dp.connect(url, token=BOB, timeout=120).open("cps")
    doubled = _chain(alice, 60, lambda c: c + c)  # c{i} = c{i-1} + c{i-1}
    before, bob_before = _state(url), _state(url, BOB)
    done: dict[str, Any] = {}
    thread = threading.Thread(
        target=lambda: done.update(chain=_client_try(lambda: doubled.mean(epsilon=EPS)))
    )
    thread.start()
    health = [_http(url, "GET", "/v1/health", None)[3] for _ in range(5)]
    bob_result, bob_s = _client_try(lambda: bob["wage"].mean(epsilon=EPS))
    thread.join(180)
    after, bob_after = _state(url), _state(url, BOB)
    result, seconds = done.get("chain", ("no answer", 0.0))
    held = result == "released" and bob_result == "released" and max(health) < 1
    rows = [
        _row(
            "1a. doubling chain (60 derived columns c{i} = c{i-1} + c{i-1}, mean)",
            "charged, then pins a core forever holding the seat lock; only a kill recovers",
            held,
            f"{result} in {seconds:.3f} s ({_delta(before, after)}); /v1/health polled 5× "
            f"meanwhile: max {max(health) * 1000:.1f} ms; bob's mean: {bob_result} in "
            f"{bob_s:.3f} s ({_delta(bob_before, bob_after)})",
        )
    ]
    # the same doubling inside one expression (no derived columns between the steps)
    state0, x = _state(url), alice["wage"]
    for _ in range(60):
        x = x + x
    single, single_s = _client_try(lambda: alice.assign(z=x)["z"].mean(epsilon=EPS))
    state1 = _state(url)
    rows.append(
        _row(
            "1a'. the same doubling in one expression (x = x + x, 60 times)",
            "(not in the issue)",
            single != "released" and state1 == state0,
            f"client: {single} in {single_s:.3f} s; {_delta(state0, state1)}",
        )
    )
    # 40 requests of the same analyst while one of its releases (a 0.7 s admitted chain) runs
    heavy = _chain(alice, 990, lambda c: (c * 1.0001).clip(0, 5000))
    before = _state(url)
    body = json.dumps(_mean_body()).encode()
    answers: list[Answer] = []
    gate = threading.Barrier(41)

    def one() -> None:
        gate.wait()
        answers.append(_http(url, "POST", "/v1/datasets/cps/query", ALICE, body))

    burst = [threading.Thread(target=one) for _ in range(40)]
    for t in burst:
        t.start()
    runner = threading.Thread(
        target=lambda: done.update(slow=_client_try(lambda: heavy.mean(epsilon=EPS)))
    )
    runner.start()
    time.sleep(0.25)
    started = time.perf_counter()
    gate.wait()
    bob_result, bob_s = _client_try(lambda: bob["wage"].mean(epsilon=EPS))  # meanwhile
    for t in burst:
        t.join(120)
    wall = time.perf_counter() - started
    health_after = _http(url, "GET", "/v1/health", None)[3]
    runner.join(180)
    after = _state(url)
    counts: dict[str, int] = {}
    for status, _, text, _ in answers:
        counts[f"{status} {_code(text)}"] = counts.get(f"{status} {_code(text)}", 0) + 1
    answered = sum(1 for a in answers if a[0] == 200)
    retry = sorted({a[1].get("retry-after", "-") for a in answers if a[0] == 429})
    slow, slow_s = done.get("slow", ("no answer", 0.0))
    expected = before[0] + answered + (slow == "released")
    held = after[0] == expected and counts.get("429 busy", 0) > 0 and wall < 5
    held &= bob_result == "released" and bob_s < 5
    rows.append(
        _row(
            "1b. 40-request burst of one analyst while its release is in flight",
            "40 more requests exhaust the thread pool; /v1/health and other analysts time out",
            held,
            ", ".join(f"{n}× {k}" for k, n in sorted(counts.items()))
            + f" (Retry-After {', '.join(retry)}); all 40 answered within {wall:.3f} s; the "
            f"release in flight: {slow} in {slow_s:.2f} s; bob's mean meanwhile: {bob_result} in "
            f"{bob_s:.3f} s; /v1/health after {health_after * 1000:.1f} ms; "
            f"{_delta(before, after)} (= the release in flight + {answered} answered 200: "
            f"{'yes' if after[0] == expected else 'NO'})",
        )
    )
    return rows


# -- 2. huge outputs ------------------------------------------------------------------------------


def _hist_body(bins: int) -> dict[str, Any]:
    body = release_body(lambda pf: pf["wage"].hist(bins=8, epsilon=EPS))
    by = body["node"]["by"][0]
    by["expr"]["edges"] = np.linspace(0, 5000, bins + 1).tolist()
    by["categories"] = list(range(bins))
    body["node"]["label"] = f"hist(wage, {bins} bins)"
    return body


def _raw_stream(url: str, headers: dict[str, str], chunks: list[bytes]) -> Answer:
    """POST a query with ``headers``, sending ``chunks`` as they are (stopping if refused)."""
    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=60)
    started = time.perf_counter()
    try:
        conn.putrequest("POST", "/v1/datasets/cps/query")
        for key, value in {"Authorization": f"Bearer {ALICE}", **headers}.items():
            conn.putheader(key, value)
        conn.endheaders()
        try:
            for chunk in chunks:
                conn.send(chunk)
        except OSError:
            pass  # the curator answered and closed before the whole body went
        answer = conn.getresponse()
        text = answer.read().decode()
        return answer.status, dict(answer.getheaders()), text, time.perf_counter() - started
    finally:
        conn.close()


def attack_huge(url: str, pid: int) -> list[Row]:
    pf = dp.connect(url, token=ALICE, timeout=120).open("cps")
    keys = [f"k{i}" for i in range(20_000)]
    grouped = release_body(lambda p: p.groupby("region")["wage"].mean(epsilon=EPS))
    grouped["node"]["by"] = [
        {"name": "region", "expr": {"op": "col", "name": "region"}, "categories": keys}
    ]
    quantiles = release_body(lambda p: p["wage"].quantile([0.5], epsilon=EPS))
    quantiles["node"]["levels"] = [f"{i}e-4" for i in range(5, 10_000, 10)]  # 1,000 levels
    huge = str(len(json.dumps(_hist_body(10_000_000))))
    tries: list[tuple[str, str, Callable[[], object], Callable[[], Answer]]] = [
        (
            "2a. hist(bins=10_000_000) (raw: its 10**7 edges' body, declared length)",
            "charged, server grows to 3.3 GB, holds the lock for minutes; the client times out",
            lambda: pf["wage"].hist(bins=10_000_000, epsilon=EPS),
            lambda: _raw_stream(url, {"Content-Length": huge}, []),
        ),
        (
            "2a'. hist(bins=10_000) (raw body under 256 KiB)",
            "(the same attack, sized to pass the body limit)",
            lambda: pf["wage"].hist(bins=10_000, epsilon=EPS),
            lambda: _post(url, _hist_body(10_000)),
        ),
        (
            "2b. group-by with a 20,000-key category list",
            "passes",
            lambda: pf.groupby("region", keys=pd.DataFrame({"region": keys}))["wage"].mean(
                epsilon=EPS
            ),
            lambda: _post(url, grouped),
        ),
        (
            "2c. quantile list of 1,000 levels",
            "passes",
            lambda: pf["wage"].quantile([i / 10_000 for i in range(5, 10_000, 10)], epsilon=EPS),
            lambda: _post(url, quantiles),
        ),
    ]
    rows = []
    for label, before, client_call, raw in tries:
        rss0, state0 = _rss_mb([pid, *_children(pid)]), _state(url)
        outcome, client_s = _client_try(client_call)
        status, _, text, raw_s = raw()
        rss1, state1 = _rss_mb([pid, *_children(pid)]), _state(url)
        held = outcome != "released" and status >= 400 and state1 == state0
        rows.append(
            _row(
                label,
                before,
                held,
                f"client: {outcome} in {client_s:.3f} s; raw HTTP: {status} {_code(text)} in "
                f"{raw_s:.3f} s; {_delta(state0, state1)}; curator RSS {rss0:.0f}→{rss1:.0f} MiB",
            )
        )
    return rows


# -- 3. the fingerprint ---------------------------------------------------------------------------


def attack_fingerprint(url: str, catalog: Path) -> list[Row]:
    entry = Catalog.load(catalog).datasets["cps"]
    frames = [read_declared(entry), load_cps1988(), pd.read_csv(entry.path)]
    prints = {PandasBackend(f).fingerprint() for f in frames}
    pieces = {p[i : i + 12] for p in prints for i in range(len(p) - 11)}
    texts = {p: _http(url, "GET", p)[2] for p in ("/v1/datasets", "/v1/datasets/cps")}
    releases: dict[str, Callable[[Any], object]] = {
        "mean": lambda p: p["wage"].mean(epsilon=EPS),
        "grouped mean": lambda p: p.groupby("region")["wage"].mean(epsilon=EPS),
        "hist": lambda p: p["wage"].hist(bins=8, epsilon=EPS),
    }
    for name, release in releases.items():
        body = release_body(release)
        texts[f"release {name}"] = _post(url, body)[2]
        texts[f"explain {name}"] = _post(url, dict(body, explain=True))[2]
    for path in ("/ledger", "/budget", ""):
        texts[f"/v1/datasets/cps{path}"] = _http(url, "GET", f"/v1/datasets/cps{path}")[2]
    pf = dp.connect(url, token=ALICE).open("cps")
    texts["session.ledger"] = pf.session.ledger.to_csv()
    texts["session.ledger (repr)"] = repr(pf.session.ledger) + repr(pf.session.remaining)
    found = sorted(k for k, text in texts.items() if any(p in text for p in pieces))
    # a run of 12+ hex digits that is not a label digest could be a hash of the rows

    runs = sorted({m for t in texts.values() for m in HEX_RUN.findall(t)})
    everything = "\n".join(texts.values())
    digests = [m for m in runs if f"#{m}" in everything]  # a long label's " … #" + its SHA-256
    return [
        _row(
            "3. dataset fingerprint (hash of every row) in any answer",
            "/ledger and session.ledger show 48 bits of it; last person's age recovered in 11.5 s",
            not found and len(digests) == len(runs),
            ("found in " + ", ".join(found) if found else "absent")
            + f": {len(prints)} distinct fingerprint(s) of the served file (as the curator reads "
            f"it, as pandas reads it), each 12-hex-digit piece, searched in {len(texts)} answers "
            f"({len(everything):,} chars); other runs of 12+ hex digits: {len(runs)}, of which "
            f"{len(digests)} are clipped query labels' digests (` … #` + 16 hex digits of the "
            f"label's SHA-256){': ' + ', '.join(digests[:2]) if digests else ''}",
        )
    ]


# -- 4. schema bits -------------------------------------------------------------------------------


def attack_schema(folder: Path) -> list[Row]:
    clean = load_cps1988()
    missing = clean.astype({"education": object})
    missing.loc[missing.index[3], "education"] = np.nan
    stray = clean.astype({"education": object})
    stray.loc[stray.index[5], "education"] = "unknown"
    variants = {"clean": clean, "one education missing": missing, '"unknown" in education': stray}
    answers: dict[str, str] = {}
    inferred: list[str] = []  # what pandas makes of the education column of each file
    servers: list[subprocess.Popen[bytes]] = []
    try:
        for name, frame in variants.items():
            sub = folder / f"schema-{len(servers)}"
            sub.mkdir()
            frame.to_csv(sub / "data.csv", index=False)
            inferred.append(str(pd.read_csv(sub / "data.csv")["education"].dtype))
            (sub / "catalog.toml").write_text(
                '[server]\nledger = "ledger.sqlite"\nworkers = 0\n\n'
                '[datasets.cps]\npath = "data.csv"\nmax_rows = 30000\n'
                f"bounds = {_toml(BOUNDS)}\ncategories = {_toml(CATEGORIES)}\n\n"
                f'[analysts.alice]\ntoken_sha256 = "{hash_token(ALICE)}"\n'
                "budgets = { cps = { epsilon = 1.0 } }\n"
            )
            process, url = _serve(sub / "catalog.toml", sub / "server.log")
            servers.append(process)
            answers[name] = _http(url, "GET", "/v1/datasets/cps")[2]
    finally:
        for process in servers:
            process.terminate()
            process.wait(30)
    same = {name: text == answers["clean"] for name, text in answers.items() if name != "clean"}
    edu = next(c for c in json.loads(answers["clean"])["columns"] if c["name"] == "education")
    return [
        _row(
            "4. schema (`/v1/datasets/cps`) of two files differing in one row",
            "one missing value turns int64 into float64; one stray 'unknown' turns a number "
            "column into text",
            all(same.values()),
            "; ".join(f"{n}: {'byte-identical' if s else 'DIFFERENT'}" for n, s in same.items())
            + f" to the clean file's ({len(answers['clean'])} bytes; education shown as "
            f"{edu['kind']}/{edu['dtype']}; pd.read_csv infers {' / '.join(inferred)})",
        )
    ]


# -- 5. ledger growth -----------------------------------------------------------------------------


def _isin_body(items: int) -> dict[str, Any]:
    return release_body(lambda p: p[p["wage"].isin(list(range(items)))]["wage"].mean(epsilon=EPS))


def attack_ledger(url: str) -> list[Row]:
    pf = dp.connect(url, token=ALICE).open("cps")
    rows = []
    for items, tag in ((24_000, "5a"), (10_000, "5a'")):
        body = _isin_body(items)
        last = max((int(page.index.max()) for page in _ledger(url) if len(page)), default=0)
        state0 = _state(url)
        status, _, text, seconds = _post(url, body)
        state1 = _state(url)
        new = [q for page in _ledger(url) for i, q in page["query"].items() if int(i) > last]
        size = max((len(q) for q in new), default=0)
        held = (status >= 400 and state1 == state0) or (status == 200 and size <= 256)
        rows.append(
            _row(
                f"{tag}. isin filter of {items:,} items: the ledger label",
                "each row stores the full label: 243 KiB for a 24,000-item isin",
                held,
                f"{status} {_code(text)} in {seconds:.3f} s; "
                + (f"label {size} chars, ending {new[-1][-22:]!r}; " if new else "no new row; ")
                + _delta(state0, state1),
            )
        )
    state0 = _state(url)
    raw = _post(url, _mean_body("1e-12"))
    client, client_s = _client_try(lambda: pf["wage"].mean(epsilon=1e-12))
    state1 = _state(url)
    rows.append(
        _row(
            "5b. a release at ε = 1e-12",
            "accepted (only buys noise, fills the ledger)",
            raw[0] >= 400 and client != "released" and state1 == state0,
            f"raw: {raw[0]} {_code(raw[2])}; client: {client} in {client_s:.3f} s; "
            f"{_delta(state0, state1)}",
        )
    )
    mean = json.dumps(_mean_body()).encode()
    filled = time.perf_counter()
    while _state(url)[0] < 1_050:  # more rows than one default page
        for _ in range(100):
            _http(url, "POST", "/v1/datasets/cps/query", ALICE, mean)
    filled = time.perf_counter() - filled
    total = _state(url)[0]
    default = [len(page) for page in _ledger(url)]
    small = [len(page) for page in _ledger(url, limit="&limit=250")]
    too_big = _http(url, "GET", "/v1/datasets/cps/ledger?limit=100000")
    whole = len(pf.session.ledger)
    held = sum(default) == sum(small) == total == whole and max(default) <= 1000
    rows.append(
        _row(
            "5c. /ledger pagination",
            "/ledger returns the whole table",
            held and max(small) <= 250 and too_big[0] >= 400,
            f"seat with {total} rows (filled in {filled:.1f} s): default pages {default} rows; "
            f"limit=250: pages {small}; limit=100000: {too_big[0]} {_code(too_big[2])}; "
            f"session.ledger (every page) {whole} rows",
        )
    )
    return rows
