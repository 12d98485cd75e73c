"""IPython magics: start sessions, load private data, watch the budget, explain queries.

Every magic uses ``magic_arguments``, so ``%dp_load?`` shows its help.  Errors
in the arguments print one line that says how to fix them; nothing is charged.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Any

import pandas as pd
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring
from IPython.display import display
from traitlets import Float, Unicode

import dpframe as dp
from dpframe.engine.loading import read_table
from dpframe.jupyter.magic_lines import (
    MagicInputError,
    split_assignment,
    split_keys,
    split_words,
    unquote,
)
from dpframe.jupyter.meter import BudgetMeter, ledger_view

__all__ = ["DPMagics", "MagicInputError", "parse_bounds", "parse_categories"]


def _number(text: str, what: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise MagicInputError(f"{what}: {text!r} is not a number.") from None


def parse_bounds(items: list[str]) -> dict[str, tuple[float, float]]:
    """``["wage=0:5000", "age=18:70"]`` → ``{"wage": (0.0, 5000.0), "age": (18.0, 70.0)}``."""
    bounds: dict[str, tuple[float, float]] = {}
    for item in items:
        name, rest, sep = split_assignment(item)
        low, colon, high = unquote(rest).partition(":")
        if not sep or not colon or not name:
            raise MagicInputError(
                f"--bounds {item!r}: write COLUMN=LOW:HIGH, e.g. --bounds wage=0:5000."
            )
        bounds[name] = (_number(low, f"--bounds {name}"), _number(high, f"--bounds {name}"))
    return bounds


def _typed(categories: dict[str, list[str]], data: pd.DataFrame) -> dict[str, list[Any]]:
    """Keys typed like their column: ``--categories age=20,30`` on a number column gives numbers."""
    typed: dict[str, list[Any]] = {}
    for name, keys in categories.items():
        if name in data.columns and pd.api.types.is_numeric_dtype(data[name].dtype):
            numbers = [_number(k, f"--categories {name}") for k in keys]
            typed[name] = [int(x) if x.is_integer() else x for x in numbers]
        else:
            typed[name] = list(keys)
    return typed


def parse_categories(items: list[str]) -> dict[str, list[str]]:
    """``["region=south,west"]`` → ``{"region": ["south", "west"]}``.

    Keys (and names) with spaces or commas are quoted: ``region="north east",south``.
    """
    categories: dict[str, list[str]] = {}
    for item in items:
        name, rest, sep = split_assignment(item)
        keys = split_keys(rest)
        if not sep or not name or not keys:
            raise MagicInputError(
                f"--categories {item!r}: write COLUMN=KEY1,KEY2,..., "
                'e.g. --categories region=northeast,south (quote keys with spaces: "new york").'
            )
        categories[name] = keys
    return categories


@magics_class
class DPMagics(Magics):
    """The dpframe magics: %dp_session, %dp_load, %dp_budget, %dp_ledger, %dp_explain, %%dpsql.

    Configure them with traitlets, e.g. ``c.DPMagics.ledger = "/path/ledger.sqlite"``.
    """

    ledger = Unicode(
        None, allow_none=True, help="SQLite ledger path for %dp_session (None: the default)."
    ).tag(config=True)
    default_epsilon = Float(
        1.0, help="Total epsilon of %dp_session when --epsilon is not given."
    ).tag(config=True)

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell=shell, **kwargs)
        self.session: dp.Session | dp.RemoteSession | None = None
        self.meters: list[BudgetMeter] = []
        # %dp_session without --name: the settings, until %dp_load names the session.
        self.pending: dict[str, Any] | None = None
        self.panels: list[Any] = []  # the side panels of %dp_budget --side

    @property
    def _user_ns(self) -> dict[str, Any]:
        assert self.shell is not None
        namespace: dict[str, Any] = self.shell.user_ns
        return namespace

    def _fail(self, magic: str, error: Exception) -> None:
        print(f"%{magic}: {error}")

    def _require_session(self, magic: str) -> dp.Session | dp.RemoteSession | None:
        if self.session is None and self.pending is not None:
            print(f"%{magic}: the session starts with the first %dp_load (named after its file).")
            return None
        if self.session is None:
            found = [v for v in self._user_ns.values() if isinstance(v, dp.Session)]
            if found:
                self.session = found[-1]
        if self.session is None:
            print(f"%{magic}: no session yet; start one with %dp_session --epsilon 1.")
        return self.session

    def meter(self, session: dp.Session | dp.RemoteSession) -> BudgetMeter:
        """A new live meter for ``session`` (closed when the extension unloads)."""
        meter = BudgetMeter(session)
        self.meters.append(meter)
        return meter

    def close(self) -> None:
        """Close every meter this instance opened."""
        for meter in self.meters:
            meter.close()
        self.meters.clear()
        for panel in self.panels:
            panel.close()
        self.panels.clear()
        self.session = None
        self.pending = None
        if self.shell is not None:  # the cell magic goes with the extension
            self.shell.magics_manager.magics["cell"].pop("dpsql", None)

    @magic_arguments()
    @argument("--epsilon", type=float, default=None, help="Total epsilon of the session.")
    @argument("--delta", type=float, default=0.0, help="Total delta (default 0).")
    @argument(
        "--accounting",
        choices=["pure", "approx", "zcdp", "gdp"],
        default=None,
        help="Accounting (default: pure if delta is 0, else gdp).",
    )
    @argument(
        "--delta-reserve",
        type=float,
        default=None,
        help="gdp only: the delta kept for key discovery and copies with delta (default delta/10).",
    )
    @argument(
        "--name",
        default=None,
        help=(
            "Session name in the ledger (resumes its spend). Without it the name comes from "
            "the first file %%dp_load loads, so the budget follows the data."
        ),
    )
    @argument("--ledger", default=None, help="Ledger file (default: configured or user data dir).")
    @line_magic
    def dp_session(self, line: str) -> None:
        """Start, or resume from the ledger, a privacy session; binds it to ``dp_session``.

        Without ``--name`` the session starts at the first ``%dp_load``, named
        after the file it loads (``file:`` and its absolute path): the budget
        follows the data, so two notebooks on the same file share it, and
        unrelated data never share a machine-wide budget.
        """
        args = parse_argstring(self.dp_session, line)
        epsilon = self.default_epsilon if args.epsilon is None else args.epsilon
        settings = {
            "epsilon": epsilon,
            "delta": args.delta,
            "ledger": args.ledger or self.ledger,
            "accounting": args.accounting,
            "delta_reserve": args.delta_reserve,
        }
        try:
            # Checked now (nothing is recorded in a throw-away ledger), used at the first load.
            dp.Session(**{**settings, "ledger": ":memory:"}, name="check")
            if args.name is not None:
                self._start(settings, args.name)
                return
        except dp.DPError as error:
            self._fail("dp_session", error)
            return
        self.session, self.pending = None, settings
        self._user_ns.pop("dp_session", None)
        print(
            "%dp_session: the session starts with the first %dp_load and is named after "
            "its file, so its budget follows the data (give --name to choose a name)."
        )

    def _start(self, settings: dict[str, Any], name: str) -> dp.Session:
        """Open the session ``name`` with ``settings``, bind it and show its meter."""
        session = dp.Session(**settings, name=name)
        self.session, self.pending = session, None
        self._user_ns["dp_session"] = session
        display(self.meter(session))
        return session

    @magic_arguments()
    @argument("name", help="Variable to bind the private frame to.")
    @argument("path", help="CSV or Parquet file.")
    @argument("--bounds", nargs="*", default=[], help="COLUMN=LOW:HIGH ...")
    @argument("--categories", nargs="*", default=[], help="COLUMN=KEY1,KEY2,... ...")
    @argument("--privacy-unit", default=None, help="Column identifying a person (several rows).")
    @argument("--max-rows-per-unit", type=int, default=None, help="Rows kept per unit.")
    @argument("--max-groups-per-unit", type=int, default=None, help="Keys kept per unit.")
    @line_magic
    def dp_load(self, line: str) -> None:
        """Load a CSV or Parquet file as a private frame bound to NAME.

        Quote paths and keys that hold spaces or commas:
        ``%dp_load pf "my data.csv" --categories region="north east",south``.
        """
        try:
            args = self.dp_load.parser.parse_args(split_words(line))
        except MagicInputError as error:
            self._fail("dp_load", error)
            return
        args.path = unquote(args.path)
        session = self.session if self.pending is not None else self._require_session("dp_load")
        if session is None and self.pending is None:
            return
        if not args.name.isidentifier():
            self._fail("dp_load", MagicInputError(f"{args.name!r} is not a valid variable name."))
            return
        try:
            bounds = parse_bounds(args.bounds)
            categories = parse_categories(args.categories)
            path = Path(args.path).expanduser()
            if not path.is_file():
                raise MagicInputError(f"no file at {str(path)!r}.")
            if session is None:
                assert self.pending is not None
                session = self._start(self.pending, f"file:{path.resolve()}")
            if isinstance(session, dp.RemoteSession):
                raise MagicInputError(
                    "this kernel's session is a curator's: its data lives there (%dp_connect)."
                )
            reader = pd.read_parquet if path.suffix.lower() in (".parquet", ".pq") else pd.read_csv
            data = read_table(reader, path, {})
            frame = session.private_frame(
                data,
                bounds,
                _typed(categories, data),
                privacy_unit=args.privacy_unit,
                max_rows_per_unit=args.max_rows_per_unit,
                max_groups_per_unit=args.max_groups_per_unit,
            )
        except dp.DPError as error:
            self._fail("dp_load", error)
            return
        self._user_ns[args.name] = frame
        print(f"{args.name} = private frame of {path.name}: {', '.join(frame.columns)}")

    @magic_arguments()
    @argument("url", help="The curator's address, e.g. https://curator.example.org")
    @argument(
        "--token-env",
        default="DPFRAME_TOKEN",
        help="Environment variable holding your token (default DPFRAME_TOKEN).",
    )
    @argument(
        "--open",
        nargs="*",
        default=[],
        metavar="DATASET[=NAME]",
        help="Datasets to open; each is bound to NAME (default: the dataset's name).",
    )
    @argument(
        "--cafile",
        default=None,
        help="PEM file of the CA that signed the curator's certificate (an internal CA).",
    )
    @line_magic
    def dp_connect(self, line: str) -> None:
        """Connect to a curator (``dpframe serve``); binds ``dp_conn`` and opens datasets.

        The token is read from an environment variable, never typed into the
        notebook (where it would be saved).  A live meter shows the curator's
        budget figures for each opened dataset.
        """
        args = parse_argstring(self.dp_connect, line)
        token = os.environ.get(args.token_env)
        if not token:
            self._fail("dp_connect", MagicInputError(f"${args.token_env} is not set."))
            return
        try:
            conn = dp.connect(args.url, token=token, cafile=args.cafile)
            frames = []
            for item in args.open:
                dataset, _, name = item.partition("=")
                name = name or dataset
                if not name.isidentifier():
                    raise MagicInputError(
                        f"{name!r} is not a valid variable name; use DATASET=NAME."
                    )
                frames.append((name, dataset, conn.open(dataset)))
        except dp.DPError as error:
            self._fail("dp_connect", error)
            return
        self._user_ns["dp_conn"] = conn
        print(f"dp_conn = connection to {conn.url}; datasets: {', '.join(conn.datasets())}")
        for name, dataset, frame in frames:
            self._user_ns[name] = frame
            session = frame.session
            assert isinstance(session, dp.RemoteSession)  # conn.open() frames are remote
            self.session = session
            print(f"{name} = private frame of {dataset!r} on the curator")
            display(self.meter(session))

    @magic_arguments()
    @argument(
        "--side",
        action="store_true",
        help="Pin the meter to JupyterLab's side panel (needs the sidecar package).",
    )
    @line_magic
    def dp_budget(self, line: str) -> None:
        """Show a live budget meter of the current session (``--side``: in the side panel)."""
        args = parse_argstring(self.dp_budget, line)
        session = self._require_session("dp_budget")
        if session is None:
            return
        meter = self.meter(session)
        if not args.side:
            display(meter)
            return
        try:
            from sidecar import Sidecar
        except ImportError:
            print(
                "%dp_budget --side needs the sidecar package (pip install sidecar, or "
                "dpframe[notebook]); the meter is shown here instead."
            )
            display(meter)
            return
        panel = Sidecar(title=f"dpframe budget · {session.name}")
        self.panels.append(panel)
        with panel:
            display(meter)

    @magic_arguments()
    @argument(
        "--full",
        action="store_true",
        help="Every column of session.ledger, unrounded (default: a table that fits the page).",
    )
    @line_magic
    def dp_ledger(self, line: str) -> Any:
        """The releases of the current session so far, as a table that fits the notebook.

        Labels are in your own terms, the ε asked and the value released are
        rounded (``--full``: every column of ``session.ledger`` as recorded).
        """
        args = parse_argstring(self.dp_ledger, line)
        session = self._require_session("dp_ledger")
        if session is None:
            return None
        head = getattr(session, "ledger_head", None)  # a curator's: its signed head (a dict)
        if isinstance(head, dict):
            print(f"ledger head {head['n']}:{head['hash']} (signed by the curator)")
        elif head is not None:
            print(f"ledger head {head.n}:{head.hash} (an anchor for dpframe ledger verify)")
        return session.ledger if args.full else ledger_view(session.ledger)

    @magic_arguments()
    @argument(
        "--detail",
        action="store_true",
        help="also every noisy measure behind the answer (sensitivity, noise scale, half-width)",
    )
    @argument("expression", nargs="+", help="A release, e.g. pf['wage'].mean(epsilon=0.1)")
    @line_magic
    def dp_explain(self, line: str) -> Any:
        """What a release would cost and how accurate it would be, without spending anything."""
        args = parse_argstring(self.dp_explain, line)
        session = self._require_session("dp_explain")
        if session is None:
            return None
        source = " ".join(args.expression)
        try:
            code = compile(source, "<dp_explain>", "eval")
            return session.explain(lambda: eval(code, self._user_ns), detail=args.detail)
        except dp.DPError as error:
            self._fail("dp_explain", error)
        except SyntaxError:
            self._fail("dp_explain", MagicInputError("give one Python expression."))
        return None

    @magic_arguments()
    @argument(
        "--epsilon",
        type=float,
        default=None,
        help="epsilon of this query, split over its aggregates.",
    )
    @argument(
        "--delta",
        type=float,
        default=None,
        help="delta to find GROUP BY keys that are not declared (Gaussian DP: from the reserve).",
    )
    @argument("--rho", type=float, default=None, help="rho of this query (zCDP sessions).")
    @argument(
        "--explain",
        action="store_true",
        help="What the query would cost and how accurate it would be; nothing is spent.",
    )
    @argument(
        "--fresh",
        action="store_true",
        help="A new, charged release even if the ledger already answered this query.",
    )
    @argument("--name", default=None, help="Variable to bind the answer to.")
    @cell_magic
    def dpsql(self, line: str, cell: str) -> Any:
        """Answer the SQL query in the cell (DuckDB's dialect) with one release (docs/sql.md).

        Tables: those registered with ``session.register(name, table)``
        (public DataFrames only this way), and the session's private frames by
        their variable names.  The query is the node its pandas spelling
        builds, charged once; the meter updates as for any release.  Re-running
        the cell is answered from the ledger, free (``from the ledger`` in the
        meter); ``--fresh`` asks for a new, charged release.  Refusals (before
        any charge) print one line.

        Example::

            %%dpsql --epsilon 0.3 --name by_region
            SELECT region, AVG(wage) FROM pf WHERE education >= 12 GROUP BY region
        """
        try:
            args = self.dpsql.parser.parse_args(split_words(line))
        except MagicInputError as error:
            self._fail("dpsql", error)
            return None
        session = self._require_session("dpsql")
        if session is None:
            return None
        if args.name is not None and not args.name.isidentifier():
            self._fail("dpsql", MagicInputError(f"{args.name!r} is not a valid variable name."))
            return None
        explained = cell.lstrip()[:7].upper() == "EXPLAIN"
        query = f"EXPLAIN {cell}" if args.explain and not explained else cell
        try:
            found = session.sql(
                query,
                epsilon=args.epsilon,
                delta=args.delta,
                rho=args.rho,
                tables=self._user_ns,
                fresh=args.fresh,
            )
        except dp.DPError as error:
            self._fail("dpsql", error)
            return None
        if args.name is not None:
            self._user_ns[args.name] = found
        return found


def split_line(line: str) -> list[str]:
    """Shell-like splitting, used by tests to build magic lines."""
    return shlex.split(line)
