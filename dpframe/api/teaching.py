"""Refusals that teach: a pandas name with a private counterpart says which one to use.

Three tables, read when something is refused:

* :data:`REVEALING` — pandas attributes that would show rows (``head``,
  ``values``, ``shape``...): refused as :class:`RefusedAttributeError`, which is
  both a :class:`~dpframe.errors.PrivacyViolationError` and an
  ``AttributeError`` (so ``hasattr`` is False and IPython's display probes
  move on), with what to ask instead;
* :data:`COUNTERPARTS` — pandas methods that have a private counterpart
  (``max`` → ``quantile(1.0, ...)``): :class:`UnknownAttributeError` naming it;
* :data:`FUNCTIONS` — pandas and numpy *functions* handed a private frame or
  column (``pd.cut``, ``np.mean``, ``pd.crosstab``): found from the call
  stack when the frame refuses to become an array, or from numpy's
  ``__array_function__`` protocol, and refused as :class:`LibraryFunctionError`
  with what to write instead.

Nothing here reads data: messages are built from names only.
"""

from __future__ import annotations

import difflib
import sys
from collections.abc import Hashable, Sequence

from dpframe.errors import DPError, PrivacyViolationError

__all__ = [
    "COUNTERPARTS",
    "FUNCTIONS",
    "OWNER_COUNTERPARTS",
    "REVEALING",
    "LibraryFunctionError",
    "RefusedAttributeError",
    "UnknownAttributeError",
    "did_you_mean",
    "library_caller",
    "missing_attribute",
    "refusal_for_function",
]


class UnknownAttributeError(DPError, AttributeError):
    """An attribute that private frames do not have (nothing is forwarded to pandas)."""


class RefusedAttributeError(PrivacyViolationError, AttributeError):
    """A pandas attribute that would reveal rows: refused, and absent to ``hasattr``."""


class LibraryFunctionError(DPError, TypeError):
    """A pandas or numpy function was given a private frame or column."""


_ROWS = "for a look at rows without revealing any, take a private copy: "
_COPY = "pf['col'].laplace_copy(epsilon=...) or pf['col'].randomized_response(epsilon=...)"

#: Attributes that would reveal rows, and what to ask instead.
REVEALING: dict[str, str] = {
    "head": f"pf.describe(epsilon=...) summarises every column; {_ROWS}{_COPY}",
    "tail": f"pf.describe(epsilon=...) summarises every column; {_ROWS}{_COPY}",
    "sample": f"{_ROWS}{_COPY}",
    "iloc": "rows are private: filter with pf[pf['col'] > x] (free), then aggregate",
    "loc": "rows are private: filter with pf[pf['col'] > x] (free), then aggregate",
    "at": "single values are private: ask for an aggregate",
    "iat": "single values are private: ask for an aggregate",
    "values": "ask for an aggregate (count, sum, mean, quantile, value_counts) with epsilon=",
    "array": "ask for an aggregate (count, sum, mean, quantile, value_counts) with epsilon=",
    "to_numpy": "ask for an aggregate (count, sum, mean, quantile, value_counts) with epsilon=",
    "to_pandas": f"{_ROWS}{_COPY}",
    "to_frame": "pf[['a', 'b']] selects columns and stays private",
    "tolist": "ask for an aggregate (count, sum, mean, quantile, value_counts) with epsilon=",
    "to_list": "ask for an aggregate (count, sum, mean, quantile, value_counts) with epsilon=",
    "to_dict": "ask for an aggregate (count, sum, mean, quantile, value_counts) with epsilon=",
    "to_csv": f"rows never leave; {_ROWS}{_COPY}",
    "to_parquet": f"rows never leave; {_ROWS}{_COPY}",
    "to_json": f"rows never leave; {_ROWS}{_COPY}",
    "to_excel": f"rows never leave; {_ROWS}{_COPY}",
    "iterrows": "rows are private: ask for an aggregate",
    "itertuples": "rows are private: ask for an aggregate",
    "items": "columns are pf[name] for name in pf.columns",
    "shape": "the exact row count is private: pf.count(epsilon=...); the columns: pf.columns",
    "size": "the exact row count is private: pf.count(epsilon=...)",
    "info": "pf shows its public schema (repr(pf), pf.columns, pf.bounds, pf.categories)",
    "memory_usage": "the table's size is private: pf.count(epsilon=...)",
    "empty": "whether any row exists is private: pf.count(epsilon=...)",
    "index": "the row index is private: group by a column instead",
    "groups": "which rows fall in each group is private: pf.groupby(key).size(epsilon=...) "
    "counts them; the keys are the declared categories (pf.categories)",
    "indices": "which rows fall in each group is private: pf.groupby(key).size(epsilon=...) "
    "counts them",
}

_QUANTILE = "quantile(q, epsilon=...)"
#: pandas methods with a private counterpart (on a column, a frame or a group-by).
COUNTERPARTS: dict[str, str] = {
    "max": "quantile(1.0, epsilon=...) for a private maximum, or "
    "approx_bounds(epsilon=...) for a range to clamp to",
    "min": "quantile(0.0, epsilon=...) for a private minimum, or "
    "approx_bounds(epsilon=...) for a range to clamp to",
    "idxmax": "groupby(key).argmax('count' | 'sum' | 'mean', column, epsilon=...) "
    "(report noisy max: only the key is released)",
    "idxmin": "groupby(key).argmax(...) on the negated column, e.g. "
    "pf.assign(neg=-pf['x']).groupby(key).argmax('mean', 'neg', epsilon=...)",
    "unique": "pf.discover_keys(column, epsilon=..., delta=...) finds the keys privately "
    "(or declare them: categories={column: [...]})",
    "sort_values": "value_counts(epsilon=...).nlargest(k) for the most common keys; "
    f"{_QUANTILE} for order statistics",
    "nlargest": "value_counts(epsilon=...).nlargest(k) (a released Series is plain pandas)",
    "nsmallest": "value_counts(epsilon=...).nsmallest(k) (a released Series is plain pandas)",
    "drop_duplicates": "pf.discover_keys(column, epsilon=..., delta=...) for the distinct keys",
    "duplicated": "duplicates are row-level facts: count them with an expression, "
    "e.g. pf.groupby(cols).size(epsilon=...)",
    "apply": "derive columns with expressions (arithmetic, clip, abs, isin, between, cut): "
    "pf.assign(new=pf['a'] * 2 + 1); Python functions cannot run on private rows",
    "transform": "derive columns with expressions, then aggregate",
    "aggregate": "agg(...): several aggregates in one charge, as pandas' agg",
    "cumsum": "running totals are row-level: hist(bins, epsilon=...) then .cumsum() on the release",
    "prod": "no private product; a sum of logs is a sum: derive the log, then sum(epsilon=...)",
    "mad": "std(epsilon=...) or quantile([0.25, 0.75], epsilon=...)",
    "sem": "the release's ci() gives its interval (free)",
    "plot": "dp.plot(release) or result.dp.plot() draws a release with its error bars",
    "boxplot": "quantile([0.25, 0.5, 0.75], epsilon=...) then plot the release",
    "nth": "rows are private: ask for an aggregate per group",
    "first": "rows are private: ask for an aggregate per group",
    "last": "rows are private: ask for an aggregate per group",
    "rank": "ranks are row-level: quantile(q, epsilon=...) for order statistics",
    "pivot_table": "pf.groupby([rows, cols])[value].mean(epsilon=...) then .unstack() "
    "on the release",
    "crosstab": "dp.crosstab(pf['a'], pf['b'], epsilon=...), or pf.groupby([a, b])"
    ".size(epsilon=...) then .unstack() on the release",
    "median": "median(epsilon=...) on a column: pf['col'].median(epsilon=...)",
    "explode": "rows cannot be multiplied inside a private frame (one person's influence "
    "would grow unseen); load the exploded table instead, with each person's rows "
    "limited: session.private_frame(exploded, privacy_unit=dp.PrivacyUnit('id', max_rows=k))",
}

#: Names whose counterpart depends on the owner (a column has ``nunique``; a group-by does not).
OWNER_COUNTERPARTS: dict[tuple[str, str], str] = {
    ("PrivateGroupBy", "describe"): "a summary per group in one charge: "
    "pf.groupby(key)[col].agg(['count', 'mean', 'std', 'median'], epsilon=...)",
    ("PrivateGroupBy", "keys"): "the group keys are public and yours already: the declared "
    "categories (pf.categories), or the keys= DataFrame you passed; their cross product is "
    "pd.MultiIndex.from_product([...]).to_frame(index=False)",
}

#: pandas / numpy functions given a private frame or column: what to write instead.
FUNCTIONS: dict[str, str] = {
    "cut": "pf['col'].cut(bins) or dp.cut(pf['col'], bins): public bins, nothing charged",
    "qcut": "pf['col'].qcut(q, epsilon=...) or dp.qcut(...): edges from private quantiles",
    "crosstab": "dp.crosstab(pf['a'], pf['b'], epsilon=...), as pd.crosstab (also "
    "normalize= and margins=); dp.plot(...) or .plot() draws the release; "
    "or pf.groupby([a, b]).size(epsilon=...), then .unstack() on the release",
    "concat": "concatenate releases (they are plain pandas), or load the combined table as "
    "one private frame",
    "merge": "pf.merge(public_df, on=key): a public lookup table (the private frame first)",
    "DataFrame": f"a private frame never becomes a pandas DataFrame; {_ROWS}{_COPY}",
    "Series": f"a private column never becomes a pandas Series; {_ROWS}{_COPY}",
    "asarray": "ask for an aggregate (count, sum, mean, quantile, value_counts) with epsilon=",
    "array": "ask for an aggregate (count, sum, mean, quantile, value_counts) with epsilon=",
    "mean": "pf['col'].mean(epsilon=...)",
    "average": "pf['col'].mean(epsilon=...)",
    "sum": "pf['col'].sum(epsilon=...)",
    "nansum": "pf['col'].sum(epsilon=...) (missing values are skipped)",
    "nanmean": "pf['col'].mean(epsilon=...) (missing values are skipped)",
    "std": "pf['col'].std(epsilon=...)",
    "var": "pf['col'].var(epsilon=...)",
    "median": "pf['col'].median(epsilon=...)",
    "percentile": "pf['col'].quantile(q / 100, epsilon=...)",
    "quantile": "pf['col'].quantile(q, epsilon=...)",
    "histogram": "pf['col'].hist(bins, epsilon=...)",
    "unique": "pf.discover_keys(column, epsilon=..., delta=...)",
    "max": "pf['col'].quantile(1.0, epsilon=...) or approx_bounds(epsilon=...)",
    "min": "pf['col'].quantile(0.0, epsilon=...) or approx_bounds(epsilon=...)",
    "amax": "pf['col'].quantile(1.0, epsilon=...) or approx_bounds(epsilon=...)",
    "amin": "pf['col'].quantile(0.0, epsilon=...) or approx_bounds(epsilon=...)",
    "sort": "pf['col'].quantile(q, epsilon=...) for order statistics",
    "sorted": "pf['col'].quantile(q, epsilon=...) for order statistics",
    "len": "pf.count(epsilon=...)",
    "list": "ask for an aggregate (count, sum, mean, quantile, value_counts) with epsilon=",
    "corrcoef": "pf[['a', 'b']].corr(epsilon=...)",
    "cov": "pf[['a', 'b']].cov(epsilon=...)",
    "where": "pf['x'].where(condition, other) on one column, or filter with pf[condition]",
    "isna": "pf.isna().sum(epsilon=...) counts the missing values per column",
    "notna": "pf.notna().mean(epsilon=...) gives the share present per column",
}

#: numpy ufuncs as a numpy function name (np.log1p(pf['x'])): derived columns instead.
_UFUNC_ADVICE = (
    "this numpy function cannot be given public bounds from a column's, so it cannot read "
    "private values; these can, one column at a time: np.log, log1p, log2, log10, sqrt, "
    "cbrt, exp, expm1, square, floor, ceil, trunc, rint, sign, tanh, arctan, sin, cos, abs, "
    "clip, round, where (or derive columns with arithmetic, e.g. pf['wage'] / 2)"
)


def did_you_mean(value: object, keys: Sequence[Hashable]) -> str:
    """`` Did you mean 'south'?`` for the public key nearest to ``value``, or nothing.

    Text is matched up to case first, then by similarity (difflib); a number
    by the nearest declared number.  ``keys`` are public (declared), and
    ``value`` is the analyst's own: nothing here reads data.
    """
    text = str(value)
    texts = {str(k): k for k in keys}
    folded = [k for t, k in texts.items() if t.casefold() == text.casefold()]
    if folded:
        return f" Did you mean {folded[0]!r}?"
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        numbers = [k for k in keys if isinstance(k, (int, float)) and not isinstance(k, bool)]
        if numbers:
            nearest = min(numbers, key=lambda k: abs(float(k) - float(value)))
            return f" Did you mean {nearest!r}?"
        return ""
    close = difflib.get_close_matches(text, list(texts), n=1, cutoff=0.6)
    if not close:
        close = difflib.get_close_matches(text.casefold(), [t.casefold() for t in texts], n=1)
        close = [t for t in texts if t.casefold() in close][:1]
    return f" Did you mean {texts[close[0]]!r}?" if close else ""


def missing_attribute(
    owner: str, name: str, extra: str = "", names: Sequence[str] = ()
) -> AttributeError:
    """The error for ``owner.name`` that does not exist: refused, taught, or plainly unknown.

    Returns (does not raise) an ``AttributeError`` subclass, so callers can
    ``raise missing_attribute(...)`` from ``__getattr__``.  ``names`` are what
    the owner has (its ``dir()``): a plainly unknown name is told the closest
    of them (``means`` → ``mean``).
    """
    if name in REVEALING:
        return RefusedAttributeError(
            f"{owner}.{name} would reveal private rows, so dpframe refuses it. "
            f"Instead: {REVEALING[name]}."
        )
    counterpart = OWNER_COUNTERPARTS.get((owner, name), COUNTERPARTS.get(name))
    if counterpart is not None:
        return UnknownAttributeError(
            f"{owner} has no attribute {name!r} (dpframe does not forward to pandas). "
            f"The private counterpart: {counterpart}."
        )
    return UnknownAttributeError(
        f"{owner} has no attribute {name!r} (dpframe does not forward to pandas)."
        f"{_closest(name, names)}{extra}"
    )


def _closest(name: str, names: Sequence[str]) -> str:
    """`` Did you mean 'mean'?`` for the names nearest to ``name`` (difflib), or nothing."""
    if name.startswith("_"):  # a protocol probe (IPython's _repr_html_, pandas' _typ)
        return ""
    public = [n for n in names if not n.startswith("_")]
    close = difflib.get_close_matches(name, public, n=3, cutoff=0.75)
    if not close:
        return ""
    return f" Did you mean {' or '.join(repr(n) for n in close)}?"


def refusal_for_function(name: str, module: str = "") -> LibraryFunctionError:
    """The error for a pandas/numpy function called with private data."""
    prefix = "np" if module.startswith("numpy") else "pd" if module.startswith("pandas") else ""
    shown = f"{prefix}.{name}" if prefix else name
    advice = FUNCTIONS.get(name, _UFUNC_ADVICE if prefix == "np" else None)
    if advice is None:
        advice = "use the private frame's own methods (count, sum, mean, groupby, ...)"
    return LibraryFunctionError(
        f"{shown}() was given a private frame or column, which it cannot read. Instead: {advice}."
    )


def library_caller() -> tuple[str, str] | None:
    """The outermost pandas or numpy function on the call stack, as (name, module).

    Called only while refusing (``__array__``, ``__len__``, ``__iter__``): it
    names what the user called, e.g. ``pd.cut`` or ``pd.crosstab``, so the
    refusal can say what to write instead.  Reads code names, never data.
    """
    frame = sys._getframe(1)
    found: tuple[str, str] | None = None
    while frame is not None:
        module = str(frame.f_globals.get("__name__", ""))
        if module.split(".")[0] in ("pandas", "numpy"):
            name = frame.f_code.co_name
            if name == "__init__":  # pd.DataFrame(pf): the class being built
                self_obj = frame.f_locals.get("self")
                name = type(self_obj).__name__ if self_obj is not None else name
            found = (name, module)
        elif found is not None:
            break  # left the library: the last one found is what the user called
        frame = frame.f_back  # type: ignore[assignment]
    return found
