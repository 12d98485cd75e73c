"""End-to-end: the example notebooks run top to bottom in their own kernels.

Each notebook runs with the kernel named in its metadata ("dpframe" for the
quickstart, which starts with the extension loaded).  The stored copies must
hold no raw data.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from dpframe.examples.datasets import load_cps1988

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))

#: Text each notebook's outputs must contain after a fresh run.
EXPECTED = {
    "exploration.ipynb": ["PrivacyViolationError", "Requested:", "Remaining:", "95% CI"],
    "budgets.ipynb": ["11th refused", "dpframe budget", "queries"],
    "quickstart.ipynb": ["Privacy budget", "dpframe budget [quickstart]", "Difference:"],
}


def _output_text(notebook: nbformat.NotebookNode) -> str:
    parts = []
    for cell in notebook.cells:
        if cell.cell_type != "code":
            continue
        for output in cell.outputs:
            parts.append(str(output.get("text", "")))
            parts.append(json.dumps(output.get("data", {})))
    return "".join(parts)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_runs(path: Path, tmp_path: Path) -> None:
    notebook = nbformat.read(path, as_version=4)
    kernel = notebook.metadata.get("kernelspec", {}).get("name", "python3")
    client = NotebookClient(
        notebook, timeout=300, kernel_name=kernel, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    errors = [
        o
        for cell in notebook.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.get("output_type") == "error"
    ]
    assert not errors
    text = _output_text(notebook)
    for expected in EXPECTED.get(path.name, ["95% CI"]):
        assert expected in text, (path.name, expected)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_stored_outputs_hold_no_raw_rows(path: Path) -> None:
    """No raw row of the bundled data appears in the committed notebook."""
    stored = _output_text(nbformat.read(path, as_version=4))
    data = load_cps1988()
    for _, row in data.head(50).iterrows():
        raw_line = f"{row['wage']:.2f},{row['education']},{row['experience']}"
        assert raw_line not in stored
    assert "18777.2" not in stored  # the largest wage in the data


def test_there_are_notebooks() -> None:
    assert {p.name for p in NOTEBOOKS} >= set(EXPECTED)
