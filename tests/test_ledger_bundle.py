"""Release bundles (``dpframe ledger export``) and backups (``dpframe ledger backup``), issue 31."""

from __future__ import annotations

import json
import sqlite3
import threading
from fractions import Fraction
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.accounting.accountants import Charge
from dpframe.accounting.ledger import Ledger
from dpframe.accounting.ledger_backup import backup_file
from dpframe.accounting.ledger_verify import verify_file
from dpframe.cli import main
from dpframe.engine.ledger_bundle import export_session, verify_bundle
from dpframe.errors import LedgerError

BOUNDS = {"wage": (0.0, 5000.0)}
REGIONS = {"region": ["northeast", "midwest", "south", "west"]}


@pytest.fixture
def released(ledger_path: Path) -> tuple[dp.Session, list[object]]:
    rng = np.random.default_rng(7)
    data = pd.DataFrame(
        {"wage": rng.uniform(0, 5000, 1500), "region": rng.choice(REGIONS["region"], 1500)}
    )
    session = dp.Session(epsilon=1.0, ledger=ledger_path, name="ana")
    pf = session.private_frame(data, bounds=BOUNDS, categories=REGIONS)
    results = [
        pf.count(epsilon=0.1),
        pf["wage"].mean(epsilon=0.2),
        pf.groupby("region")["wage"].sum(epsilon=0.1),
    ]
    return session, results


def test_export_round_trip(
    released: tuple[dp.Session, list[object]],
    ledger_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    session, results = released
    out = tmp_path / "bundle"
    status = main(["ledger", "export", str(ledger_path), "--session", "ana", "--out", str(out)])
    assert status == 0
    head = session.ledger_head
    assert head is not None
    assert f"chain head {head.n}:{head.hash}" in capsys.readouterr().out
    bundle = json.loads((out / "bundle.json").read_text())
    assert bundle["head"] == head.to_dict()
    assert "Released values are not verified" in bundle["note"]
    releases = bundle["releases"]
    assert [r["status"] for r in releases] == ["released"] * 3
    count = releases[0]
    for key in ("plan", "mechanism", "noise_scale", "cost", "value", "interval", "time"):
        assert count[key] not in (None, [], "")
    assert count["chain_head"] == head.hash
    assert count["cost"] == {"epsilon": "1/10", "delta": "0", "rho": "0"}
    assert count["mechanism"] == "discrete Laplace"
    assert count["noise_scale"] == [10.0]  # Δ = 1 at ε = 0.1: b = 10, the mechanism's own
    first = results[0]
    assert isinstance(first, dp.Release)
    assert count["interval"] == pytest.approx(list(first.ci(0.95)))
    assert releases[1]["cost"]["epsilon"] == "1/5"
    grouped = releases[2]["interval"]
    assert grouped is not None and len(grouped["data"]) == 4  # one interval per region
    table = pd.read_parquet(out / "releases.parquet")
    assert list(table["id"]) == [r["id"] for r in releases]
    assert list(table["epsilon"]) == ["1/10", "1/5", "1/10"]
    assert set(table["chain_head"]) == {head.hash}
    # verifies offline (the ledger file is not needed), by folder or by file
    ledger_path.rename(tmp_path / "elsewhere.sqlite")
    report = verify_bundle(out)
    assert report.ok, report.problems
    assert report.sessions[0].spent == session.spent
    assert main(["ledger", "verify", str(out / "bundle.json"), "--bundle"]) == 0
    assert "OK:" in capsys.readouterr().out


def _edit_bundle(out: Path, change: dict[str, object], in_record: bool = False) -> None:
    bundle = json.loads((out / "bundle.json").read_text())
    target = bundle["releases"][1]
    (target["record"] if in_record else target).update(change)
    (out / "bundle.json").write_text(json.dumps(bundle))


@pytest.mark.parametrize(
    ("change", "in_record", "problem"),
    [
        ({"value": "1.0"}, False, "its value differs from its record"),
        ({"interval": [0.0, 1.0]}, False, "its interval differs from its answer"),
        ({"noise_scale": [0.5]}, False, "its noise_scale differs from its record"),
        ({"value": "1.0"}, True, "its outcome (status, value, noise or stored answer) differs"),
        ({"epsilon": "1/100"}, True, "its charge differs from its chain link"),
    ],
    ids=["shown value", "interval", "noise scale", "recorded value", "recorded cost"],
)
def test_an_edited_bundle_fails(
    released: tuple[dp.Session, list[object]],
    ledger_path: Path,
    tmp_path: Path,
    change: dict[str, object],
    in_record: bool,
    problem: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    out = tmp_path / "bundle"
    export_session(ledger_path, "ana", out)
    _edit_bundle(out, change, in_record)
    assert main(["ledger", "verify", str(out)]) == 1
    assert problem in capsys.readouterr().out


def test_an_edited_parquet_table_fails(
    released: tuple[dp.Session, list[object]], ledger_path: Path, tmp_path: Path
) -> None:
    out = tmp_path / "bundle"
    export_session(ledger_path, "ana", out)
    table = pd.read_parquet(out / "releases.parquet")
    table.loc[0, "value"] = "0"
    table.to_parquet(out / "releases.parquet", index=False)
    problems = [str(p) for p in verify_bundle(out).problems]
    assert problems == [
        "session 'ana', releases.parquet: the table differs from the bundle's releases"
    ]


def test_export_defaults_to_a_folder_named_after_the_session(
    released: tuple[dp.Session, list[object]],
    ledger_path: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["ledger", "export", str(ledger_path), "--session", "ana"]) == 0
    assert verify_bundle(tmp_path / "ana-bundle").ok


def test_export_of_an_unknown_session_is_refused(
    released: tuple[dp.Session, list[object]],
    ledger_path: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert (
        main(["ledger", "export", str(ledger_path), "--session", "x", "--out", str(tmp_path)]) == 2
    )
    assert "holds no session named 'x'" in capsys.readouterr().err


# -- backup ------------------------------------------------------------------------------


def test_backup_is_consistent_and_private_while_another_connection_writes(
    ledger_path: Path, tmp_path: Path
) -> None:
    writer = Ledger(ledger_path)
    writer.register("w", "pure", dp.Budget(10**6))
    stop = threading.Event()
    written: list[int] = []

    def write() -> None:
        other = Ledger(ledger_path)  # its own connection
        while not stop.is_set():
            rid = other.charge("w", "d", Charge(epsilon=Fraction(1, 10)), lambda s: None, "q", "m")
            other.complete(rid, "1")
            written.append(rid)
        other.close()

    thread = threading.Thread(target=write)
    thread.start()
    try:
        while len(written) < 20:
            threading.Event().wait(0.01)
        copies = [backup_file(ledger_path, tmp_path / f"copy{i}.sqlite") for i in range(3)]
        assert main(["ledger", "backup", str(ledger_path), str(tmp_path / "cli.sqlite")]) == 0
    finally:
        stop.set()
        thread.join()
    for copy in [*copies, tmp_path / "cli.sqlite"]:
        assert copy.stat().st_mode & 0o777 == 0o600
        report = verify_file(copy)  # one moment: every chain whole, no half-written release
        assert report.ok, report.problems
        rows = report.sessions[0].releases
        assert 20 <= rows <= len(written) + 1
        conn = sqlite3.connect(copy)
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"
        conn.close()
        assert Ledger(copy).spent("w").epsilon == Fraction(rows, 10)
    with pytest.raises(LedgerError, match="never overwrites"):
        backup_file(ledger_path, copies[0])
    folder = tmp_path / "into"
    folder.mkdir()
    assert backup_file(ledger_path, folder) == folder / ledger_path.name
