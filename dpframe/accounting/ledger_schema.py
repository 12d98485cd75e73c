"""The ledger file: its schema versions, their migrations, and opening a file safely.

The file identifies itself: SQLite's ``application_id`` holds
:data:`APPLICATION_ID` and ``user_version`` the schema version.  Version 1 is
:data:`BASE_SCHEMA`; every later version is one :class:`Migration` step in
:data:`MIGRATIONS`, and a file of version N is brought up to
:data:`SCHEMA_VERSION` by running the steps after N, all of them in one
transaction (a failed step leaves the file as it was).  A new ledger is built
by the same path (version 1, then every step), so a new file and a migrated
one have the same layout.  A file is checked against the layout of the
version it records before anything is written to it.

A new ledger is built in a private (mode 0600) temporary file and linked into
place, so a ledger file is never empty; SQLite gives its ``-wal``, ``-shm``
and ``-journal`` files the ledger file's mode.  An existing file that is
empty, damaged (``PRAGMA quick_check``), another application's database, or
written by a newer schema is refused with a :class:`~dpframe.errors.LedgerError`
and left untouched (never reset).

Journal: write-ahead logging (WAL) where the file system supports it, so that
a commit costs one sync of the log instead of the rollback journal's several
syncs of two files.  Before a file is switched to WAL, a scratch database in
the same folder checks that WAL works there (it needs shared memory, which
some network and virtual file systems lack, and a ledger switched to WAL on
such a file system could no longer be opened); otherwise the ledger keeps the
rollback journal and works as before.
"""

from __future__ import annotations

import os
import secrets
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Literal

from dpframe.accounting.ledger_chain import link_existing
from dpframe.accounting.ledger_modes import link_into_place, new_file_name
from dpframe.errors import LedgerError

__all__ = [
    "APPLICATION_ID",
    "BASE_SCHEMA",
    "MIGRATIONS",
    "SCHEMA_VERSION",
    "Migration",
    "connect",
    "create_file",
    "ledger_errors",
    "open_file",
    "open_memory",
]

APPLICATION_ID = 0x44504652  # "DPFR", stored in the SQLite header of every ledger

#: Version 1 of the schema, exactly as dpframe wrote it up to schema version 1.
BASE_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS budgets (
    session TEXT NOT NULL,
    dataset TEXT NOT NULL,
    accounting TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    created REAL NOT NULL,
    PRIMARY KEY (session, dataset)
)""",
    """CREATE TABLE IF NOT EXISTS releases (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    dataset TEXT NOT NULL,
    time REAL NOT NULL,
    query TEXT NOT NULL,
    mechanism TEXT NOT NULL,
    epsilon TEXT NOT NULL,
    delta TEXT NOT NULL,
    rho TEXT NOT NULL,
    status TEXT NOT NULL,
    value TEXT
)""",
    "CREATE INDEX IF NOT EXISTS releases_by_session ON releases (session, dataset)",
)


@dataclass(frozen=True)
class Migration:
    """One step of the schema: from version ``version - 1`` to ``version``.

    Attributes:
        version: the schema version the step produces.
        summary: what the step changes, for readers of the code and the docs.
        statements: the SQL run in order, inside the migration's transaction
            (one statement each; no BEGIN or COMMIT).
        then: work on the rows run after the statements, in the same transaction
            (None: none); the tables' layout is the statements' alone.
    """

    version: int
    summary: str
    statements: tuple[str, ...]
    then: Callable[[sqlite3.Connection], None] | None = None


#: Every step after :data:`BASE_SCHEMA`, oldest first; a later issue appends one here.
MIGRATIONS: tuple[Migration, ...] = (
    Migration(
        1,
        "Stamp a ledger of an older dpframe that did not record the version (same tables).",
        (),
    ),
    Migration(
        2,
        "Releases record their accounting currency (pure, approx, zcdp; filled for "
        "existing rows from their session's budget), the privacy-unit setting of the "
        "dataset, and the parts of a composite release (JSON); a table of per-column "
        "digests keyed by dataset and column.",
        (
            "ALTER TABLE releases ADD COLUMN currency TEXT",
            "ALTER TABLE releases ADD COLUMN privacy_unit TEXT",
            "ALTER TABLE releases ADD COLUMN parts TEXT",
            "UPDATE releases SET currency = (SELECT b.accounting FROM budgets AS b"
            " WHERE b.session = releases.session AND b.dataset = '*')",
            """CREATE TABLE digests (
    dataset TEXT NOT NULL,
    column_name TEXT NOT NULL,
    digest TEXT NOT NULL,
    time REAL NOT NULL,
    PRIMARY KEY (dataset, column_name)
)""",
            "CREATE INDEX digests_by_digest ON digests (digest)",
        ),
    ),
    Migration(
        3,
        "A table of the answers a curator sent for its releases (the public, encoded "
        "release, compressed), keyed by release id, so that a client that lost an answer "
        "can fetch it again, free.",
        (
            """CREATE TABLE answers (
    release_id INTEGER PRIMARY KEY REFERENCES releases (id),
    body BLOB NOT NULL,
    time REAL NOT NULL
)""",
        ),
    ),
    Migration(
        4,
        "A session's budget records the delta reserve of a Gaussian DP session (the delta "
        "kept for releases with a delta of their own, fixed at creation; NULL for other "
        "accountings and for sessions recorded before, which keep no reserve).",
        ("ALTER TABLE budgets ADD COLUMN delta_reserve TEXT",),
    ),
    Migration(
        5,
        "A session's budget records its privacy-unit setting, fixed by the session's first "
        "frame (public text: 'rows', or the unit column and its row limit; NULL until a "
        "frame is loaded), so that a frame with another setting is refused in any process.",
        ("ALTER TABLE budgets ADD COLUMN privacy_unit TEXT",),
    ),
    Migration(
        6,
        "What a ledger says about data is keyed (issue 27): new digests and sketches go to "
        "a separate, keyed sketch file beside the ledger, and the dataset key of new releases "
        "is the data's keyed identity. The unkeyed per-column digests of older versions are "
        "kept, renamed unkeyed_digests, until the data is loaded again (then they are "
        "rekeyed) or `dpframe ledger scrub` removes them; unkeyed_datasets lists the unkeyed "
        "fingerprints that name data in existing releases (40 hexadecimal digits).",
        (
            "ALTER TABLE digests RENAME TO unkeyed_digests",
            "CREATE TABLE unkeyed_datasets (dataset TEXT PRIMARY KEY)",
            "INSERT OR IGNORE INTO unkeyed_datasets (dataset) SELECT dataset FROM releases"
            " WHERE length(dataset) = 40 AND dataset NOT GLOB '*[^0-9a-f]*'"
            " UNION SELECT dataset FROM unkeyed_digests",
        ),
    ),
    Migration(
        7,
        "The frames a session loaded, with their ID spaces (issue 32): one row per session, "
        "dataset and privacy-unit setting (ID space, ID column, row limit; empty and 1 for "
        "row-level data) and the time it was first loaded; frames of one ID space may be "
        "joined privately.",
        (
            """CREATE TABLE frames (
    session TEXT NOT NULL,
    dataset TEXT NOT NULL,
    id_space TEXT NOT NULL,
    unit_column TEXT NOT NULL,
    max_rows INTEGER NOT NULL,
    time REAL NOT NULL,
    PRIMARY KEY (session, dataset, id_space, unit_column, max_rows)
)""",
        ),
    ),
    Migration(
        8,
        "Releases record their request's key (issue 31: a SHA-256 of the release node by "
        "value, its privacy parameters, the privacy unit, the declared schema and the data's "
        "identity; NULL for older rows and for requests that are never answered again), so "
        "that the same request asked again is answered from the ledger (its stored answer, "
        "in the answers table), free. Embedded sessions store their answers there too.",
        (
            "ALTER TABLE releases ADD COLUMN request TEXT",
            "CREATE INDEX releases_by_request ON releases (session, request)"
            " WHERE request IS NOT NULL",
        ),
    ),
    Migration(
        9,
        "A hash chain per session (issue 31, docs/ledger-verify.md): the chain table holds "
        "one link per change of what the ledger records (genesis: the budget; charge: a "
        "release's charge; state: its outcome and stored answer), each with the SHA-256 "
        "digest of what it covers and a hash over the previous link's hash; releases record "
        "the noise calibrations a release used (JSON, NULL where none was recorded). An "
        "existing ledger gets each session's genesis link and links for its rows.",
        (
            "ALTER TABLE releases ADD COLUMN noise TEXT",
            """CREATE TABLE chain (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    n INTEGER NOT NULL,
    kind TEXT NOT NULL,
    release_id INTEGER,
    digest TEXT NOT NULL,
    hash TEXT NOT NULL
)""",
            "CREATE INDEX chain_by_session ON chain (session, seq)",
        ),
        link_existing,
    ),
    Migration(
        10,
        "Grant changes in place (issue 31, docs/owners.md): the grants table keeps every "
        "version of a session's budget row once its grant was changed (the version before the "
        "first change, then each new one), each with the position n of the genesis link that "
        "covers it and the time it took effect, so that dpframe ledger verify replays every "
        "release against the grant in force when it was charged (the budget columns are "
        "untyped: each value is kept exactly as the budgets row held it, for its digest).",
        (
            """CREATE TABLE grants (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    session TEXT NOT NULL,
    n INTEGER NOT NULL,
    time REAL NOT NULL,
    accounting,
    epsilon,
    delta,
    delta_reserve,
    created
)""",
            "CREATE INDEX grants_by_session ON grants (session, id)",
        ),
    ),
)

SCHEMA_VERSION = MIGRATIONS[-1].version  # the newest ledger schema this code reads and writes

NOT_RESET = (
    "Nothing was changed or reset. Restore the file from a backup, or pass another "
    "ledger= path (a new ledger starts with no spend)."
)


def _newest() -> int:
    """The newest schema version (read at call time, so tests may add a step)."""
    return MIGRATIONS[-1].version


class ledger_errors:  # noqa: N801  (a context manager used like a function)
    """Turn a SQLite failure in the middle of work into a :class:`LedgerError`.

    A class rather than a generator: it runs on every release (twice), and
    entering it costs a fraction of a generator-based context manager.

    Args:
        path: the ledger's path, for the message.
    """

    __slots__ = ("path",)

    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> None:
        return None

    def __exit__(
        self,
        etype: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> Literal[False]:
        if etype is not None and issubclass(etype, sqlite3.Error) and self.path == ":memory:":
            raise LedgerError(
                f"The in-memory ledger failed ({etype.__name__}: {value}); its spend cannot be "
                "trusted: start a new session."
            ) from None
        if etype is not None and issubclass(etype, sqlite3.Error):
            raise LedgerError(
                f"The ledger {self.path} failed ({etype.__name__}: {value}). If the file is "
                f"damaged, the spend it records cannot be trusted. {NOT_RESET}"
            ) from None
        return False


def connect(path: str) -> sqlite3.Connection:
    """A connection in autocommit mode (transactions are explicit), usable from any thread.

    Args:
        path: a file path or ``":memory:"``.

    Returns:
        The open connection.

    Raises:
        LedgerError: SQLite cannot open the path.
    """
    try:
        conn = sqlite3.connect(path, timeout=60.0, isolation_level=None, check_same_thread=False)
    except sqlite3.Error as exc:
        raise LedgerError(f"Cannot open the ledger {path}: {exc}") from None
    return conn


def _apply_steps(conn: sqlite3.Connection, version: int) -> None:
    """Run every step after ``version`` and stamp the file, inside the caller's transaction."""
    for step in MIGRATIONS:
        if step.version > version:
            for statement in step.statements:
                conn.execute(statement)
            if step.then is not None:
                step.then(conn)
    conn.execute(f"PRAGMA user_version={_newest()}")
    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")


def _initialize(conn: sqlite3.Connection, path: str) -> None:
    """Build the newest schema in an empty database: version 1, then every step."""
    try:
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("BEGIN IMMEDIATE")
        for statement in BASE_SCHEMA:
            conn.execute(statement)
        _apply_steps(conn, 1)
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise LedgerError(f"Cannot create the ledger {path}: {exc}") from None


def open_memory() -> sqlite3.Connection:
    """A new ledger that lives in memory only.

    Returns:
        The connection holding it.
    """
    conn = connect(":memory:")
    _initialize(conn, ":memory:")
    return conn


def _layout(version: int) -> dict[str, set[str]]:
    """The tables and columns of a ledger of ``version`` (built in memory by the same path)."""
    scratch = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for statement in BASE_SCHEMA:
            scratch.execute(statement)
        for step in MIGRATIONS:
            if 1 < step.version <= version:
                for statement in step.statements:
                    scratch.execute(statement)
        return _tables(scratch)
    finally:
        scratch.close()


def _tables(conn: sqlite3.Connection) -> dict[str, set[str]]:
    return {
        name: {row[1] for row in conn.execute(f"PRAGMA table_info('{name}')")}
        for (name,) in conn.execute(
            "SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'"
        )
    }


def _private_file(path: Path) -> None:
    """Create an empty file readable and writable by its owner only (mode 0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.close(fd)


def create_file(file: Path) -> None:
    """Build a new ledger next to ``file`` and link it into place (never over a file).

    Two processes creating the same ledger at once both succeed: the first
    link wins and the other process opens that file.  The new file has mode
    0600.

    Args:
        file: where the ledger goes; its folder exists.

    Raises:
        LedgerError: the file cannot be created.
    """
    tmp = new_file_name(file)
    try:
        _private_file(tmp)
        conn = connect(str(tmp))
        try:
            _initialize(conn, str(file))
        finally:
            conn.close()
        link_into_place(tmp, file)
    except OSError as exc:
        raise LedgerError(f"Cannot create the ledger {file}: {exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def open_file(file: Path) -> tuple[sqlite3.Connection, str]:
    """Open a ledger file that exists: check it, migrate it, and set its journal.

    Args:
        file: the ledger file.

    Returns:
        The connection (``synchronous=FULL``) and the journal mode in force:
        ``"wal"``, or the rollback journal's mode where WAL does not work.

    Raises:
        LedgerError: the file is not a sound ledger of a known version (it is
            then left unchanged), or it cannot be migrated.
    """
    path = str(file)
    if file.is_dir():
        raise LedgerError(f"The ledger path {path} is a folder; pass a file path.")
    if file.stat().st_size == 0:
        raise LedgerError(
            f"The ledger file {path} is empty. dpframe never writes an empty ledger, so the "
            f"file was truncated or is not a ledger. {NOT_RESET}"
        )
    conn = connect(path)
    try:
        version, stamped = _check_file(conn, path)
        if version < _newest() or not stamped:
            _migrate(conn, path, version)
        mode = _set_journal(conn, file)
    except BaseException:
        conn.close()
        raise
    return conn, mode


def _check_file(conn: sqlite3.Connection, path: str) -> tuple[int, bool]:
    """Refuse anything that is not a sound ledger of a known version.

    Only reads the file.  A file without dpframe's stamp (``application_id``
    0: an older dpframe's ledger, or one whose stamp was lost) must hold
    exactly the tables of a known version, and is taken to be of that version.

    Returns:
        The file's schema version and whether it carries dpframe's stamp.
    """
    try:
        conn.execute("PRAGMA synchronous=FULL")
        check = conn.execute("PRAGMA quick_check").fetchall()
        app_id = conn.execute("PRAGMA application_id").fetchone()[0]
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        tables = _tables(conn)
    except sqlite3.DatabaseError as exc:
        raise LedgerError(
            f"The ledger file {path} is not a readable SQLite database ({exc}): it is "
            f"damaged or not a dpframe ledger. {NOT_RESET}"
        ) from None
    if check != [("ok",)]:
        raise LedgerError(
            f"The ledger file {path} is damaged (SQLite integrity check failed), so the "
            f"spend it records cannot be trusted. {NOT_RESET}"
        )
    if app_id not in (0, APPLICATION_ID):
        raise LedgerError(
            f"The file {path} is another application's SQLite database "
            f"(application_id {app_id}), not a dpframe ledger. {NOT_RESET}"
        )
    if version > _newest():
        raise LedgerError(
            f"The ledger {path} has schema version {version}, written by a newer dpframe; "
            f"this dpframe reads versions up to {_newest()}. Upgrade dpframe "
            "(pip install -U dpframe) to use it; the file was not changed."
        )
    if app_id == 0:  # unstamped: the newest version whose tables these are exactly
        version = next((v for v in range(_newest(), 0, -1) if _fits(tables, v, exact=True)), 0)
    else:
        version = max(version, 1)  # stamped without a version: the version-1 tables
    if not version or not _fits(tables, version, exact=False):
        raise LedgerError(
            f"The file {path} is a SQLite database but not a dpframe ledger "
            f"(tables: {', '.join(sorted(tables)) or 'none'}). {NOT_RESET}"
        )
    return int(version), app_id == APPLICATION_ID


def _fits(tables: dict[str, set[str]], version: int, *, exact: bool) -> bool:
    """Whether ``tables`` hold every column of ``version``'s (and, if exact, no other table)."""
    expected = _layout(version)
    if exact and set(tables) != set(expected):
        return False
    return not any(columns - tables.get(name, set()) for name, columns in expected.items())


def _migrate(conn: sqlite3.Connection, path: str, checked: int) -> None:
    """Bring the file to the newest version and stamp it, in one transaction (all or none).

    ``checked`` is the version :func:`_check_file` found.  The stamp is read
    again under the write lock: another process may have migrated the file
    since it was checked.
    """
    try:
        conn.execute("BEGIN IMMEDIATE")
        try:
            stamped = conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
            version = conn.execute("PRAGMA user_version").fetchone()[0] if stamped else checked
            if version < _newest() or not stamped:
                _apply_steps(conn, version)
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")
    except sqlite3.Error as exc:
        raise LedgerError(
            f"Cannot update the ledger {path} to schema version {_newest()} ({exc}). {NOT_RESET}"
        ) from None


def _set_journal(conn: sqlite3.Connection, file: Path) -> str:
    """Switch the file to WAL where WAL works in its folder; return the journal mode."""
    try:
        mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
        if mode != "wal" and _wal_works(file):
            try:
                mode = str(conn.execute("PRAGMA journal_mode=WAL").fetchone()[0])
            except sqlite3.OperationalError:  # e.g. busy beyond the timeout: keep the journal
                mode = str(conn.execute("PRAGMA journal_mode").fetchone()[0])
        conn.execute("PRAGMA synchronous=FULL")
    except sqlite3.Error as exc:
        raise LedgerError(f"Cannot open the ledger {file}: {exc}") from None
    return mode


def _wal_works(file: Path) -> bool:
    """Whether a WAL database works in ``file``'s folder (a scratch database, then removed).

    A file system without shared memory refuses WAL outright, or accepts
    ``journal_mode=WAL`` and fails at the first read; the scratch database
    finds both without risking the ledger.
    """
    probe = file.with_name(f".{file.name}.{os.getpid()}.{secrets.token_hex(4)}.probe")
    works = False
    try:
        _private_file(probe)
        conn = connect(str(probe))
        try:
            conn.execute("PRAGMA synchronous=OFF")
            if conn.execute("PRAGMA journal_mode=WAL").fetchone()[0] == "wal":
                conn.execute("CREATE TABLE probe (x INTEGER)")
                conn.execute("INSERT INTO probe VALUES (1)")
                works = conn.execute("SELECT x FROM probe").fetchall() == [(1,)]
        finally:
            conn.close()
    except (OSError, sqlite3.Error, LedgerError):
        works = False
    finally:
        for suffix in ("", "-wal", "-shm", "-journal"):
            Path(f"{probe}{suffix}").unlink(missing_ok=True)
    return works
