"""The curator's ledger is its owner's only (issue 16): 0600 files, a 0700 folder.

Before: the ledger, which holds every analyst's releases, was created 0644
and any local user could read it.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from dpframe.accounting.ledger import Ledger
from dpframe.curator.app import create_app
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator
from tests.curator.support import ALICE, RELEASES, release_body, write_catalog

pytestmark = pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_ledger_and_its_wal_are_created_0600_in_a_0700_folder(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path, server="").read_text()
    (tmp_path / "catalog.toml").write_text(
        catalog.replace('ledger = "ledger.sqlite"', 'ledger = "state/ledger.sqlite"')
    )
    old = os.umask(0o022)  # a usual umask: files 0644 unless created otherwise
    try:
        curator = Curator(Catalog.load(tmp_path / "catalog.toml"))
        client = TestClient(create_app(curator))
        body = release_body(RELEASES["mean"])
        answer = client.post(
            "/v1/datasets/cps/query", json=body, headers={"Authorization": f"Bearer {ALICE}"}
        )
        assert answer.status_code == 200
    finally:
        os.umask(old)
    folder = tmp_path / "state"
    assert _mode(folder) == 0o700
    files = sorted(p.name for p in folder.iterdir())
    assert "ledger.sqlite" in files and "ledger.sqlite-wal" in files
    assert {name: _mode(folder / name) for name in files} == dict.fromkeys(files, 0o600)


def test_an_existing_ledger_readable_by_others_is_made_0600(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    write_catalog(tmp_path)
    ledger = tmp_path / "ledger.sqlite"
    Ledger(ledger).close()  # a real ledger: the curator now reads its grants when it starts
    os.chmod(ledger, 0o644)
    Curator(Catalog.load(tmp_path / "catalog.toml"))
    assert _mode(ledger) == 0o600
    assert "was readable by others; it is now 0600" in caplog.text
