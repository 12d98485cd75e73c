"""Fixtures: a curator process per module (the data never enters the test process)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.curator.support import Server, start_server, write_catalog


@pytest.fixture(scope="module")
def catalog_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_catalog(tmp_path_factory.mktemp("curator"))


@pytest.fixture(scope="module")
def server(catalog_path: Path) -> Iterator[Server]:
    running = start_server(catalog_path)
    yield running
    running.stop()
