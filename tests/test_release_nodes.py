"""Releases as data: every release kind is a node, released by one engine (Session.run)."""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

import pandas as pd
import pytest

import dpframe as dp
from dpframe.engine.release_path import families
from dpframe.mechanisms.core.explanations import Explanation
from dpframe.plan import releases
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Aggregate, GroupKey, Source
from dpframe.plan.privacy import PrivacyRequest

BOUNDS = {"wage": (0.0, 5000.0), "education": (0.0, 20.0)}
CATEGORIES = {"region": ["northeast", "midwest", "south", "west"]}


@pytest.fixture
def session() -> dp.Session:
    return dp.Session(epsilon=20, delta=1e-6, ledger=":memory:", accounting="approx")


@pytest.fixture
def pf(session: dp.Session, cps: pd.DataFrame) -> dp.PrivateFrame:
    return session.private_frame(cps, bounds=BOUNDS, categories=CATEGORIES)


def _quantile(pf: dp.PrivateFrame, epsilon: float = 0.5) -> releases.Quantile:
    return releases.Quantile(
        plan=pf[pf["education"] >= 12].plan,
        privacy=PrivacyRequest(epsilon=epsilon),
        expr=Col("wage"),
        bounds=(0.0, 5000.0),
        levels=(Fraction(1, 2),),
    )


def test_equal_nodes_are_equal_and_hash_alike(pf: dp.PrivateFrame) -> None:
    assert _quantile(pf) == _quantile(pf)
    assert hash(_quantile(pf)) == hash(_quantile(pf))
    assert _quantile(pf) != _quantile(pf, 0.25)
    assert len({_quantile(pf), _quantile(pf), _quantile(pf, 0.25)}) == 2


def test_every_release_kind_has_a_family() -> None:
    kinds = {
        cls
        for cls in vars(releases).values()
        if isinstance(cls, type)
        and issubclass(cls, releases.ReleaseNode)
        and cls is not releases.ReleaseNode
    }
    assert kinds | {Aggregate} == set(families())


def test_run_a_hand_built_node_charges_exactly_its_request(
    session: dp.Session, pf: dp.PrivateFrame, cps: pd.DataFrame
) -> None:
    result = session.run(_quantile(pf, 2))
    assert isinstance(result, dp.Release)
    truth = cps.loc[cps["education"] >= 12, "wage"].median()
    assert abs(float(result) - truth) < 60
    assert session.spent == dp.Budget(2)
    assert list(session.ledger["query"]) == ["quantile(wage, q=[0.5]) where (education >= 12)"]


def test_explain_a_node_reads_nothing_and_charges_nothing(
    session: dp.Session, pf: dp.PrivateFrame
) -> None:
    explained = session.explain(_quantile(pf))
    assert isinstance(explained, Explanation)
    assert explained.cost == dp.Budget("0.5")
    assert session.spent.is_zero and session.ledger.empty


@pytest.mark.parametrize(
    "call",
    [
        lambda pf: pf["region"].value_counts(epsilon=0.5),
        lambda pf: pf["wage"].hist(8, epsilon=0.5),
        lambda pf: pf.discover_keys("smsa", epsilon=0.5, delta=1e-8),
        lambda pf: pf.describe(epsilon=0.5),
        lambda pf: pf.groupby("smsa")["wage"].mean(epsilon=0.5, delta=1e-8),
    ],
    ids=["value_counts", "hist", "discover_keys", "describe", "discovery_then_mean"],
)
def test_explain_captures_the_node_of_methods_that_post_process(
    session: dp.Session, pf: dp.PrivateFrame, call: object
) -> None:
    explained = session.explain(lambda: call(pf))  # type: ignore[operator]
    assert isinstance(explained, Explanation)
    assert explained.cost.epsilon == Fraction(1, 2)
    assert session.spent.is_zero and session.ledger.empty


def test_explain_without_a_release_says_so(session: dp.Session) -> None:
    with pytest.raises(dp.DPError, match="made no release"):
        session.explain(lambda: 3)


def test_a_node_that_does_not_fit_the_schema_is_refused_before_the_charge(
    session: dp.Session, pf: dp.PrivateFrame
) -> None:
    text_sum = Aggregate(
        pf.plan, "sum", Col("region"), (0.0, 1.0), (), "sum(region)", PrivacyRequest(epsilon=1)
    )
    with pytest.raises(dp.DPError, match="needs a numeric column; 'region' is"):
        session.run(text_sum)
    missing = releases.DiscoverKeys(
        plan=pf.plan, privacy=PrivacyRequest(epsilon=1, delta=1e-8), column="nope"
    )
    with pytest.raises(dp.DPError, match="nope"):
        session.run(missing)
    not_a_condition = releases.SparseVector(
        plan=pf.plan,
        privacy=PrivacyRequest(epsilon=1),
        conditions=(("wage", Col("wage")),),
        threshold=10.0,
    )
    with pytest.raises(dp.DPError, match="not a row condition"):
        session.run(not_a_condition)
    assert session.spent.is_zero and session.ledger.empty


@pytest.mark.parametrize(
    ("features", "target"),
    [(("region",), "wage"), (("education",), "region"), (("education",), "nope")],
)
def test_a_regression_on_a_column_that_is_not_numeric_is_refused_before_the_charge(
    cps: pd.DataFrame, features: tuple[str, ...], target: str
) -> None:
    """Found by the curator fuzzer: a wire-built regression on a text column was charged,
    then failed reading the data (the node had no schema check of its own)."""
    session = dp.Session(epsilon=5, ledger=":memory:")
    pf = session.private_frame(cps, bounds=BOUNDS)  # region: text, no declared categories
    node = releases.Regression(
        plan=pf.plan,
        privacy=PrivacyRequest(epsilon=1),
        loss="squared",
        features=features,
        feature_bounds=((0.0, 20.0),),
        target=target,
        target_bounds=(0.0, 5000.0),
        steps=5,
    )
    missing = "nope" in (*features, target)
    match = "nope" if missing else "needs a numeric column; 'region' is text"
    with pytest.raises(dp.SchemaError, match=match):
        session.run(node)
    with pytest.raises(dp.SchemaError, match=match):
        session.explain(node)
    assert session.spent.is_zero and session.ledger.empty


def test_every_release_kind_must_check_itself_against_the_schema() -> None:
    """A kind without ``check`` cannot even be defined, so a new kind cannot skip validation."""
    with pytest.raises(TypeError, match=r"Release kind Unchecked must define check\(schema\)"):

        @dataclass(frozen=True, eq=False, kw_only=True)
        class Unchecked(releases.ReleaseNode):
            def _what(self) -> str:
                return "unchecked"


def test_a_node_without_a_privacy_request_is_refused(
    session: dp.Session, pf: dp.PrivateFrame
) -> None:
    count = Aggregate(pf.plan, "count", None, None, (), "count()")
    with pytest.raises(dp.InvalidBudgetError, match="no privacy cost"):
        session.run(count)
    with pytest.raises(dp.DPError, match="not a release node"):
        session.run("count")  # type: ignore[arg-type]
    assert session.ledger.empty


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (
            lambda plan: releases.SparseVector(
                plan=plan, privacy=_eps(), conditions=(), threshold=1.0
            ),
            "at least one query",
        ),
        (
            lambda plan: releases.SparseVector(
                plan=plan,
                privacy=_eps(),
                conditions=(("a", Col("a") > 1),),
                threshold=1.0,
                max_hits=0,
            ),
            "max_hits",
        ),
        (
            lambda plan: releases.Quantile(
                plan=plan,
                privacy=_eps(),
                expr=Col("x"),
                bounds=(0.0, 1.0),
                levels=(Fraction(3, 2),),
            ),
            "in \\[0, 1\\]",
        ),
        (
            lambda plan: releases.Quantile(
                plan=plan,
                privacy=_eps(),
                expr=Col("x"),
                bounds=(1.0, 0.0),
                levels=(Fraction(1, 2),),
            ),
            "low <= high",
        ),
        (
            lambda plan: releases.KernelDensity(
                plan=plan,
                privacy=_eps(),
                expr=Col("x"),
                bounds=(0.0, 1.0),
                bandwidth=-1.0,
                points=(0.5,),
            ),
            "bandwidth",
        ),
        (
            lambda plan: releases.Mode(
                plan=plan, privacy=_eps(), group=GroupKey("g", Col("g"), ())
            ),
            "categories",
        ),
        (lambda plan: releases.Describe(plan=plan, privacy=_eps(), columns=()), "numeric columns"),
        (
            lambda plan: releases.DiscoverThenAggregate(
                plan=plan, privacy=_eps(), column="g", statistic="mean"
            ),
            "Select a column",
        ),
    ],
    ids=["no-queries", "max-hits", "level", "bounds", "bandwidth", "no-keys", "describe", "value"],
)
def test_nodes_validate_their_parameters(pf: dp.PrivateFrame, build: object, match: str) -> None:
    with pytest.raises(dp.DPError, match=match):
        build(pf.plan)  # type: ignore[operator]


def _eps() -> PrivacyRequest:
    return PrivacyRequest(epsilon=1)


@pytest.mark.parametrize("accounting", ["pure", "approx", "zcdp", "gdp"])
def test_a_composite_is_one_charge_whose_parts_add_up_to_it(
    cps: pd.DataFrame, accounting: str
) -> None:
    delta = 0 if accounting == "pure" else 1e-6
    session = dp.Session(epsilon=10, delta=delta, ledger=":memory:", accounting=accounting)
    pf = session.private_frame(cps, bounds=BOUNDS)
    table = pf.describe(epsilon=3)
    assert list(table.columns) == ["wage", "education"]
    assert len(session.ledger) == 1
    node = releases.Describe(
        plan=pf.plan,
        privacy=PrivacyRequest(epsilon=3),
        columns=(("wage", Col("wage"), BOUNDS["wage"]),),
    )
    parts = node.parts()
    assert len(parts) == 2
    shares = [p.privacy.epsilon for p in parts if p.privacy is not None]
    assert shares == [Fraction(3, 2), Fraction(3, 2)]


def test_a_doubling_chain_of_derived_columns_is_released(session: dp.Session) -> None:
    frame = pd.DataFrame({"a0": [1.0, 2.0, 3.0] * 100})
    pf = session.private_frame(frame, bounds={"a0": (0, 3)})
    for i in range(30):
        pf = pf.assign(**{f"a{i + 1}": pf[f"a{i}"] + pf[f"a{i}"]})
    count = pf[pf["a30"] > 2**30 * 2.5].count(epsilon=5)  # only the rows with a0 == 3
    assert abs(float(count) - 100) < 10


def test_an_oversized_request_is_refused_before_the_charge(session: dp.Session) -> None:
    frame = pd.DataFrame({"a0": [1.0, 2.0, 3.0]})
    pf = session.private_frame(frame, bounds={"a0": (0, 3)})
    for i in range(10_000):
        pf = pf.assign(**{f"a{i + 1}": pf[f"a{i}"] + pf[f"a{i}"]})
    with pytest.raises(dp.DPError, match="plan steps"):
        pf.count(epsilon=1)
    with pytest.raises(dp.DPError, match="plan steps"):
        session.explain(lambda: pf.count(epsilon=1))
    assert session.spent.is_zero and session.ledger.empty


def test_session_limits_are_checked_before_the_charge(cps: pd.DataFrame) -> None:
    from dpframe.plan.estimate import ResourceLimits

    session = dp.Session(epsilon=1, ledger=":memory:", limits=ResourceLimits(max_cells=10))
    pf = session.private_frame(cps, bounds=BOUNDS)
    with pytest.raises(dp.DPError, match=r"20 output cells \(limit 10\)"):
        pf["wage"].hist(20, epsilon=0.5)
    pf["wage"].hist(10, epsilon=0.5)
    assert len(session.ledger) == 1
    with pytest.raises(dp.InvalidArgumentError, match="limits= takes"):
        dp.Session(epsilon=1, ledger=":memory:", limits=5)  # type: ignore[arg-type]


def _regression(**changes: object) -> releases.Regression:
    fields: dict[str, object] = {
        "plan": Source("d"),
        "privacy": PrivacyRequest(epsilon=1, delta=1e-6),
        "loss": "squared",
        "features": ("education",),
        "feature_bounds": ((0.0, 20.0),),
        "target": "wage",
        "target_bounds": (0.0, 5000.0),
    }
    fields.update(changes)
    return releases.Regression(**fields)  # type: ignore[arg-type]


HAND_BUILT_BAD = [
    (lambda: Aggregate(Source("d"), "mean", Col("wage"), None, (), "m", _eps()), "bounds"),
    (lambda: Aggregate(Source("d"), "sum", None, (0.0, 1.0), (), "s", _eps()), "value"),
    (lambda: Aggregate(Source("d"), "mean", Col("wage"), (5.0, 0.0), (), "m", _eps()), "low <="),
    (
        lambda: Aggregate(
            Source("d"),
            "median",  # type: ignore[arg-type]
            Col("wage"),
            (0.0, 1.0),
            (),
            "m",
            _eps(),
        ),
        "count",
    ),
    (
        lambda: Aggregate(
            Source("d"), "count", None, None, (GroupKey("r", Col("r"), ("a", "a")),), "c", _eps()
        ),
        "distinct",
    ),
    (
        lambda: Aggregate(
            Source("d"), "count", None, None, (GroupKey("r", Col("r"), ("a", None)),), "c", _eps()
        ),
        "missing",
    ),
    (lambda: _regression(loss="logistic"), r"logistic target .* \[0, 1\]"),
    (lambda: _regression(passes=101), "passes"),
    (lambda: _regression(steps=0), "steps"),
    (lambda: _regression(analysis="iteration", step_size=-1.0), "step_size"),
    (lambda: _regression(feature_bounds=((5.0, 5.0),)), "low < high"),
    (
        lambda: releases.SparseVector(
            plan=Source("d"), privacy=_eps(), conditions=(("a", Col("a") > 1),), threshold=1e300
        ),
        "2\\*\\*53",
    ),
    (
        lambda: releases.SanitizedCopy(
            plan=Source("d"),
            privacy=_eps(),
            expr=Col("r"),
            name="r",
            kind="rr",
            length_share=Fraction(1, 20),
            categories=("a", "b", None),
        ),
        "missing",
    ),
]


@pytest.mark.parametrize(("build", "match"), HAND_BUILT_BAD)
def test_hand_built_nodes_get_the_facades_checks(build: object, match: str) -> None:
    """Found by the curator's request tests: nodes that the facade never builds."""
    with pytest.raises(dp.DPError, match=match):
        build()  # type: ignore[operator]


def test_an_empty_key_list_is_refused_before_the_charge(session: dp.Session) -> None:
    frame = pd.DataFrame({"r": ["a", "b"], "x": [1.0, 2.0]})
    pf = session.private_frame(frame)
    empty = Aggregate(pf.plan, "count", None, None, (GroupKey("r", Col("r"), ()),), "c", _eps())
    with pytest.raises(dp.DPError, match="at least one public key"):
        session.run(empty)
    assert session.ledger.empty
