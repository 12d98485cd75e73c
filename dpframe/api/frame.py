"""``PrivateFrame``: a pandas-like view of private data that answers only with releases.

A thin shell over a :class:`~dpframe.api.handle.FrameHandle`: selecting,
filtering and deriving columns return new frames (free, this module); every
release method (:mod:`dpframe.api.frame_releases`) builds a node with a verb
(:mod:`dpframe.api.verbs`) and hands it to the session.  Nothing here
yields a raw value: ``repr`` shows the public schema, and ``len``,
iteration, ``head``, ``values``, ``to_numpy``, ``np.asarray``, pickling and
unknown attributes raise.
"""

from __future__ import annotations

import html
from collections.abc import Hashable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import pandas as pd

from dpframe.api.frame_releases import FrameReleases
from dpframe.api.groupby import PrivateGroupBy, groupby_of
from dpframe.api.guard import RowGuard
from dpframe.api.handle import FrameHandle, Runner, handle_of
from dpframe.api.locator import FrameLocator
from dpframe.api.series import PrivateSeries, series_of
from dpframe.api.teaching import REVEALING
from dpframe.api.verbs import (
    elementwise,
    frames,
    grouping,
    joins,
    lookup,
    relations,
    transforms,
)
from dpframe.api.verbs.columns import is_column
from dpframe.errors import SchemaError
from dpframe.plan.expressions import Expr
from dpframe.plan.nodes import Plan, describe_plan
from dpframe.plan.schema import ColumnInfo

if TYPE_CHECKING:
    pass

__all__ = ["PrivateFrame", "frame_of"]


def frame_of(handle: FrameHandle) -> PrivateFrame:
    """The :class:`PrivateFrame` of a handle."""
    frame = object.__new__(PrivateFrame)
    object.__setattr__(frame, "_handle", handle)
    return frame


class PrivateFrame(FrameReleases, RowGuard):
    """A private table: public schema, private rows, answers only through releases.

    Create one with :meth:`Session.private_frame` or :meth:`Session.read_csv`.

    Example:
        >>> pf[pf["education"] >= 12]["wage"].mean(epsilon=0.1)  # doctest: +SKIP
    """

    __slots__ = ("_handle",)

    _handle: FrameHandle

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise SchemaError("Create a PrivateFrame with session.private_frame(df, bounds=..., ...).")

    def __setattr__(self, name: str, value: Any) -> None:
        raise SchemaError(
            f"A PrivateFrame is immutable: pf.{name} = ... is not available. Derive a column "
            f"with pf[{name!r}] = expression (or assign()); declare public facts with "
            "with_bounds() or with_categories()."
        )

    def __dpframe__(self) -> FrameHandle:
        """The frame's handle (plan, schema, session): the protocol verbs read."""
        return self._handle

    # -- public schema -------------------------------------------------------

    @property
    def session(self) -> Runner:
        """The session that charges this frame's releases."""
        return self._handle.runner

    @property
    def plan(self) -> Plan:
        """The immutable query plan behind this frame."""
        return self._handle.plan

    @property
    def columns(self) -> pd.Index:
        """Column names (public)."""
        names: pd.Index = pd.Index(self._handle.schema.names)
        return names

    @property
    def dtypes(self) -> pd.Series:
        """Column dtypes (public)."""
        columns = self._handle.schema.columns
        dtypes: pd.Series = pd.Series({c.name: c.dtype for c in columns}, dtype=object)
        return dtypes

    @property
    def bounds(self) -> dict[str, tuple[float, float]]:
        """Declared or derived clamping bounds per column."""
        return {c.name: c.bounds for c in self._handle.schema.columns if c.bounds is not None}

    @property
    def categories(self) -> dict[str, tuple[Hashable, ...]]:
        """Declared public keys per column."""
        columns = self._handle.schema.columns
        return {c.name: c.categories for c in columns if c.categories is not None}

    @property
    def schema(self) -> pd.DataFrame:
        """The public schema as a table: kind, dtype, bounds and categories per column."""
        return self._handle.schema.to_frame()

    def column_info(self, name: str) -> ColumnInfo:
        """Public facts about one column."""
        return self._handle.schema.get(name)

    def __repr__(self) -> str:
        schema = self._handle.schema
        lines = [f"PrivateFrame: {len(schema.columns)} columns, rows private"]
        for info in schema.columns:
            extra = ""
            if info.bounds is not None:
                extra += f" bounds={info.bounds}"
            if info.categories is not None and info.kind != "boolean":
                extra += f" categories={list(info.categories)}"
            lines.append(f"  {info.name}: {info.dtype}{extra}")
        filters = describe_plan(self._handle.plan)
        if filters:
            lines.append(f"  plan:{filters}")
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        rows = "".join(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>".format(
                html.escape(c.name),
                html.escape(c.dtype),
                "" if c.bounds is None else html.escape(str(c.bounds)),
                "" if c.categories is None else html.escape(", ".join(map(str, c.categories))),
            )
            for c in self._handle.schema.columns
        )
        return (
            "<div class='dpframe-schema'><b>PrivateFrame</b> "
            "<span style='color:#666'>(rows private; answers only with releases)</span>"
            "<table><thead><tr><th>column</th><th>dtype</th><th>bounds</th>"
            f"<th>categories</th></tr></thead><tbody>{rows}</tbody></table></div>"
        )

    def __getattr__(self, name: str) -> Any:
        schema = self._handle.schema
        if not name.startswith("_") and name in schema and name not in REVEALING:
            return self[name]  # pf.wage; a pandas name that reveals rows wins, as in pandas
        raise self._missing(name, f" Columns: {', '.join(schema.names)}.")

    def __dir__(self) -> list[str]:
        names = (n for n in self._handle.schema.names if n.isidentifier() and n not in REVEALING)
        return sorted(set(super().__dir__()) | set(names))

    # -- building plans (free) -----------------------------------------------

    def __getitem__(self, key: Any) -> Any:
        if isinstance(key, str):
            return series_of(self._handle.column(key))
        if is_column(key) or isinstance(key, Expr):
            return self.filter(key)
        if isinstance(key, (list, tuple)) and all(isinstance(k, str) for k in key):
            return self.select(list(key))
        raise SchemaError(
            "Index a PrivateFrame with a column name, a list of names, or a condition."
        )

    def __setitem__(self, name: str, value: Any) -> None:
        """``pf[name] = expression``: a derived column, as pandas (free).

        As ``pf = pf.assign(name=value)``: this variable's frame gets the
        column (bounds by interval arithmetic); frames and columns taken from
        it before keep their own plans (a frame's plan never changes).
        """
        if not isinstance(name, str):
            raise SchemaError("pf[name] = expression takes one column name (a string).")
        handle = frames.assign(self._handle, {name: value})
        object.__setattr__(self, "_handle", handle)

    @property
    def loc(self) -> FrameLocator:
        """``pf.loc[condition, columns]`` or ``pf.loc[:, columns]``: a filter and a selection.

        Both are free, as ``pf[condition][columns]``; row labels are private
        (``pf.loc[3]`` is refused).
        """
        return FrameLocator(self)

    def select(self, columns: Sequence[str]) -> PrivateFrame:
        """The frame with only some of its columns, as ``pf[columns]`` (free: nothing is charged).

        Example:
            >>> pf.select(["wage", "education"]).describe(epsilon=0.5)  # doctest: +SKIP
        """
        return frame_of(frames.select(self._handle, columns))

    def filter(self, condition: PrivateSeries | Expr) -> PrivateFrame:
        """The rows where ``condition`` holds, as ``pf[condition]`` (free: nothing is charged).

        Example:
            >>> pf.filter(pf["education"] >= 12)["wage"].mean(epsilon=0.1)  # doctest: +SKIP

        A missing value in the condition counts as false.
        """
        return frame_of(frames.filter_rows(self._handle, condition))

    def assign(self, **columns: PrivateSeries | Expr | float | int | bool) -> PrivateFrame:
        """The frame with new columns computed from its columns, as ``DataFrame.assign`` (free).

        Example:
            >>> pf = pf.assign(weekly=pf["wage"] * 5)  # doctest: +SKIP
            >>> pf["weekly"].mean(epsilon=0.1)  # doctest: +SKIP

        A new column's bounds follow from its inputs' by interval arithmetic;
        ``with_bounds`` declares tighter ones.
        """
        return frame_of(frames.assign(self._handle, columns))

    def with_bounds(self, **bounds: tuple[float, float]) -> PrivateFrame:
        """The frame with public bounds declared for numeric columns (values are clipped to them).

        Example:
            >>> pf.with_bounds(wage=(0, 3000))["wage"].mean(epsilon=0.1)  # doctest: +SKIP

        Sums and means need bounds; tighter bounds mean less noise, and values
        outside them are clamped.  Free: nothing is charged.
        """
        return frame_of(frames.with_bounds(self._handle, bounds))

    def with_categories(self, **categories: Sequence[Hashable]) -> PrivateFrame:
        """The frame with public keys declared for columns, to group by or count.

        Example:
            >>> by_smsa = pf.with_categories(smsa=["yes", "no"]).groupby("smsa")  # doctest: +SKIP
            >>> by_smsa.size(epsilon=0.1)  # doctest: +SKIP

        Rows whose value is not declared are in no group.  Free: nothing is charged.
        """
        return frame_of(frames.with_categories(self._handle, categories))

    def groupby(self, by: Any, keys: Any = None) -> PrivateGroupBy:
        """Group the rows by columns with public keys, as ``DataFrame.groupby``.

        Every declared key is a group, in declaration order, whether or not it
        occurs; rows whose key is not declared are in no group.

        Example:
            >>> pf.groupby("region")["wage"].mean(epsilon=0.2)  # doctest: +SKIP
            >>> pf.groupby(["region", "smsa"]).size(epsilon=0.2)  # doctest: +SKIP

        ``by`` is a column name, a derived column with public keys
        (``pf["age"].cut(bins)``, as pandas' ``df.groupby(pd.cut(...))``) or a list.

        ``keys=`` a public DataFrame of the allowed key combinations (one row
        each) groups by those instead of the cross product of declared
        categories (``dpframe.api.verbs.keysets``).
        """
        frame, names, shown = grouping.group_columns(self._handle, by)  # derived keys added
        return groupby_of(grouping.group(frame, tuple(names), None, keys, tuple(shown)))

    def query(self, expr: str) -> PrivateFrame:
        """The rows where ``expr`` holds, as ``pandas.DataFrame.query`` (free: nothing is charged).

        Example:
            >>> pf.query("education >= 12 and region == 'south'").count(epsilon=1)  # doctest: +SKIP

        Columns by name (backquoted if they hold spaces), literals, comparisons
        (also chained: ``18 <= age < 65``), ``and``/``or``/``not`` (or ``&``,
        ``|``, ``~``), ``+ - * /`` and ``in [...]`` / ``not in [...]``; any
        other syntax is refused, naming what it found (it never calls ``eval``).
        """
        return frame_of(transforms.query(self._handle, expr))

    def rename(self, columns: Mapping[str, str] | None = None) -> PrivateFrame:
        """The frame with columns under new names, as ``DataFrame.rename(columns=...)`` (free).

        Example:
            >>> pf.rename(columns={"wage": "weekly_wage"})  # doctest: +SKIP

        Each renamed column keeps its declared facts (bounds, categories); the
        old name is gone from the result.
        """
        return frame_of(transforms.rename(self._handle, columns))

    def dropna(self, subset: Sequence[str] | None = None) -> PrivateFrame:
        """The rows with no missing value in ``subset`` (default: every column), free.

        Example:
            >>> pf.dropna(subset=["wage"]).count(epsilon=0.1)  # doctest: +SKIP
        """
        return frame_of(transforms.dropna(self._handle, subset))

    def fillna(self, value: object = None) -> PrivateFrame:
        """Missing values replaced by public constants, per column, as ``DataFrame.fillna`` (free).

        Example:
            >>> pf.fillna({"wage": 0.0})["wage"].mean(epsilon=0.1)  # doctest: +SKIP

        ``value`` is one public constant for every column, or a dict ``{column: value}``.
        The constant must lie within the column's bounds for them to stay the same.

        Privacy: nothing is charged; a row-by-row step, so every later
        release keeps its sensitivity.
        """
        return frame_of(elementwise.frame_fillna(self._handle, value))

    def merge(
        self,
        right: object,
        how: str | None = None,
        on: str | Sequence[str] | None = None,
        suffixes: tuple[str, str] = ("_x", "_y"),
        validate: str | None = None,
        *,
        left_on: str | Sequence[str] | None = None,
        right_on: str | Sequence[str] | None = None,
        max_rows: int | str | None = None,
        rows: str = "kept",
        bound_epsilon: float | None = None,
        k: int | str | None = None,
        k_left: int | None = None,
        k_right: int | None = None,
    ) -> PrivateFrame:
        """Add the columns of a public lookup table, or join a private frame of the same people.

        Example:
            >>> prices = pd.DataFrame(
            ...     {"region": ["northeast", "midwest", "south", "west"],
            ...      "price_index": [1.1, 0.9, 0.95, 1.05]}
            ... )  # doctest: +SKIP
            >>> pf.merge(prices, on="region")["price_index"].mean(epsilon=0.1)  # doctest: +SKIP

        Free (a join releases nothing).  With a public table (a pandas
        DataFrame): its columns are added, matched on a key, as
        ``DataFrame.merge``; many-to-one, so every private row stays one row and
        the sensitivity of every later release is unchanged.

        With a private frame of the same session and ID space
        (``visits.merge(people, on="person_id")``): a private join on keys that
        include the ID columns; the result is a private frame of that ID space
        where each person keeps at most ``max_rows`` rows (a random subset,
        chosen once); every release on it counts that many rows per person.
        Missing keys never match.  See :mod:`dpframe.api.verbs.joins`.

        Privacy: nothing is charged.  A public table: sensitivity unchanged.
        A private join: each later release's sensitivity is multiplied by
        ``max_rows`` (docs/proofs/private_joins.md).

        Args:
            right: a pandas DataFrame of public attributes, one row per key, or
                a private frame of the same session and ID space.
            how: a public table: ``"left"`` (default; rows whose key is not in
                the table get missing values) or ``"inner"``.  A private frame:
                ``"inner"`` (default), ``"left"``, ``"right"``, ``"outer"``,
                ``"semi"`` or ``"anti"`` (the left rows whose key is, or is
                not, in the right frame; left columns only).
            on: the key column(s), in both tables (default: the one column they
                share; for private frames, their ID columns).
            suffixes: for other columns present in both, as pandas.
            validate: public table only: None, ``"many_to_one"`` or ``"m:1"``.
            left_on: the left keys (with ``right_on``, instead of ``on``).
                Private frames: the right keys take the left names (one key
                column each).  A public table: one key; its ``right_on``
                column is kept, as pandas keeps both keys.
            right_on: the right keys, paired with ``left_on``.
            max_rows: private frames: the most rows one person keeps after the
                join (default: the product of the two frames' limits; semi and
                anti: the left frame's limit), or ``"auto"``: a bound that
                about 5 people exceed (the quantile of the join's rows per
                person at 1 − 5/n, at least 0.99, n a private count of the
                people), released privately at ``bound_epsilon`` in two
                releases (the count a tenth; charged now, in the ledger).
            rows: private frames: ``"kept"`` (default), or ``"dropped"``: the
                rows the ``max_rows`` bound cut (same random draw), so that
                ``.count(epsilon=...)`` on it answers "how many did the bound
                drop?" (charged: each person has at most the product of the
                limits minus ``max_rows`` such rows); or ``"per_id"``: one row
                per person, ``rows`` their number of joined rows.
            bound_epsilon: the cost of ``max_rows="auto"`` or ``k="auto"``.
            k: private frames joined on another key than the ID (household,
                store): the most rows each side keeps per key value (a random
                subset); each later release then counts 2·(m_L·k + m_R·k)
                rows per person, and the result has no ID.  ``"auto"``: each
                side's k is the 0.999 quantile of its rows per key value
                (at most 100), released privately at ``bound_epsilon`` (one charged release,
                recorded in the ledger).
            k_left: as ``k``, for the left side only (with ``k_right``).
            k_right: as ``k``, for the right side only (with ``k_left``).

        A join of two private frames, step by step: docs/protected.md ("Joining
        two private tables of one ID space").

        Accuracy: a public table changes nothing; after a private join every
        noise scale is ``max_rows`` times larger (so keep it small).
        """
        other = handle_of(right)
        if isinstance(other, FrameHandle):
            if validate is not None:
                raise SchemaError("merge() of two private frames takes no validate=.")
            return frame_of(
                joins.private_merge(
                    self._handle,
                    other,
                    how or "inner",
                    on,
                    left_on,
                    right_on,
                    suffixes,
                    max_rows,
                    rows,
                    bound_epsilon,
                    k,
                    k_left,
                    k_right,
                )
            )
        if (k, k_left, k_right) != (None, None, None):
            raise SchemaError("k=, k_left= and k_right= are for joins of two private frames.")
        if isinstance(max_rows, str) or bound_epsilon is not None or rows != "kept":
            raise SchemaError(
                "max_rows='auto', rows= and bound_epsilon= are for merging two private "
                "frames; with a public table, max_rows= is an integer (a table whose key "
                "repeats, on a frame with an ID column)."
            )
        return frame_of(
            lookup.merge(
                self._handle,
                right,
                how or "left",
                on,
                suffixes,
                validate,
                left_on,
                right_on,
                max_rows,
            )
        )

    def join(
        self,
        other: object,
        on: str | None = None,
        how: str = "left",
        lsuffix: str = "",
        rsuffix: str = "",
    ) -> PrivateFrame:
        """Add the columns of a public table indexed by a key, matched on column ``on``.

        Example:
            >>> prices = pd.DataFrame(
            ...     {"region": ["northeast", "midwest", "south", "west"],
            ...      "price_index": [1.1, 0.9, 0.95, 1.05]}
            ... )  # doctest: +SKIP
            >>> pf.join(prices.set_index("region"), on="region")["price_index"].mean(
            ...     epsilon=0.1
            ... )  # doctest: +SKIP

        As ``DataFrame.join``, and as :meth:`merge` with a public table: ``how``
        is ``"left"`` or ``"inner"``, the table's index must be unique.

        Privacy: nothing is charged; many-to-one, so every private row stays one
        row and every later release keeps its sensitivity.
        """
        return frame_of(lookup.join(self._handle, other, on, how, lsuffix, rsuffix))

    def isna(self) -> PrivateFrame:
        """A frame of flags, True where a value is missing, as ``DataFrame.isna`` (free).

        ``pf.isna().sum(epsilon=...)`` counts the missing values per column (integers).
        """
        return frame_of(relations.flags(self._handle, present=False))

    def notna(self) -> PrivateFrame:
        """A frame of flags, True where a value is present, as ``DataFrame.notna`` (free)."""
        return frame_of(relations.flags(self._handle, present=True))
