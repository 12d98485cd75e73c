"""The Jupyter layer, tested in plain Python: magics, the live meter, loading and unloading."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

import dpframe as dp
from dpframe.examples.datasets import load_cps1988
from dpframe.jupyter import BudgetMeter, DPMagics
from dpframe.jupyter.magics import MagicInputError, parse_bounds, parse_categories
from dpframe.mechanisms.core.explanations import Explanation


@pytest.fixture
def shell(tmp_path: Path) -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.user_ns.clear()
    ip.run_line_magic("load_ext", "dpframe")
    yield ip
    ip.run_line_magic("unload_ext", "dpframe")
    ip.user_ns.clear()


@pytest.fixture
def cps_csv(tmp_path: Path) -> Path:
    path = tmp_path / "cps.csv"
    load_cps1988().to_csv(path, index=False)
    return path


def _magics(ip: InteractiveShell) -> DPMagics:
    magics = ip.magics_manager.registry["DPMagics"]
    assert isinstance(magics, DPMagics)
    return magics


def test_session_load_and_release(
    shell: InteractiveShell, cps_csv: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "nb.sqlite"
    shell.run_line_magic("dp_session", f"--epsilon 1 --name nb --ledger {ledger}")
    session = shell.user_ns["dp_session"]
    assert isinstance(session, dp.Session) and session.name == "nb"
    shell.run_line_magic(
        "dp_load",
        f"pf {cps_csv} --bounds wage=0:5000 education=0:20 "
        "--categories region=northeast,midwest,south,west",
    )
    pf = shell.user_ns["pf"]
    assert isinstance(pf, dp.PrivateFrame)
    assert pf.bounds["wage"] == (0.0, 5000.0)
    meter = _magics(shell).meters[0]
    assert meter.fraction == 0 and meter.colour == "green"
    pf["wage"].mean(epsilon=0.5)
    assert meter.fraction == pytest.approx(0.5)
    assert meter.spent == dp.Budget(0.5)
    assert meter.recent[-1] == ("mean(wage)", "ε=0.5")
    capsys.readouterr()
    ledger_table = shell.run_line_magic("dp_ledger", "")
    assert isinstance(ledger_table, pd.DataFrame) and len(ledger_table) == 1
    head = session.ledger_head  # issue 31: the chain head, an anchor kept in the notebook
    assert head is not None
    assert f"ledger head {head.n}:{head.hash} (an anchor" in capsys.readouterr().out


@pytest.mark.fresh_releases
def test_meter_updates_live_and_changes_colour(session: dp.Session, cps: pd.DataFrame) -> None:
    pf = session.private_frame(cps)  # session total ε = 10
    first, second = BudgetMeter(session), BudgetMeter(session)
    assert first.widget.children[1].value == 0.0
    for _ in range(7):  # a loop of releases: each one updates every meter
        pf.count(epsilon=1)
    assert first.fraction == pytest.approx(0.7) == second.fraction
    assert first.colour == "green"
    assert first.widget.children[1].value == pytest.approx(0.7)
    pf.count(epsilon=0.5)
    assert first.colour == "amber"
    assert first.widget.children[1].style.bar_color == "#f9a825"
    pf.count(epsilon=2.5)
    assert second.colour == "red" and second.fraction == 1.0
    assert "100% of the budget used" in second.text() and "red" in repr(second)
    assert "no further release possible" in second.text()
    assert len(first.recent) == 5
    bundle = first._repr_mimebundle_()
    assert "text/plain" in bundle and "application/vnd.jupyter.widget-view+json" in bundle
    first.close()
    pf_count_before = first.fraction
    second.close()
    with pytest.raises(dp.BudgetExceededError, match="Privacy budget exceeded"):
        pf.count(epsilon=1)
    assert first.fraction == pf_count_before
    assert not session._listeners


def test_meter_shows_delta_bar_for_approx(tmp_path: Path, cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1, delta=1e-5, accounting="approx", ledger=":memory:")
    pf = session.private_frame(cps)
    meter = BudgetMeter(session)
    pf.count(epsilon=0.1, delta=8e-6)
    assert meter.delta_fraction == pytest.approx(0.8)
    assert meter.colour == "amber"
    assert len(meter.widget.children) == 5


def test_meter_cannot_change_the_budget(session: dp.Session) -> None:
    meter = BudgetMeter(session)
    meter._on_release  # the only channel is one-way: events in, nothing out  # noqa: B018
    assert not hasattr(meter, "charge") and not hasattr(meter, "set_budget")
    meter.widget.children[1].value = 0.0  # a user dragging the widget state changes nothing
    assert session.remaining == session.total


@pytest.mark.parametrize(
    "line",
    [
        "pf {csv} --bounds wage=0-5000",
        "pf {csv} --bounds wage=a:b",
        "pf {csv} --categories region",
        "pf {csv} --bounds nosuchcolumn=0:1",
        "pf {csv} --categories nosuchcolumn=a,b",
        "pf {missing} --bounds wage=0:1",
        "2pf {csv}",
        "pf {csv} --privacy-unit nosuchcolumn --max-rows-per-unit 2",
        "pf {csv} --privacy-unit region",
    ],
)
def test_dp_load_bad_input_prints_one_line(
    shell: InteractiveShell,
    cps_csv: Path,
    tmp_path: Path,
    line: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    shell.run_line_magic("dp_session", "--epsilon 1 --name bad-input --ledger :memory:")
    capsys.readouterr()
    shell.run_line_magic("dp_load", line.format(csv=cps_csv, missing=tmp_path / "missing.csv"))
    out = capsys.readouterr().out.strip()
    assert out.startswith("%dp_load: ") and "\n" not in out
    assert "pf" not in shell.user_ns and "2pf" not in shell.user_ns
    assert shell.user_ns["dp_session"].spent == dp.Budget(0)


def test_dp_explain_spends_nothing(shell: InteractiveShell, cps_csv: Path) -> None:
    shell.run_line_magic("dp_session", "--epsilon 1 --ledger :memory:")
    shell.run_line_magic("dp_load", f"pf {cps_csv} --bounds wage=0:5000")
    explained = shell.run_line_magic("dp_explain", "pf['wage'].mean(epsilon=0.1)")
    assert isinstance(explained, Explanation)
    assert explained.cost == dp.Budget(0.1) and explained.allowed
    assert "within about ±" in str(explained) and "centred sum" not in str(explained)
    detailed = shell.run_line_magic("dp_explain", "--detail pf['wage'].mean(epsilon=0.1)")
    assert "centred sum" in str(detailed)  # the measures behind it, with --detail
    too_much = shell.run_line_magic("dp_explain", "pf.count(epsilon=5)")
    assert isinstance(too_much, Explanation) and not too_much.allowed
    assert shell.user_ns["dp_session"].spent == dp.Budget(0)


def test_magics_have_help() -> None:
    for name in ("dp_session", "dp_load", "dp_budget", "dp_ledger", "dp_explain"):
        doc = getattr(DPMagics, name).__doc__
        assert doc is not None and f"%{name}" in doc


def test_magics_without_session(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_line_magic("dp_budget", "")
    assert "no session yet" in capsys.readouterr().out


def test_load_ext_shows_meter_for_existing_session(tmp_path: Path) -> None:
    ip = InteractiveShell.instance()
    ip.user_ns.clear()
    ip.user_ns["s"] = dp.Session(epsilon=1, ledger=":memory:")
    ip.run_line_magic("load_ext", "dpframe")
    magics = _magics(ip)
    assert magics.session is ip.user_ns["s"] and len(magics.meters) == 1
    ip.run_line_magic("unload_ext", "dpframe")
    assert "DPMagics" not in ip.magics_manager.registry
    assert "dp_session" not in ip.magics_manager.magics["line"]
    assert not ip.user_ns["s"]._listeners  # type: ignore[union-attr]
    ip.user_ns.clear()


def test_argument_parsers() -> None:
    assert parse_bounds(["a=0:1", "b=-2.5:3e3"]) == {"a": (0.0, 1.0), "b": (-2.5, 3000.0)}
    assert parse_categories(["r=x,y"]) == {"r": ["x", "y"]}
    with pytest.raises(MagicInputError, match="write COLUMN=LOW:HIGH"):
        parse_bounds(["a=1"])
    with pytest.raises(MagicInputError, match="write COLUMN=KEY1,KEY2"):
        parse_categories(["r="])


def test_kernel_spec_is_installed() -> None:
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("dpframe")
    assert spec.display_name == "Python 3 (dpframe)"
    assert spec.argv[spec.argv.index("--ext") + 1] == "dpframe.jupyter.kernel"


def test_plot_grouped_release_with_error_bars(session: dp.Session, cps: pd.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    pf = session.private_frame(
        cps, bounds={"wage": (0, 5000)}, categories={"region": ["south", "west"]}
    )
    result = pf.groupby("region")["wage"].mean(epsilon=1)
    ax = dp.plot(result)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["south", "west"]
    assert len(ax.patches) == 2
    single = dp.plot(pf.count(epsilon=1))
    assert len(single.patches) == 1
    with pytest.raises(dp.DPError, match=r"plot\(\) needs a release or a grouped result"):
        dp.plot(pd.Series([1.0]))


def test_series_accessor(session: dp.Session, cps: pd.DataFrame) -> None:
    import matplotlib

    matplotlib.use("Agg")
    pf = session.private_frame(cps, bounds={"wage": (0, 5000)})
    hist = pf["wage"].hist(bins=4, epsilon=1)
    assert list(hist.dp.ci().columns) == ["low", "high"]
    assert len(hist.dp.plot().patches) == 4
    with pytest.raises(dp.DPError, match=r"ci\(\) needs a dpframe release"):
        pd.Series([1.0]).dp.ci()


def test_explain_composite_queries(cps: pd.DataFrame) -> None:
    session = dp.Session(epsilon=1, delta=1e-6, ledger=":memory:")
    pf = session.private_frame(cps, bounds={"wage": (0, 5000)})
    described = session.explain(lambda: pf.describe(epsilon=0.5))
    assert isinstance(described, Explanation) and described.cost == dp.Budget(0.5)
    grouped = session.explain(lambda: pf.groupby("region")["wage"].mean(epsilon=0.2, delta=1e-8))
    assert isinstance(grouped, Explanation) and grouped.allowed
    assert session.spent == dp.Budget(0) and session.ledger.empty
    with pytest.raises(dp.DPError, match="not a release node"):
        session.explain(5)


def test_dp_load_with_a_privacy_unit(shell: InteractiveShell, cps_csv: Path) -> None:
    shell.run_line_magic("dp_session", "--epsilon 1 --ledger :memory:")
    shell.run_line_magic(
        "dp_load", f"pf {cps_csv} --bounds wage=0:5000 --privacy-unit region --max-rows-per-unit 10"
    )
    pf = shell.user_ns["pf"]
    explained = shell.user_ns["dp_session"].explain(lambda: pf["wage"].sum(epsilon=0.1))
    assert explained.measures[0].sensitivity == pytest.approx(50_000)


def test_refusals_show_their_message_without_a_traceback(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_cell("import dpframe as dp\ns = dp.Session(epsilon=1, ledger=':memory:')")
    shell.run_cell("import pandas as pd\npf = s.private_frame(pd.DataFrame({'x': [1.0, 2.0]}))")
    capsys.readouterr()
    result = shell.run_cell("pf.count(epsilon=5)")
    shown = capsys.readouterr()
    text = shown.out + shown.err
    assert isinstance(result.error_in_exec, dp.BudgetExceededError)
    assert "BudgetExceededError: Privacy budget exceeded" in text
    assert "Requested:  ε=5" in text and "%tb shows where it was raised" in text
    assert "Traceback" not in text and "release_path.py" not in text
    other = shell.run_cell("1 / 0")  # not dpframe's: IPython's usual traceback
    assert isinstance(other.error_in_exec, ZeroDivisionError)
    assert "Traceback" in "".join(capsys.readouterr())


def test_unloading_gives_errors_back_to_ipython(capsys: pytest.CaptureFixture[str]) -> None:
    ip = InteractiveShell.instance()
    ip.run_line_magic("load_ext", "dpframe")
    loaded: tuple[type[BaseException], ...] = ip.custom_exceptions
    assert loaded == (dp.DPError, TypeError)  # TypeError: pandas refusing a private frame
    ip.run_line_magic("unload_ext", "dpframe")
    unloaded: tuple[type[BaseException], ...] = ip.custom_exceptions
    assert unloaded == ()
    capsys.readouterr()
    ip.run_cell("import dpframe as dp\nraise dp.SchemaError('plain')")
    assert "Traceback" in "".join(capsys.readouterr())
