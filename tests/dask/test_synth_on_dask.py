"""Synthetic copies (MST) on the Dask backend: the marginals are grouped counts over partitions.

The ``on_dask`` fixture loads every frame as a three-partition dask DataFrame
on a two-worker cluster (and fails a test that loaded nothing on Dask); the
core tests imported here then run unchanged.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

import dpframe as dp
from dpframe.examples.datasets import load_cps1988
from tests.test_synth import (
    cells,
    cps_frame,
    table,
    test_one_and_two_columns,
    test_rows_given_and_pure_dp_session,
    tv,
)

pytestmark = [
    pytest.mark.usefixtures("on_dask"),
    pytest.mark.filterwarnings("ignore:Sending large graph:UserWarning"),
]

__all__ = ["test_one_and_two_columns", "test_rows_given_and_pure_dp_session"]


def test_cps_copy_on_dask_keeps_the_marginals_and_strong_pairs() -> None:
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    copy = cps_frame(session).synthesize(epsilon=1.0, progress=False)
    info = copy.attrs["dpframe_synth"]
    real, fake = cells(load_cps1988(), info), cells(copy, info)
    sizes = {
        name: len(e) - 1 if e else len(c)
        for name, e, c in zip(info.columns, info.edges, info.categories, strict=True)
    }
    for name in info.columns:
        assert tv(table(real, [name], [sizes[name]]), table(fake, [name], [sizes[name]])) < 0.02
    errors = [
        tv(table(real, [a, b], [sizes[a], sizes[b]]), table(fake, [a, b], [sizes[a], sizes[b]]))
        for a, b in itertools.combinations(info.columns, 2)
    ]
    assert np.mean(errors) < 0.03
    assert ("wage", "education") in info.pairs
    assert len(session.ledger) == 1


def test_aim_copy_on_dask_keeps_the_marginals() -> None:
    """AIM on Dask: every exact marginal (1-, 2- and 3-way) is a grouped count over partitions."""
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    columns = ["wage", "education", "experience", "parttime"]
    copy = cps_frame(session)[columns].synthesize(epsilon=1.0, method="aim", progress=False)
    info = copy.attrs["dpframe_synth"]
    assert info.method == "AIM" and len(info.pairs) == 8
    real, fake = cells(load_cps1988(), info), cells(copy, info)
    sizes = {
        name: len(e) - 1 if e else len(c)
        for name, e, c in zip(info.columns, info.edges, info.categories, strict=True)
    }
    for name in info.columns:
        assert tv(table(real, [name], [sizes[name]]), table(fake, [name], [sizes[name]])) < 0.02
    errors = [
        tv(table(real, [a, b], [sizes[a], sizes[b]]), table(fake, [a, b], [sizes[a], sizes[b]]))
        for a, b in itertools.combinations(info.columns, 2)
    ]
    assert np.mean(errors) < 0.03
    assert len(session.ledger) == 1
