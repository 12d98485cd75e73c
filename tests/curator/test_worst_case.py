"""Worst-case time before the charge, from the declared row ceiling (issue 16).

Before: a quantile with 10,000 levels was sized as 4,097 cells (the levels
were ignored) and took 32 s on the curator; nothing estimated a release's
time.  Now a quantile's cells count its levels, and the curator refuses,
uncharged, a request whose worst case over the dataset's *declared*
``max_rows`` (public) is over ``release_estimate_seconds``; the answer is the
same whatever the private rows hold.
"""

from __future__ import annotations

import dataclasses
import gc
import time
from dataclasses import replace
from pathlib import Path

import pandas as pd
import pytest
from fastapi.testclient import TestClient

from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog, CatalogError
from dpframe.curator.service import Curator
from dpframe.curator.settings import ServerSettings
from dpframe.curator.worst_case import CostModel, worst_case_seconds
from dpframe.engine.release_path import size_of
from dpframe.mechanisms.core.family import Family, family_classes
from dpframe.mechanisms.core.work import Units, Work
from dpframe.plan.releases import (
    QUANTILE_BINS,
    GroupedQuantile,
    KernelDensity,
    Quantile,
    SparseVector,
)
from dpframe.remote.wire import decode_response
from tests.curator.support import ALICE, RELEASES, build_node, release_body, write_catalog

LEVELS = [i / 10_001 for i in range(1, 10_001)]
MEAN = release_body(RELEASES["mean"])


def auth() -> dict[str, str]:
    return {"Authorization": f"Bearer {ALICE}"}


def _client(tmp_path: Path, server: str = "", rows: int | None = None) -> TestClient:
    """A curator whose cps dataset declares ``rows`` rows at most (None: the default 10**6)."""
    tmp_path.mkdir(exist_ok=True)
    path = write_catalog(tmp_path, server=server, cps_max_rows=rows)
    return TestClient(create_app(Curator(Catalog.load(path))))


def _spent(client: TestClient) -> tuple[float, int]:
    budget = client.get("/v1/datasets/cps/budget", headers=auth()).json()
    ledger = client.get("/v1/datasets/cps/ledger", headers=auth()).json()
    return decode_response(budget["spent"]).epsilon, len(decode_response(ledger["ledger"]))


def test_quantile_cells_count_the_levels() -> None:
    one = build_node(lambda pf: pf["wage"].quantile(0.5, epsilon=0.1))
    many = build_node(lambda pf: pf["wage"].quantile(LEVELS, epsilon=0.1))
    grouped = build_node(lambda pf: pf.groupby("region")["wage"].quantile(LEVELS, epsilon=0.1))
    assert isinstance(one, Quantile) and isinstance(many, Quantile)
    assert isinstance(grouped, GroupedQuantile)
    assert one.cells() == QUANTILE_BINS + 1
    assert many.cells() == (QUANTILE_BINS + 1) * 10_000
    assert grouped.cells() == grouped.n_groups * (QUANTILE_BINS + 1) * 10_000
    candidates = build_node(
        lambda pf: pf["wage"].quantile([0.2, 0.8], epsilon=0.1, candidates=[1, 2])
    )
    assert candidates.cells() == 3 * 2


def test_ten_thousand_levels_are_refused_before_the_charge(tmp_path: Path) -> None:
    client = _client(tmp_path)
    body = release_body(lambda pf: pf["wage"].quantile(LEVELS, epsilon=0.1))
    started = time.perf_counter()
    answer = client.post("/v1/datasets/cps/query", json=body, headers=auth())
    assert time.perf_counter() - started < 5  # was 32 s, charged
    assert answer.status_code == 400
    assert answer.json()["error"]["code"] == "resource_limit"
    assert "40970000 output cells (limit 100000)" in answer.json()["error"]["message"]
    assert _spent(client) == (0, 0)


def test_the_worst_case_uses_the_declared_rows_not_the_data(tmp_path: Path) -> None:
    # The cps file has 28,155 rows; a ceiling of 10**9 makes a mean's worst case
    # 10**9 x (1 node + 2) x 5e-8 s = 150 s: refused, uncharged, naming only public numbers.
    client = _client(tmp_path / "a", rows=10**9)
    answer = client.post("/v1/datasets/cps/query", json=MEAN, headers=auth())
    assert answer.status_code == 400
    error = answer.json()["error"]
    assert error["code"] == "resource_limit"
    assert "up to 150.1 s on this dataset's declared 1,000,000,000 rows" in error["message"]
    assert "limit is 30 s" in error["message"]
    assert _spent(client) == (0, 0)
    # the same ceiling over fewer rows (a neighbouring file, one row less): the same answer
    rows = pd.read_csv(Catalog.load(tmp_path / "a" / "catalog.toml").datasets["cps"].path)
    smaller = tmp_path / "b"
    smaller.mkdir()
    rows.iloc[1:].to_csv(smaller / "cps.csv", index=False)
    catalog = write_catalog(smaller, cps_max_rows=10**9)
    text = catalog.read_text()
    start = text.index("[datasets.cps]\npath = ")
    end = text.index("\n", start + len("[datasets.cps]\n"))
    catalog.write_text(text[:start] + '[datasets.cps]\npath = "cps.csv"' + text[end:])
    other = TestClient(create_app(Curator(Catalog.load(catalog))))
    again = other.post("/v1/datasets/cps/query", json=MEAN, headers=auth())
    assert (again.status_code, again.json()) == (answer.status_code, answer.json())
    # the schema answer publishes the ceiling and the limit
    schema = client.get("/v1/datasets/cps", headers=auth()).json()
    assert (schema["max_rows"], schema["release_estimate_seconds"]) == (10**9, 30.0)
    # a ceiling of 10**5 rows: admitted and charged
    admitted = _client(tmp_path / "c", rows=100_000)
    assert admitted.post("/v1/datasets/cps/query", json=MEAN, headers=auth()).status_code == 200
    spent, rows_in_ledger = _spent(admitted)
    assert spent > 0 and rows_in_ledger == 1


def test_a_file_over_its_declared_ceiling_is_refused_at_start(tmp_path: Path) -> None:
    with pytest.raises(CatalogError, match=r"\[datasets.cps\] has more rows than its declared"):
        _client(tmp_path, rows=1000)


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ("release_seconds = 10\nrelease_estimate_seconds = 20", "at most release_seconds"),
        ("release_estimate_seconds = 0", "release_estimate_seconds must be a number"),
        ("cost = { row_seconds = 1e-8 }", "cost has unknown keys: row_seconds"),
        ('cost = { cell_seconds = "fast" }', r"cost.cell_seconds must be a number"),
        ("max_rows = 0", "max_rows must be a positive integer"),
        ("workers = -1", r"workers must be an integer in \[0, 256\]"),
    ],
)
def test_bad_time_settings_are_refused(tmp_path: Path, server: str, message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        if server.startswith("workers = "):
            Catalog.load(write_catalog(tmp_path, workers=int(server.split("=")[1])))
        else:
            Catalog.load(write_catalog(tmp_path, server=server))


def test_the_estimate_adds_the_model_terms() -> None:
    model = CostModel(row_op_seconds=1e-8, cell_seconds=1e-5, overhead_seconds=0.5)
    node = build_node(RELEASES["grouped mean"])
    sizes = size_of(node)
    expected = 10**6 * (sizes.evaluation_nodes + 2) * 1e-8 + sizes.output_cells * 1e-5 + 0.5
    assert worst_case_seconds(node, 10**6, model) == pytest.approx(expected, rel=1e-12)
    assert worst_case_seconds(node, 2 * 10**6, model) - 0.5 - sizes.output_cells * 1e-5 == (
        pytest.approx(2 * (expected - 0.5 - sizes.output_cells * 1e-5), rel=1e-12)
    )
    copy = build_node(RELEASES["laplace copy"])  # plus one noisy value per row
    base = worst_case_seconds(copy, 10**6, CostModel(row_noise_seconds=0.0))
    assert worst_case_seconds(copy, 10**6, CostModel()) == pytest.approx(base + 2.0)


def test_every_release_kind_fits_the_default_limit_at_a_million_rows() -> None:
    defaults = ServerSettings()
    for name, release in RELEASES.items():
        seconds = worst_case_seconds(build_node(release), defaults.max_rows, defaults.cost)
        if name.startswith("discover"):  # a key and a noise draw per row, at most (issue 27)
            assert seconds > defaults.release_estimate_seconds, name
            fewer = worst_case_seconds(build_node(release), 300_000, defaults.cost)
            assert fewer < defaults.release_estimate_seconds, name
            continue
        assert seconds < defaults.release_estimate_seconds, name


# -- each release kind declares its own work (issue 28) ----------------------------------


def test_every_release_kind_declares_its_worst_case_work() -> None:
    """The estimate lists no release kind: each family declares its work, none inherits it."""
    assert "work" in Family.__abstractmethods__  # no default a new kind could fall back on
    nodes = [build_node(release) for release in RELEASES.values()]
    for cls in family_classes():
        assert cls.work is not Family.work, cls.__name__
        mine = [node for node in nodes if type(node) is cls.node_type]
        assert mine, f"no release of {cls.node_type.__name__} in tests.curator.support.RELEASES"
        for node in mine:
            assert isinstance(cls().work(node), Work), cls.__name__


def test_a_family_that_forgets_its_work_is_refused_when_families_are_found() -> None:
    family_classes()  # the sessions' cached list is found first, without the class below

    class Toy:
        pass

    forgetful = type(
        "ForgetfulFamily",
        (Family,),
        {"node_type": Toy, "release": lambda self, run: (None, "")},
    )
    try:
        with pytest.raises(TypeError, match="ForgetfulFamily does not declare work"):
            family_classes.__wrapped__()  # the discovery itself, uncached
    finally:
        del forgetful
        gc.collect()  # out of Family.__subclasses__() again
    assert all(cls.__name__ != "ForgetfulFamily" for cls in family_classes.__wrapped__())


def test_every_unit_of_work_has_a_price() -> None:
    model = CostModel()
    for unit in dataclasses.fields(Units):
        assert model.price(Units(**{unit.name: 1})) > 0, unit.name
    assert model.price(Units()) == 0


def test_the_kinds_own_terms_are_priced_per_row_and_fixed() -> None:
    flops_only = CostModel(row_op_seconds=0.0, cell_seconds=0.0, overhead_seconds=0.0)
    kde = build_node(RELEASES["kde"])
    assert isinstance(kde, KernelDensity)
    n = len(kde.points)
    rows_only = worst_case_seconds(kde, 10**6, replace(flops_only, flop_seconds=0.0))
    assert rows_only == 0.0  # its per-row passes are priced as row operations
    assert worst_case_seconds(kde, 10**6, flops_only) == pytest.approx((n**3 / 3 + n * n) * 2e-9)
    passes = CostModel(cell_seconds=0.0, overhead_seconds=0.0, flop_seconds=0.0)
    sizes = size_of(kde)
    assert worst_case_seconds(kde, 10**6, passes) == pytest.approx(
        10**6 * (sizes.evaluation_nodes + 2 + n) * passes.row_op_seconds
    )
    svt = build_node(RELEASES["sparse vector"])  # comparisons only: no text or list terms
    assert isinstance(svt, SparseVector)
    sizes = size_of(svt)
    assert worst_case_seconds(svt, 10**6, passes) == pytest.approx(
        len(svt.conditions) * 10**6 * (sizes.evaluation_nodes + 2) * passes.row_op_seconds
    )
    keys = build_node(RELEASES["discover keys"])
    no_keys = worst_case_seconds(keys, 10**6, replace(passes, key_seconds=0.0))
    assert worst_case_seconds(keys, 10**6, passes) == pytest.approx(no_keys + 10**6 * 4e-5)
