"""The data owner's catalog: which datasets a curator serves and who may query them.

Example ``catalog.toml``::

    [server]
    ledger = "curator-ledger.sqlite"     # relative to this file
    latency_quantum_ms = 250             # answer only at multiples of 250 ms (default 100; 0: off)
    # limits and rates: see dpframe.curator.settings

    [datasets.cps]
    path = "cps1988.csv"                 # CSV or Parquet, relative to this file
    version = "1988-03"                  # owner-set: names this copy of the data
    max_rows = 100000                    # public row ceiling (worst-case time); default [server]
    # backend = "dask"                   # a Parquet file or folder read lazily by Dask
    #                                    # (on [server].dask_scheduler's cluster when set)
    bounds = { wage = [0, 5000], education = [0, 20], date = [2000-01-01, 2020-12-31] }
    categories = { region = ["northeast", "midwest", "south", "west"] }
    dtypes = { person_id = "text", comment = "text(200)" }  # every other column's kind
    # privacy_unit = "person_id"; max_rows_per_unit = 3
    # id_space = "persons"               # datasets of one ID space may be joined (see below)

    [analysts.alice]
    token_sha256 = "9f86d08..."          # dpframe new-token prints a token and its hash
    budgets = { cps = { epsilon = 1.0, delta = 1e-6 } }

Every column of the file has a declared kind, never inferred from its values:
``numeric`` for a bounded column, the kind of its categories' keys (text,
numbers or booleans) for a column with categories, and otherwise the kind
given in ``dtypes`` (``"numeric"``, ``"boolean"`` or ``"text"``).  A column
with no declaration is refused when the curator starts
(:func:`dpframe.curator.data.check_columns`).

Datasets that declare one ``id_space`` (each with its ``privacy_unit``: the
column holding the same kind of identifier, e.g. ``people.id`` and
``visits.person_id``) may be joined privately by an analyst granted every
one of them: ``visits.merge(people, on=..., max_rows=k)`` on the remote
frames.  The join is charged to the seat of the dataset the request is sent
to (the left frame's); its row limit per ID is recomputed from this catalog
(docs/proofs/private_joins.md, "Through a curator").  A dataset without an
``id_space`` is never joined.

Tokens are stored only as SHA-256 hashes: tokens are 256-bit random strings
(``dpframe new-token``), so a plain hash is as strong as a slow one here.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import secrets
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from dpframe.accounting.choice import default_accounting, make_accountant
from dpframe.backends.declared import parse_kind
from dpframe.curator.caps import Cap, check_cap_kinds, parse_cap
from dpframe.curator.settings import SERVER_KEYS, ServerSettings, server_settings
from dpframe.errors import DPError
from dpframe.plan.privacy import Budget, to_fraction
from dpframe.plan.temporal import check_date_bounds, is_date

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found,unused-ignore]

__all__ = [
    "GRANT_KEYS",
    "KINDS",
    "LATENCY_QUANTUM_MS",
    "Analyst",
    "Catalog",
    "CatalogError",
    "DatasetEntry",
    "Grant",
    "hash_token",
    "new_token",
]

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
_VERSION = re.compile(r"^[A-Za-z0-9_.:+-]{1,64}$")

#: The default latency quantum (ms): answers leave only on this grid unless the
#: catalog opts out explicitly with ``latency_quantum_ms = 0`` (issue 16).
LATENCY_QUANTUM_MS = 100

#: The kinds a catalog declares for a column (``dtypes = { column = kind }``).
KINDS = ("numeric", "boolean", "text")


class CatalogError(DPError):
    """The catalog file is missing, unreadable or inconsistent."""


def hash_token(token: str) -> str:
    """The SHA-256 hex digest stored in the catalog for ``token``."""
    return hashlib.sha256(token.encode()).hexdigest()


def new_token() -> tuple[str, str]:
    """A fresh random token (256 bits, URL-safe) and its hash for the catalog."""
    token = secrets.token_urlsafe(32)
    return token, hash_token(token)


@dataclass(frozen=True)
class DatasetEntry:
    """One dataset a curator serves (the owner's settings, all public but the file).

    Attributes:
        name: the catalog's name of the dataset.
        path: the CSV or Parquet file, or a folder of Parquet files.
        bounds: declared clamping bounds of numeric columns.
        categories: declared public keys.
        privacy_unit: the column naming a person, or None (one row per person).
        max_rows_per_unit: with ``privacy_unit``: rows kept per unit.
        max_groups_per_unit: with ``privacy_unit``: keys one unit may add.
        version: the owner's name for this copy of the data ("" when not set);
            shown to analysts instead of anything computed from the rows.
        kinds: every declared column's kind (``numeric``, ``boolean`` or
            ``text``), from ``dtypes``, bounds and categories.
        max_rows: the owner's public ceiling on the row count (None: the
            ``[server]`` default); worst-case times are estimated from it,
            never from the private row count.
        backend: ``"pandas"`` (read into memory; rows read in the worker
            processes) or ``"dask"`` (a Parquet file or folder, read lazily
            by Dask: on the cluster of ``[server].dask_scheduler`` when set,
            else with Dask's local threads in the curator's process).
        id_space: with ``privacy_unit``: the kind of identifier it holds;
            datasets of one ID space may be joined on it (None: never joined).
        cap: the privacy loss all analysts' releases on it may reach together
            (None: no cap; :mod:`dpframe.curator.caps`).
        release_cap: the privacy loss one release may cost (None: no cap).
    """

    name: str
    path: Path
    bounds: Mapping[str, tuple[Any, Any]]
    categories: Mapping[str, tuple[Any, ...]]
    privacy_unit: str | None = None
    max_rows_per_unit: int | None = None
    max_groups_per_unit: int | None = None
    version: str = ""
    kinds: Mapping[str, str] = field(default_factory=dict)
    max_rows: int | None = None
    backend: str = "pandas"
    id_space: str | None = None
    cap: Cap | None = None
    release_cap: Cap | None = None

    @property
    def identity(self) -> str:
        """How the ledger names this data: the catalog name, and ``@version`` when set."""
        return f"{self.name}@{self.version}" if self.version else self.name


@dataclass(frozen=True)
class Grant:
    """One analyst's budget on one dataset.

    Attributes:
        budget: the total (ε, δ).
        accounting: ``"pure"``, ``"approx"``, ``"zcdp"``, ``"gdp"`` or None
            (the engine's default for the budget).
        delta_reserve: a Gaussian DP grant's δ reserve (None: δ/10).
    """

    budget: Budget
    accounting: str | None = None
    delta_reserve: Fraction | None = None


#: The keys a grant may have (any other is a typo: refused when the catalog loads).
GRANT_KEYS = frozenset({"epsilon", "delta", "accounting", "delta_reserve"})


@dataclass(frozen=True)
class Analyst:
    """An analyst: a name, a token hash and a grant per dataset."""

    name: str
    token_sha256: str
    budgets: Mapping[str, Grant]

    def token_matches(self, token: str) -> bool:
        """Constant-time comparison of ``token``'s hash with the stored one."""
        return hmac.compare_digest(hash_token(token), self.token_sha256)


@dataclass(frozen=True)
class Catalog:
    """A parsed, validated catalog."""

    datasets: Mapping[str, DatasetEntry]
    analysts: Mapping[str, Analyst]
    ledger: Path
    latency_quantum: float = LATENCY_QUANTUM_MS / 1000
    settings: ServerSettings = field(default_factory=ServerSettings)
    #: The Ed25519 key that signs chain heads (None: ``<ledger>.ed25519`` beside the ledger).
    signing_key: Path | None = None

    @classmethod
    def load(cls, path: str | Path) -> Catalog:
        """Read and validate a catalog file; every problem is a :class:`CatalogError`."""
        path = Path(path)
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise CatalogError(f"Cannot read the catalog {str(path)!r}: {exc.strerror}.") from None
        except tomllib.TOMLDecodeError as exc:
            raise CatalogError(f"The catalog {str(path)!r} is not valid TOML: {exc}.") from None
        return cls.from_dict(data, path.resolve().parent)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: Path) -> Catalog:
        """Build a catalog from parsed TOML; relative paths are taken from ``base``."""
        unknown = set(data) - {"server", "datasets", "analysts"}
        if unknown:
            raise CatalogError(f"Unknown catalog sections: {', '.join(sorted(unknown))}.")
        server = _table(data.get("server", {}), "[server]")
        unknown_server = set(server) - SERVER_KEYS
        if unknown_server:
            raise CatalogError(f"[server] has unknown keys: {', '.join(sorted(unknown_server))}.")
        ledger = base / str(server.get("ledger", "curator-ledger.sqlite"))
        quantum = server.get("latency_quantum_ms", LATENCY_QUANTUM_MS)
        if (
            isinstance(quantum, bool)
            or not isinstance(quantum, (int, float))
            or not (0 <= quantum <= 60_000)
        ):
            raise CatalogError("[server] latency_quantum_ms must be a number of ms in [0, 60000].")
        datasets = {
            name: _dataset(name, _table(entry, f"[datasets.{name}]"), base)
            for name, entry in _table(data.get("datasets", {}), "[datasets]").items()
        }
        analysts = {
            name: _analyst(name, _table(entry, f"[analysts.{name}]"), datasets)
            for name, entry in _table(data.get("analysts", {}), "[analysts]").items()
        }
        if not datasets or not analysts:
            raise CatalogError("The catalog needs at least one [datasets.X] and one [analysts.Y].")
        for entry in datasets.values():
            kinds = {
                a.name: _kind_of(a.budgets[entry.name])
                for a in analysts.values()
                if entry.name in a.budgets
            }
            space = entry.id_space
            for a in analysts.values():  # a join sent to another seat counts here too
                joining = [
                    (other, grant)
                    for other, grant in a.budgets.items()
                    if space is not None
                    and other != entry.name
                    and entry.name in a.budgets
                    and datasets[other].id_space == space
                ]
                for other, grant in joining:
                    kinds[f"{a.name} (seat {other}, joining {entry.name})"] = _kind_of(grant)
            unfit = check_cap_kinds(f"[datasets.{entry.name}]", entry.cap, entry.release_cap, kinds)
            if unfit is not None:
                raise CatalogError(unfit)
        hashes = [a.token_sha256 for a in analysts.values()]
        if len(set(hashes)) != len(hashes):
            raise CatalogError("Two analysts share a token; give each analyst their own.")
        settings = server_settings(server, CatalogError)
        if settings.dask_scheduler is not None and not any(
            entry.backend == "dask" for entry in datasets.values()
        ):
            raise CatalogError(
                "[server].dask_scheduler names a Dask cluster, but no dataset uses it: set "
                'backend = "dask" on the datasets it should compute, or remove dask_scheduler.'
            )
        key = server.get("signing_key")
        signing = None if key is None else base / str(key)
        return cls(datasets, analysts, ledger, float(quantum) / 1000, settings, signing)

    def analyst_for(self, token: str) -> Analyst | None:
        """The analyst whose token this is (every analyst is compared, in constant time each)."""
        found = None
        for analyst in self.analysts.values():
            if analyst.token_matches(token):
                found = analyst
        return found


def _table(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CatalogError(f"{where} must be a table.")
    return value


def _dataset(name: str, entry: Mapping[str, Any], base: Path) -> DatasetEntry:
    if not _NAME.match(name):
        raise CatalogError(f"Dataset name {name!r}: use 1-64 letters, digits, '_', '.', '-'.")
    known = {
        "path",
        "bounds",
        "categories",
        "privacy_unit",
        "max_rows_per_unit",
        "max_groups_per_unit",
        "version",
        "dtypes",
        "max_rows",
        "backend",
        "id_space",
        "cap",
        "release_cap",
    }
    unknown = set(entry) - known
    if unknown:
        raise CatalogError(f"[datasets.{name}] has unknown keys: {', '.join(sorted(unknown))}.")
    if not isinstance(entry.get("path"), str):
        raise CatalogError(f"[datasets.{name}] needs path = '...csv' or '...parquet'.")
    path = base / entry["path"]
    folder = entry["path"].endswith(("/", "\\")) or path.is_dir()  # a folder of Parquet files
    if not folder and path.suffix.lower() not in (".csv", ".parquet", ".pq"):
        raise CatalogError(
            f"[datasets.{name}] path must end in .csv or .parquet, or name a folder of "
            'Parquet files (e.g. "visits/").'
        )
    backend = entry.get("backend", "pandas")
    if backend not in ("pandas", "dask"):
        raise CatalogError(f"[datasets.{name}].backend must be 'pandas' or 'dask'.")
    if backend == "dask" and path.suffix.lower() == ".csv":
        raise CatalogError(
            f"[datasets.{name}]: the dask backend reads Parquet (a file or a folder of files)."
        )
    bounds_raw = _table(entry.get("bounds", {}), f"[datasets.{name}].bounds")
    bounds: dict[str, tuple[Any, Any]] = {}
    for column, pair in bounds_raw.items():
        if not (isinstance(pair, list) and len(pair) == 2):
            raise CatalogError(f"[datasets.{name}].bounds.{column} must be [low, high].")
        if any(is_date(v) for v in pair):  # TOML dates: a date column
            try:
                bounds[column] = check_date_bounds(column, pair)
            except DPError as exc:
                raise CatalogError(f"[datasets.{name}].bounds.{column}: {exc}") from None
            continue
        bounds[column] = (float(pair[0]), float(pair[1]))
    dtypes = _table(entry.get("dtypes", {}), f"[datasets.{name}].dtypes")
    if not all(isinstance(kind, str) for kind in dtypes.values()):
        raise CatalogError(f"[datasets.{name}].dtypes maps columns to kinds, e.g. 'text(40)'.")
    categories_raw = _table(entry.get("categories", {}), f"[datasets.{name}].categories")
    categories = {column: tuple(keys) for column, keys in categories_raw.items()}
    version = entry.get("version", "")
    if not isinstance(version, str) or (version and not _VERSION.match(version)):
        raise CatalogError(
            f"[datasets.{name}].version must be text of 1-64 letters, digits, '_', '.', ':', "
            "'+', '-' (e.g. \"2024-06\")."
        )
    max_rows = entry.get("max_rows")
    if max_rows is not None and (
        isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= 10**12
    ):
        raise CatalogError(f"[datasets.{name}].max_rows must be a positive integer (rows).")
    space = entry.get("id_space")
    if space is not None:
        if not isinstance(space, str) or not _NAME.match(space):
            raise CatalogError(
                f"[datasets.{name}].id_space names a kind of identifier: 1-64 letters, digits, "
                "'_', '.', '-' (e.g. \"persons\")."
            )
        if not isinstance(entry.get("privacy_unit"), str) or entry.get("max_rows_per_unit") is None:
            raise CatalogError(
                f"[datasets.{name}].id_space needs privacy_unit (the column holding the ID) "
                "and max_rows_per_unit: a join bounds rows per ID."
            )
    return DatasetEntry(
        name,
        path,
        bounds,
        categories,
        entry.get("privacy_unit"),
        entry.get("max_rows_per_unit"),
        entry.get("max_groups_per_unit"),
        version,
        _kinds(name, entry.get("dtypes", {}), bounds, categories),
        max_rows,
        backend,
        space,
        *(
            None
            if entry.get(key) is None
            else parse_cap(entry[key], f"[datasets.{name}].{key}", CatalogError)
            for key in ("cap", "release_cap")
        ),
    )


def _kinds(
    name: str,
    dtypes_raw: object,
    bounds: Mapping[str, object],
    categories: Mapping[str, tuple[Any, ...]],
) -> dict[str, str]:
    """Each declared column's kind: from ``dtypes``, else bounds (numeric), else its keys."""
    where = f"[datasets.{name}]"
    dtypes = _table(dtypes_raw, f"{where}.dtypes")
    kinds: dict[str, str] = {}
    bases: dict[str, str] = {}
    for column, kind in dtypes.items():
        try:
            bases[column] = parse_kind(column, kind).base  # also 'integer', 'text(40)', ...
        except DPError:
            raise CatalogError(
                f"{where}.dtypes.{column} must be one of {', '.join(map(repr, KINDS))} "
                "(or 'integer', 'datetime', 'text(40)': text of at most 40 characters)."
            ) from None
        kinds[column] = str(kind)
    for column, pair in bounds.items():
        dated = any(is_date(v) for v in pair)  # type: ignore[attr-defined]
        wanted = "datetime" if dated else "numeric"
        base = bases.get(column)
        if base is None:
            kinds[column], bases[column] = wanted, wanted
        elif not (base == wanted or (wanted == "numeric" and base == "integer")):
            raise CatalogError(
                f"{where}.bounds.{column}: a column with {'date' if dated else 'numeric'} "
                f"bounds is {wanted}, not {base}."
            )
    for column, keys in categories.items():
        if not keys:
            raise CatalogError(f"{where}.categories.{column} must not be empty.")
        of_keys = _kind_of_keys(keys)
        if of_keys is None:
            raise CatalogError(
                f"{where}.categories.{column} must be all text, all numbers or all booleans."
            )
        declared = bases.setdefault(column, of_keys)
        kinds.setdefault(column, of_keys)
        if declared != of_keys and not (declared == "integer" and of_keys == "numeric"):
            raise CatalogError(
                f"{where}.categories.{column} are {of_keys} keys, but the column is "
                f"declared {declared}."
            )
    return kinds


def _kind_of_keys(keys: tuple[Any, ...]) -> str | None:
    """The kind that declared keys imply (text, numeric or boolean), or None when mixed."""
    if all(isinstance(k, str) for k in keys):
        return "text"
    if all(isinstance(k, bool) for k in keys):
        return "boolean"
    if all(isinstance(k, (int, float)) and not isinstance(k, bool) for k in keys):
        return "numeric"
    return None


def _analyst(name: str, entry: Mapping[str, Any], datasets: Mapping[str, Any]) -> Analyst:
    if not _NAME.match(name):
        raise CatalogError(f"Analyst name {name!r}: use 1-64 letters, digits, '_', '.', '-'.")
    token_hash = entry.get("token_sha256")
    if not isinstance(token_hash, str) or not re.fullmatch(r"[0-9a-f]{64}", token_hash):
        raise CatalogError(
            f"[analysts.{name}] needs token_sha256 = the 64-hex-digit hash that "
            "`dpframe new-token` prints (never the token itself)."
        )
    budgets: dict[str, Grant] = {}
    for dataset, raw in _table(entry.get("budgets", {}), f"[analysts.{name}].budgets").items():
        if dataset not in datasets:
            raise CatalogError(f"[analysts.{name}].budgets names an unknown dataset {dataset!r}.")
        budgets[dataset] = _grant(
            _table(raw, f"[analysts.{name}].budgets.{dataset}"), name, dataset
        )
    return Analyst(name, token_hash, budgets)


def _grant(raw: Mapping[str, Any], analyst: str, dataset: str) -> Grant:
    """One grant, checked as a session would check it (so a bad one fails at start)."""
    where = f"[analysts.{analyst}].budgets.{dataset}"
    unknown = set(raw) - GRANT_KEYS
    if unknown:
        raise CatalogError(
            f"{where} has unknown keys: {', '.join(sorted(unknown))} "
            f"(known: {', '.join(sorted(GRANT_KEYS))})."
        )
    accounting = raw.get("accounting")
    try:
        budget = Budget(raw.get("epsilon", 0), raw.get("delta", 0))
        reserve = raw.get("delta_reserve")
        reserve = None if reserve is None else to_fraction(reserve, "delta_reserve")
        if budget.epsilon > 0:
            make_accountant(budget, None if accounting is None else str(accounting), reserve)
    except DPError as exc:
        raise CatalogError(f"{where}: {exc}") from None
    if budget.epsilon <= 0:
        raise CatalogError(f"{where} needs epsilon > 0.")
    return Grant(budget, None if accounting is None else str(accounting), reserve)


def _kind_of(grant: Grant) -> str:
    """A grant's accounting (the engine's default for its budget when it names none)."""
    return grant.accounting or default_accounting(grant.budget)
