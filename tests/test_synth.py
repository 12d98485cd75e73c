"""Synthetic copies (MST): accuracy on the CPS data, the report, the facade and bad input."""

from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.mechanisms.synth.synth_report import SynthInfo
from dpframe.mechanisms.synth.synth_rows import MISSING_SUPPORT
from dpframe.plan.codec import decode_node, encode_node
from dpframe.plan.nodes import lineage
from dpframe.plan.releases import Synthesize
from tests.sessions import backends

INTEGERS = {"education": "integer", "experience": "integer"}


def cps_frame(session: dp.Session, data: pd.DataFrame | None = None) -> dp.PrivateFrame:
    """The CPS data with its public bounds and categories, years declared integer."""
    return session.private_frame(
        load_cps1988() if data is None else data,
        bounds=CPS1988_BOUNDS,
        categories=CPS1988_CATEGORIES,
        dtypes=INTEGERS,
    )


def cells(frame: pd.DataFrame, info: SynthInfo) -> pd.DataFrame:
    """Each value's cell in the copy's domain (bins as Bucket draws them: [e_i, e_i+1), clamped).

    A missing value has a cell of its own after the others, as in the model: a copy may
    keep a column's missing cell that is empty in the data (see :func:`kept_missing`),
    and its few missing values then count against the copy in :func:`table`.
    """
    out = {}
    for i, name in enumerate(info.columns):
        missing = frame[name].isna().to_numpy()
        if info.edges[i]:
            edges = np.asarray(info.edges[i])
            values = frame[name].astype(float).to_numpy()
            found = np.searchsorted(edges, values, side="right") - 1
            out[name] = np.where(missing, len(edges) - 1, np.clip(found, 0, len(edges) - 2))
        else:
            keys = list(info.categories[i])
            codes = pd.Categorical(frame[name].astype(object), categories=keys).codes
            out[name] = np.where(missing, len(keys), codes)
    coded: pd.DataFrame = pd.DataFrame(out)
    return coded


def table(coded: pd.DataFrame, columns: list[str], sizes: list[int]) -> np.ndarray:
    """The normalised contingency table of ``columns`` over their full domains and missing cells."""
    shape = [k + 1 for k in sizes]  # the missing cell last
    index = np.ravel_multi_index(tuple(coded[c].to_numpy() for c in columns), shape)
    counts = np.bincount(index, minlength=int(np.prod(shape))).astype(float)
    shares: np.ndarray = counts.reshape(shape) / counts.sum()
    return shares


def kept_missing(info: SynthInfo) -> set[str]:
    """The columns whose missing cell the copy kept: noisily at least MISSING_SUPPORT sds.

    On the CPS data every missing cell is empty, and is kept with chance 1.4e-7 per
    column for MST and 3.9e-7 for AIM at ε = 1 (discrete Gaussian of variance 13.1 and
    43.4: P(noise >= 19 and 33)); the copy then holds a few missing values there.  Two
    kept columns in one copy have chance below 1e-12.
    """
    return {
        name
        for name, noisy in zip(info.columns, info.one_way, strict=True)
        if noisy[-1] >= MISSING_SUPPORT * info.one_way_std
    }


def tv(p: np.ndarray, q: np.ndarray) -> float:
    return float(0.5 * np.abs(p - q).sum())


@pytest.fixture(scope="module")
def released() -> tuple[pd.DataFrame, dp.Session]:
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    copy = cps_frame(session).synthesize(epsilon=1.0, progress=False)
    return copy, session


def test_copy_has_the_declared_columns_within_their_domains(
    released: tuple[pd.DataFrame, dp.Session],
) -> None:
    copy, _ = released
    assert list(copy.columns) == list(load_cps1988().columns)
    for name, (low, high) in CPS1988_BOUNDS.items():
        assert copy[name].dropna().between(low, high).all(), name
    for name in INTEGERS:
        assert str(copy[name].dtype) == "Int64"
    for name, keys in CPS1988_CATEGORIES.items():
        assert set(copy[name].dropna().astype(object)) <= set(keys), name
    # No missing value where the data has none, except in a column whose (empty) missing
    # cell the noise kept: 1.4e-7 per column, so about 1e-6 per run over the 7 columns when
    # this asserted no missing value at all.
    kept = kept_missing(copy.attrs["dpframe_synth"])
    assert len(kept) <= 1, kept
    assert copy.drop(columns=sorted(kept)).notna().all().all()


def test_every_one_way_marginal_within_002_of_the_truth(
    released: tuple[pd.DataFrame, dp.Session],
) -> None:
    copy, _ = released
    info = copy.attrs["dpframe_synth"]
    real, fake = cells(load_cps1988(), info), cells(copy, info)
    sizes = [len(e) - 1 if e else len(c) for e, c in zip(info.edges, info.categories, strict=True)]
    for name, k in zip(info.columns, sizes, strict=True):
        assert tv(table(real, [name], [k]), table(fake, [name], [k])) < 0.02, name


def test_two_way_marginals_on_average_within_003_and_strong_pairs_kept(
    released: tuple[pd.DataFrame, dp.Session],
) -> None:
    copy, _ = released
    info = copy.attrs["dpframe_synth"]
    real, fake = cells(load_cps1988(), info), cells(copy, info)
    sizes = {
        name: len(e) - 1 if e else len(c)
        for name, e, c in zip(info.columns, info.edges, info.categories, strict=True)
    }
    errors = {}
    for a, b in itertools.combinations(info.columns, 2):
        ks = [sizes[a], sizes[b]]
        errors[(a, b)] = tv(table(real, [a, b], ks), table(fake, [a, b], ks))
    assert np.mean(list(errors.values())) < 0.03
    # The strongest pairs of the real data (TV between the joint and the product of
    # its margins about 0.1 to 0.16) are far closer in the copy than independence
    # Measured over 20 runs: the mean over all pairs 0.0267, sd 0.00055 (the 0.03 bar is
    # six sd away); wage x education 0.031, sd 0.0018 (the bar, 0.066, is 19 sd away);
    # every 1-way marginal at most 0.0093.
    for pair in [("wage", "education"), ("wage", "experience"), ("wage", "parttime")]:
        joint = table(real, list(pair), [sizes[pair[0]], sizes[pair[1]]])
        independence = tv(joint, np.outer(joint.sum(axis=1), joint.sum(axis=0)))
        assert independence > 0.08
        assert errors[pair] < independence / 2, pair


def test_report_lists_marginals_and_kept_pairs(released: tuple[pd.DataFrame, dp.Session]) -> None:
    copy, session = released
    info = copy.attrs["dpframe_synth"]
    assert isinstance(info, SynthInfo)
    assert len(info.pairs) == len(info.columns) - 1
    full = dp.synth_report(copy)
    report = full[full["status"] == "measured"]
    assert list(report["kind"]) == ["1-way"] * 7 + ["2-way"] * 6
    assert list(report["marginal"][7:]) == [f"{a} × {b}" for a, b in info.pairs]
    assert (report["noise_std"] > 0).all()
    expected = report["cells"] * report["noise_std"] * np.sqrt(2 / np.pi) / (2 * info.total)
    np.testing.assert_allclose(report["tv_noise"], expected)
    np.testing.assert_allclose(report["cell_error"], 1.959964 * report["noise_std"], rtol=1e-6)
    assert (report["tv_error_bar"] > report["tv_noise"]).all()
    assert (report["tv_noise"][:7] < 0.01).all()
    assert report["dependence"][7:].notna().all()
    # The 15 pairs outside the tree: listed with how the model links them, no error bars.
    rest = full[full["status"] != "measured"]
    assert len(rest) == 21 - 6 and (rest["status"] == "not measured").all()
    assert rest["model"].str.startswith("independent given").all()
    assert rest[["noise_std", "tv_noise", "tv_error_bar", "tv_fit"]].isna().all().all()
    assert info.rows_private and abs(info.rows - 28155) < 500
    assert len(copy) == info.rows
    # One charge for the whole copy, nothing else.
    assert len(session.ledger) == 1
    assert session.spent.epsilon == pytest.approx(1.0)
    with pytest.raises(dp.InvalidArgumentError, match="takes a copy returned by synthesize"):
        dp.synth_report(load_cps1988())


def test_rows_given_and_pure_dp_session() -> None:
    session = dp.Session(epsilon=3.0, delta=0, ledger=":memory:")
    pf = cps_frame(session)[["wage", "region", "parttime"]]
    copy = pf.synthesize(epsilon=3.0, rows=500, progress=False)
    info = copy.attrs["dpframe_synth"]
    assert len(copy) == 500 and not info.rows_private
    assert info.mechanism == "MST (discrete Laplace)"
    # ε/3 per part: two selection rounds of ε/6, three 1-way marginals of ε/9.
    assert info.selection_epsilon == pytest.approx(0.5)
    assert session.spent.epsilon == pytest.approx(3.0)


def test_one_and_two_columns() -> None:
    session = dp.Session(epsilon=10.0, delta=1e-6, ledger=":memory:")
    pf = cps_frame(session)
    one = pf[["region"]].synthesize(epsilon=1, progress=False)
    assert list(one.columns) == ["region"] and one.attrs["dpframe_synth"].pairs == ()
    two = pf[["education", "parttime"]].synthesize(epsilon=1, bins={"education": 5})
    info = two.attrs["dpframe_synth"]
    assert info.pairs == (("education", "parttime"),)
    assert info.selection_epsilon == 0.0
    assert len(info.edges[0]) == 6  # 21 integers in 5 runs of 5 (the last shorter)


def test_boolean_and_given_edges() -> None:
    data = load_cps1988().head(3000).assign(union=lambda d: d["wage"] > 700)
    session = dp.Session(epsilon=10.0, delta=1e-6, ledger=":memory:")
    pf = cps_frame(session, data)[["wage", "union"]]
    copy = pf.synthesize(epsilon=2, bins={"wage": [0, 300, 700, 1500, 5000]}, progress=False)
    assert copy["union"].dtype == bool
    assert copy["wage"].between(0, 5000).all()
    high = copy["wage"].to_numpy(dtype=float) > 700
    union = copy["union"].to_numpy(dtype=bool)
    assert float(np.mean(high == union)) > 0.9  # the pair is kept


def test_node_travels_and_explains() -> None:
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    pf = cps_frame(session)
    from dpframe.api.verbs.synthesis import synthesis_node

    node = synthesis_node(pf, dp.Privacy(epsilon=1), "mst", None, 1000)
    back = decode_node(encode_node(node), lineage(node.plan)[0])
    assert isinstance(back, Synthesize) and back == node
    explained = session.explain(node)
    assert explained.allowed and len(explained.measures) == 2
    assert "synthesize(wage, education" in explained.query
    assert len(session.ledger) == 0


def _frame_with_text(session: dp.Session) -> dp.PrivateFrame:
    data = load_cps1988().head(200).assign(note="x")
    return cps_frame(session, data)


@pytest.mark.parametrize(
    ("call", "error", "match"),
    [
        (lambda pf: pf.synthesize(epsilon=1), dp.SchemaError, r"'note' has neither"),
        (
            lambda pf: pf[["wage", "experience"]].synthesize(
                epsilon=1, bins={"wage": 900, "experience": 100}
            ),
            dp.ResourceLimitError,
            r"largest 2-way marginal of this copy has 66,674 cells; the limit is 65,536",
        ),
        (
            lambda pf: pf[["wage"]].synthesize(epsilon=1, bins=5000),
            dp.InvalidArgumentError,
            "between 1 and 1,000",
        ),
        (lambda pf: pf[["wage"]].synthesize(epsilon=1, rows=0), dp.InvalidArgumentError, "rows"),
        (lambda pf: pf[["wage"]].synthesize(epsilon=1, rows=-3), dp.InvalidArgumentError, "rows"),
        (lambda pf: pf[["wage"]].synthesize(epsilon=1, rows=2.5), dp.InvalidArgumentError, "rows"),
        (lambda pf: pf[["wage"]].synthesize(epsilon=1, rows=True), dp.InvalidArgumentError, "rows"),
        (
            lambda pf: pf[["wage"]].synthesize(epsilon=1, method="gan"),
            dp.InvalidArgumentError,
            "method must be 'mst' or 'aim'; got 'gan'",
        ),
        (
            lambda pf: pf[["wage", "experience"]].synthesize(
                epsilon=1, method="aim", bins={"wage": 500, "experience": 100}
            ),
            dp.ResourceLimitError,
            r"AIM's first model holds at most 32,768 \(= 2\*\*15\) cells; the 1-way marginals and "
            r"the largest 2-way marginal of this copy need 37,649",
        ),
        (
            lambda pf: pf[["wage"]].synthesize(epsilon=1, bins="auto"),
            dp.InvalidArgumentError,
            "bins= takes",
        ),
        (
            lambda pf: pf[["wage"]].synthesize(epsilon=1, bins={"salary": 4}),
            dp.SchemaError,
            "salary",
        ),
        (
            lambda pf: pf[["wage"]].synthesize(epsilon=1, bins={"wage": [10, 5]}),
            dp.InvalidArgumentError,
            "must increase",
        ),
        (
            lambda pf: pf[["wage"]].synthesize(epsilon=-1),
            dp.InvalidBudgetError,
            "epsilon must be > 0",
        ),
        (lambda pf: pf[["wage"]].synthesize(epsilon=50), dp.BudgetExceededError, "Remaining"),
    ],
)
def test_bad_input_refused_before_any_charge(call: Any, error: type, match: str) -> None:
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    pf = _frame_with_text(session)
    with pytest.raises(error, match=match):
        call(pf)
    assert len(session.ledger) == 0
    assert session.spent.epsilon == 0


def test_progress_is_shown_while_fitting(capsys: pytest.CaptureFixture[str]) -> None:
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    cps_frame(session)[["wage", "region"]].synthesize(epsilon=1, rows=50, progress=True)
    err = capsys.readouterr().err
    assert "synthesize (MST)" in err
    assert "100%" in err or "#" * 20 in err  # tqdm's bar, or the plain fallback's


def test_full_table_and_per_clique_counts_agree(monkeypatch: pytest.MonkeyPatch) -> None:
    """The full table and the per-clique counts of the one pass count the same rows.

    A missing wage goes to wage's missing cell (the last); an undeclared
    region leaves its row out of every marginal.
    """
    from types import SimpleNamespace

    import dpframe.mechanisms.synth.synth_counts as synth_counts
    from dpframe.api.verbs.synthesis import synthesis_node

    data = load_cps1988().sample(3000, random_state=1).reset_index(drop=True)
    data.loc[data.index[:40], "wage"] = np.nan
    data.loc[data.index[40:70], "region"] = "mars"  # not declared
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    pf = cps_frame(session, data)[["wage", "education", "region", "parttime"]]
    node = synthesis_node(pf, dp.Privacy(epsilon=1), "mst", {"wage": 4}, None)
    assert node.missing == (True, True, True, True)
    cliques = [(0,), (1,), (2,), (3,), (0, 1), (1, 3), (0, 1, 2), (0, 2, 3)]
    run = SimpleNamespace(backend=next(iter(backends(session).values())), node=node)
    full = synth_counts.MarginalTables(run, cliques)  # type: ignore[arg-type]
    monkeypatch.setattr(synth_counts, "FULL_TABLE_CELLS", 1)
    each = synth_counts.MarginalTables(run, cliques)  # type: ignore[arg-type]
    for clique in cliques:
        np.testing.assert_array_equal(full.table(clique), each.table(clique))
    declared = data[data["region"] != "mars"]
    wage = full.table((0,))
    assert wage[-1] == 40 and wage.sum() == len(data) - 30  # 40 missing, 30 not declared
    regions = sorted(CPS1988_CATEGORIES["region"])
    expected = declared["region"].value_counts().reindex(regions, fill_value=0)
    np.testing.assert_array_equal(full.table((2,))[:-1], expected.to_numpy(dtype=float))
    assert full.table((2,))[-1] == 0  # no region is missing
    assert len(session.ledger) == 0


def test_too_many_columns_or_categories_refused_before_any_charge() -> None:
    wide = pd.DataFrame({f"c{i}": ["a", "b"] * 5 for i in range(33)})
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    pf = session.private_frame(wide, categories={c: ["a", "b"] for c in wide.columns})
    with pytest.raises(dp.ResourceLimitError, match="models 1 to 32 columns"):
        pf.synthesize(epsilon=1)
    many = pd.DataFrame({"k": [f"k{i}" for i in range(1001)], "g": ["a"] * 1001})
    pf2 = session.private_frame(
        many, categories={"k": [f"k{i}" for i in range(1001)], "g": ["a", "b"]}
    )
    with pytest.raises(dp.ResourceLimitError, match="at most 1,000 bins or categories"):
        pf2.synthesize(epsilon=1)
    assert len(session.ledger) == 0


def test_counts_chunk_by_chunk_equal_counts_in_one_piece() -> None:
    """A frame of several chunks is reduced chunk by chunk: the same counts as in one piece."""
    from types import SimpleNamespace

    from dpframe.api.verbs.synthesis import synthesis_node
    from dpframe.backends.pandas_backend import PandasBackend
    from dpframe.mechanisms.synth.synth_counts import MarginalTables

    data = load_cps1988().head(3000).copy()
    data.loc[data.index[:25], "wage"] = np.nan
    session = dp.Session(epsilon=1.0, delta=1e-6, ledger=":memory:")
    node = synthesis_node(cps_frame(session, data), dp.Privacy(epsilon=1), "aim")
    d = len(node.columns)
    cliques = [*((i,) for i in range(d)), *itertools.combinations(range(d), 2)]
    found = []
    for chunk_rows in (256, 10**6):
        run = SimpleNamespace(backend=PandasBackend(data, chunk_rows=chunk_rows), node=node)
        found.append(MarginalTables(run, cliques))  # type: ignore[arg-type]
    for clique in cliques:
        np.testing.assert_array_equal(found[0].table(clique), found[1].table(clique))
    assert found[0].table((0,))[-1] == 25  # the missing wages, in wage's missing cell
