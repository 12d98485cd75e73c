"""Budget guard rails of a session's frames: one privacy-unit setting, a warning on a new name.

Two ways a budget gets weaker than the analyst thinks, both checked when a
frame is loaded (before anything can be charged), against the ledger file so
that every process sharing it sees the same answer:

* **Another privacy-unit setting.**  A session's budget is a guarantee for one
  kind of neighbour: one row, or all the rows of one unit (at most k of them
  per frame; frames of one ID space share their units, issue 32).
  Mixing row-level frames with unit frames in one session would let row-level
  releases (sensitivity 1) spend a budget meant per person; unit frames may
  differ in their ID column, row limit and ID space, since each release's
  sensitivity counts its own frame's limit.  The session's first frame
  fixes the setting in the ledger (:meth:`Ledger.fix_privacy_unit
  <dpframe.accounting.ledger.Ledger.fix_privacy_unit>`); a frame with another
  setting is refused (:class:`~dpframe.errors.SchemaError`) in this process or
  any other, whatever its data: a column subset or a shuffled copy cannot get
  round the check, as it could when the check was keyed by the data's
  fingerprint.
* **A fresh budget by accident.**  A session's budget is keyed by its name, so
  the same people loaded under a new name start from zero.  Each load of a
  pandas or Dask frame with a file ledger is sketched
  (:mod:`dpframe.backends.data_sketch`: its keyed identity, a bottom-k sketch
  of its rows as a multiset, and each column's keyed digest, in one chunked
  pass) and the sketch is recorded in the ledger's sketch file
  (:mod:`dpframe.accounting.ledger_sketches`).  When the data shares at least
  :data:`SIMILAR` of its rows (of the larger data set) with data that another
  session has spent on, or a column with one of its columns, a
  :class:`~dpframe.errors.BudgetResetWarning` names those sessions, their
  releases and the share of rows in common: the same data in another order,
  with other column names or dtypes, one row dropped or appended, a 99%
  sample, a ``dropna()``, a column subset.  A warning, not a refusal: two
  sessions on the same data can be deliberate (a separate budget approved for
  a separate purpose), and tables whose rows take few distinct values look
  alike whatever their origin.

What is recorded is keyed with the user's key
(:mod:`dpframe.accounting.ledger_key`), kept outside the ledger's folder: a
copy of the folder cannot be searched for the row count or any count in the
data.  An in-memory ledger keeps no other session's spend, so it sketches
nothing (the identity only, under a key of its own).  A curator names its
data (catalog name and version), computes nothing from the rows outside a
release, and reads no key.  An older ledger's unkeyed entries for the data
are brought up to date at its load (:mod:`dpframe.accounting.ledger_legacy`).
"""

from __future__ import annotations

import sqlite3
import warnings
from dataclasses import dataclass, field

import pandas as pd

from dpframe.accounting.ledger import Ledger
from dpframe.accounting.ledger_frames import FrameRecord
from dpframe.accounting.ledger_legacy import holds_unkeyed, rekey, unkeyed_matches
from dpframe.accounting.ledger_sketches import SketchStore
from dpframe.accounting.ledger_traces import STORE_FAILED
from dpframe.backends.base import Backend
from dpframe.backends.column_digests import column_digests
from dpframe.backends.data_sketch import FrameSketch, Sketchable, SketchKey, shared, sketch_frame
from dpframe.errors import BudgetResetWarning, SchemaError

__all__ = [
    "MIN_COLUMN_ENTRIES",
    "SIMILAR",
    "LoadedData",
    "check_other_sessions",
    "fix_unit_setting",
    "identify",
    "unit_setting",
]

#: The estimated share of rows (or of a column's values) in common, of the larger data
#: set, from which a load warns.
SIMILAR = 0.5
#: A column sketch is compared only when it holds at least this many values.
MIN_COLUMN_ENTRIES = 32


def unit_setting(unit: tuple[str, int] | None) -> str:
    """The public text of a privacy-unit setting, as the ledger records it.

    Args:
        unit: the unit column and its row limit, or None for one row per person.
    """
    if unit is None:
        return "rows"
    column, max_rows = unit
    return f"unit {column!r}, at most {max_rows} rows"


def _describe(setting: str) -> str:
    return "one row per person" if setting == "rows" else f"privacy unit {setting[5:]}"


def fix_unit_setting(
    ledger: Ledger,
    session: str,
    unit: tuple[str, int] | None,
    frame: FrameRecord | None = None,
) -> None:
    """Fix ``session``'s privacy-unit setting at its first frame; refuse another one.

    Args:
        ledger: the session's ledger (the setting is recorded there).
        session: the session's name.
        unit: this frame's unit column and row limit, or None for row level.
        frame: the frame's record (dataset, ID space, limits), written to the
            ledger with the setting when it is admitted.

    Raises:
        SchemaError: the session's ledger records another setting (nothing
            was loaded or charged).
    """
    asked = unit_setting(unit)
    recorded = ledger.fix_privacy_unit(session, asked, frame)
    if (recorded == "rows") != (asked == "rows"):
        raise SchemaError(
            f"Session {session!r} protects {_describe(recorded)} (fixed by its first frame, "
            f"recorded in the ledger {ledger.path}); this frame asks for {_describe(asked)}. "
            "Mixing settings in one budget would let releases of one setting spend a budget "
            "that guarantees the other (frames with a privacy unit may differ in their ID "
            "column, row limit and ID space). Load the frame with a privacy unit of its own, "
            "or use another session (name=) for row-level data."
        )


@dataclass(frozen=True)
class LoadedData:
    """What a load computed about its data (see :func:`identify`).

    Attributes:
        identity: the keyed identity: the data's key in the ledger.
        fingerprint: the backend's unkeyed fingerprint (never recorded; older
            ledgers named the data by it).
        sketch: the keyed sketch (file ledgers only), or None.
    """

    identity: str
    fingerprint: str
    sketch: FrameSketch | None


def identify(
    ledger: Ledger, backend: Backend, frame: object, units: tuple[str, int] | None = None
) -> LoadedData:
    """The data's keyed identity and, for a file ledger, its sketch: one pass over the rows.

    Args:
        ledger: the session's ledger (its key: :attr:`Ledger.traces`).
        backend: the data's backend.
        frame: the data as loaded (a pandas frame is sketched here; a Dask
            frame on its workers, partition by partition).
        units: the privacy unit column and its bound, if any: a backend that
            sketches on its workers counts the rows per unit in the same pass.

    Raises:
        SchemaError: a column holds values that cannot be hashed (nothing was
            loaded or charged).
        LedgerError: the key file cannot be created or read.
    """
    key = SketchKey(ledger.traces.key)
    sketch: FrameSketch | None = None
    if ledger.path != ":memory:" and isinstance(frame, pd.DataFrame):
        sketch = sketch_frame(frame, key)
    elif ledger.path != ":memory:" and isinstance(backend, Sketchable):
        sketch = backend.data_sketch(key, units)
    if sketch is not None:
        return LoadedData(sketch.identity, sketch.fingerprint, sketch)
    fingerprint = backend.fingerprint()
    return LoadedData(key.identity(fingerprint), fingerprint, None)


@dataclass
class _Alike:
    """How one recorded dataset resembles the data being loaded."""

    rows: float = 0.0  # estimated share of rows in common (of the larger)
    columns: set[str] = field(default_factory=set)  # this data's columns that match
    same: bool = False  # exactly the same data (the same identity)


def check_other_sessions(ledger: Ledger, session: str, data: LoadedData, frame: object) -> None:
    """Record the data's sketch; warn if other sessions spent on data like it.

    Also brings an older ledger's entries for this data up to date: its
    releases recorded under the unkeyed fingerprint are renamed to the keyed
    identity, and its unkeyed digests deleted
    (:mod:`~dpframe.accounting.ledger_legacy`).

    Args:
        ledger: the session's ledger.
        session: the session's name.
        data: what :func:`identify` computed.
        frame: the private data (read here, on this machine only, for an
            older ledger's unkeyed digests).

    Warns:
        BudgetResetWarning: naming the other sessions, their releases, the
            estimated share of rows in common and the matching columns (names
            and shares only, never a value).
    """
    if ledger.path == ":memory:":
        return
    alike = {data.identity: _Alike(rows=1.0, same=True)}
    if ledger.run(holds_unkeyed):
        _bring_up_to_date(ledger, data, frame, alike)
    store = ledger.traces.sketches()
    sketch = data.sketch
    if store is not None and sketch is not None:
        try:
            _compare(store, sketch, alike)
            _record(store, sketch)
        except sqlite3.Error as exc:  # the sketch file only: the ledger is not involved
            warnings.warn(
                STORE_FAILED.format(path=store.path, exc=exc), RuntimeWarning, stacklevel=4
            )
    _warn(ledger, session, alike)


def _bring_up_to_date(
    ledger: Ledger, data: LoadedData, frame: object, alike: dict[str, _Alike]
) -> None:
    """Rekey this data's unkeyed entries; note older data whose unkeyed digests match."""
    ledger.run(lambda conn: rekey(conn, data.fingerprint, data.identity), write=True)
    if not isinstance(frame, pd.DataFrame):
        return  # schema 5 recorded no digests of Dask frames
    digests = column_digests(frame)
    for dataset, _, mine in ledger.run(lambda conn: unkeyed_matches(conn, digests)):
        alike.setdefault(dataset, _Alike()).columns.add(mine)


def _compare(store: SketchStore, sketch: FrameSketch, alike: dict[str, _Alike]) -> None:
    """Note every recorded dataset with rows, or a column, like this data's."""
    tags: dict[str, tuple[int, ...]] = {"": sketch.rows}
    for name, column in sketch.columns.items():
        if column.tags is not None and column.entries >= MIN_COLUMN_ENTRIES:
            tags[name] = column.tags
    for match in store.matches(tags):
        if match.mine == "" and match.part == "rows":
            share = shared(match.common, sketch.entries)
            if share >= SIMILAR:
                found = alike.setdefault(match.dataset, _Alike())
                found.rows = max(found.rows, share)
        elif match.mine and match.part == "column":
            entries = sketch.columns[match.mine].entries
            if shared(match.common, entries) >= SIMILAR:
                alike.setdefault(match.dataset, _Alike()).columns.add(match.mine)
    digests = {name: column.digest for name, column in sketch.columns.items()}
    for dataset, _, mine in store.same_digests(digests):
        alike.setdefault(dataset, _Alike()).columns.add(mine)


def _record(store: SketchStore, sketch: FrameSketch) -> None:
    """Record the sketch under the data's identity (a reload of the same data writes nothing)."""
    parts: list[tuple[str, str, tuple[int, ...]]] = [("rows", "", sketch.rows)]
    parts += [("column", n, c.tags) for n, c in sketch.columns.items() if c.tags is not None]
    digests = {name: column.digest for name, column in sketch.columns.items()}
    tags = frozenset(t for _, _, values in parts for t in values)
    if store.recorded(sketch.identity) != (tags, digests):
        store.record(sketch.identity, parts, digests)


def _warn(ledger: Ledger, session: str, alike: dict[str, _Alike]) -> None:
    """Warn about the other sessions with releases on any of the ``alike`` datasets."""
    found: dict[str, _Alike] = {}  # another session: how its data resembles this data
    releases: dict[str, int] = {}
    for dataset, resemblance in alike.items():
        for name, count in ledger.spend_by_session(dataset).items():
            if name == session:
                continue
            mine = found.setdefault(name, _Alike())
            mine.rows = max(mine.rows, resemblance.rows)
            mine.columns |= resemblance.columns
            mine.same = mine.same or resemblance.same
            releases[name] = releases.get(name, 0) + count
    if not found:
        return
    shown = "; ".join(
        f"{name!r}: {_releases(releases[name])} ({_resemblance(found[name])})"
        for name in sorted(found)
    )
    warnings.warn(
        f"This ledger already records spend on data like this under another session name: "
        f"{shown}. A budget belongs to a session name, so session {session!r} starts a "
        "separate budget for the same people. To go on with the budget already spent, open "
        "the session by its recorded name (dp.Session(..., name=...)); if the data is "
        "unrelated, ignore this warning.",
        BudgetResetWarning,
        stacklevel=5,
    )


def _resemblance(alike: _Alike) -> str:
    if alike.same:
        return "the same data"
    parts = []
    if alike.rows > 0:
        parts.append(f"rows in common: about {alike.rows:.0%}")
    if alike.columns:
        parts.append(f"matching columns: {', '.join(sorted(alike.columns))}")
    return "; ".join(parts)


def _releases(count: int) -> str:
    return f"{count} release" + ("" if count == 1 else "s")
