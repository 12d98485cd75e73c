"""Re-running spends nothing twice (issue 31): a request already answered is answered again.

Each condition of ``docs/rerun-cache.md`` is a test here: (a) the stored
thing is the released output; (b) a hit needs exact identity (a mutation of
the key's every part misses); (c) a hit reads no data, whether or not the
data changed.  Then: every release kind answered again, ``fresh=True``, the
size limit, batches, the meter and caption, and two processes sharing a file
ledger.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

import dpframe as dp
from dpframe.engine import reruns
from dpframe.engine.recorded import RECORDED_ATTR, RecordedRelease
from dpframe.engine.session import ReleaseEvent
from dpframe.engine.wire import decode_response, encode_response
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES
from tests.curator.support import RELEASES, SENTINEL_DTYPES, sentinel_frame
from tests.sessions import local as local_session

BOUNDS = {"wage": (0, 5000), "education": (0, 20)}
REGIONS = {"region": ["a", "b", "c"]}


def frame(seed: int = 0, rows: int = 500) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    data: pd.DataFrame = pd.DataFrame(
        {
            "wage": rng.uniform(0, 5000, rows).round(2),
            "education": rng.integers(0, 21, rows),
            "region": rng.choice(["a", "b", "c"], rows),
            "person": rng.integers(0, rows // 2, rows),
        }
    )
    return data


def open_frame(
    df: pd.DataFrame, ledger: Any = ":memory:", name: str = "default", **load: Any
) -> dp.PrivateFrame:
    session = dp.Session(epsilon=10.0, ledger=ledger, name=name)
    pf: dp.PrivateFrame = session.private_frame(df, bounds=BOUNDS, categories=REGIONS, **load)
    return pf


def plain(result: Any) -> Any:
    """A result's encoding without the ledger's mark (to compare a hit with the original)."""
    if isinstance(result, RecordedRelease):
        result = dp.Release(**{k: getattr(result, k) for k in dp.Release.__dataclass_fields__})
    elif isinstance(result, (pd.Series, pd.DataFrame)):
        result = result.copy()
        result.attrs.pop(RECORDED_ATTR, None)
    elif isinstance(result, tuple):
        return tuple(plain(r) for r in result)
    elif isinstance(result, list):
        return [plain(r) for r in result]
    elif isinstance(result, dict):
        return {k: plain(v) for k, v in result.items()}
    return json.dumps(encode_response(result), sort_keys=True)


def test_the_same_request_again_is_answered_from_the_ledger_free() -> None:
    pf = open_frame(frame())
    session = local_session(pf)
    first = pf["wage"].mean(epsilon=0.5)
    spent = session.spent
    again = pf["wage"].mean(epsilon=0.5)
    assert session.spent == spent == dp.Budget(0.5)
    assert len(session.ledger) == 1
    assert isinstance(again, RecordedRelease)
    assert again.value == first.value and again.ci() == first.ci() and again.scale == first.scale
    assert again.cost == first.cost  # the release's own cost; nothing charged now
    assert "from the ledger, recorded" in repr(again) and "charged nothing now" in repr(again)
    assert "from the ledger" in again._repr_html_()


def test_fresh_asks_for_a_new_charged_release() -> None:
    pf = open_frame(frame())
    session = local_session(pf)
    pf.count(epsilon=0.5)
    fresh = pf.count(epsilon=0.5, fresh=True)
    assert session.spent == dp.Budget(1.0)
    assert len(session.ledger) == 2
    assert not isinstance(fresh, RecordedRelease)
    again = pf.count(epsilon=0.5)  # the newest answer is the one given again
    assert isinstance(again, RecordedRelease) and again.value == fresh.value
    with pytest.raises(dp.InvalidArgumentError, match="fresh= takes True"):
        pf.count(epsilon=0.5, fresh="yes")  # type: ignore[arg-type]


# -- (a) the stored thing is the released output -------------------------------------


def test_a_the_ledger_keeps_the_released_output_and_answers_with_it() -> None:
    pf = open_frame(frame())
    session = local_session(pf)
    first = pf["wage"].sum(epsilon=0.5)
    body = session._ledger.run(lambda c: c.execute("SELECT body FROM answers").fetchall())
    assert len(body) == 1
    kept = json.loads(body[0][0])  # JSON as released (arrays as base64 bytes)
    assert set(kept) == {"result", "cost", "query"}  # the answer, nothing to re-apply
    assert decode_response(kept["result"]).value == first.value
    # Another random source now: a re-run that drew or re-applied noise would differ.
    session._path.rng = dp.noise.SecureRandom()
    assert pf["wage"].sum(epsilon=0.5).value == first.value


# -- (b) a hit needs exact identity: every part of the key, mutated, misses ----------


def _adults(pf: dp.PrivateFrame) -> dp.PrivateFrame:
    adults: dp.PrivateFrame = pf[pf["education"] >= 12]
    return adults


#: The base request, ``_adults(pf)["wage"].mean(epsilon=0.5)``, with one thing changed.
MUTATIONS = {
    "epsilon": lambda pf: _adults(pf)["wage"].mean(epsilon=0.25),
    "filter": lambda pf: pf[pf["education"] >= 13]["wage"].mean(epsilon=0.5),
    "no filter": lambda pf: pf["wage"].mean(epsilon=0.5),
    "column": lambda pf: _adults(pf)["education"].mean(epsilon=0.5),
    "statistic": lambda pf: _adults(pf)["wage"].sum(epsilon=0.5),
    "bounds": lambda pf: _adults(pf).with_bounds(wage=(0, 4000))["wage"].mean(epsilon=0.5),
    "derived column": lambda pf: _adults(pf).assign(w=pf["wage"] * 1)["w"].mean(epsilon=0.5),
}


@pytest.mark.parametrize("change", sorted(MUTATIONS))
def test_b_a_changed_request_misses(change: str) -> None:
    pf = open_frame(frame())
    session = local_session(pf)
    base = _adults(pf)["wage"].mean(epsilon=0.5)
    again = _adults(pf)["wage"].mean(epsilon=0.5)
    assert isinstance(again, RecordedRelease) and again.value == base.value
    spent = session.spent.epsilon
    changed = MUTATIONS[change](pf)
    assert not isinstance(changed, RecordedRelease)
    assert session.spent.epsilon > spent


def test_b_changed_data_misses_even_when_almost_the_same() -> None:
    """One value changed: the keyed data identity differs (never the similarity sketches)."""
    tmp = frame()
    pf = open_frame(tmp)
    session = local_session(pf)
    pf["wage"].mean(epsilon=0.5)
    edited = tmp.copy()
    edited.loc[3, "wage"] = 1.0
    other = session.private_frame(edited, bounds=BOUNDS, categories=REGIONS)
    answer = other["wage"].mean(epsilon=0.5)
    assert not isinstance(answer, RecordedRelease)
    assert session.spent == dp.Budget(1.0)
    same = session.private_frame(tmp.copy(), bounds=BOUNDS, categories=REGIONS)
    assert isinstance(same["wage"].mean(epsilon=0.5), RecordedRelease)  # same rows: a hit


def test_b_a_changed_privacy_unit_misses(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    df = frame()
    unit = dp.PrivacyUnit("person", max_rows=4)
    first = open_frame(df, ledger, privacy_unit=unit)
    first["wage"].sum(epsilon=0.5)
    again = open_frame(df, ledger, privacy_unit=unit)  # a new load: a new bounded view
    assert isinstance(again["wage"].sum(epsilon=0.5), RecordedRelease)
    other = open_frame(df, ledger, name="five", privacy_unit=dp.PrivacyUnit("person", max_rows=5))
    other_first = open_frame(df, ledger, name="five", privacy_unit=dp.PrivacyUnit("person", 4))
    assert not isinstance(other["wage"].sum(epsilon=0.5), RecordedRelease)
    key4 = local_session(first)._path.request_of(
        local_session(first).capture_node(lambda: first["wage"].sum(epsilon=0.5))
    )
    key5 = local_session(other)._path.request_of(
        local_session(other).capture_node(lambda: other["wage"].sum(epsilon=0.5))
    )
    assert key4 != key5
    assert other_first is not None


def test_b_another_session_never_shares_an_answer(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.sqlite"
    df = frame()
    open_frame(df, ledger, name="ana").count(epsilon=0.5)
    bo = open_frame(df, ledger, name="bo")
    assert not isinstance(bo.count(epsilon=0.5), RecordedRelease)
    assert local_session(bo).spent == dp.Budget(0.5)


# -- (c) a hit touches no data, whether or not it changed ---------------------------


class _Untouchable:
    """A backend that fails on any use: a hit must never reach it."""

    def __getattr__(self, name: str) -> Any:
        raise AssertionError(f"the data was touched ({name})")


def test_c_a_hit_reads_no_data() -> None:
    pf = open_frame(frame())
    session = local_session(pf)
    first = pf.groupby("region")["wage"].mean(epsilon=0.5)
    session.replace_backends(lambda key, backend: _Untouchable())
    again = pf.groupby("region")["wage"].mean(epsilon=0.5)
    assert plain(again) == plain(first)
    assert again.attrs[RECORDED_ATTR].startswith("from the ledger, recorded")
    with pytest.raises(AssertionError, match="the data was touched"):
        pf.groupby("region")["wage"].mean(epsilon=0.5, fresh=True)  # a miss reaches it


def test_c_the_lookup_reads_the_key_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """The engine asks the ledger for the key and nothing else; the key holds no rows."""
    pf = open_frame(frame())
    session = local_session(pf)
    asked: list[tuple[str, str]] = []
    real = session._ledger.recorded_answer

    def spy(name: str, request: str) -> Any:
        asked.append((name, request))
        return real(name, request)

    monkeypatch.setattr(session._ledger, "recorded_answer", spy)
    pf.count(epsilon=0.5)
    pf.count(epsilon=0.5)
    assert len(asked) == 2 and asked[0] == asked[1]
    assert len(asked[0][1]) == 64 and int(asked[0][1], 16) >= 0  # a SHA-256, hex


# -- every release kind, the size limit, batches, the meter -------------------------


@pytest.mark.parametrize("name", sorted(RELEASES))
def test_every_release_kind_is_answered_again_whole(name: str) -> None:
    if name == "synthesize":
        pytest.importorskip("scipy")
    session = dp.Session(epsilon=100.0, delta=1e-6, ledger=":memory:")
    data = sentinel_frame()
    pf = session.private_frame(
        data, bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES, dtypes=SENTINEL_DTYPES
    )
    release = RELEASES[name]
    first = release(pf)
    spent = session.spent
    rows = len(session.ledger)
    again = release(pf)
    assert session.spent == spent and len(session.ledger) == rows
    assert plain(again) == plain(first)


def test_an_answer_over_the_limit_is_not_kept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(reruns, "MAX_KEPT_BYTES", 10)
    pf = open_frame(frame())
    with pytest.warns(RuntimeWarning, match="not kept, so asking for it again will charge"):
        pf.count(epsilon=0.5)
    with pytest.warns(RuntimeWarning, match="not kept"):
        again = pf.count(epsilon=0.5)
    assert not isinstance(again, RecordedRelease)
    assert local_session(pf).spent == dp.Budget(1.0)


def test_a_table_over_the_cell_limit_is_not_encoded(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above MAX_KEPT_CELLS values nothing is encoded (it would cost about 9 µs a cell)."""
    monkeypatch.setattr(reruns, "MAX_KEPT_CELLS", 2)
    encoded: list[object] = []
    real = getattr(reruns, "encode_response")  # noqa: B009  (imported there, not exported)

    def counted(result: object) -> object:
        encoded.append(result)
        return real(result)

    monkeypatch.setattr(reruns, "encode_response", counted)
    pf = open_frame(frame())
    with pytest.warns(RuntimeWarning, match=r"has 3 values, over the 2 the ledger keeps"):
        pf.groupby("region").size(epsilon=0.5)  # 3 declared keys: 3 values
    assert encoded == []
    with pytest.warns(RuntimeWarning, match="not kept"):
        again = pf.groupby("region").size(epsilon=0.5)
    assert "dpframe_recorded" not in again.attrs
    assert local_session(pf).spent == dp.Budget(1.0)
    single = pf.count(epsilon=0.5)  # one value: kept
    assert isinstance(pf.count(epsilon=0.5), RecordedRelease) and single is not None


def test_a_batch_keeps_its_answers_for_a_re_run() -> None:
    pf = open_frame(frame())
    session = local_session(pf)
    with session.batch() as batch:
        count = batch.add(lambda: pf.count(epsilon=0.5))
    again = pf.count(epsilon=0.5)
    assert isinstance(again, RecordedRelease) and again.value == count.result.value
    assert session.spent == dp.Budget(0.5)


def test_the_meter_hears_a_free_answer_from_the_ledger() -> None:
    pf = open_frame(frame())
    session = local_session(pf)
    events: list[ReleaseEvent] = []
    session.subscribe(events.append)
    pf.count(epsilon=0.5)
    pf.count(epsilon=0.5)
    assert [e.recorded is None for e in events] == [True, False]
    assert events[1].cost == dp.Budget(0)
    assert events[1].recorded is not None and events[1].recorded.startswith("from the ledger")


class _Failing(_Untouchable):
    """A backend that passes the checks before the charge, then fails to compute."""

    holds_rows = True

    def preflight(self) -> None:
        return None


def test_a_failed_release_is_never_answered_again() -> None:
    pf = open_frame(frame())
    session = local_session(pf)
    session.replace_backends(lambda key, backend: _Failing())
    with pytest.raises(dp.DPError, match="failed while reading the data"):
        pf.count(epsilon=0.5)
    with pytest.raises(dp.DPError, match="failed while reading the data"):
        pf.count(epsilon=0.5)  # charged again: nothing was released the first time
    assert session.spent == dp.Budget(1.0)


def test_joins_are_not_keyed() -> None:
    session = dp.Session(epsilon=10.0, ledger=":memory:")
    df = frame()
    unit = dp.PrivacyUnit("person", max_rows=4)
    visits = session.private_frame(df, bounds=BOUNDS, categories=REGIONS, privacy_unit=unit)
    people = session.private_frame(
        pd.DataFrame({"person": np.arange(250), "age": np.arange(250) % 90}),
        bounds={"age": (0, 90)},
        privacy_unit=dp.PrivacyUnit("person", max_rows=1),
    )
    joined = visits.merge(people, on="person", max_rows=4)
    first = joined["age"].sum(epsilon=0.5)
    again = joined["age"].sum(epsilon=0.5)
    assert not isinstance(again, RecordedRelease)
    assert first is not None


# -- a notebook run twice, in two processes, with a file ledger ---------------------

NOTEBOOK = textwrap.dedent(
    """
    import json, sys, time
    import numpy as np, pandas as pd
    import dpframe as dp

    started = time.perf_counter()
    rng = np.random.default_rng(7)
    df = pd.DataFrame({"wage": rng.uniform(0, 5000, 2000).round(2),
                       "education": rng.integers(0, 21, 2000),
                       "region": rng.choice(["a", "b", "c"], 2000)})
    session = dp.Session(epsilon=10, ledger=sys.argv[1], name="notebook")
    pf = session.private_frame(df, bounds={"wage": (0, 5000), "education": (0, 20)},
                               categories={"region": ["a", "b", "c"]})
    before = session.spent.epsilon
    cells = time.perf_counter()
    answers = [
        float(pf.count(epsilon=0.1)),
        float(pf["wage"].mean(epsilon=0.2)),
        float(pf[pf["education"] >= 12]["wage"].mean(epsilon=0.2)),
        pf.groupby("region")["wage"].mean(epsilon=0.3).dp.raw.tolist(),
        pf["wage"].quantile([0.25, 0.75], epsilon=0.2).dp.raw.tolist(),
        pf.describe(epsilon=0.5).dp.raw.to_numpy().tolist(),
    ]
    cells = time.perf_counter() - cells
    print(json.dumps({"charged": float(session.spent.epsilon - before), "answers": answers,
                      "cells_seconds": cells, "rows": len(session.ledger)}))
    """
)


def test_a_notebook_run_twice_in_two_processes_charges_nothing_the_second_time(
    tmp_path: Path,
) -> None:
    script = tmp_path / "notebook.py"
    script.write_text(NOTEBOOK, encoding="utf-8")
    ledger = tmp_path / "ledger.sqlite"
    runs = []
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, str(script), str(ledger)],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).resolve().parents[1],
        )
        runs.append(json.loads(done.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["charged"] == pytest.approx(1.5)
    assert second["charged"] == 0
    assert second["answers"] == first["answers"]
    assert second["rows"] == first["rows"] == 6
    assert time.time() > 0


def test_a_hit_needs_no_budget_left() -> None:
    session = dp.Session(epsilon=1.0, ledger=":memory:")
    pf = session.private_frame(frame(), bounds=BOUNDS, categories=REGIONS)
    first = pf.count(epsilon=1.0)
    with pytest.raises(dp.BudgetExceededError, match="exceed"):
        pf.count(epsilon=1.0, fresh=True)
    again = pf.count(epsilon=1.0)
    assert isinstance(again, RecordedRelease) and again.value == first.value
