"""An analyst trusts an organisation's own certificate authority: ``dp.connect(..., cafile=)``.

A CA and a server certificate for 127.0.0.1 are made with the ``openssl``
command; the curator serves TLS (``--ssl-certfile/--ssl-keyfile``).  With
``cafile=`` the analyst connects and releases; without it the system's
authorities do not know the CA and the connection is refused; a missing or
unreadable file is refused before any request.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import dpframe as dp
from dpframe.remote.client import CuratorUnavailableError
from tests.curator.support import BOB, free_port, write_catalog

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs openssl")


def _openssl(*args: str, cwd: Path) -> None:
    subprocess.run(["openssl", *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ca.pem (an internal CA) and server.pem/server.key (127.0.0.1, signed by it)."""
    folder = tmp_path_factory.mktemp("pki")
    ca = "-x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.pem -days 2"
    _openssl("req", *ca.split(), "-subj", "/CN=dpframe test CA", cwd=folder)
    request = "-newkey rsa:2048 -nodes -keyout server.key -out server.csr"
    _openssl("req", *request.split(), "-subj", "/CN=127.0.0.1", cwd=folder)
    (folder / "san.ext").write_text(
        "subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\n"
        "keyUsage=digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n",
        encoding="utf-8",
    )
    sign = "-req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -out server.pem"
    _openssl("x509", *sign.split(), "-days", "2", "-extfile", "san.ext", cwd=folder)
    return folder


@pytest.fixture(scope="module")
def tls_url(pki: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    catalog = write_catalog(tmp_path_factory.mktemp("curator"))
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k not in ("DPFRAME_CLIENT_ONLY", "SSL_CERT_FILE")}
    command = [sys.executable, "-m", "dpframe", "serve", "--catalog", str(catalog)]
    command += ["--port", str(port), "--ssl-certfile", str(pki / "server.pem")]
    command += ["--ssl-keyfile", str(pki / "server.key")]
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    url = f"https://127.0.0.1:{port}"
    import ssl

    context = ssl.create_default_context(cafile=str(pki / "ca.pem"))
    deadline = time.monotonic() + 60
    try:
        while True:
            assert process.poll() is None, process.stderr.read().decode() if process.stderr else ""
            try:
                with urllib.request.urlopen(url + "/v1/health", timeout=1, context=context):
                    break
            except OSError:
                assert time.monotonic() < deadline, "the TLS curator did not start in 60 s"
                time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(10)


def test_the_internal_ca_is_trusted_with_cafile(pki: Path, tls_url: str) -> None:
    connection = dp.connect(tls_url, token=BOB, cafile=pki / "ca.pem")
    pf: Any = connection.open("cps")
    before = pf.session.spent
    assert 20_000 < float(pf.count(epsilon=0.1)) < 36_000
    assert pf.session.spent == before + dp.Budget(0.1)


def test_without_cafile_the_unknown_ca_is_refused(tls_url: str, monkeypatch: Any) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    with pytest.raises(CuratorUnavailableError, match="CERTIFICATE_VERIFY_FAILED"):
        dp.connect(tls_url, token=BOB)


@pytest.mark.parametrize(
    ("cafile", "url", "match"),
    [
        ("missing.pem", "https://127.0.0.1:1", r"cafile='missing.pem': no such file"),
        ("server.csr", "https://127.0.0.1:1", r"holds no PEM certificate that can be read"),
        ("ca.pem", "http://127.0.0.1:1", r"cafile= is for an https:// curator address"),
    ],
)
def test_a_bad_cafile_is_refused_before_any_request(
    pki: Path, monkeypatch: Any, cafile: str, url: str, match: str
) -> None:
    monkeypatch.chdir(pki)
    with pytest.raises(dp.InvalidArgumentError, match=match):
        dp.connect(url, token=BOB, cafile=cafile)


def test_the_magic_takes_the_cafile(
    pki: Path, tls_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    from IPython.core.interactiveshell import InteractiveShell

    import dpframe

    shell = InteractiveShell.instance()
    try:
        dpframe.load_ipython_extension(shell)
        monkeypatch.setenv("MY_TOKEN", BOB)
        monkeypatch.delenv("SSL_CERT_FILE", raising=False)
        ca = pki / "ca.pem"
        shell.run_line_magic(
            "dp_connect", f"{tls_url} --token-env MY_TOKEN --cafile {ca} --open cps"
        )
        assert "cps = private frame of 'cps'" in capsys.readouterr().out
        assert isinstance(shell.user_ns["cps"], dp.PrivateFrame)
        shell.run_line_magic("dp_connect", f"{tls_url} --token-env MY_TOKEN")  # no CA: refused
        assert "CERTIFICATE_VERIFY_FAILED" in capsys.readouterr().out
    finally:
        dpframe.unload_ipython_extension(shell)
        InteractiveShell.clear_instance()
