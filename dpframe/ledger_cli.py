"""The ``dpframe ledger`` commands: scrub, verify, export, backup (see :mod:`dpframe.cli`)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from dpframe.accounting.ledger_chain import Head
from dpframe.errors import DPError, LedgerError

__all__ = ["add_commands", "run"]


def add_commands(ledger_commands: Any) -> None:
    """Add ``verify``, ``export`` and ``backup`` to the ``ledger`` sub-command parser."""
    verify = ledger_commands.add_parser(
        "verify",
        help="check a ledger's (or a release bundle's) hash chains, spends and noise",
        description=(
            "Recomputes every session's spend from its rows with the session's own accountant, "
            "checks each recorded noise calibration against its cost, and checks the hash "
            "chain. Exit status 0: intact; 1: a problem (each is named by session and row); "
            "2: the file cannot be read. A rewrite of a chain's whole tail is caught only "
            "against an anchor (--anchor). Released values are not verified: that needs the "
            "data, which is never read."
        ),
    )
    verify.add_argument("path", help="a ledger file, or a bundle folder or bundle.json")
    verify.add_argument(
        "--bundle", action="store_true", help="PATH is a release bundle (found by itself too)"
    )
    verify.add_argument(
        "--anchor",
        action="append",
        default=[],
        help="a head recorded elsewhere: a JSON file with session, n and hash (an exported "
        "bundle.json, a saved notebook head, a curator's signed head); repeatable",
    )
    verify.add_argument(
        "--public-key",
        help="the curator's Ed25519 public key (base64, from /v1/health) that signed heads "
        "given with --anchor must verify under",
    )
    export = ledger_commands.add_parser(
        "export",
        help="write one session's release bundle (JSON, and Parquet with pyarrow)",
        description="Writes DIR/bundle.json (and DIR/releases.parquet when pyarrow is "
        "installed): plan, mechanism, noise scale, cost, value, interval, time and chain head "
        "of every release of the session; `dpframe ledger verify DIR` checks it offline.",
    )
    export.add_argument("path", help="the ledger file")
    export.add_argument("--session", required=True, help="the session's name")
    export.add_argument(
        "--out", help="the folder to write the bundle into (default: ./<session>-bundle)"
    )
    backup = ledger_commands.add_parser(
        "backup",
        help="a consistent copy of a ledger (SQLite's backup API), mode 0600",
        description="Copies the ledger as of one moment, even while it is written; never "
        "overwrites DEST.",
    )
    summary = ledger_commands.add_parser(
        "summary",
        help="the data owner's view: per dataset its cap and use, per analyst grant and spend",
        description="Per dataset: the catalog's cap and what all analysts used of it; per "
        "analyst: the grant, the releases, the spend and the formal (epsilon, delta) "
        "guarantee. Reads the ledger read-only; reads no data.",
    )
    summary.add_argument("path", help="the curator's catalog.toml, or a ledger file")
    backup.add_argument("path", help="the ledger file")
    backup.add_argument("dest", help="the new file (or a folder to put it in)")


def run(args: argparse.Namespace) -> int:
    """Run ``dpframe ledger verify|export|backup``; returns the exit status."""
    command = args.ledger_command
    try:
        if command == "verify":
            return _verify(args)
        if command == "export":
            return _export(args)
        if command == "summary":
            from dpframe.cli_ledger_summary import summarize, summary_lines

            ledger, datasets = summarize(args.path)
            print(f"{ledger}:")
            from_catalog = Path(args.path).suffix.lower() == ".toml"
            print("\n".join(summary_lines(datasets, catalog=from_catalog)))
            return 0
        from dpframe.accounting.ledger_backup import backup_file

        copy = backup_file(args.path, args.dest)
        print(f"{args.path}: backed up to {copy} (mode 0600).")
        return 0
    except DPError as exc:  # LedgerError, CatalogError
        print(f"dpframe ledger {command}: {exc}", file=sys.stderr)
        return 2


def _verify(args: argparse.Namespace) -> int:
    from dpframe.accounting.ledger_verify import VALUES_NOTE, verify_file
    from dpframe.engine.ledger_bundle import is_bundle, verify_bundle

    anchors = [h for file in args.anchor for h in read_anchors(file, args.public_key)]
    if args.bundle or is_bundle(args.path):
        report = verify_bundle(args.path, anchors)
    else:
        report = verify_file(args.path, anchors)
    print(f"{report.path}: {len(report.sessions)} session(s)")
    for s in report.sessions:
        head = "no chain" if s.head is None else f"head {s.head.n}:{s.head.hash}"
        print(
            f"  session {s.session!r} ({s.accounting}): {s.releases} release(s), spent "
            f"ε={float(s.spent.epsilon):.6g}, δ={float(s.spent.delta):.3g} of "
            f"ε={float(s.total.epsilon):.6g}, δ={float(s.total.delta):.3g}; "
            f"{s.calibrations} noise calibration(s) checked; {s.anchored} anchor(s); {head}"
        )
    if not anchors:
        print("  no anchor given: a rewrite of a chain's whole tail would not be caught")
    print(VALUES_NOTE)
    if report.ok:
        print("OK: every chain, spend and noise calibration checks.")
        return 0
    print(f"FAILED: {len(report.problems)} problem(s):")
    for problem in report.problems:
        print(f"  {problem}")
    return 1


def _export(args: argparse.Namespace) -> int:
    from dpframe.engine.ledger_bundle import export_session

    out = args.out or "".join(c if c.isalnum() or c in "-_." else "_" for c in args.session)
    if args.out is None:
        out += "-bundle"
    target, head = export_session(args.path, args.session, out)
    tail = "" if head is None else f"; chain head {head.n}:{head.hash}"
    print(f"{args.path}: session {args.session!r} exported to {target}{tail}")
    return 0


def read_anchors(file: str, public_key: str | None) -> list[Head]:
    """The heads an anchor file records (a head, a list of heads, a bundle, a signed head).

    Raises:
        LedgerError: the file is unreadable, or a signed head's signature does not verify.
    """
    try:
        data = json.loads(Path(file).read_text())
    except (OSError, ValueError) as exc:
        raise LedgerError(f"Cannot read the anchor {file} ({exc}).") from None
    if isinstance(data, dict) and data.get("format", "").startswith("dpframe-release-bundle"):
        data = data.get("head")
    items = data if isinstance(data, list) else [data]
    heads = []
    for item in items:
        if not isinstance(item, dict) or not {"session", "n", "hash"} <= set(item):
            raise LedgerError(f"The anchor {file} holds no head (session, n, hash).")
        if "signature" in item:
            from dpframe.accounting.head_signatures import check_signed_head

            check_signed_head(item, public_key)
        heads.append(Head(str(item["session"]), int(item["n"]), str(item["hash"])))
    return heads
