"""Run an exploration session in a fresh process, then search it for planted values.

Used by test_sentinel_scan.py: ``python -m tests.curator.probe_client remote|embedded``.
The planted values arrive XOR-encoded in ``PROBE_SENTINELS`` so that this
process holds them in clear only in the few objects the scan excludes.  In
``embedded`` mode the probe loads the data itself (a positive control: the
scan must find the values then).  Prints a JSON report on its last line.
"""

from __future__ import annotations

import gc
import json
import os
import sys
from typing import Any

import numpy as np
import pandas as pd

KEY = 0x5A

EXPLORATION = [
    "pf.count(epsilon=0.1)",
    "pf['wage'].sum(epsilon=0.1)",
    "pf['wage'].mean(epsilon=0.1)",
    "pf['wage'].var(epsilon=0.1)",
    "pf['wage'].std(epsilon=0.1)",
    "pf['wage'].count(epsilon=0.1)",
    "pf['person_id'].with_bounds if False else None",
    "pf.with_bounds(person_id=(0, 1e9))['person_id'].mean(epsilon=0.1)",
    "pf['wage'].quantile([0.1, 0.5, 0.99], epsilon=0.1)",
    "pf['wage'].median(epsilon=0.1)",
    "pf['wage'].hist(bins=20, epsilon=0.1)",
    "pf['region'].value_counts(epsilon=0.1)",
    "pf['region'].mode(epsilon=0.1)",
    "pf.groupby('region').count(epsilon=0.1)",
    "pf.groupby(['region', 'smsa']).size(epsilon=0.1)",
    "pf.groupby('region')['wage'].sum(epsilon=0.1)",
    "pf.groupby('region')['wage'].mean(epsilon=0.1)",
    "pf.groupby('region')['wage'].var(epsilon=0.1)",
    "pf.groupby('region')['wage'].std(epsilon=0.1)",
    "pf.groupby('region').argmax(epsilon=0.1)",
    "pf.groupby('note')['wage'].mean(epsilon=0.1, delta=1e-9)",
    "pf.discover_keys('note', epsilon=0.1, delta=1e-9)",
    "pf['note'].mode(epsilon=0.1)",
    "pf['note'].value_counts(epsilon=0.1)",
    "pf.above_threshold({'big': pf['wage'] > 4000, 'odd': pf['note'] != 'ordinary'}, 1, "
    "epsilon=0.1)",
    "pf.above_threshold([pf['wage'] > 4321], 0, epsilon=0.1, numeric=True)",
    "pf[pf['note'] != 'ordinary']['wage'].mean(epsilon=0.1)",
    "pf.assign(w=pf['wage'] * 2)['w'].sum(epsilon=0.1)",
    "pf.describe(epsilon=0.5)",
    "pf.groupby('region').argmax('mean', 'wage', epsilon=0.1)",
    "pf['wage'].kde(200.0, epsilon=0.1)",
    "pf['wage'].laplace_copy(epsilon=1)",
    "pf['region'].randomized_response(epsilon=1)",
    "pf.linear_regression(['education', 'experience'], 'wage', epsilon=1, steps=5)",
    "pf.assign(high=pf['wage'] > 600).logistic_regression(['education'], 'high', epsilon=1, "
    "steps=5)",
    "pf.session.explain(lambda: pf.describe(epsilon=0.5))",
    "pf.session.explain(lambda: pf['wage'].mean(epsilon=0.1))",
    "pf.session.ledger",
    "pf.session.spent",
    "pf.head()",
    "len(pf)",
    "pf.to_numpy()",
    "pf.__dict__",
    "vars(pf['wage'])",
]


def decode(hex_text: str) -> str:
    return bytes(b ^ KEY for b in bytes.fromhex(hex_text)).decode()


def scan(text: str, number: float, integer: int, exclude: set[int]) -> list[str]:
    """Every object reachable from the garbage collector that holds a planted value."""
    hits: list[str] = []
    raw = text.encode()
    seen: set[int] = {id(raw)}

    def check(obj: Any) -> None:
        if id(obj) in exclude or id(obj) in seen:
            return
        seen.add(id(obj))
        if isinstance(obj, str):
            if text in obj:
                hits.append(f"str of length {len(obj)}")
        elif isinstance(obj, (bytes, bytearray, memoryview)):
            if raw in bytes(obj):
                hits.append(f"{type(obj).__name__} of length {len(obj)}")
        elif isinstance(obj, float):
            if obj == number:
                hits.append("float")
        elif isinstance(obj, int) and not isinstance(obj, bool):
            if obj == integer:
                hits.append("int")
        elif isinstance(obj, np.ndarray):
            if (
                obj.dtype.kind in "fiu"
                and obj.size
                and bool(np.any(obj == number) or np.any(obj == integer))
            ):
                hits.append(f"ndarray {obj.dtype}")
            elif obj.dtype.kind in "OUS":
                for item in obj.ravel().tolist():
                    if isinstance(item, str) and text in item:
                        hits.append("ndarray of str")
                        break
        elif isinstance(obj, pd.api.extensions.ExtensionArray):
            # Arrow-backed strings hold no Python str objects: look inside.
            values = np.asarray(obj, dtype=object)
            if any(isinstance(v, str) and text in v for v in values.tolist()):
                hits.append(f"{type(obj).__name__}")

    gc.collect()
    for obj in gc.get_objects():
        check(obj)
        for ref in gc.get_referents(obj):
            check(ref)
    for module in list(sys.modules.values()):
        for value in list(getattr(module, "__dict__", {}).values()):
            check(value)
    return hits


def main() -> None:
    mode = sys.argv[1]
    from IPython.core.interactiveshell import InteractiveShell

    import dpframe as dp

    shell: Any = InteractiveShell.instance()
    if mode == "remote":
        conn = dp.connect(os.environ["PROBE_URL"], token=os.environ["PROBE_TOKEN"])
        shell.user_ns["pf"] = conn.open("sentinel")
    else:
        session = dp.Session(epsilon=100, delta=1e-6, ledger=":memory:")
        shell.user_ns["pf"] = session.read_csv(
            os.environ["PROBE_CSV"],
            bounds={"wage": (0, 5000), "education": (0, 20), "experience": (-8, 64)},
            categories={"region": ["northeast", "midwest", "south", "west"], "smsa": ["yes", "no"]},
        )
    failed: list[str] = []
    for line in EXPLORATION:
        result = shell.run_cell(line, store_history=True)
        if not result.success:
            failed.append(line)
    hex_text, hex_number, hex_int = os.environ["PROBE_SENTINELS"].split(":")
    text = decode(hex_text)
    number = float(decode(hex_number))
    integer = int(decode(hex_int))
    hits = scan(text, number, integer, {id(text), id(number), id(integer)})
    history: Any = shell.history_manager
    history_text = json.dumps([str(x) for x in history.input_hist_raw]) + json.dumps(
        {k: repr(v) for k, v in history.output_hist.items()}
    )
    history_hits = int(text in history_text)
    report = {
        "cells": len(EXPLORATION),
        "failed_cells": failed,
        "objects": len(gc.get_objects()),
        "hits": hits[:20],
        "hit_count": len(hits),
        "history_hits": history_hits,
    }
    print(json.dumps(report))


if __name__ == "__main__":
    main()
