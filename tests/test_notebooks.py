"""End-to-end: the example notebooks run top to bottom in their own kernels.

Each notebook runs with the kernel named in its metadata ("dpframe" for the
quickstart, which starts with the extension loaded).  The stored copies must
hold no raw data.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from dpframe.examples.datasets import load_cps1988

NOTEBOOKS = sorted((Path(__file__).parent.parent / "notebooks").glob("*.ipynb"))

#: Text each notebook's outputs must contain after a fresh run.
EXPECTED = {
    "exploration.ipynb": ["would reveal private rows", "Requested:", "Remaining:", "95% CI"],
    "budgets.ipynb": ["11th refused", "dpframe budget", "queries"],
    "quickstart.ipynb": ["Privacy budget", "dpframe budget [quickstart]", "Difference:"],
    "synthetic.ipynb": ["pairs kept:", "95% CI", "synthetic copy", "tv_noise"],
    "joins.ipynb": ["an inner join on person_id", "95% CI", "sensitivity 8", "persons"],
    "sql.ipynb": [
        "%dpsql: SELECT * returns private rows",
        "95% CI",
        "HAVING/ORDER BY also release COUNT(*)",
        "Difference:",
    ],
}

#: Cells that end in a refusal on purpose (tagged raises-exception), per notebook.
REFUSALS = {"exploration.ipynb": 1}

#: Rich displays with intervals each notebook must show (value ± half-width tables).
INTERVAL_TABLES = {
    "exploration.ipynb": ["dpframe-grouped", "dpframe-frame", "95% low"],
    "quickstart.ipynb": ["dpframe-grouped", "95% low"],
    "sql.ipynb": ["dpframe-frame", "\\u00b1"],
}

#: PNG images each notebook must draw (the notebooks never force a backend, so in a
#: kernel the inline backend renders them as they render in JupyterLab).
IMAGES = {
    "quickstart.ipynb": 1,
    "exploration.ipynb": 2,
    "regression.ipynb": 2,
    "budgets.ipynb": 1,
    "synthetic.ipynb": 1,
    "sql.ipynb": 1,
    "joins.ipynb": 1,
}


def _images(notebook: nbformat.NotebookNode) -> list[bytes]:
    found = []
    for cell in notebook.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if "image/png" in data:
                found.append(base64.b64decode(data["image/png"]))
    return found


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
def test_notebook_runs(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A backend set for the tests (MPLBACKEND=Agg) would reach the kernels and hide the plots.
    monkeypatch.delenv("MPLBACKEND", raising=False)
    notebook = nbformat.read(path, as_version=4)
    kernel = notebook.metadata.get("kernelspec", {}).get("name", "python3")
    client = NotebookClient(
        notebook, timeout=300, kernel_name=kernel, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    errors = [
        (cell, o)
        for cell in notebook.cells
        if cell.cell_type == "code"
        for o in cell.outputs
        if o.get("output_type") == "error"
    ]
    # Only cells tagged to show a refusal may fail, and a refusal is short: the
    # message and the %tb hint, no frames of dpframe's code.
    for cell, error in errors:
        assert "raises-exception" in cell.metadata.get("tags", []), error
        assert error["ename"].endswith("Error") and len(error["traceback"]) == 2, error
        assert "%tb shows where it was raised" in error["traceback"][1]
    assert len(errors) == REFUSALS.get(path.name, 0)
    text = _output_text(notebook)
    for expected in EXPECTED.get(path.name, ["95% CI"]):
        assert expected in text, (path.name, expected)
    for marker in INTERVAL_TABLES.get(path.name, []):
        assert marker in text, (path.name, marker)
    images = _images(notebook)
    assert len(images) == IMAGES[path.name], (path.name, len(images))
    assert all(png.startswith(b"\x89PNG\r\n\x1a\n") and len(png) > 5_000 for png in images)


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
