"""Private joins of two frames of one ID space: their public facts and their checks.

``visits.merge(people, on="person_id")`` builds a :class:`~dpframe.plan.nodes.Join`
and a :class:`~dpframe.plan.nodes.Source` over it (:func:`id_join`); the
joined frame's public schema follows from the two sides' schemas alone
(:func:`join_schema`).  The engine checks the same facts again before it
reads anything (:func:`check_join`), so a join built by hand or received by a
curator gets the same refusals.

Privacy (docs/proofs/private_joins.md): the two frames belong to one ID
space, so a person's rows in either frame carry the same ID; the keys include
that ID, so a joined row pairs two rows of one person and removing a person
removes exactly the joined rows with their ID.  The engine keeps at most
``max_rows`` of them (a random subset), so every release on the join counts
``max_rows`` rows per person, whatever the two sides' limits were.

Refused, before any charge and with the reason: frames of two sessions, a
row-level frame (no ID space), frames of two ID spaces, keys that do not pair
the two ID columns (a join on another key: its stability would need both
sides bounded per key, not offered yet), keys of different kinds, unknown
columns, ``max_rows`` that is not an integer >= 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from dpframe.errors import SchemaError
from dpframe.plan.columns import ColumnInfo
from dpframe.plan.nodes import PUBLIC_VIEW, Join, Plan, Source, lineage
from dpframe.plan.schema import Schema

__all__ = [
    "PER_ID_ROWS",
    "PER_KEY_RANK",
    "PER_KEY_SIDE",
    "PUBLIC_VIEW",
    "check_join",
    "default_max_rows",
    "id_join",
    "is_public",
    "join_columns",
    "join_schema",
    "join_source",
    "key_join_stability",
    "per_id_schema",
    "per_key_schema",
    "public_join",
    "public_name",
    "unit_of",
]


def unit_of(plan: Plan) -> Source:
    """The source of a side (its ID space, ID column and row limit)."""
    return lineage(plan)[0]


def _keys(
    on: str | Sequence[str] | None,
    left_on: str | Sequence[str] | None,
    right_on: str | Sequence[str] | None,
    left: Source,
    right: Source,
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    def names(value: str | Sequence[str], what: str) -> tuple[str, ...]:
        items = (value,) if isinstance(value, str) else tuple(value)
        if not items or not all(isinstance(i, str) and i for i in items):
            raise SchemaError(f"merge({what}=...) takes a column name or a list of them.")
        return items

    if on is not None:
        if left_on is not None or right_on is not None:
            raise SchemaError("Give merge() on=, or left_on= and right_on=, not both.")
        keys = names(on, "on")
        return keys, keys
    if left_on is not None and right_on is not None:
        return names(left_on, "left_on"), names(right_on, "right_on")
    if left_on is not None or right_on is not None:
        raise SchemaError("Give merge() left_on= and right_on= together.")
    if left.unit_column and right.unit_column:  # default: the two ID columns
        return (left.unit_column,), (right.unit_column,)
    raise SchemaError("merge() of two private frames needs on= (the ID column).")


def _side(source: Source, what: str) -> None:
    if not source.id_space or not source.unit_column:
        raise SchemaError(
            f"The {what} frame has no ID space (one row per person): a private join needs "
            "both frames loaded with privacy_unit=dp.PrivacyUnit(id_column, max_rows=..., "
            "id_space=...), so that a person's rows in both carry one ID. A row-level frame "
            "and an ID frame cannot be joined privately; merge a public lookup table instead."
        )


def is_public(source: Source) -> bool:
    """True for a public table's source (its ``unit_rows``: the most rows one key has)."""
    return source.view == PUBLIC_VIEW and source.join is None


def public_name(digest: str, most: int) -> str:
    """The dataset name of a public table: its digest and its most rows per key.

    The engine registers a public table only under the name its own rows give
    (:meth:`~dpframe.engine.session.Session.load_public`), so a source claiming
    another multiplicity names no table and is refused.
    """
    return f"public:{most}:{digest}"


def _check_public(join: Join, left: Source, right: Source) -> None:
    """A merge with a public table whose keys repeat: left or inner, any keys."""
    if right.dataset.split(":")[:2] != ["public", str(right.unit_rows)]:
        raise SchemaError("This public table's source does not match its table.")
    if join.how not in ("inner", "left", "semi", "anti"):
        raise SchemaError(
            f"merge(how={join.how!r}) with a public table is refused: only 'left', 'inner' "
            "(and 'semi', 'anti') keep each row a private row ('right' and 'outer' would add "
            "rows that belong to no one)."
        )
    if join.rows != "kept":
        raise SchemaError("merge(rows=...) is for joins of two private frames.")
    if not left.unit_column and join.max_rows < default_max_rows(join.how, left, right):
        raise SchemaError(
            "merge(max_rows=...) keeps at most that many rows per ID: the frame has no ID "
            "column (row-level data), so nothing can be truncated per person. Leave max_rows "
            "out: each row then counts the most times its key repeats in the table."
        )


def check_join(join: Join, left: Source, right: Source) -> int:
    """Refuse a join that is not on the ID of one ID space; the key position of the ID.

    A merge with a public table (``right`` is public) has no ID position: -1;
    a join on another key (``join.on_key``): -2.

    Args:
        join: the join.
        left: the left side's source.
        right: the right side's source.

    Raises:
        SchemaError: saying why (never naming a private value).
    """
    if is_public(right):
        _check_public(join, left, right)
        return -1
    _side(left, "left")
    _side(right, "right")
    if left.id_space != right.id_space:
        raise SchemaError(
            f"The frames belong to two ID spaces ({left.id_space!r} and {right.id_space!r}): "
            "their IDs name different kinds of units, so a joined row would have no single "
            "owner. Join frames of one ID space (dp.PrivacyUnit(..., id_space=...))."
        )
    pairs = list(zip(join.left_on, join.right_on, strict=True))
    if join.on_key:
        if (left.unit_column, right.unit_column) in pairs:
            raise SchemaError(
                "The keys include the ID columns: this is a join on the ID. Give max_rows= "
                "(the most rows per person after the join), not k=."
            )
        if join.rows not in ("kept", "per_key"):
            raise SchemaError(
                "merge(rows=...) is for joins on the ID; a join on another key has no rows "
                "per person to count or drop."
            )
        return -2
    if join.rows == "per_key":
        raise SchemaError(
            "rows='per_key' is for choosing k privately in a join on another key (k='auto')."
        )
    if (left.unit_column, right.unit_column) not in pairs:
        raise SchemaError(
            f"A private join must match the ID columns ({left.unit_column!r} with "
            f"{right.unit_column!r}) among its keys: on another key (household, store) a "
            "person's rows could match many people's rows and the join's stability has no "
            "bound. Add the ID to the keys, or bound both sides per key value: merge(..., "
            "k=3) (or k_left= and k_right=)."
        )
    return pairs.index((left.unit_column, right.unit_column))


def join_columns(join: Join) -> list[tuple[str, str, str]]:
    """The joined frame's columns in order: (name, side "left"/"right", the side's column).

    The left columns come first (the keys keep their left names), then the
    right columns other than the right keys; a non-key name in both gets the
    suffixes, as pandas.

    Raises:
        SchemaError: a key column missing from the kept columns, or a name
            that would clash with a key.
    """
    for key in join.left_on:
        if key not in join.left_columns:
            raise SchemaError(f"The join key {key!r} is not a column of the left frame.")
    for key in join.right_on:
        if key not in join.right_columns:
            raise SchemaError(f"The join key {key!r} is not a column of the right frame.")
    if join.how in ("semi", "anti"):
        return [(c, "left", c) for c in join.left_columns]
    right_rest = [c for c in join.right_columns if c not in join.right_on]
    left_rest = [c for c in join.left_columns if c not in join.left_on]
    clash = set(left_rest) & set(right_rest)
    keys = set(join.left_on)
    named_like_keys = sorted(keys & set(right_rest))
    if named_like_keys:
        raise SchemaError(
            f"The right frame has non-key columns named like a left key ({named_like_keys!r}); "
            "rename them before the merge."
        )
    out: list[tuple[str, str, str]] = []
    for c in join.left_columns:
        out.append((c + join.suffixes[0] if c in clash else c, "left", c))
    for c in right_rest:
        out.append((c + join.suffixes[1] if c in clash else c, "right", c))
    names = [n for n, _, _ in out]
    if len(set(names)) != len(names):
        raise SchemaError("The merge's suffixes make two columns of one name; give other suffixes.")
    return out


def _may_be_missing(info: ColumnInfo, name: str) -> ColumnInfo:
    """A column that unmatched rows fill with missing values: the dtype pandas gives it."""
    dtype = info.dtype
    if info.kind == "numeric" and dtype.startswith(("int", "uint")):
        dtype = "float64"  # as pandas: a missing integer makes the column float
    elif info.kind == "boolean" and dtype == "bool":
        dtype = "boolean"  # pandas' nullable boolean (the engine converts the same way)
    return replace(info, name=name, dtype=dtype, not_null=False)


def join_schema(join: Join, left: Schema, right: Schema) -> Schema:
    """The joined frame's public schema, from the two sides' schemas only.

    Raises:
        SchemaError: unknown columns, or key columns of different kinds.
    """
    public = is_public(unit_of(join.right))  # its keys' kind checked from its values
    for key_l, key_r in zip(join.left_on, join.right_on, strict=True):
        a, b = left.get(key_l), right.get(key_r)
        if a.kind != b.kind and not public:
            raise SchemaError(
                f"The join keys {key_l!r} ({a.kind}) and {key_r!r} ({b.kind}) are of "
                "different kinds: convert one so both are of the same kind."
            )
    if join.rows == "per_id":
        return per_id_schema(join)
    if join.rows == "per_key":
        return per_key_schema(join)
    left_fill = join.how in ("right", "outer")
    right_fill = join.how in ("left", "outer")
    infos: list[ColumnInfo] = []
    for name, side, column in join_columns(join):
        schema, fill = (left, left_fill) if side == "left" else (right, right_fill)
        info = schema.get(column)
        if fill and not (side == "left" and column in join.left_on):
            infos.append(_may_be_missing(info, name))
        else:
            infos.append(replace(info, name=name))
    return Schema(tuple(infos))


#: The column of a join's rows per ID (``rows="per_id"``).
PER_ID_ROWS = "rows"


def per_id_schema(join: Join) -> Schema:
    """One row per ID: ``rows``, its number of joined rows, in [1, ``join.max_rows``].

    The facade builds a per-ID join with ``max_rows`` the most rows the join
    can give one ID, so the bounds are public and never cut a count.
    """
    count = ColumnInfo(PER_ID_ROWS, "numeric", "int64", bounds=(1.0, float(join.max_rows)))
    return Schema((count,))


#: The columns of a key join's rows per key value (``rows="per_key"``).
PER_KEY_SIDE = "side"
PER_KEY_RANK = "rank"


def per_key_schema(join: Join) -> Schema:
    """One row per side row whose key is present: ``side`` and ``rank`` in [1, ``k_left``].

    ``side`` is "left" or "right" (declared); ``rank`` is the row's place among
    its key value's rows on its side (1, 2, ..., clipped at ``join.k_left``,
    the most ``k`` the choice may give).  Built by the facade for
    ``k="auto"`` (docs/proofs/private_joins.md, "k chosen privately").
    """
    side = ColumnInfo(PER_KEY_SIDE, "categorical", "str", categories=("left", "right"))
    rank = ColumnInfo(PER_KEY_RANK, "numeric", "int64", bounds=(1.0, float(join.k_left)))
    return Schema((side, rank))


def join_source(join: Join, left: Source, right: Source) -> Source:
    """The source of the joined rows: ``join.max_rows`` rows per ID of the sides' ID space.

    For ``rows="dropped"`` (the rows the truncation dropped), one person has
    at most (the most rows the join can give them) − ``max_rows`` such rows.

    Raises:
        SchemaError: as :func:`check_join`, or dropped rows of a join that can
            drop none.
    """
    position = check_join(join, left, right)
    rows = join.max_rows
    if position == -2:  # on another key: no single owner, no per-ID step may follow
        if join.rows == "per_key":  # a person's rows of either side: one rank row each
            rows = left.unit_rows + right.unit_rows
        else:
            rows = key_join_stability(join, left, right)
        return Source(
            f"join({left.dataset},{right.dataset})",
            unit_rows=rows,
            unit_groups=rows,
            join=join,
        )
    if position < 0:  # a public table: each row counts up to its key's repeats (or max_rows)
        rows = min(rows, default_max_rows(join.how, left, right))
        return Source(
            f"join({left.dataset},{right.dataset})",
            unit_rows=rows,
            unit_column=left.unit_column,
            unit_groups=rows,
            id_space=left.id_space,
            join=join,
        )
    if join.rows == "per_id":
        rows = 1  # one row per person
    elif join.rows == "dropped":
        most = default_max_rows(join.how, left, right)
        if most <= join.max_rows:
            raise SchemaError(
                f"This join gives each person at most {most} rows, within max_rows="
                f"{join.max_rows}: its truncation drops nothing, so there is nothing to count."
            )
        rows = most - join.max_rows
    return Source(
        f"join({left.dataset},{right.dataset})",
        unit_rows=rows,
        unit_column="" if join.rows == "per_id" else join.left_on[position],
        unit_groups=rows,
        id_space=left.id_space,
        join=join,
    )


def key_join_stability(join: Join, left: Source, right: Source) -> int:
    """How many joined rows one person can change in a join on another key: 2·(m_L·k_R + m_R·k_L).

    Each side holds at most m rows of a person (its row limit) and keeps at
    most k rows per key value; a left row matches at most k_R right rows and a
    right row at most k_L left rows (semi/anti: a left row gives at most one
    row, so k_R counts as 1).  Removing the person removes at most m rows of
    each side, and the per-key cut can then keep, in their place, as many rows
    that it had evicted: twice the rows change (docs/proofs/private_joins.md,
    "Joins on another key").
    """
    k_r = 1 if join.how in ("semi", "anti") else join.k_right
    return 2 * (left.unit_rows * k_r + right.unit_rows * join.k_left)


def default_max_rows(how: str, left: Source, right: Source) -> int:
    """The most rows one ID can have after the join, from the sides' limits (no truncation)."""
    if how in ("semi", "anti"):
        return left.unit_rows
    return left.unit_rows * right.unit_rows


def id_join(
    left_plan: Plan,
    left_schema: Schema,
    right_plan: Plan,
    right_schema: Schema,
    *,
    how: str,
    on: str | Sequence[str] | None = None,
    left_on: str | Sequence[str] | None = None,
    right_on: str | Sequence[str] | None = None,
    max_rows: int | None = None,
    suffixes: tuple[str, str] = ("_x", "_y"),
    rows: str = "kept",
    k_left: int = 0,
    k_right: int = 0,
) -> tuple[Source, Schema]:
    """The source and public schema of a private join (all checks before any charge).

    On the ID (``k_left`` = ``k_right`` = 0), or on another key with each side
    cut to at most ``k_left`` / ``k_right`` rows per key value (then
    ``max_rows`` must be None: no per-ID truncation follows).

    Args:
        left_plan: the left frame's plan.
        left_schema: the left frame's public schema (its kept columns).
        right_plan: the right frame's plan.
        right_schema: the right frame's public schema.
        how: inner, left, right, outer, semi or anti.
        on: the key columns of both (the ID among them; default: the two ID columns).
        left_on: the left keys, with ``right_on``.
        right_on: the right keys, paired with ``left_on``.
        max_rows: the most rows one ID keeps after the join (default: the
            product of the sides' limits, the most a join can give, so
            nothing is dropped; semi/anti: the left limit).
        suffixes: for other columns present in both, as pandas.
        rows: ``"kept"``, or ``"dropped"``: the rows the truncation dropped
            (each person has at most the sides' product minus ``max_rows``).
        k_left: a join on another key: the most rows the left side keeps per
            key value (0, with ``k_right``: a join on the ID).
        k_right: the same for the right side.

    Raises:
        SchemaError: for every refusal listed in the module docstring.
    """
    left, right = unit_of(left_plan), unit_of(right_plan)
    _side(left, "left")
    _side(right, "right")
    lkeys, rkeys = _keys(on, left_on, right_on, left, right)
    for key in lkeys:
        left_schema.get(key)
    for key in rkeys:
        right_schema.get(key)
    if k_left or k_right:
        if max_rows is not None:
            raise SchemaError(
                "max_rows= bounds the rows per person after a join on the ID; a join on "
                "another key (k=) keeps no ID: leave max_rows out."
            )
        max_rows = 1  # unused: no per-ID truncation
    elif max_rows is None:
        max_rows = default_max_rows(str(how), left, right)
    join = Join(
        left_plan,
        right_plan,
        lkeys,
        rkeys,
        how,
        max_rows,
        left_schema.names,
        right_schema.names,
        tuple(suffixes),  # type: ignore[arg-type]
        rows,
        k_left,
        k_right,
    )
    source = join_source(join, left, right)
    return source, join_schema(join, left_schema, right_schema)


def public_join(
    left_plan: Plan,
    left_schema: Schema,
    table: Source,
    table_schema: Schema,
    *,
    how: str,
    on: str,
    max_rows: int | None = None,
    suffixes: tuple[str, str] = ("_x", "_y"),
) -> tuple[Source, Schema]:
    """A merge with a public table whose key repeats: its source and public schema.

    Privacy (docs/proofs/private_joins.md, "A public table whose keys
    repeat"): the table is public and a key occurs at most ``d`` =
    ``table.unit_rows`` times in it, so each private row becomes at most ``d``
    rows, all of the same owner: a unit of ``m`` rows contributes at most
    ``m·d`` rows (semi/anti: ``m``) and every later release is charged for
    that many (or for ``max_rows`` per ID when the frame has an ID column and
    the engine truncates to it).  Missing keys never match.

    Raises:
        SchemaError: ``how`` other than left, inner, semi or anti, or
            ``max_rows`` on a frame without an ID column (before any charge).
    """
    left = unit_of(left_plan)
    for name, schema in ((on, left_schema), (on, table_schema)):
        schema.get(name)
    if max_rows is None:
        max_rows = default_max_rows(how, left, table)
    join = Join(
        left_plan,
        table,
        (on,),
        (on,),
        how,
        max_rows,
        left_schema.names,
        table_schema.names,
        tuple(suffixes),  # type: ignore[arg-type]
    )
    source = join_source(join, left, table)
    return source, join_schema(join, left_schema, table_schema)
