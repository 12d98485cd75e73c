"""Every computation is total: no release fails after its charge, whatever the values (issue 27).

Before: a computation that failed after the charge answered an error
(``limit_exceeded``, mapped by the client to ``QueryFailedError``), a bit that
depends on the data.  Now (1) a generated matrix releases every node kind
(:data:`dpframe.curator.calibration.KINDS`, synthetic copies, and derived
columns of every expression kind) over data with NaN, ±inf, 1e308 and -1e308,
5e-324, all-missing columns, constant columns, one row, one group, keys that
are not declared, extreme integers, a privacy unit with missing and infinite
ids (the plain rows and the extremes also filtered to no row and to one
group), and asserts that nothing fails after its charge (the count is 0); (2) the same
extremes go through a curator with a worker process; (3) should a computation
still fail, the curator answers the **default release** (the request over no
rows, with the noise its charge bought), logs the failure for the data owner
without any value, and counts it (0 in the fuzz).
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from fastapi.testclient import TestClient

import dpframe as dp
from dpframe.backends.pandas_backend import PandasBackend
from dpframe.curator.app import create_app
from dpframe.curator.calibration import KINDS
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, RELEASES, SENTINEL_FLOAT, release_body, write_catalog

EPS = 1e6
ROWS = 60

Release = Callable[[dp.PrivateFrame], object]


def _base(rows: int = ROWS) -> pd.DataFrame:
    index = np.arange(rows)
    frame: pd.DataFrame = pd.DataFrame(
        {
            "x": (index * 37 % 100).astype(float),
            "n": (index % 50).astype(float),
            "cat": np.array(["a", "b", "c", "d"], dtype=object)[index % 4],
            "t": [f"t{k % 7}" for k in index],
            "d": pd.Timestamp("2020-01-01") + pd.to_timedelta(index % 300, unit="D"),
            "pid": (index % 7).astype(float),
        }
    )
    return frame


def _extremes(frame: pd.DataFrame) -> pd.DataFrame:
    cycle = [np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324, -5e-324, 0.0, -0.0, 100.0]
    frame["x"] = (cycle * (len(frame) // len(cycle) + 1))[: len(frame)]
    return frame


def _all_missing(frame: pd.DataFrame) -> pd.DataFrame:
    frame[["x", "n"]] = np.nan
    frame["cat"], frame["t"], frame["d"] = None, None, pd.NaT
    return frame


#: Data variants: name -> a change of the base rows.
VARIANTS: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "plain": lambda f: f,
    "NaN, ±inf, ±1e308, ±5e-324": _extremes,
    "all missing": _all_missing,
    "x all 1e308, n all -1e308": lambda f: f.assign(x=1e308, n=-1e308),
    "x all 5e-324": lambda f: f.assign(x=5e-324),
    "x all inf": lambda f: f.assign(x=np.inf, n=-np.inf),
    "constant": lambda f: f.assign(x=7.0, n=7.0),
    "one row": lambda f: f.iloc[:1],
    "one group": lambda f: f.assign(cat="a"),
    "undeclared keys": lambda f: f.assign(cat="zzz", t=None),
    "extreme integers": lambda f: f.assign(
        n=np.resize(np.array([2**63 - 1, -(2**63)], dtype=np.int64), len(f))
    ),
    "ids missing and infinite": lambda f: f.assign(
        pid=np.resize(np.array([np.nan, np.inf, 1.0]), len(f))
    ),
}
#: Filters: none, one that keeps no row (an empty frame), one that keeps one group.
FILTERS: dict[str, Callable[[dp.PrivateFrame], dp.PrivateFrame]] = {
    "all rows": lambda pf: pf,
    "no row": lambda pf: pf[pf["x"] > 1000],
    "one group": lambda pf: pf[pf["cat"] == "b"],
}
#: The variants also filtered to no row and to one group (the others: all rows only).
FILTERED = frozenset({"plain", "NaN, ±inf, ±1e308, ±5e-324"})
#: Derived columns of every expression kind, and what KINDS leaves out.
EXTRA: dict[str, Release] = {
    "log1p": lambda pf: pf.assign(v=np.log1p(pf["x"]).clip(0, 5))["v"].mean(epsilon=EPS),
    "divide by zero": lambda pf: pf.assign(v=(pf["n"] / (pf["x"] - pf["x"])).clip(-10, 10))[
        "v"
    ].sum(epsilon=EPS),
    "sqrt of negatives": lambda pf: pf.assign(v=np.sqrt(pf["x"] - 50).clip(0, 10))["v"].mean(
        epsilon=EPS
    ),
    "exp overflow": lambda pf: pf.assign(v=np.exp(pf["x"] * 1e10).clip(0, 10))["v"].var(
        epsilon=EPS
    ),
    "where": lambda pf: pf.assign(v=pf["x"].where(pf["x"] > 50))["v"].median(epsilon=EPS),
    "fillna": lambda pf: pf.assign(v=pf["x"].fillna(3))["v"].std(epsilon=EPS),
    "cut": lambda pf: pf.groupby(dp.cut(pf["x"], bins=[0, 10, 50, 100]))["n"].mean(epsilon=EPS),
    "text": lambda pf: pf[pf["t"].str.upper().str.contains("T", regex=True)].count(epsilon=EPS),
    "regex replace": lambda pf: pf[
        pf["t"].str.replace(r"(\w)", r"\1\1", regex=True).str.len() > 3
    ].count(epsilon=EPS),
    "text length": lambda pf: pf["t"].str.len().mean(epsilon=EPS),
    "dates": lambda pf: pf[pf["d"].dt.year > 2020].groupby("cat").size(epsilon=EPS),
    "map": lambda pf: pf.assign(v=pf["cat"].map({"a": 1.0, "b": 2.0}))["v"].mean(epsilon=EPS),
    "quantile candidates": lambda pf: pf["x"].quantile(
        [0.0, 0.5, 1.0], epsilon=EPS, candidates=[0, 1, 50, 100]
    ),
    "value counts": lambda pf: pf["cat"].value_counts(epsilon=EPS),
    "cov": lambda pf: pf[["x", "n"]].cov(epsilon=EPS),
    "corr of a constant": lambda pf: pf.assign(c=pf["x"] * 0 + 1)[["x", "c"]].corr(epsilon=EPS),
    "logistic, one class": lambda pf: pf.assign(h=pf["x"] > -1).logistic_regression(
        ["x"], "h", epsilon=EPS, steps=5
    ),
    "argmax count": lambda pf: pf.groupby("cat").argmax("count", epsilon=EPS),
    "grouped agg": lambda pf: pf.groupby("cat")["x"].agg(
        ["mean", "median", "std", "var", "sum", "count"], epsilon=EPS
    ),
    "describe all": lambda pf: pf.describe(epsilon=EPS),
    "synthetic copy": lambda pf: pf[["x", "n", "cat"]].synthesize(epsilon=5, rows=20),
    "laplace copy": lambda pf: pf["n"].laplace_copy(epsilon=EPS),
    "kde, wide": lambda pf: pf["x"].kde(1e6, epsilon=EPS, grid=16),
    "kde, narrow": lambda pf: pf["x"].kde(1e-9, epsilon=EPS, grid=16),
}
ALL: dict[str, Release] = {**KINDS, **EXTRA}


def _load(session: dp.Session, data: pd.DataFrame, unit: bool) -> dp.PrivateFrame:
    return session.private_frame(
        data,
        bounds={"x": (0, 100), "n": (0, 50)},
        categories={"cat": ["a", "b", "c", "d"]},
        dtypes={"t": "text(40)", "x": "numeric", "n": "numeric", "pid": "numeric"},
        privacy_unit=dp.PrivacyUnit("pid", max_rows=3) if unit else None,
    )


@pytest.mark.parametrize("kind", list(ALL))
def test_no_release_fails_after_its_charge(kind: str) -> None:
    release = ALL[kind]
    failed: list[str] = []
    released = 0
    for variant, change in VARIANTS.items():
        data = change(_base())
        unit = variant == "ids missing and infinite"
        filters = FILTERS if variant in FILTERED else {"all rows": FILTERS["all rows"]}
        for where, keep in filters.items():
            session = dp.Session(epsilon=1e12, delta=1e-2, ledger=":memory:")
            pf = _load(session, data, unit)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # fallbacks and undeclared keys are warned
                try:
                    release(keep(pf))
                    released += 1
                except dp.DPError as error:
                    if len(session.ledger):  # charged, then failed
                        failed.append(f"{variant} / {where}: {type(error).__name__}")
    assert failed == [], failed  # the count of failures after the charge: 0
    assert released > 0


def _extreme_catalog(folder: Path) -> Path:
    """The curator's test catalog, its cps file replaced by rows full of extreme values."""
    frame = pd.DataFrame(
        {
            "wage": [np.nan, np.inf, -np.inf, 1e308, -1e308, 5e-324, 0.0, SENTINEL_FLOAT] * 4,
            "education": [0, 20, -5, 1e308, np.nan, 12, 12, 12] * 4,
            "experience": [np.inf] * 32,
            "ethnicity": ["cauc", "afam", None, "zzz"] * 8,
            "smsa": ["yes"] * 32,
            "region": [None] * 32,
            "parttime": ["no", "yes"] * 16,
        }
    )
    frame.to_csv(folder / "extreme.csv", index=False)
    catalog = write_catalog(folder, workers=1, alice_epsilon=1e6)
    text = catalog.read_text()
    start = text.index("[datasets.cps]\npath = ")
    end = text.index("\n", start + len("[datasets.cps]\n"))
    catalog.write_text(text[:start] + '[datasets.cps]\npath = "extreme.csv"' + text[end:])
    return catalog


def test_extreme_values_through_the_curator_answer_every_kind(tmp_path: Path) -> None:
    curator = Curator(Catalog.load(_extreme_catalog(tmp_path)))
    try:
        client = TestClient(create_app(curator))
        headers = {"Authorization": f"Bearer {ALICE}"}
        answers: dict[str, tuple[int, str]] = {}
        for name, release in RELEASES.items():
            if name in ("discover keys", "discover then aggregate", "sparse vector"):
                continue  # the note column is the sentinel dataset's
            answer = client.post(
                "/v1/datasets/cps/query", json=release_body(release), headers=headers
            )
            code = answer.json().get("error", {}).get("code", "released")
            answers[name] = (answer.status_code, code)
        failed = {k: v for k, v in answers.items() if v != (200, "released")}
        assert failed == {}
        assert curator.default_releases == 0  # the last resort was never needed
        assert curator.unexpected_errors == 0
    finally:
        curator.close()


def test_a_failure_after_the_charge_is_answered_with_the_default_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    curator = Curator(Catalog.load(write_catalog(tmp_path, alice_epsilon=1e6)))
    client = TestClient(create_app(curator))
    headers = {"Authorization": f"Bearer {ALICE}"}
    count = release_body(lambda pf: pf.count(epsilon=100))
    assert client.post("/v1/datasets/cps/query", json=count, headers=headers).status_code == 200
    seat = curator._seats[("alice", "cps")]
    secret = f"value {SENTINEL_FLOAT!r} of row 17"

    def fails(*args: Any, **kwargs: Any) -> Any:
        raise ValueError(secret)  # a failure on the data, naming a private value

    def failing(key: tuple[str, str], backend: Any) -> Any:
        monkeypatch.setattr(backend, "compute", fails)
        return backend

    seat.session.replace_backends(failing)
    caplog.set_level(logging.ERROR, logger="dpframe.curator")
    fresh = {**count, "fresh": True}  # the same request, computed again (issue 31)
    answer = client.post("/v1/datasets/cps/query", json=fresh, headers=headers)
    assert answer.status_code == 200  # not an error: the default release
    release = decode_response(answer.json()["result"])
    assert abs(float(release)) < 1  # a count over no rows, with noise of scale 1/100
    assert curator.default_releases == 1
    assert answer.json()["release"] == 2
    logged = "\n".join(r.getMessage() for r in caplog.records)
    assert "failed after its charge (ValueError at" in logged and "default release" in logged
    assert secret not in logged and "4321.12" not in logged
    assert all(r.exc_info is None for r in caplog.records)  # no traceback with the message
    ledger = decode_response(
        client.get("/v1/datasets/cps/ledger", headers=headers).json()["ledger"]
    )
    assert list(ledger["status"]) == ["released", "released"]
    again = client.get("/v1/datasets/cps/releases/2", headers=headers)
    assert again.json()["result"] == answer.json()["result"]  # recovered like any release


def test_the_default_release_is_the_request_over_no_rows() -> None:
    session = dp.Session(epsilon=1e12, delta=1e-2, ledger=":memory:")
    pf = _load(session, _base(), unit=False)
    session.replace_backends(lambda key, backend: PandasBackend(_base().iloc[:0]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for kind, release in KINDS.items():
            release(pf)  # every kind releases over no rows (the last resort exists)
            assert list(session.ledger["status"])[-1] == "released", kind
