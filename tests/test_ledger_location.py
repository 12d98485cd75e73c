"""The default ledger location is absolute; an empty variable never moves it (issue 16)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from dpframe.accounting import default_ledger_path


def test_a_relative_dpframe_ledger_is_made_absolute(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DPFRAME_LEDGER", "ledgers/mine.sqlite")
    found = default_ledger_path()
    assert found.is_absolute() and found == tmp_path / "ledgers" / "mine.sqlite"


@pytest.mark.skipif(sys.platform in ("win32", "darwin"), reason="the XDG rule is Linux's")
@pytest.mark.parametrize("xdg", ["", "   ", "relative/data"])
def test_an_empty_or_relative_xdg_data_home_is_ignored(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, xdg: str
) -> None:
    monkeypatch.delenv("DPFRAME_LEDGER", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", xdg)
    monkeypatch.chdir(tmp_path)
    assert default_ledger_path() == tmp_path / ".local" / "share" / "dpframe" / "ledger.sqlite"


def test_an_empty_dpframe_ledger_counts_as_unset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DPFRAME_LEDGER", "")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_DATA_HOME", str(tmp_path / "data"))
    found = default_ledger_path()
    assert found.is_absolute()
    if sys.platform not in ("win32", "darwin"):
        assert found == tmp_path / "data" / "dpframe" / "ledger.sqlite"
