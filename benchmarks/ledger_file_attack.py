"""The ledger-file attack of issue 27 (part 2), before and after: what a copied ledger folder tells.

For each source tree (``--tree NAME=PATH``, default this one), a fresh
interpreter running that tree's dpframe loads a clinic table (``--rows`` rows,
an ``age`` column and a yes/no ``hiv`` column with ``--positives`` true) with
a file ledger in a folder of its own, and releases three counts.  Then the
attacker, with this tree's dpframe but without the owner's key file (it is
not in the folder), copies the folder and:

1. reads every text and number stored in every SQLite file in it;
2. tries every (n, positives) with n up to ``--search`` against them, with
   dpframe's unkeyed schema-5 digest of a yes/no column (a closed form of
   :func:`dpframe.backends.column_digests.column_digest`);
3. tries the same with dpframe's schema-6 keyed digest under a guessed key.

It prints, per tree, the files in the folder, whether each search found the
pair, and the seconds it took::

    python -m benchmarks.ledger_file_attack --tree before=/tmp/base --tree after=.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks.releases import new_releases

__all__ = ["main"]

REPO_ROOT = Path(__file__).resolve().parent.parent


def _owner(tree: str, folder: str, rows: int, positives: int) -> None:
    """The data owner's session (run in a child with ``tree``'s dpframe first on the path)."""
    sys.path.insert(0, tree)
    os.environ["DPFRAME_KEY"] = str(Path(folder).parent / "owner-config" / "key")
    import dpframe as dp

    rng = np.random.default_rng(27)
    hiv = np.zeros(rows, dtype=bool)
    hiv[rng.choice(rows, positives, replace=False)] = True
    frame = pd.DataFrame({"age": rng.integers(18, 90, rows), "hiv": hiv})
    session = dp.Session(epsilon=1, ledger=Path(folder) / "ledger.sqlite", name="clinic")
    pf = session.private_frame(frame, bounds={"age": (0, 100)})
    for _ in range(3):
        pf.count(epsilon=0.1)
    print(json.dumps({"dpframe": str(Path(dp.__file__).resolve().parent.parent)}))


def folder_values(folder: Path) -> set[str]:
    """Every text and number stored in every table of every SQLite file in ``folder``."""
    out: set[str] = set()
    for path in sorted(folder.iterdir()):
        try:
            conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
            names = conn.execute("SELECT name FROM sqlite_master WHERE type='table'").fetchall()
        except sqlite3.DatabaseError:
            continue  # -wal, -shm: read through their database
        for (table,) in names:
            for row in conn.execute(f"SELECT * FROM '{table}'"):
                out.update(str(v) for v in row if v is not None)
        conn.close()
    return out


def legacy_yes_no_digest() -> Callable[[int, int], str]:
    """dpframe's schema-5 digest of a yes/no column with ``yes`` of ``n`` true (closed form)."""
    from dpframe.backends import column_digests as legacy

    h1, h0 = (int(h) for h in legacy._hashes(pd.Series([1.0, 0.0])))

    def mix(h: int) -> int:
        return ((h ^ (h >> 31)) * int(legacy._MULTIPLIER)) % 2**64

    def digest(n: int, yes: int) -> str:
        plain = (yes * h1 + (n - yes) * h0) % 2**64
        mixed = (yes * mix(h1) + (n - yes) * mix(h0)) % 2**64
        out = hashlib.blake2b(digest_size=16)
        out.update(f"number\x00{n}\x00".encode())
        out.update(plain.to_bytes(8, "little") + mixed.to_bytes(8, "little"))
        return out.hexdigest()

    return digest


def keyed_yes_no_digest(key: Any) -> Callable[[int, int], str]:
    """dpframe's schema-6 digest of such a column under ``key`` (a SketchKey)."""
    from dpframe.backends.cell_hashes import KIND_OFFSETS, ColumnHasher

    h1, h0 = ColumnHasher("guess", pd.Series([True, False])).block(0, 2).tolist()
    offset = KIND_OFFSETS["number"]
    return lambda n, yes: key.digest("number", (yes * h1 + (n - yes) * h0 + n * offset) % 2**64)


def search(
    found: set[str], digest: Callable[[int, int], str], limit: int
) -> tuple[tuple[int, int] | None, float]:
    """Try every (n, yes) with n up to ``limit``: the pair whose digest is found, and the time."""
    start = time.perf_counter()
    for n in range(1, limit + 1):
        for yes in range(n + 1):
            if digest(n, yes) in found:
                return (n, yes), time.perf_counter() - start
    return None, time.perf_counter() - start


def _attack(tree: str, rows: int, positives: int, limit: int) -> dict[str, Any]:
    scratch = Path(tempfile.mkdtemp(prefix="dpframe-attack-"))
    folder = scratch / "notebooks"
    folder.mkdir()
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "benchmarks.ledger_file_attack",
            "owner",
            str(Path(tree).resolve()),
            str(folder),
            str(rows),
            str(positives),
        ],
        capture_output=True,
        text=True,
        cwd=REPO_ROOT,
        timeout=600,
        check=True,
    ).stdout
    owner = json.loads(out.strip().splitlines()[-1])
    stolen = scratch / "copy"
    shutil.copytree(folder, stolen)
    values = folder_values(stolen)
    files = sorted(p.name for p in stolen.iterdir())
    from dpframe.backends.data_sketch import SketchKey

    legacy, legacy_s = search(values, legacy_yes_no_digest(), limit)
    guessed, guessed_s = search(values, keyed_yes_no_digest(SketchKey(bytes(32))), limit)
    shutil.rmtree(scratch)
    return {
        "dpframe": owner["dpframe"],
        "files": files,
        "values": len(values),
        "unkeyed search": {"found": legacy, "seconds": round(legacy_s, 2)},
        "guessed-key search": {"found": guessed, "seconds": round(guessed_s, 2)},
    }


def main(argv: list[str] | None = None) -> None:
    """Command line: the attacker (default) or the owner's child."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["owner"]:
        _owner(argv[1], argv[2], int(argv[3]), int(argv[4]))
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--rows", type=int, default=1088)
    parser.add_argument("--positives", type=int, default=680)
    parser.add_argument("--search", type=int, default=1200, help="largest n tried")
    parser.add_argument("--tree", action="append", default=[], help="NAME=PATH (repeatable)")
    args = parser.parse_args(argv)
    trees = [t.split("=", 1) for t in args.tree] or [["current", str(REPO_ROOT)]]
    print(f"# load average {os.getloadavg()[0]:.1f}; true n = {args.rows}, yes = {args.positives}")
    for name, path in trees:
        result = _attack(path, args.rows, args.positives, args.search)
        print(f"{name}: {json.dumps(result)}", flush=True)


if __name__ == "__main__":
    with new_releases():  # each call a new release, never a re-run (issue 31)
        main()
