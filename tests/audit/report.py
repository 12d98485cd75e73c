"""Summarise an audit run as markdown: ``python -m tests.audit.report RESULTS.jsonl``.

The JSON lines come from ``DPFRAME_AUDIT_REPORT=RESULTS.jsonl pytest tests/audit [--audit-heavy]``.
"""

from __future__ import annotations

import json
import sys
from collections import defaultdict
from typing import Any


def _api(rows: list[dict[str, Any]]) -> list[str]:
    by_mechanism: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_mechanism[str(row["mechanism"])].append(row)
    first = rows[0]
    out = [
        f"Public-API suite: {len(by_mechanism)} releases x their neighbours, "
        f"{first['samples']} releases per dataset per vote, {first['votes']} vote(s).\n",
        "| release | pairs | violations | votes flagged | largest δ̂ (pair) | median tolerance |",
        "|---|---|---|---|---|---|",
    ]
    for name in sorted(by_mechanism):
        items = by_mechanism[name]
        worst = max(items, key=lambda r: float(r["delta_hat"]))
        tolerances = sorted(float(r["max_tolerance"]) for r in items)
        out.append(
            f"| {name} | {len(items)} | {sum(bool(r['violation']) for r in items)} | "
            f"{sum(int(r['flags']) for r in items)}/{sum(int(r['votes']) for r in items)} | "
            f"{float(worst['delta_hat']):+.3f} ({worst['pair']}) | "
            f"{tolerances[len(tolerances) // 2]:.3f} |"
        )
    return out


def _variants(rows: list[dict[str, Any]]) -> list[str]:
    out = [
        "| wrong variant | pair | audits | missed audits | votes not flagged "
        "| median δ̂ | twin: false-alarm audits | twin: votes flagged |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        votes = int(row["audits"]) * int(row["votes"])
        out.append(
            f"| {row['variant']} | {row['pair']} | {row['audits']} | "
            f"{row['wrong_missed_audits']} | {row['wrong_votes_not_flagged']}/{votes} | "
            f"{float(row['wrong_median_delta_hat']):.3f} | "
            f"{row['correct_false_alarm_audits']} | {row['correct_votes_flagged']}/{votes} |"
        )
    return out


def _api_size(rows: list[dict[str, Any]]) -> list[str]:
    first = rows[0]
    out = [
        f"Wrong variants at the public-API suite's size ({first['samples']} releases per "
        f"dataset per vote, {first['votes']} vote(s)):\n",
        "| wrong variant | audits | flagged |",
        "|---|---|---|",
    ]
    out += [f"| {r['variant']} | {r['audits']} | {r['flagged_audits']} |" for r in rows]
    return out


def main() -> None:
    """Print the summary of the JSON lines file given as the first argument."""
    with open(sys.argv[1], encoding="utf-8") as source:
        rows = [json.loads(line) for line in source if line.strip()]
    api = [r for r in rows if r["kind"] == "api"]
    variants = [r for r in rows if r["kind"] == "variant"]
    if api:
        print("\n".join(_api(api)))
    if variants:
        print()
        print("\n".join(_variants(variants)))
    small = [r for r in rows if r["kind"] == "api_size_variant"]
    if small:
        print()
        print("\n".join(_api_size(small)))


if __name__ == "__main__":
    main()
