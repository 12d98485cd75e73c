"""Release bundles: one session's releases, with their chain, written to verify offline.

``dpframe ledger export PATH --session NAME --out DIR`` writes ``DIR/bundle.json``
(and ``DIR/releases.parquet`` when pyarrow is importable): the session's
budget, every chain link, and for each release its plan (the label and the
request's key), mechanism, noise calibrations and scales, cost, status,
shown value, intervals (computed from the stored answer), time, the stored
answer itself (base64 of the ledger's bytes) and the chain head.
``dpframe ledger verify DIR`` checks a bundle as it checks a ledger
(:func:`verify_bundle`): the chain, the spend, the calibrations, and that
every derived field (value, intervals, the Parquet table) agrees with the
records the chain covers.  Only the ledger file is read: no data, no sketch.
"""

from __future__ import annotations

import base64
import json
import math
import zlib
from datetime import datetime, timezone
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpframe.accounting.ledger_chain import CHARGE_FIELDS, Head
from dpframe.accounting.ledger_verify import (
    VALUES_NOTE,
    Finding,
    Link,
    Report,
    open_read_only,
    read_session,
    verify_records,
)
from dpframe.engine.wire import decode_response, loads
from dpframe.errors import DPError, LedgerError

__all__ = ["BUNDLE_FORMAT", "export_session", "is_bundle", "verify_bundle"]

BUNDLE_FORMAT = "dpframe-release-bundle/1"
_JSON, _PARQUET = "bundle.json", "releases.parquet"
#: The Parquet table's columns (one row per release; the JSON holds everything).
_TABLE = (
    "id",
    "time",
    "plan",
    "mechanism",
    "noise_scale",
    "epsilon",
    "delta",
    "rho",
    "status",
    "value",
    "interval",
    "chain_head",
)


def export_session(path: str | Path, session: str, out: str | Path) -> tuple[Path, Head | None]:
    """Write ``session``'s release bundle from the ledger at ``path`` into the folder ``out``.

    Returns:
        The bundle's JSON file and the chain head it records.

    Raises:
        LedgerError: the ledger cannot be read, or holds no session of that name.
    """
    conn = open_read_only(path)
    try:
        links, budget, rows = read_session(conn, session)
    finally:
        conn.close()
    if budget is None and not rows and not links:
        raise LedgerError(f"The ledger {path} holds no session named {session!r}.")
    head = None if not links else Head(session, links[-1][0], links[-1][4])
    releases = [_release(row, head) for row in rows]
    bundle = {
        "format": BUNDLE_FORMAT,
        "session": session,
        "exported": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "budget": budget,
        "head": None if head is None else head.to_dict(),
        "links": [list(link) for link in links],
        "releases": releases,
        "note": VALUES_NOTE,
    }
    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / _JSON
    target.write_text(json.dumps(bundle, indent=1, sort_keys=True, allow_nan=True))
    table = _table(releases)
    if table is not None:
        table.to_parquet(folder / _PARQUET, index=False)
    return target, head


def _release(row: dict[str, Any], head: Head | None) -> dict[str, Any]:
    """One release of a bundle: the recorded row, and what is derived from it for readers."""
    body = row["body"]
    answer, interval, scales = _derived(body, row["noise"])
    return {
        "record": {
            **{f: row[f] for f in CHARGE_FIELDS},
            "status": row["status"],
            "value": row["value"],
            "noise": row["noise"],
            "body": None if body is None else base64.b64encode(bytes(body)).decode(),
        },
        "id": row["id"],
        "time": datetime.fromtimestamp(float(row["time"]), timezone.utc).isoformat(),
        "plan": {"label": row["query"], "request": row["request"]},
        "mechanism": row["mechanism"],
        "noise_scale": scales,
        "cost": {"epsilon": row["epsilon"], "delta": row["delta"], "rho": row["rho"]},
        "status": row["status"],
        "value": row["value"],
        "answer": answer,
        "interval": interval,
        "chain_head": None if head is None else head.hash,
    }


def _derived(body: bytes | None, noise: str | None) -> tuple[Any, Any, list[float]]:
    """The stored answer as JSON, its 95% intervals, and the noise scales (value units)."""
    scales: list[float] = []
    for entry in json.loads(noise) if noise else []:
        parameter = float(Fraction(entry["parameter"]))
        unit = parameter if entry["kind"] == "laplace" else math.sqrt(parameter)
        scales.append(unit * float(entry["grid"]))
    if body is None:
        return None, None, scales
    try:
        raw = bytes(body)  # JSON since answers stopped being compressed; zlib before
        kept = loads(raw if raw[:1] == b"{" else zlib.decompress(raw))
        result = decode_response(kept["result"])
    except (DPError, zlib.error, KeyError, TypeError, ValueError):
        return None, None, scales
    return kept, _interval(result), scales


def _interval(result: Any) -> Any:
    """The 95% interval(s) of a released result (None where it has none)."""
    try:
        if hasattr(result, "ci") and callable(result.ci):
            low, high = result.ci(0.95)
            return [float(low), float(high)]
        accessor = getattr(result, "dp", None)
        if accessor is not None:
            frame = accessor.ci(0.95)
            return json.loads(frame.to_json(orient="split", double_precision=15))
    except Exception:  # a result without intervals (post-processed, text): none shown
        return None
    return None


def _table(releases: list[dict[str, Any]]) -> Any:
    """The Parquet table's frame (None when pyarrow is not importable)."""
    import importlib.util

    import pandas as pd

    if importlib.util.find_spec("pyarrow") is None:  # to_parquet needs it
        return None

    def cell(release: dict[str, Any], column: str) -> Any:
        if column in ("epsilon", "delta", "rho"):
            return release["cost"][column]
        if column in ("noise_scale", "interval"):
            return _same(release[column])
        return release[column]

    return pd.DataFrame({column: [cell(r, column) for r in releases] for column in _TABLE})


def is_bundle(path: str | Path) -> bool:
    """Whether ``path`` is a bundle (its folder or its JSON file)."""
    file = Path(path)
    if file.is_dir():
        return (file / _JSON).is_file()
    return file.suffix == ".json"


def verify_bundle(path: str | Path, anchors: list[Head] | None = None) -> Report:
    """Verify a release bundle offline (the chain, spend, calibrations, derived fields).

    Raises:
        LedgerError: the bundle cannot be read.
    """
    file = Path(path)
    folder = file if file.is_dir() else file.parent
    file = folder / _JSON if file.is_dir() else file
    try:
        bundle = json.loads(file.read_text())
        if bundle.get("format") != BUNDLE_FORMAT:
            raise ValueError(f"format {bundle.get('format')!r}")
        session = str(bundle["session"])
        links: list[Link] = [
            (int(n), str(k), r, str(d), str(h)) for n, k, r, d, h in bundle["links"]
        ]
        releases = list(bundle["releases"])
        rows = [_row(r["record"]) for r in releases]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise LedgerError(f"{file} is not a readable release bundle ({exc}).") from None
    report = Report(str(file))
    verify_records(session, links, bundle.get("budget"), rows, list(anchors or ()), report)
    problems = report.problems
    stated = bundle.get("head")
    actual = None if not links else Head(session, links[-1][0], links[-1][4]).to_dict()
    if stated != actual:
        problems.append(Finding(session, "head", "the bundle's head is not its chain's head"))
    head = None if actual is None else Head(session, actual["n"], actual["hash"])
    for release, row in zip(releases, rows, strict=True):
        expected = _release(row, head)
        for key in ("id", "plan", "mechanism", "noise_scale", "cost", "status", "value"):
            if release.get(key) != expected[key]:
                problems.append(
                    Finding(session, f"release {row['id']}", f"its {key} differs from its record")
                )
        if _same(release.get("interval")) != _same(expected["interval"]):
            problems.append(
                Finding(session, f"release {row['id']}", "its interval differs from its answer")
            )
    parquet = folder / _PARQUET
    if parquet.is_file():
        _check_table(parquet, releases, session, problems)
    return report


def _same(value: Any) -> str:
    """A value's JSON text as the bundle writes it (sorted keys), for comparisons."""
    return json.dumps(value, sort_keys=True)


def _row(record: dict[str, Any]) -> dict[str, Any]:
    body = record.get("body")
    return {**record, "body": None if body is None else base64.b64decode(body)}


def _check_table(
    parquet: Path, releases: list[dict[str, Any]], session: str, problems: list[Finding]
) -> None:
    """The Parquet table must say what the JSON says."""
    try:
        import pandas as pd

        table = pd.read_parquet(parquet)
        expected = _table(releases)
    except Exception as exc:  # pyarrow missing or the file unreadable
        problems.append(Finding(session, "releases.parquet", f"not readable ({exc})"))
        return
    if expected is None:
        return
    if list(table.columns) != list(expected.columns) or not table.astype(str).equals(
        expected.astype(str)
    ):
        problems.append(
            Finding(session, "releases.parquet", "the table differs from the bundle's releases")
        )
