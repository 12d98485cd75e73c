"""``pf.loc[condition, columns]``: a filter and a selection, as pandas writes them (free).

pandas' ``.loc`` takes row labels and column labels.  Row labels are private
(``pf.loc[3]`` names one row), but the everyday uses are a condition
(``pf.loc[pf["x"] > 0, "y"]``) and every row (``pf.loc[:, ["a", "b"]]``):
those are a filter and a column selection, both free.  Anything else in the
row position is refused, saying what to write instead.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from dpframe.api.verbs.columns import is_column
from dpframe.errors import PrivacyViolationError, SchemaError
from dpframe.plan.expressions import Expr

if TYPE_CHECKING:
    from dpframe.api.frame import PrivateFrame

__all__ = ["FrameLocator"]


def _everything(key: object) -> bool:
    return isinstance(key, slice) and key == slice(None)


class FrameLocator:
    """The ``.loc`` of a private frame: ``[condition]``, ``[condition, cols]``, ``[:, cols]``."""

    __slots__ = ("_frame",)

    _frame: PrivateFrame

    def __init__(self, frame: PrivateFrame) -> None:
        object.__setattr__(self, "_frame", frame)

    def __setattr__(self, name: str, value: Any) -> None:
        raise SchemaError("pf.loc is read-only; derive columns with pf[name] = expression.")

    def __setitem__(self, key: object, value: object) -> None:
        raise SchemaError(
            "pf.loc[condition, 'col'] = value: write pf['col'] = pf['col'].mask(condition, value) "
            "(value where the condition holds, the column elsewhere; free), as pandas' "
            "Series.mask."
        )

    def __getitem__(self, key: object) -> Any:
        rows, columns = key if isinstance(key, tuple) and len(key) == 2 else (key, slice(None))
        frame = self._frame
        if not _everything(rows):
            if not (is_column(rows) or isinstance(rows, Expr)):
                raise PrivacyViolationError(
                    f"pf.loc[{rows!r}] picks rows by label, which would reveal private rows, so "
                    "dpframe refuses it. Instead: pf.loc[condition, columns] (a condition such "
                    "as pf['x'] > 0: a filter, free) or pf.loc[:, columns], then an aggregate "
                    "with epsilon=."
                )
            frame = frame.filter(rows)  # type: ignore[arg-type]  # a column or an Expr
        if _everything(columns):
            return frame
        if isinstance(columns, slice):  # column labels are public: slice them by name
            names = pd.Index(frame.columns)
            picked = names[names.slice_indexer(columns.start, columns.stop, columns.step)]
            return frame[list(picked)]
        if isinstance(columns, str) or (
            isinstance(columns, (list, tuple, pd.Index))
            and all(isinstance(c, str) for c in columns)
        ):
            return frame[columns if isinstance(columns, str) else list(columns)]
        raise SchemaError(
            "pf.loc[rows, columns] takes a column name, a list of names or a slice of names "
            "as columns."
        )
