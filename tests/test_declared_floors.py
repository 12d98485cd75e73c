"""The floors that pyproject.toml declares are the versions that CI tests (.ci/floors.txt)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
#: A requirement with a floor: name, optional [extras], ">=" version (up to "," or the quote).
REQUIREMENT = re.compile(r'"([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?>=([0-9][^,";]*)')
CORE = {"pandas", "numpy", "scipy", "ipython", "ipywidgets"}


def _declared() -> dict[str, set[str]]:
    """Each package's floors as declared in pyproject.toml (every extra included)."""
    floors: dict[str, set[str]] = {}
    for name, version in REQUIREMENT.findall((ROOT / "pyproject.toml").read_text()):
        floors.setdefault(name.lower(), set()).add(version.strip())
    return floors


def _pinned() -> dict[str, str]:
    pins: dict[str, str] = {}
    for line in (ROOT / ".ci" / "floors.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, version = line.split("==")
            pins[name.strip().lower()] = version.strip()
    return pins


def test_each_pinned_floor_is_the_declared_one() -> None:
    declared, pinned = _declared(), _pinned()
    assert set(pinned) >= CORE, "every core dependency is tested at its floor"
    for name, version in pinned.items():
        if name == "distributed":  # dask[distributed] asks for the same release as dask
            assert version == pinned["dask"]
            continue
        assert declared.get(name) == {version}, f"{name}: declared {declared.get(name)}"
