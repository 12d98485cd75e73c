"""The layers of docs/architecture.md hold: imports point down, no cycle spans two packages."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def _contract_text() -> str:
    """The import-linter section of pyproject.toml (read as text: tomllib is 3.11+)."""
    text = (ROOT / "pyproject.toml").read_text()
    start = text.index("[tool.importlinter]")
    end = text.find("\n[tool.", start + 1)
    return text[start:] if end == -1 else text[start:end]


def _layer_names() -> set[str]:
    block = re.search(r"^layers = \[(.*?)^\]", _contract_text(), re.S | re.M)
    assert block is not None, "no layers contract in pyproject.toml"
    names: set[str] = set()
    for layer in re.findall(r'"([^"]+)"', block.group(1)):
        for part in layer.replace(":", "|").split("|"):
            names.add(part.strip())
    return names


def test_every_package_of_dpframe_has_a_layer() -> None:
    packages = {p.parent.name for p in (ROOT / "dpframe").glob("*/__init__.py")}
    assert packages, "no packages found"
    missing = packages - _layer_names()
    assert not missing, f"packages outside the layer contract: {sorted(missing)}"


def test_the_cycle_contract_covers_the_top_level() -> None:
    text = _contract_text()
    assert 'type = "acyclic_siblings"\nancestors = ["dpframe"]\ndepth = 0' in text


def test_lint_imports_keeps_every_contract() -> None:
    command = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if command is None:
        pytest.fail("lint-imports is not installed (pip install -e '.[test]')")
    done = subprocess.run(
        [command, "--no-cache"], cwd=ROOT, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    contracts = _contract_text().count("[[tool.importlinter.contracts]]")
    assert contracts == 3  # layers, the facade's inner layers (session > sql > verbs), no cycle
    assert f"{contracts} kept, 0 broken" in done.stdout
