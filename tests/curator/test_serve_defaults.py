"""`dpframe serve` refuses plain HTTP beyond loopback unless asked; `--no-docs` hides the pages."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dpframe.cli import _is_loopback, main
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog
from tests.curator.support import write_catalog


@pytest.mark.parametrize("host", ["127.0.0.1", "127.8.0.1", "::1", "[::1]", "localhost"])
def test_loopback_hosts(host: str) -> None:
    assert _is_loopback(host)


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "10.0.0.5", "example.org", ""])
def test_other_hosts(host: str) -> None:
    assert not _is_loopback(host)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "is not loopback, and analysts' tokens and releases would cross"),
        (["--ssl-certfile", "cert.pem"], "give --ssl-certfile and --ssl-keyfile together"),
        (["--ssl-keyfile", "key.pem"], "give --ssl-certfile and --ssl-keyfile together"),
    ],
)
def test_plain_http_beyond_loopback_is_refused_before_loading(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    missing = tmp_path / "no-such-catalog.toml"  # never read: refused first
    assert main(["serve", "--catalog", str(missing), "--host", "0.0.0.0", *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and "Cannot read the catalog" not in err


def test_insecure_http_lets_the_catalog_be_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-catalog.toml"
    argv = ["serve", "--catalog", str(missing), "--host", "0.0.0.0", "--insecure-http"]
    assert main(argv) == 2  # past the transport check, stopped by the missing catalog
    assert "Cannot read the catalog" in capsys.readouterr().err


def test_no_docs_hides_the_interactive_pages(tmp_path: Path) -> None:
    catalog = Catalog.load(write_catalog(tmp_path))
    plain = TestClient(create_app(catalog))
    hidden = TestClient(create_app(catalog, docs=False))
    assert plain.get("/docs").status_code == 200 and plain.get("/redoc").status_code == 200
    assert hidden.get("/docs").status_code == 404 and hidden.get("/redoc").status_code == 404
    assert hidden.get("/openapi.json").status_code == 200
