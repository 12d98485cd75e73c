"""Notebook sessions as an analyst meets them: the budget follows the data, keys with
spaces, the dpframe kernel's ``dp``, and a meter whose numbers add up."""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction
from pathlib import Path

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

import dpframe as dp
from dpframe.accounting.status import round_up
from dpframe.jupyter import BudgetMeter, DPMagics
from dpframe.jupyter.magic_lines import (
    MagicInputError,
    split_assignment,
    split_keys,
    split_words,
    unquote,
)


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.user_ns.clear()
    ip.run_line_magic("load_ext", "dpframe")
    yield ip
    ip.run_line_magic("unload_ext", "dpframe")
    ip.user_ns.clear()


@pytest.fixture
def towns(tmp_path: Path) -> Path:
    path = tmp_path / "my towns.csv"
    frame = pd.DataFrame({"home town": ["north east", "south", "a, b"] * 200, "x": range(600)})
    frame.to_csv(path, index=False)
    return path


def _magics(ip: InteractiveShell) -> DPMagics:
    magics = ip.magics_manager.registry["DPMagics"]
    assert isinstance(magics, DPMagics)
    return magics


# -- splitting ------------------------------------------------------------------


def test_words_split_on_whitespace_outside_quotes() -> None:
    line = 'pf "my data.csv" --categories region="north east",south --bounds w=0:5'
    assert split_words(line) == [
        "pf",
        '"my data.csv"',
        "--categories",
        'region="north east",south',
        "--bounds",
        "w=0:5",
    ]
    assert unquote('"my data.csv"') == "my data.csv"
    assert unquote(r"C:\data\x.csv") == r"C:\data\x.csv"  # no backslash escapes


def test_keys_split_on_commas_outside_quotes() -> None:
    assert split_keys("\"north east\",south,'a, b'") == ["north east", "south", "a, b"]
    assert split_keys("a,,b") == ["a", "b"]
    assert split_keys('"",b') == ["", "b"]  # an explicitly quoted empty key stays
    assert split_assignment('"home town"=a,b') == ("home town", "a,b", True)
    assert split_assignment("novalue") == ("novalue", "", False)


def test_an_unclosed_quote_is_refused() -> None:
    with pytest.raises(MagicInputError, match=r"unclosed quote \(\"\)"):
        split_words('pf "my data.csv --bounds x=0:1')


# -- %dp_load with quoted keys ------------------------------------------------------


def test_dp_load_takes_quoted_paths_and_keys(shell: InteractiveShell, towns: Path) -> None:
    shell.run_line_magic("dp_session", "--epsilon 100 --name towns --ledger :memory:")
    shell.run_line_magic(
        "dp_load",
        f'pf "{towns}" --categories "home town"="north east",south,\'a, b\' --bounds x=0:600',
    )
    pf = shell.user_ns["pf"]
    assert pf.categories == {"home town": ("a, b", "north east", "south")}  # sorted
    sizes = pf.groupby("home town").size(epsilon=50)
    assert list(sizes.index) == ["a, b", "north east", "south"]
    assert all(abs(v - 200) < 5 for v in sizes)


def test_dp_load_with_an_unclosed_quote_prints_one_line(
    shell: InteractiveShell, towns: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_line_magic("dp_session", "--epsilon 1 --name q --ledger :memory:")
    capsys.readouterr()
    shell.run_line_magic("dp_load", f'pf "{towns} --bounds x=0:600')
    out = capsys.readouterr().out.strip()
    assert out.startswith("%dp_load: unclosed quote") and "\n" not in out
    assert "pf" not in shell.user_ns


# -- the budget follows the data ----------------------------------------------------


def test_without_a_name_the_session_is_named_after_the_first_file(
    shell: InteractiveShell, towns: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    ledger = tmp_path / "ledger.sqlite"
    shell.run_line_magic("dp_session", f"--epsilon 1 --ledger {ledger}")
    assert "named after its file" in capsys.readouterr().out
    assert "dp_session" not in shell.user_ns
    shell.run_line_magic("dp_budget", "")
    assert "starts with the first %dp_load (named after its file)" in capsys.readouterr().out
    shell.run_line_magic("dp_load", f'pf "{towns}" --bounds x=0:600')
    session = shell.user_ns["dp_session"]
    assert session.name == f"file:{towns.resolve()}"
    shell.user_ns["pf"].count(epsilon=0.25)

    # Another notebook (a fresh extension load) on the same file resumes that spend ...
    shell.run_line_magic("unload_ext", "dpframe")
    shell.user_ns.clear()
    shell.run_line_magic("load_ext", "dpframe")
    shell.run_line_magic("dp_session", f"--epsilon 1 --ledger {ledger}")
    shell.run_line_magic("dp_load", f'again "{towns}" --bounds x=0:600')
    resumed = shell.user_ns["dp_session"]
    assert resumed.name == session.name and resumed.remaining == dp.Budget(0.75)
    meter = _magics(shell).meters[-1]
    assert meter.resumed == pytest.approx(0.25)  # spent by the earlier notebook
    assert "resumed: 25% was used before this session opened" in meter.text()

    # ... and unrelated data never shares it.
    other = tmp_path / "other.csv"
    pd.DataFrame({"x": [1, 2, 3]}).to_csv(other, index=False)
    shell.run_line_magic("dp_session", f"--epsilon 1 --ledger {ledger}")
    shell.run_line_magic("dp_load", f"third {other} --bounds x=0:3")
    fresh = shell.user_ns["dp_session"]
    assert fresh.name == f"file:{other.resolve()}" and fresh.remaining == dp.Budget(1)


def test_bad_budget_arguments_are_refused_at_once(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    shell.run_line_magic("dp_session", "--epsilon -1")
    out = capsys.readouterr().out.strip()
    assert out.startswith("%dp_session: ") and "epsilon" in out
    assert _magics(shell).pending is None


# -- the dpframe kernel binds dp ----------------------------------------------------


def test_the_kernel_extension_binds_dp_and_keeps_a_users_dp() -> None:
    from dpframe.jupyter import kernel

    ip = InteractiveShell.instance()
    ip.user_ns.clear()
    kernel.load_ipython_extension(ip)
    namespace: dict[str, object] = ip.user_ns
    try:
        bound = namespace["dp"]
        assert bound is dp
        assert "dp_session" in ip.magics_manager.magics["line"]
        namespace["dp"] = "mine"
        kernel.bind_dp(ip)
        kept = namespace["dp"]
        assert kept == "mine"
    finally:
        kernel.unload_ipython_extension(ip)
        ip.user_ns.clear()
    assert "dp_session" not in ip.magics_manager.magics["line"]


# -- one currency on the meter --------------------------------------------------------


@pytest.mark.fresh_releases
def test_the_zcdp_meter_adds_up_in_the_units_asked(tmp_path: Path) -> None:
    session = dp.Session(epsilon=1, delta=1e-6, ledger=":memory:", name="z", accounting="zcdp")
    assert session.accounting == "zcdp"
    pf = session.private_frame(pd.DataFrame({"x": [1.0, 2.0, 3.0] * 100}), bounds={"x": (0, 3)})
    meter = BudgetMeter(session)
    for _ in range(3):
        pf["x"].mean(epsilon=0.1)
    assert meter.used == dp.Budget(Fraction(3, 10))
    assert meter.used.epsilon + meter.remaining.epsilon == session.total.epsilon
    assert session.spent.epsilon > Fraction(3, 10)  # the guarantee is not the sum of shares
    text = meter.text()
    assert "30% of the budget used · next release up to ε=0.7 (total ε=1, δ=1e-06)" in text
    assert "(zcdp accounting, green)" in text
    assert session.used_share == pytest.approx(0.3)
    guarantee = session.guarantee
    assert guarantee == session.spent
    shown = round_up(float(guarantee.epsilon))  # rounded up: never below the exact guarantee
    assert shown == "0.55"
    assert float(shown) >= float(guarantee.epsilon)
    assert f"Guarantee so far: (ε={shown}, δ=1e-06)-DP" in text
    assert "<b>30% of the budget used</b> · next release up to ε=0.7" in meter._numbers.value
    meter.close()


# -- the meter in the side panel -------------------------------------------------------


def test_dp_budget_side_pins_the_meter_in_a_sidecar(shell: InteractiveShell) -> None:
    pytest.importorskip("sidecar")
    from sidecar import Sidecar

    shell.run_line_magic("dp_session", "--epsilon 1 --name side --ledger :memory:")
    magics = _magics(shell)
    shell.run_line_magic("dp_budget", "--side")
    (panel,) = magics.panels
    assert isinstance(panel, Sidecar) and panel.title == "dpframe budget · side"
    assert len(magics.meters) == 2  # the session's meter and the pinned one
    shell.run_line_magic("unload_ext", "dpframe")
    assert not magics.panels and not magics.meters
    shell.run_line_magic("load_ext", "dpframe")


def test_dp_budget_side_without_sidecar_shows_the_meter_inline(
    shell: InteractiveShell, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "sidecar", None)  # as if not installed
    shell.run_line_magic("dp_session", "--epsilon 1 --name side --ledger :memory:")
    capsys.readouterr()
    shell.run_line_magic("dp_budget", "--side")
    out = capsys.readouterr().out
    assert "needs the sidecar package" in out and "dpframe budget [side]" in out
    assert not _magics(shell).panels and len(_magics(shell).meters) == 2
