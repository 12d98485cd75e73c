"""``%%dpsql``: SQL cells in a notebook, with the meter and ``magic_arguments`` help."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd
import pytest
from IPython.core.interactiveshell import InteractiveShell

import dpframe as dp
from dpframe.examples.datasets import CPS1988_BOUNDS, CPS1988_CATEGORIES, load_cps1988
from dpframe.jupyter import DPMagics
from dpframe.mechanisms.core.explanations import Explanation
from tests.sql_cases import REGIONS


@pytest.fixture
def shell() -> Iterator[InteractiveShell]:
    ip = InteractiveShell.instance()
    ip.user_ns.clear()
    ip.run_line_magic("load_ext", "dpframe")
    session = dp.Session(epsilon=2.0, ledger=":memory:")
    pf = session.private_frame(load_cps1988(), bounds=CPS1988_BOUNDS, categories=CPS1988_CATEGORIES)
    ip.user_ns.update({"session": session, "pf": pf, "raw": load_cps1988()})
    ip.run_line_magic("dp_budget", "")
    yield ip
    ip.run_line_magic("unload_ext", "dpframe")
    ip.user_ns.clear()


def _magics(ip: InteractiveShell) -> DPMagics:
    magics = ip.magics_manager.registry["DPMagics"]
    assert isinstance(magics, DPMagics)
    return magics


def test_cell_answers_binds_and_updates_the_meter(shell: InteractiveShell) -> None:
    query = "SELECT region, AVG(wage) AS mean_wage FROM pf WHERE education >= 12 GROUP BY region"
    found = shell.run_cell_magic("dpsql", "--epsilon 0.5 --name by_region", query)
    assert isinstance(found, pd.DataFrame)
    assert list(found.columns) == ["mean_wage"]
    assert list(found.index) == ["midwest", "northeast", "south", "west"]
    assert shell.user_ns["by_region"] is found
    meter = _magics(shell).meters[0]
    assert meter.spent == dp.Budget(0.5)
    assert meter.fraction == pytest.approx(0.25)
    pf = shell.user_ns["pf"]
    session = shell.user_ns["session"]
    spelled = session.capture_node(
        lambda: pf[pf["education"] >= 12].groupby("region")["wage"].mean(epsilon=0.5)
    )
    magic_node = session.capture_node(lambda: shell.run_cell_magic("dpsql", "--epsilon 0.5", query))
    assert magic_node == spelled


def test_explain_and_delta(shell: InteractiveShell) -> None:
    explained = shell.run_cell_magic("dpsql", "--epsilon 0.5 --explain", "SELECT COUNT(*) FROM pf")
    assert isinstance(explained, Explanation)
    assert shell.user_ns["session"].spent == dp.Budget(0)
    explained = shell.run_cell_magic(
        "dpsql", "--epsilon 0.5", "EXPLAIN SELECT COUNT(*) FROM pf"
    )  # EXPLAIN in the cell
    assert isinstance(explained, Explanation)


def test_refusals_print_one_line_and_charge_nothing(
    shell: InteractiveShell, capsys: pytest.CaptureFixture[str]
) -> None:
    assert shell.run_cell_magic("dpsql", "--epsilon 0.5", "SELECT * FROM pf") is None
    assert shell.run_cell_magic("dpsql", "--epsilon 0.5", "SELECT AVG(wage) FROM raw") is None
    assert (
        shell.run_cell_magic("dpsql", "--epsilon 0.5 --name 1x", "SELECT COUNT(*) FROM pf") is None
    )
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("%dpsql: SELECT * returns private rows")
    assert lines[1].startswith("%dpsql: Unknown table 'raw'")  # a raw DataFrame is not a table
    assert lines[2] == "%dpsql: '1x' is not a valid variable name."
    assert shell.user_ns["session"].spent == dp.Budget(0)


def test_registered_public_tables_join(shell: InteractiveShell) -> None:
    session = shell.user_ns["session"]
    session.register("regions", REGIONS)
    found = shell.run_cell_magic(
        "dpsql",
        "--epsilon 0.2",
        "SELECT division, COUNT(*) AS n FROM pf JOIN regions USING (region) GROUP BY division",
    )
    assert sorted(found.index) == ["coastal", "inland"]


def test_help_comes_from_magic_arguments(shell: InteractiveShell) -> None:
    doc = DPMagics.dpsql.__doc__ or ""
    for option in ("--epsilon", "--delta", "--explain", "--name"):
        assert option in doc
    assert "dpsql" in shell.magics_manager.magics["cell"]


def test_unloading_removes_the_cell_magic(shell: InteractiveShell) -> None:
    shell.run_line_magic("unload_ext", "dpframe")
    assert "dpsql" not in shell.magics_manager.magics["cell"]
    shell.run_line_magic("load_ext", "dpframe")
    assert "dpsql" in shell.magics_manager.magics["cell"]
