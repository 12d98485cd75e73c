"""Which columns a query can name: the frame being built and the tables' names for its columns.

A scope maps each visible column, with or without its table's name or alias
(``cps.wage``, ``c.wage``, ``wage``), to a column of the frame handle the
query reads.  Names are matched as DuckDB matches them (exactly, else up to case).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from dpframe.api.handle import FrameHandle, SeriesHandle
from dpframe.api.sql.catalog import find_name
from dpframe.api.sql.errors import SQLError

__all__ = ["Scope"]


@dataclass(frozen=True)
class Scope:
    """A frame and its visible columns: ``(table name, column name, frame column)``."""

    frame: FrameHandle
    columns: tuple[tuple[str, str, str], ...]

    @classmethod
    def of(cls, frame: FrameHandle, table: str) -> Scope:
        """Every column of ``frame``, under the table name ``table``."""
        return cls(frame, tuple((table, name, name) for name in frame.schema.names))

    def with_frame(self, frame: FrameHandle) -> Scope:
        """The same names over a new frame (more rows filtered, columns added)."""
        return replace(self, frame=frame)

    @property
    def tables(self) -> list[str]:
        """The table names in scope."""
        return list(dict.fromkeys(t for t, _, _ in self.columns))

    def resolve(self, name: str, table: str | None = None) -> str:
        """The frame column that ``table.name`` (or ``name``) refers to."""
        pairs = self.columns
        if table is not None:
            found = find_name(table, self.tables, "table")
            pairs = tuple(p for p in pairs if p[0] == found)
        visible = list(dict.fromkeys(n for _, n, _ in pairs))
        chosen = find_name(name, visible, "column")
        targets = list(dict.fromkeys(c for _, n, c in pairs if n == chosen))
        if len(targets) > 1:
            owners = ", ".join(t for t, n, _ in pairs if n == chosen)
            raise SQLError(f"Column {name!r} is in several tables ({owners}): write table.{name}.")
        return targets[0]

    def column(self, name: str, table: str | None = None) -> SeriesHandle:
        """The handle of the column ``table.name``."""
        return self.frame.column(self.resolve(name, table))
