"""The tables a session's SQL queries name: its private frames and public lookup tables.

``session.register("cps", pf)`` names a private frame of the session;
``session.register("regions", df)`` names a public pandas DataFrame, which
a query may only JOIN as a lookup table (``DataFrame.merge`` of the facade).
Names are matched as DuckDB matches them: exactly, else up to case.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import pandas as pd

from dpframe.api.handle import FrameHandle, Runner, handle_of
from dpframe.api.sql.errors import SQLError, suggestion

__all__ = ["Catalog", "find_name"]


def find_name(name: str, known: Iterable[str], what: str, quoted: bool = False) -> str:
    """The known name ``name`` refers to: spelled the same, else the one spelled so up to case.

    Raises:
        SQLError: no such name (with the closest ones), or two names that
            differ only in case (write it exactly, in double quotes).
    """
    options = list(known)
    if name in options:
        return name
    folded = [o for o in options if o.lower() == name.lower()]
    if len(folded) == 1:
        return folded[0]
    if len(folded) > 1:
        shown = ", ".join(f'"{o}"' for o in folded)
        raise SQLError(
            f"{what} {name!r} is ambiguous ({shown}): write it exactly, in double quotes."
        )
    listed = ", ".join(options) if len(options) <= 12 else ", ".join(options[:12]) + ", ..."
    hint = suggestion(name, options)
    raise SQLError(f"Unknown {what} {name!r}.{hint} Known: {listed or 'none'}.")


class Catalog:
    """Named tables: private frames of one session, and public DataFrames (lookup tables)."""

    def __init__(
        self,
        private: Mapping[str, FrameHandle] | None = None,
        public: Mapping[str, pd.DataFrame] | None = None,
    ) -> None:
        self._private: dict[str, FrameHandle] = dict(private or {})
        self._public: dict[str, pd.DataFrame] = dict(public or {})

    def register(self, name: str, table: object, runner: Runner) -> None:
        """Name ``table`` (a private frame of ``runner``'s session, or a public DataFrame).

        Raises:
            SQLError: an empty name, a frame of another session, or anything
                that is not a private frame or a pandas DataFrame.
        """
        if not isinstance(name, str) or not name.strip():
            raise SQLError("register() takes a table name (a non-empty string) and a table.")
        found = handle_of(table)
        if isinstance(found, FrameHandle):
            if found.runner is not runner:
                raise SQLError(
                    f"register({name!r}, ...): this private frame belongs to another session; "
                    "register it on its own session."
                )
            self._public.pop(name, None)
            self._private[name] = found
            return
        if found is not None:
            raise SQLError(
                f"register({name!r}, ...) takes a private frame (not a column or a group-by) "
                "or a public pandas DataFrame."
            )
        if not isinstance(table, pd.DataFrame):
            raise SQLError(
                f"register({name!r}, ...) takes a private frame or a public pandas DataFrame, "
                f"not a {type(table).__name__}."
            )
        self._private.pop(name, None)
        self._public[name] = table

    def with_frames(self, frames: Mapping[str, Any], runner: Runner) -> Catalog:
        """This catalog plus the private frames of ``runner`` among ``frames`` (by their names).

        Registered names win; objects that are not private frames of this
        session are skipped (a raw DataFrame in a notebook is never taken as public).
        """
        private = dict(self._private)
        for name, value in frames.items():
            found = handle_of(value)
            if (
                isinstance(name, str)
                and not name.startswith("_")
                and name not in private
                and name not in self._public
                and isinstance(found, FrameHandle)
                and found.runner is runner
            ):
                private[name] = found
        return Catalog(private, self._public)

    @property
    def names(self) -> list[str]:
        """Every table name, private first."""
        return [*self._private, *self._public]

    def table(self, name: str) -> FrameHandle | pd.DataFrame:
        """The private frame's handle or the public DataFrame named ``name``."""
        found = find_name(name, self.names, "table")
        return self._private[found] if found in self._private else self._public[found]
