"""A group-by over privately found keys says so where the analyst sees it (issue D4).

The keys of a column with no declared keys are found privately: a key with
fewer rows than a public threshold is not shown, its rows are in no group,
and the counts have no interval.  The result carries that in its notes (the
notebook's caption) and every release says it once as a
:class:`dp.DiscoveredKeysWarning` (a plain Python process has no caption).
The text holds public numbers only: the threshold, from ε, δ and the unit.
"""

from __future__ import annotations

import re
import warnings
from fractions import Fraction

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.jupyter.formatters import series_html
from dpframe.mechanisms.thresholds.partition_selection import selection_threshold

#: The shape of the warning of a count over discovered keys (the threshold varies).
COUNTS = (
    r"Keys found privately \('occupation' has no declared keys\): a key with fewer than "
    r"about (\d[\d,]*) rows is not shown, and its rows are in no group; counts without an "
    r"interval: a key is shown only when its noisy count passed the threshold, so an "
    r"interval would be biased\. Declared keys \(pf\.with_categories\(\.\.\.\)\) are all shown\."
)
#: As above, for another statistic (its values have intervals).
MEANS = (
    r"^Keys found privately \('occupation' has no declared keys\): a key with fewer than "
    r"about \d[\d,]* rows is not shown, and its rows are in no group\. Declared keys"
)


def _occupations(small: bool) -> pd.DataFrame:
    """CPS1985's occupations (``small``: with management, 55 rows, and sales, 38)."""
    sizes = {"worker": 152, "office": 94, "services": 82, "technical": 94}
    if small:
        sizes |= {"management": 55, "sales": 38}
    keys = [key for key, size in sizes.items() for _ in range(size)]
    wage = np.linspace(1.0, 40.0, len(keys))
    union = ["yes" if i % 2 else "no" for i in range(len(keys))]
    frame: pd.DataFrame = pd.DataFrame({"occupation": keys, "wage": wage, "union": union})
    return frame


def _frame(small: bool = True) -> dp.PrivateFrame:
    session = dp.Session(epsilon=10, delta=1e-6, ledger=":memory:")
    return session.private_frame(
        _occupations(small), bounds={"wage": (0, 50)}, categories={"union": ["yes", "no"]}
    )


def _said(category: type[Warning], call: object) -> list[str]:
    """The texts of the warnings of ``category`` that ``call()`` issued."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()  # type: ignore[operator]
    return [str(w.message) for w in caught if issubclass(w.category, category)]


def test_a_count_over_discovered_keys_warns_once_with_the_public_threshold() -> None:
    pf = _frame()
    with pytest.warns(dp.DiscoveredKeysWarning, match=COUNTS) as caught:
        counts = pf.groupby("occupation").size(epsilon=0.2, delta=1e-8)
    found = [w for w in caught if issubclass(w.category, dp.DiscoveredKeysWarning)]
    assert len(found) == 1  # once per release
    # The threshold said is the mechanism's, from public values alone: the noise
    # scale (released with the counts) and δ.
    match = re.match(COUNTS, str(found[0].message))
    assert match is not None
    said = int(match.group(1).replace(",", ""))
    meta = counts.attrs["dpframe"]
    assert "worker" in counts.index  # 152 rows: far above the bar
    scale = Fraction(float(meta.scales[0]))
    assert said == selection_threshold(1 / scale, Fraction(1, 10**8))
    # The notebook's caption says the same (the notes of the release).
    assert meta.notes[0].startswith("keys found privately ('occupation'")
    assert "counts without an interval" in meta.notes[1]
    html = series_html(counts)
    assert html is not None and "keys found privately" in html and "without an interval" in html
    with pytest.raises(dp.DPError, match="would be biased"):
        dp.ci(counts)


def test_the_warning_says_nothing_but_the_threshold_and_the_released_keys() -> None:
    """The text is the same whether or not small keys were left out, at any noise."""
    texts = set()
    for small in (True, False):
        for _ in range(3):
            (text,) = _said(
                dp.DiscoveredKeysWarning,
                lambda s=small: _frame(s).groupby("occupation").size(epsilon=0.2, delta=1e-8),
            )
            texts.add(text)
    assert len(texts) == 1  # data-independent: no count, no number of keys left out
    (text,) = texts
    threshold = re.match(COUNTS, text)
    assert threshold is not None
    numbers = re.findall(r"\d[\d,]*", text)
    assert numbers == [threshold.group(1)]  # the only number is the threshold
    for hidden in ("management", "sales", "55", "38"):
        assert hidden not in text


def test_an_aggregate_over_discovered_keys_says_so_without_the_count_note() -> None:
    pf = _frame()
    with pytest.warns(dp.DiscoveredKeysWarning, match=MEANS) as caught:
        means = pf.groupby("occupation")["wage"].mean(epsilon=0.5, delta=1e-8)
    (text,) = [str(w.message) for w in caught if w.category is dp.DiscoveredKeysWarning]
    assert "without an interval" not in text  # a mean's cells have their intervals
    assert means.attrs["dpframe"].notes[0].startswith("keys found privately")
    assert np.all(np.isfinite(dp.ci(means).to_numpy()))


def test_no_key_found_is_an_empty_release_that_says_why() -> None:
    pf = _frame()
    with pytest.warns(dp.DiscoveredKeysWarning, match=MEANS):
        empty = pf.groupby("occupation")["wage"].mean(epsilon=0.001, delta=1e-8)
    assert len(empty) == 0
    assert empty.attrs["dpframe"].notes[0].startswith("keys found privately")


def test_declared_keys_do_not_warn() -> None:
    pf = _frame()
    declared = pf.with_categories(occupation=["worker", "office", "services"])
    assert (
        _said(dp.DiscoveredKeysWarning, lambda: declared.groupby("occupation").size(epsilon=0.5))
        == []
    )
    assert _said(dp.DiscoveredKeysWarning, lambda: pf.groupby("union").size(epsilon=0.5)) == []


def test_a_refused_discovery_charges_nothing_and_warns_nothing() -> None:
    pf = _frame()
    with warnings.catch_warnings():
        warnings.simplefilter("error", dp.DiscoveredKeysWarning)
        with pytest.raises(dp.DPError, match="delta"):
            pf.groupby("occupation").size(epsilon=0.5, delta=0)
    assert pf.session.ledger.empty


def test_an_answer_from_the_ledger_says_it_again() -> None:
    pf = _frame()
    with pytest.warns(dp.DiscoveredKeysWarning, match=COUNTS):
        first = pf.groupby("occupation").size(epsilon=0.3, delta=1e-8)
    with (
        pytest.warns(dp.DiscoveredKeysWarning, match=COUNTS),
        pytest.warns(dp.FromLedgerWarning, match="charged nothing now"),
    ):
        again = pf.groupby("occupation").size(epsilon=0.3, delta=1e-8)
    assert again.attrs["dpframe"].notes == first.attrs["dpframe"].notes
