"""The Dask backend itself: loading, identity, where work runs, contribution bounding."""

from __future__ import annotations

import math
import os
import pickle
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import dask
import numpy as np
import pandas as pd
import pytest
from distributed import Client
from scipy import stats

import dpframe as dp
from dpframe.backends import PandasBackend
from dpframe.backends import dask_backend as dask_module
from dpframe.backends.dask_backend import DaskBackend, TokenizationError, read_dask
from dpframe.noise import SecureRandom
from dpframe.plan.expressions import Col
from dpframe.plan.nodes import Source
from tests.dask._support import collect, from_pandas
from tests.stats_helpers import ALPHA

pytestmark = pytest.mark.usefixtures("dask_client")

HUGE = 1e7  # epsilon so large that counts come back exact after rounding


def _backend(pf: dp.PrivateFrame) -> object:
    source = pf.plan
    while not isinstance(source, Source):
        source = source.child
    found: dict[tuple[str, str], Any] = {}

    def keep(key: tuple[str, str], backend: Any) -> Any:
        found[key] = backend
        return backend

    session = pf.session
    assert isinstance(session, dp.Session)
    session.replace_backends(keep)  # the session's own backends, unchanged
    return found[(source.dataset, source.view)]


def test_import_dpframe_does_not_import_dask() -> None:
    code = "import sys, dpframe; print(sorted({m.split('.')[0] for m in sys.modules}))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "'dpframe'" in out.stdout
    assert "'dask'" not in out.stdout and "'distributed'" not in out.stdout


def test_queries_run_on_the_workers_not_the_client(
    cps: pd.DataFrame, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The client process cannot evaluate a partition here, yet every kind of query works.

    Each grouped sum is the exact sum (rounded to the noise's grid) plus discrete
    Gaussian noise of parameter σ (about 1.1 here: ε = 1e7 in a zCDP session), as
    the release records it.  A discrete Gaussian is σ-sub-Gaussian: P(|noise| >
    σ·√(2 ln(2k/α))) < α/k, so one of the k = 4 cells lies farther than that (plus
    the rounding) from the truth with probability below α = ALPHA (1e-7; the
    suite's rule is 1e-6).  The former rtol=1e-6 (4.2 on 4.2e6, 3.7σ) failed about
    once in 1,000 runs.
    """

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("a partition was evaluated in the client process")

    session = dp.Session(epsilon=1e9, delta=1e-3, ledger=":memory:")
    pf = session.private_frame(
        from_pandas(cps, 4),
        bounds={"wage": (0, 5000)},
        categories={"region": ["northeast", "midwest", "south", "west"]},
    )
    monkeypatch.setattr(PandasBackend, "compute", refuse)
    monkeypatch.setattr(PandasBackend, "key_counts", refuse)
    assert round(float(pf.count(epsilon=HUGE))) == len(cps)
    by_region = pf.groupby("region")["wage"].sum(epsilon=HUGE)
    expected = cps["wage"].clip(0, 5000).groupby(cps["region"]).sum()[by_region.index]
    (noise,) = by_region.attrs["dpframe"].intervals.noise  # the noise actually added
    assert noise.kind == "gaussian"
    sigma = math.sqrt(noise.parameter) * noise.grid  # its parameter is σ² in grid units
    assert sigma < 2  # near the truth: about 1.1 on sums of about 4e6
    tolerance = sigma * math.sqrt(2 * math.log(2 * len(by_region) / ALPHA)) + noise.rounding
    assert (np.abs(by_region.to_numpy() - expected.to_numpy()) <= tolerance).all()
    assert pf["wage"].median(epsilon=1e3) > 0
    assert sorted(pf.discover_keys("region", epsilon=10, delta=1e-6)) == sorted(
        cps["region"].unique()
    )


def test_read_parquet_and_csv_with_the_dask_backend(tmp_path: Path, cps: pd.DataFrame) -> None:
    parquet = tmp_path / "parts"
    parquet.mkdir()
    for i, start in enumerate(range(0, len(cps), 10_000)):
        cps.iloc[start : start + 10_000].to_parquet(parquet / f"part{i}.parquet")
    csv = tmp_path / "cps.csv"
    cps.to_csv(csv, index=False)
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    from_parquet = session.read_parquet(parquet, bounds={"wage": (0, 5000)}, backend="dask")
    from_csv = session.read_csv(csv, bounds={"wage": (0, 5000)}, backend="dask")
    in_memory = session.read_csv(csv, bounds={"wage": (0, 5000)})
    assert isinstance(_backend(from_parquet), DaskBackend)
    assert isinstance(_backend(from_csv), DaskBackend)
    assert isinstance(_backend(in_memory), PandasBackend)
    for pf in (from_parquet, from_csv):
        assert round(float(pf.count(epsilon=HUGE))) == len(cps)
        assert float(pf["wage"].sum(epsilon=HUGE)) == pytest.approx(
            cps["wage"].clip(0, 5000).sum(),
            abs=len(cps) * 2.0**-10 + 1,  # quantum 2**-9
        )
        # The same public schema as a pandas load (dask's text dtype is mapped back).
        assert pf.schema.equals(in_memory.schema)


def test_bad_backend_or_path_charges_nothing(tmp_path: Path) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    with pytest.raises(dp.InvalidArgumentError, match="pandas' or 'dask'"):
        session.read_csv(tmp_path / "x.csv", backend="spark")
    with pytest.raises(dp.SchemaError, match="Cannot read"):
        session.read_parquet(tmp_path / "missing.parquet", backend="dask")
    assert session.ledger.empty


def test_fingerprint_of_files_reads_no_data_and_follows_the_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_content_pass(self: DaskBackend) -> bytes:
        raise AssertionError("the fingerprint read the data")

    monkeypatch.setattr(DaskBackend, "_content_digest", no_content_pass)
    path = tmp_path / "data.parquet"
    pd.DataFrame({"x": np.arange(100.0)}).to_parquet(path)
    first = DaskBackend(read_dask("parquet", path, {})).fingerprint()
    assert DaskBackend(read_dask("parquet", path, {})).fingerprint() == first  # reproducible
    pd.DataFrame({"x": np.arange(100.0) + 1}).to_parquet(path)
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 10**9))  # a later modification
    assert DaskBackend(read_dask("parquet", path, {})).fingerprint() != first


def test_fingerprint_falls_back_to_a_content_hash(monkeypatch: pytest.MonkeyPatch) -> None:
    def untokenizable(*args: object) -> str:
        raise TokenizationError("not deterministic")

    monkeypatch.setattr(dask_module, "tokenize", untokenizable)
    frame = pd.DataFrame({"x": np.arange(50.0), "s": ["a", "b"] * 25})
    same = [DaskBackend(from_pandas(frame, 3)).fingerprint() for _ in range(2)]
    other = DaskBackend(from_pandas(frame.assign(x=frame["x"] * 2), 3))
    assert same[0] == same[1]
    assert other.fingerprint() != same[0]


def test_backend_never_shows_or_pickles_data() -> None:
    backend = DaskBackend(from_pandas(pd.DataFrame({"secret": [123456.0]}), 1))
    assert "123456" not in repr(backend)
    with pytest.raises(dp.DPError, match="cannot be pickled"):
        pickle.dumps(backend)


def test_progress_bar_option(capsys: pytest.CaptureFixture[str]) -> None:
    session = dp.Session(epsilon=1, ledger=":memory:")
    pf = session.private_frame(from_pandas(pd.DataFrame({"x": range(10)}), 2))
    with dask.config.set({dask_module.PROGRESS_OPTION: True}):
        pf.count(epsilon=0.5)
    assert "100% Completed" in capsys.readouterr().out


def test_bounding_keeps_at_most_k_rows_per_unit() -> None:
    people = np.repeat(np.arange(300), np.arange(300) % 7 + 1).astype(float)
    people[::50] = np.nan  # rows with a missing id are units of their own
    frame = pd.DataFrame({"person": people, "x": np.arange(len(people))})
    bounded = DaskBackend(from_pandas(frame, 4)).bound_contributions("person", 3, SecureRandom())
    kept = collect(bounded._frame)
    per_unit = kept["person"].value_counts()
    expected = pd.Series(people).value_counts().clip(upper=3)
    assert per_unit.sort_index().equals(expected.sort_index())
    assert kept["person"].isna().sum() == np.isnan(people).sum()
    assert set(kept["x"]) <= set(frame["x"]) and kept["x"].is_unique


def test_bounding_with_no_unit_over_the_limit_keeps_the_data_without_a_shuffle() -> None:
    people = np.repeat(np.arange(300), np.arange(300) % 3 + 1)  # at most 3 rows per unit
    frame = from_pandas(pd.DataFrame({"person": people, "x": np.arange(len(people))}), 4)
    backend = DaskBackend(frame)
    bounded = backend.bound_contributions("person", 3, SecureRandom())
    assert bounded._frame is frame  # the same partitions: nothing shuffled, nothing cut
    assert len(collect(bounded._frame)) == len(people)
    cut = backend.bound_contributions("person", 2, SecureRandom())  # units of 3 rows: cut
    assert cut._frame is not frame
    assert collect(cut._frame)["person"].value_counts().max() == 2


def test_bounding_picks_a_uniform_subset() -> None:
    """4,000 units of 4 rows (x = 0..3), k = 1: the kept x is uniform over 0..3.

    The chi-square test rejects a choice 30% more likely for one row (power check).
    """
    units = 4_000
    frame = pd.DataFrame(
        {"person": np.repeat(np.arange(units), 4), "x": np.tile(np.arange(4), units)}
    )
    bounded = DaskBackend(from_pandas(frame, 5)).bound_contributions("person", 1, SecureRandom())
    kept = collect(bounded._frame)
    assert len(kept) == units
    counts = Counter(kept["x"].tolist())
    assert stats.chisquare([counts[i] for i in range(4)]).pvalue > ALPHA
    gen = np.random.default_rng(7)
    skewed = gen.choice(4, size=units, p=np.array([1.3, 1, 1, 1]) / 4.3)
    assert stats.chisquare(np.bincount(skewed, minlength=4)).pvalue < ALPHA


def test_key_limit_per_unit_on_dask() -> None:
    """Every unit has one row under each of 3 keys; with at most 1 key per unit, one row stays."""
    units = 500
    frame = pd.DataFrame(
        {
            "person": np.repeat(np.arange(units), 3),
            "key": (np.repeat(np.arange(units), 3) + np.tile(np.arange(3), units)) % 5,
        }
    )
    backend = DaskBackend(from_pandas(frame, 4))
    keys, counts = backend.key_counts(Source("d"), Col("key"), "person", 1, SecureRandom())
    assert int(counts.sum()) == units  # one kept row per unit
    assert set(keys) <= set(range(5))
    _, counts_all = backend.key_counts(Source("d"), Col("key"))
    assert int(counts_all.sum()) == 3 * units


def test_unit_frames_on_dask_share_the_budget_and_refuse_mixing(dask_client: Client) -> None:
    frame = pd.DataFrame({"person": np.repeat(np.arange(1000), 3), "x": np.ones(3000)})
    ddf = from_pandas(frame, 3)
    session = dp.Session(epsilon=1e9, ledger=":memory:")
    pf = session.private_frame(
        ddf, bounds={"x": (0, 1)}, privacy_unit="person", max_rows_per_unit=2
    )
    assert round(float(pf.count(epsilon=HUGE))) == 2000
    assert round(float(pf["x"].sum(epsilon=HUGE))) == 2000
    with pytest.raises(dp.SchemaError, match="privacy unit"):
        session.private_frame(ddf, bounds={"x": (0, 1)})
