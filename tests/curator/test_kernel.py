"""The "Python 3 (dpframe) — curator client" kernel: connects at start, cannot load local data."""

from __future__ import annotations

from typing import Any

import pytest

import dpframe as dp
from tests.curator.support import ALICE, Server


def test_curator_kernel_spec_is_installed() -> None:
    from jupyter_client.kernelspec import KernelSpecManager

    spec = KernelSpecManager().get_kernel_spec("dpframe-curator")
    assert spec.display_name == "Python 3 (dpframe) — curator client"
    assert spec.argv[spec.argv.index("--ext") + 1] == "dpframe.jupyter.curator_kernel"
    assert spec.env == {"DPFRAME_CLIENT_ONLY": "1"}


@pytest.fixture
def shell() -> Any:
    from IPython.core.interactiveshell import InteractiveShell

    instance = InteractiveShell.instance()
    yield instance
    from dpframe.jupyter import curator_kernel

    curator_kernel.unload_ipython_extension(instance)
    InteractiveShell.clear_instance()


def test_the_kernel_connects_and_refuses_local_sessions(
    server: Server, shell: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpframe.jupyter import curator_kernel

    monkeypatch.setenv("DPFRAME_CLIENT_ONLY", "1")
    monkeypatch.setenv("DPFRAME_CURATOR_URL", server.url)
    monkeypatch.setenv("DPFRAME_TOKEN", ALICE)
    curator_kernel.load_ipython_extension(shell)
    assert isinstance(shell.user_ns["dp_conn"], dp.Connection)
    assert isinstance(shell.user_ns["cps"], dp.PrivateFrame)
    assert isinstance(shell.user_ns["sentinel"], dp.PrivateFrame)
    assert float(shell.user_ns["cps"].count(epsilon=0.1)) > 20_000
    with pytest.raises(dp.DPError, match="curator client"):
        dp.Session(epsilon=1)
    shell.run_line_magic("dp_session", "--epsilon 1")
    assert "curator client" in capsys.readouterr().out


def test_the_kernel_explains_missing_configuration(
    shell: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from dpframe.jupyter import curator_kernel

    monkeypatch.setenv("DPFRAME_CLIENT_ONLY", "1")
    monkeypatch.delenv("DPFRAME_CURATOR_URL", raising=False)
    monkeypatch.delenv("DPFRAME_TOKEN", raising=False)
    monkeypatch.delenv("DPFRAME_TOKEN_FILE", raising=False)
    curator_kernel.load_ipython_extension(shell)
    assert "set DPFRAME_CURATOR_URL" in capsys.readouterr().out
    assert "dp_conn" not in shell.user_ns


def test_dp_connect_magic_reads_the_token_from_the_environment(
    server: Server, shell: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dpframe

    dpframe.load_ipython_extension(shell)
    monkeypatch.setenv("MY_TOKEN", ALICE)
    shell.run_line_magic("dp_connect", f"{server.url} --token-env MY_TOKEN --open cps=data")
    out = capsys.readouterr().out
    assert "data = private frame of 'cps'" in out
    assert ALICE not in out
    assert isinstance(shell.user_ns["data"], dp.PrivateFrame)
    shell.run_line_magic("dp_connect", f"{server.url} --token-env NOT_SET_ANYWHERE")
    assert "$NOT_SET_ANYWHERE is not set" in capsys.readouterr().out
