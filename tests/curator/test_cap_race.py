"""16 analysts race one dataset's cap against a curator process, killed (SIGKILL) midway.

Half the analysts have pure grants, half Gaussian DP grants; the dataset's
cap is Gaussian DP (pure releases enter as μ(ε)).  Each analyst posts count
releases from its own thread with its own token until the curator answers
409 ``dataset_cap``.  Midway the curator is killed with SIGKILL and started
again on the same ledger; the analysts retry.  Afterwards:

- the cap held exactly: the admitted releases' μ² sum to at most the cap's
  μ² (rational arithmetic), and to more than the cap minus one release (the
  cap was used up, not refused early);
- nothing admitted was lost: every release an analyst got an answer for is
  a ``released`` row of its seat in the ledger, under the number it was given;
- the ledger verifies.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
import urllib.error
import urllib.request
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpframe.accounting.accountants import Charge
from dpframe.accounting.gdp import rho_total_gdp
from dpframe.accounting.ledger_caps import cap_cost
from dpframe.accounting.ledger_verify import verify_file
from dpframe.curator.catalog import hash_token
from dpframe.remote.wire import dumps
from tests.curator.support import release_body, start_server, write_catalog

ANALYSTS = 16
PURE_EPSILON = 0.025  # μ(0.025)² ≈ 0.00098
GDP_SHARE = 0.0025  # of ε = 10 at δ = 1e-6: μ² ≈ 0.00085
CAP_RHO = rho_total_gdp(Fraction(1), Fraction(9, 10**7))  # cap ε = 1, δ = 1e-6 (δ/10 reserved)


def _token(i: int) -> str:
    return f"racer-{i:02d}-" + "r" * 40


def _catalog(folder: Path) -> Path:
    path = write_catalog(folder)
    text = path.read_text()
    text = text.replace(
        "[datasets.sentinel]", "cap = { epsilon = 1.0, delta = 1e-6 }\n\n[datasets.sentinel]"
    )
    text = text[: text.index("[analysts.alice]")]
    for i in range(ANALYSTS):
        grant = "{ epsilon = 10.0 }" if i % 2 == 0 else "{ epsilon = 10.0, delta = 1e-6 }"
        text += (
            f'[analysts.a{i:02d}]\ntoken_sha256 = "{hash_token(_token(i))}"\n'
            f"budgets = {{ cps = {grant} }}\n\n"
        )
    path.write_text(text)
    return path


class _Race:
    """The analysts' threads and what each was answered."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.answered: dict[int, list[int]] = {i: [] for i in range(ANALYSTS)}
        self.refused: set[int] = set()
        self.errors: list[str] = []
        self.last: dict[int, str] = {}  # each analyst's last outcome, named on a failure
        self.lock = threading.Lock()
        self.deadline = time.monotonic() + 120

    def total(self) -> int:
        with self.lock:
            return sum(len(v) for v in self.answered.values())

    def run(self, i: int) -> None:
        """:meth:`ask` until refused or the deadline; an unexpected exception is an error."""
        try:
            self.ask(i)
        except Exception as exc:  # a thread's exception is otherwise only printed
            with self.lock:
                self.errors.append(f"analyst {i}: {exc!r}")

    def ask(self, i: int) -> None:
        """Post count releases until the cap refuses one (or the deadline passes)."""
        epsilon = PURE_EPSILON if i % 2 == 0 else GDP_SHARE
        body = {**release_body(lambda pf: pf.count(epsilon=epsilon)), "fresh": True}
        data = dumps(body).encode()
        while time.monotonic() < self.deadline:
            request = urllib.request.Request(
                f"{self.url}/v1/datasets/cps/query",
                data=data,
                headers={
                    "Authorization": f"Bearer {_token(i)}",
                    "Content-Type": "application/json",
                },
            )
            try:
                with urllib.request.urlopen(request, timeout=30) as response:
                    answer: dict[str, Any] = json.loads(response.read())
                with self.lock:
                    self.answered[i].append(int(answer["release"]))
                    self.last[i] = "answered"
            except urllib.error.HTTPError as exc:
                try:
                    code = json.loads(exc.read() or b"{}").get("error", {}).get("code")
                except (http.client.HTTPException, OSError, ValueError) as cut:
                    code = f"unreadable: {cut!r}"  # the body was cut by the kill
                with self.lock:
                    self.last[i] = f"HTTP {exc.code} {code}"
                if code == "dataset_cap":
                    with self.lock:
                        self.refused.add(i)
                    return
                if exc.code in (429, 503) or str(code).startswith("unreadable"):
                    time.sleep(0.2)  # busy, rate limited, or cut by the kill: again
                    continue
                with self.lock:
                    self.errors.append(f"analyst {i}: HTTP {exc.code} {code}")
                return
            except (OSError, http.client.HTTPException, ValueError) as exc:
                # The curator is down (killed), or killed while it wrote this answer (a
                # truncated body, unreadable JSON): the answer never arrived, ask again.
                with self.lock:
                    self.last[i] = repr(exc)
                time.sleep(0.2)
        with self.lock:
            self.last[i] = f"deadline; last: {self.last.get(i)}"

    def stuck(self) -> dict[int, str]:
        """The analysts not refused yet, with their last outcome."""
        with self.lock:
            waiting = set(range(ANALYSTS)) - self.refused
            return {i: self.last.get(i, "nothing yet") for i in sorted(waiting)}


def test_sixteen_analysts_race_the_cap_through_a_sigkill(tmp_path: Path) -> None:
    catalog = _catalog(tmp_path)
    server = start_server(catalog)
    race = _Race(server.url)
    threads = [threading.Thread(target=race.run, args=(i,), daemon=True) for i in range(ANALYSTS)]
    for thread in threads:
        thread.start()
    while race.total() < 20 and not race.refused and time.monotonic() < race.deadline:
        time.sleep(0.02)
    server.process.kill()  # SIGKILL, releases in flight
    server.process.wait(10)
    before = race.total()
    restarted = start_server(catalog)
    race.url = restarted.url
    try:
        for thread in threads:
            thread.join(max(1.0, race.deadline - time.monotonic()))
    finally:
        restarted.stop()
    assert not race.errors, race.errors
    assert race.refused == set(range(ANALYSTS)), f"not refused by the cap: {race.stuck()}"
    assert 20 <= before < race.total(), "releases were answered before and after the kill"

    ledger = catalog.parent / "ledger.sqlite"
    import sqlite3

    conn = sqlite3.connect(ledger)
    try:
        kinds = dict(conn.execute("SELECT session, accounting FROM budgets"))
        rows = conn.execute(
            "SELECT id, session, epsilon, delta, rho, status FROM releases ORDER BY id"
        ).fetchall()
    finally:
        conn.close()
    used, largest = Fraction(0), Fraction(0)
    by_seat: dict[str, list[str]] = {}
    for _, session, eps, dlt, rho, status in rows:
        cost = cap_cost(Charge(Fraction(eps), Fraction(dlt), Fraction(rho)), kinds[session], "gdp")
        used += cost.rho
        largest = max(largest, cost.rho)
        by_seat.setdefault(session, []).append(status)
    assert used <= CAP_RHO  # the cap held exactly
    assert used > CAP_RHO - largest  # and was used up
    for i, numbers in race.answered.items():  # nothing admitted was lost
        statuses = by_seat.get(f"a{i:02d}/cps", [])
        assert len(set(numbers)) == len(numbers)
        for number in numbers:
            assert number <= len(statuses) and statuses[number - 1] == "released"
    report = verify_file(ledger)
    assert report.ok, [str(p) for p in report.problems]
