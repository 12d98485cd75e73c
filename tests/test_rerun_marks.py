"""Every answer from the ledger is marked, and said in a plain Python process (issue D5).

A request already answered is answered again from the ledger, charged nothing
(:mod:`dpframe.engine.reruns`).  The result is marked (a ``RecordedRelease``,
or ``attrs["dpframe_recorded"]``), also when the method reshaped the ledger's
answer after the mark (``dp.crosstab`` over a grouped count), and a
:class:`dp.FromLedgerWarning` says it once per answer: a released table's
repr cannot.  ``%load_ext dpframe`` turns the warning off (the caption and
the meter say it there).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from typing import Any

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

import dpframe as dp
from dpframe.api import notices
from dpframe.engine.recorded import RECORDED_ATTR, RecordedRelease
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES

#: The warning of an answer from the ledger, as a user reads it.
FROM_LEDGER = (
    r"^From the ledger, recorded (\d{4}-\d\d-\d\d )?\d\d:\d\d: the same request on the same "
    r"data was answered before, so this is that answer again, charged nothing now "
    r"\(fresh=True asks for a new, charged release\)\.$"
)


@pytest.fixture
def pf(cps: pd.DataFrame) -> dp.PrivateFrame:
    session = dp.Session(epsilon=10, ledger=":memory:")
    return session.private_frame(
        cps.head(3000), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES
    )


def _from_ledger(call: Callable[[], Any]) -> list[str]:
    """The :class:`dp.FromLedgerWarning` texts that ``call()`` issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return [str(w.message) for w in caught if w.category is dp.FromLedgerWarning]


def _again(pf: dp.PrivateFrame, call: Callable[[], Any]) -> Any:
    """``call()`` answered from the ledger: nothing charged, one warning; its result."""
    spent = pf.session.spent
    with pytest.warns(dp.FromLedgerWarning, match=FROM_LEDGER) as caught:
        result = call()
    assert len([w for w in caught if w.category is dp.FromLedgerWarning]) == 1
    assert pf.session.spent == spent
    return result


def test_a_release(pf: dp.PrivateFrame) -> None:
    def mean() -> Any:
        return pf["wage"].mean(epsilon=0.1)

    assert _from_ledger(mean) == []  # the first answer is charged: nothing to say
    again = _again(pf, mean)
    assert isinstance(again, RecordedRelease)
    assert repr(again).endswith(": charged nothing now)")


def test_a_grouped_series(pf: dp.PrivateFrame) -> None:
    def counts() -> Any:
        return pf.groupby(["region", "smsa"]).size(epsilon=0.3)

    first = counts()
    assert RECORDED_ATTR not in first.attrs
    again = _again(pf, counts)
    assert again.attrs[RECORDED_ATTR].startswith("from the ledger, recorded ")
    assert again.equals(first)


def test_a_crosstab_over_a_grouped_count_already_released(pf: dp.PrivateFrame) -> None:
    """The tester's case: the crosstab is the grouped count again, reshaped after the mark."""
    assert _from_ledger(lambda: pf.groupby(["region", "smsa"]).size(epsilon=0.3)) == []
    table = _again(pf, lambda: dp.crosstab(pf["region"], pf["smsa"], epsilon=0.3))
    assert isinstance(table, pd.DataFrame)
    assert table.attrs[RECORDED_ATTR].startswith("from the ledger, recorded ")
    margins = _again(pf, lambda: dp.crosstab(pf["region"], pf["smsa"], margins=True, epsilon=0.3))
    assert RECORDED_ATTR in margins.attrs


def test_a_describe_frame(pf: dp.PrivateFrame) -> None:
    def described() -> Any:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # cells too thin: not this test's
            warnings.simplefilter("always", dp.FromLedgerWarning)
            return pf[["wage", "education"]].describe(epsilon=0.5)

    assert RECORDED_ATTR not in described().attrs
    again = _again(pf, described)
    assert again.attrs[RECORDED_ATTR].startswith("from the ledger, recorded ")


def test_value_counts_are_marked_too(pf: dp.PrivateFrame) -> None:
    pf["region"].value_counts(epsilon=0.2)
    again = _again(pf, lambda: pf["region"].value_counts(epsilon=0.2))
    assert RECORDED_ATTR in again.attrs


def test_a_fresh_release_is_charged_and_says_nothing(pf: dp.PrivateFrame) -> None:
    pf["wage"].mean(epsilon=0.1)
    spent = pf.session.spent
    assert _from_ledger(lambda: pf["wage"].mean(epsilon=0.1, fresh=True)) == []
    assert pf.session.spent != spent


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.user_ns.clear()
    yield ip
    ip.user_ns.clear()


def test_the_extension_turns_the_warning_off_and_back_on(
    shell: InteractiveShell, pf: dp.PrivateFrame
) -> None:
    pf.groupby("region").size(epsilon=0.2)
    with warnings.catch_warnings():  # the filters as they were, after the test
        shell.run_line_magic("load_ext", "dpframe")
        try:
            with warnings.catch_warnings(record=True) as loaded:
                again = pf.groupby("region").size(epsilon=0.2)
        finally:
            shell.run_line_magic("unload_ext", "dpframe")
        with warnings.catch_warnings(record=True) as unloaded:
            pf.groupby("region").size(epsilon=0.2)
    # loaded: the caption and the meter say it, and the mark is still there
    assert not [w for w in loaded if issubclass(w.category, dp.FromLedgerWarning)]
    assert RECORDED_ATTR in again.attrs
    said = [w for w in unloaded if issubclass(w.category, dp.FromLedgerWarning)]
    assert len(said) == 1 and str(said[0].message).startswith("From the ledger, recorded ")


def test_the_messages() -> None:
    note = "from the ledger, recorded 08:32"
    assert notices.ledger_message([None, None]) is None
    assert notices.ledger_message([]) is None
    only = notices.ledger_message([note])
    assert only is not None and only.startswith("From the ledger, recorded 08:32: the same")
    mixed = notices.ledger_message([note, None])
    assert mixed == (
        "1 of the 2 releases behind this answer came from the ledger, recorded 08:32, "
        "charged nothing now; the others were charged."
    )
