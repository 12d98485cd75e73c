"""Released answers in a stock kernel: ``value ± half-width`` in JupyterLab without the extension.

Issue 30's display item, seen in a real browser: a notebook on the plain
``python3`` kernel (no ``%load_ext dpframe``, no dpframe kernel spec) shows a
grouped median after ``sort_values``, a ``print`` of a grouped mean after
``nlargest`` and a ``describe`` table, each number with its interval.
"""

from __future__ import annotations

import contextlib
import json
import re
from pathlib import Path

from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from tests.browser.lab_server import LabServer
from tests.browser.test_jupyterlab import (
    KERNEL_TIMEOUT,
    PAGE_TIMEOUT,
    RUN_FINISHED_JS,
    RUN_TIMEOUT,
    SETTLE_TIMEOUT,
    close_dialogs,
    run_all_cells,
)

CELLS = [
    "import dpframe as dp\n"
    "from dpframe.examples.datasets import load_cps1988\n"
    "session = dp.Session(epsilon=5, ledger=':memory:')\n"
    "pf = session.private_frame(load_cps1988(), bounds={'wage': (0, 5000)},\n"
    "    categories={'region': ['northeast', 'midwest', 'south', 'west']})",
    "pf.groupby('region')['wage'].median(epsilon=1).sort_values()",
    "print(pf.groupby('region')['wage'].mean(epsilon=1).nlargest(2))",
    "pf[['wage']].describe(epsilon=1)",
    "print(sorted(get_ipython().extension_manager.loaded))",
]

PLUS_MINUS = re.compile(r"[0-9.,]+ ± [0-9.,]+")

#: True once every one of the ``n`` code cells shows a run's number ("[k]:").
ALL_RAN_JS = """
(n) => {
  const prompts = [...document.querySelectorAll('.jp-NotebookPanel .jp-CodeCell .jp-InputPrompt')]
    .map(e => e.textContent.trim());
  return prompts.length === n && prompts.every(p => /^\\[\\d+\\]:$/.test(p));
}
"""


def _notebook() -> dict[str, object]:
    return {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": [s],
                "outputs": [],
                "execution_count": None,
            }
            for s in CELLS
        ],
        "metadata": {
            "kernelspec": {
                "name": "python3",
                "display_name": "Python 3 (ipykernel)",
                "language": "python",
            }
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_answers_show_their_intervals_in_a_stock_kernel(
    lab: LabServer, page: Page, screenshot_dir: Path
) -> None:
    path = lab.root_dir / "stock-kernel.ipynb"
    path.write_text(json.dumps(_notebook()), encoding="utf-8")
    screenshot = screenshot_dir / "answers-stock-kernel-lab.png"
    try:
        page.goto(lab.url("lab/tree/stock-kernel.ipynb"), timeout=PAGE_TIMEOUT)
        panel = page.locator(".jp-NotebookPanel")
        expect(panel.locator(".jp-CodeCell")).to_have_count(len(CELLS), timeout=PAGE_TIMEOUT)
        close_dialogs(page, "Python 3 (ipykernel)")
        expect(panel.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute(
            "data-status", "idle", timeout=KERNEL_TIMEOUT
        )
        run_all_cells(page, "Python 3 (ipykernel)")
        page.wait_for_function(RUN_FINISHED_JS, timeout=RUN_TIMEOUT)
        # Every cell ran, and each answer's output is drawn.  The run's end is read
        # from the prompts and the kernel's status; a clean-clone CI run once read
        # the median cell's output area while it was still empty (''), so the
        # outputs are awaited (with Playwright's retries), then read.
        page.wait_for_function(ALL_RAN_JS, arg=len(CELLS), timeout=RUN_TIMEOUT)
        cells = panel.locator(".jp-CodeCell")
        for index in (1, 2, 3):
            expect(cells.nth(index).locator(".jp-OutputArea")).to_contain_text(
                PLUS_MINUS, timeout=SETTLE_TIMEOUT
            )
        expect(cells.nth(4).locator(".jp-OutputArea")).to_contain_text("[", timeout=SETTLE_TIMEOUT)
        outputs = [
            " ".join(cells.nth(i).locator(".jp-OutputArea").inner_text().split())
            for i in range(len(CELLS))
        ]
        assert not any("Traceback" in text or "Error" in text for text in outputs), outputs
        median, printed, described, loaded = outputs[1:]
        # The grouped median, sorted: every region with its interval (an HTML table).
        assert len(PLUS_MINUS.findall(median)) == 4, median
        assert all(region in median for region in ("northeast", "midwest", "south", "west"))
        # print() of the two largest grouped means: plain text, intervals kept.
        assert len(PLUS_MINUS.findall(printed)) == 2, printed
        # describe: count, mean, std and the three quartiles, each with its interval.
        assert len(PLUS_MINUS.findall(described)) == 6, described
        assert "dpframe" not in loaded, loaded  # the extension was never loaded
        page.screenshot(path=screenshot, full_page=True)
    finally:
        if not screenshot.exists():
            with contextlib.suppress(PlaywrightError):
                page.screenshot(path=screenshot, full_page=True)
