"""Refusals that teach: pandas names with a private counterpart say which one, pandas and
numpy functions handed a private frame say what to write, dir() lists only what works."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
import pytest
from IPython.core.completer import provisionalcompleter
from IPython.core.interactiveshell import InteractiveShell

import dpframe as dp
from dpframe.api.teaching import COUNTERPARTS, REVEALING, LibraryFunctionError


@pytest.fixture
def pf(session: dp.Session, cps: pd.DataFrame) -> dp.PrivateFrame:
    return session.private_frame(
        cps, bounds={"wage": (0, 5000)}, categories={"region": ["northeast", "south"]}
    )


@pytest.mark.parametrize(
    ("owner", "name", "match"),
    [
        (
            "series",
            "max",
            r"PrivateSeries has no attribute 'max'.*quantile\(1\.0, epsilon=\.\.\.\)",
        ),
        ("series", "min", r"quantile\(0\.0, epsilon=\.\.\.\).*approx_bounds"),
        ("series", "unique", r"pf\.discover_keys\(column, epsilon=\.\.\., delta=\.\.\.\)"),
        ("series", "sort_values", r"value_counts\(epsilon=\.\.\.\)\.nlargest\(k\)"),
        ("series", "idxmax", r"groupby\(key\)\.argmax"),
        ("frame", "max", r"PrivateFrame has no attribute 'max'.*quantile\(1\.0"),
        ("frame", "sort_values", r"value_counts\(epsilon=\.\.\.\)\.nlargest\(k\)"),
        ("groupby", "idxmax", r"PrivateGroupBy has no attribute 'idxmax'.*groupby\(key\)\.argmax"),
        ("frame", "median", r"PrivateFrame has no attribute 'median'.*pf\['col'\]\.median"),
        ("groupby", "apply", r"PrivateGroupBy has no attribute 'apply'.*expressions"),
    ],
)
def test_a_pandas_name_with_a_private_counterpart_names_it(
    pf: dp.PrivateFrame, owner: str, name: str, match: str
) -> None:
    target = {"series": pf["wage"], "frame": pf, "groupby": pf.groupby("region")}[owner]
    with pytest.raises(dp.DPError, match=match) as info:
        getattr(target, name)
    assert isinstance(info.value, AttributeError)
    assert not hasattr(target, name)  # an AttributeError: hasattr and IPython's probes work


@pytest.mark.parametrize("name", ["head", "values", "shape", "iloc", "to_csv", "sample"])
def test_revealing_names_are_refused_absent_and_say_what_instead(
    pf: dp.PrivateFrame, name: str
) -> None:
    for target in (pf, pf["wage"]):
        owner = type(target).__name__
        with pytest.raises(dp.PrivacyViolationError, match=rf"{owner}\.{name} would reveal"):
            getattr(target, name)
        assert not hasattr(target, name)
    with pytest.raises(dp.PrivacyViolationError, match=r"Instead: pf\.describe\(epsilon"):
        pf.head()


def test_dir_lists_only_what_works(pf: dp.PrivateFrame) -> None:
    for target in (pf, pf["wage"], pf.groupby("region")):
        names = dir(target)
        if not isinstance(target, dp.PrivateGroupBy):  # a group-by's size() is its count
            assert not set(names) & set(REVEALING)
        assert not [n for n in names if n.startswith("_")]
        for name in names:
            getattr(target, name)  # every listed name exists (no refusal on access)
    assert {"count", "groupby", "wage", "region", "describe"} <= set(dir(pf))
    assert {"mean", "quantile", "cut", "approx_bounds"} <= set(dir(pf["wage"]))
    assert not set(dir(pf["wage"])) & set(COUNTERPARTS) - {"median"}


def test_tab_completion_offers_what_works() -> None:
    ip = InteractiveShell.instance()
    session = dp.Session(epsilon=1, ledger=":memory:", name="complete")
    ip.user_ns["pf"] = session.private_frame(pd.DataFrame({"wage": [1.0]}), bounds={"wage": (0, 2)})

    def offered(text: str) -> list[str]:  # what the kernel's completer offers (jedi on)
        with provisionalcompleter():
            return [c.text for c in ip.Completer.completions(text, len(text))]

    try:
        assert offered("pf.he") == []
        assert {"count", "columns"} <= set(offered("pf.co"))
        ip.user_ns["wage"] = ip.user_ns["pf"]["wage"]
        assert set(offered("wage.m")) == {"map", "mask", "mean", "median", "mode"}  # no max, no min
        assert "values" not in offered("wage.va")
    finally:
        ip.user_ns.pop("pf")
        ip.user_ns.pop("wage", None)


FUNCTIONS: list[tuple[str, Callable[[dp.PrivateFrame], Any], str]] = [
    ("pd.cut", lambda f: pd.cut(f["wage"], 3), r"pd\.cut\(\).*pf\['col'\]\.cut\(bins\)"),
    ("pd.qcut", lambda f: pd.qcut(f["wage"], 4), r"pd\.qcut\(\).*qcut\(q, epsilon"),
    (
        "pd.crosstab",
        lambda f: pd.crosstab(f["region"], f["wage"]),
        r"pd\.crosstab\(\).*Instead: dp\.crosstab\(pf\['a'\], pf\['b'\], epsilon=",
    ),
    ("pd.DataFrame", lambda f: pd.DataFrame(f), r"pd\.DataFrame\(\).*never becomes a pandas"),
    ("pd.Series", lambda f: pd.Series(f["wage"]), r"pd\.Series\(\).*never becomes a pandas"),
    # np.asarray converts in C (no numpy frame to name): the plain refusal, which says what to do
    ("np.asarray", lambda f: np.asarray(f["wage"]), r"numpy array would reveal.*Ask for an aggr"),
    ("np.mean", lambda f: np.mean(f["wage"]), r"np\.mean\(\).*pf\['col'\]\.mean\(epsilon"),
    ("np.median", lambda f: np.median(f["wage"]), r"np\.median\(\).*median\(epsilon"),
    ("np.percentile", lambda f: np.percentile(f["wage"], 50), r"quantile\(q / 100"),
    ("np.tan", lambda f: np.tan(f["wage"]), r"np\.tan\(\).*cannot be given public bounds"),
    ("np.concatenate", lambda f: np.concatenate([f["wage"]]), r"np\.concatenate\(\)"),
]


@pytest.mark.parametrize(("what", "call", "match"), FUNCTIONS, ids=[f[0] for f in FUNCTIONS])
def test_library_functions_say_what_to_write_instead(
    pf: dp.PrivateFrame, what: str, call: Callable[[dp.PrivateFrame], Any], match: str
) -> None:
    with pytest.raises(dp.DPError, match=match) as info:
        call(pf)
    assert isinstance(info.value, TypeError)  # never a bare TypeError, but still a TypeError
    assert pf.session.spent.is_zero


def test_plain_len_and_iteration_keep_their_refusal(pf: dp.PrivateFrame) -> None:
    with pytest.raises(dp.PrivacyViolationError, match=r"len\(\) \(the exact row count"):
        len(pf)
    with pytest.raises(dp.PrivacyViolationError, match="Iteration would reveal"):
        list(pf["wage"])


def test_numpy_scalars_take_part_in_column_arithmetic(pf: dp.PrivateFrame) -> None:
    doubled = np.float64(2) * pf["wage"]
    assert isinstance(doubled, dp.PrivateSeries) and doubled.bounds == (0.0, 10000.0)
    shifted = np.int64(3) + pf["wage"]
    assert shifted.bounds == (3.0, 5003.0)
    assert isinstance(np.float64(100) < pf["wage"], dp.PrivateSeries)
    total = pf.assign(d=np.float32(0.5) * pf["wage"])["d"].sum(epsilon=4)
    assert total.value == pytest.approx(0.5 * pf["wage"].sum(epsilon=4).value, rel=1e-2)
    with pytest.raises(LibraryFunctionError, match=r"np\.multiply\(\)"):
        np.array([1.0, 2.0]) * pf["wage"]  # a public array is not a column


def test_in_a_notebook_pandas_type_refusals_say_what_to_write(
    capsys: pytest.CaptureFixture[str],
) -> None:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "dpframe")
    try:
        ip.run_cell(
            "import dpframe as dp, pandas as pd\n"
            "s = dp.Session(epsilon=1, ledger=':memory:', name='nb')\n"
            "pf = s.private_frame(pd.DataFrame({'x': [1.0]}))"
        )
        capsys.readouterr()
        ip.run_cell("pd.concat([pf, pf])")
        out = capsys.readouterr().out
        assert out.startswith("LibraryFunctionError: pd.concat() was given a private frame")
        assert "concatenate releases" in out and "Traceback" not in out
        ip.run_cell("pd.DataFrame({'x': [1.0]}).merge(pf)")
        assert "pf.merge(public_df, on=key)" in capsys.readouterr().out
        ip.run_cell("1 + 'a'")  # any other TypeError keeps IPython's traceback
        other = capsys.readouterr().out
        assert "Traceback" in other and "unsupported operand type(s)" in other
    finally:
        ip.run_line_magic("unload_ext", "dpframe")
        ip.user_ns.clear()
