"""The budget meter in JupyterLab's side panel (``%dp_budget --side``): sized to its content.

Before issue 33 the panel clipped the meter's bar (a fixed-width progress bar in
a narrower panel), so 80% used looked full.  Here a notebook spends 80% of a
session, pins a meter to the side panel and one inline; the test reads the
page: the bar's fill is 80% of its track, the whole track is inside the panel,
the figures read "80% of the budget used · next release up to ε=0.2" with the
guarantee on the line below, and nothing says "resumed" (nothing was spent
before the session opened).  Screenshots: ``budget-side-panel.png`` (the page)
and ``budget-side-panel-meter.png`` (the panel alone).
"""

from __future__ import annotations

import contextlib
import json
import math
from pathlib import Path

import pytest
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import Page, expect

from tests.browser.lab_server import LabServer
from tests.browser.test_jupyterlab import (
    KERNEL_TIMEOUT,
    PAGE_TIMEOUT,
    RUN_FINISHED_JS,
    RUN_TIMEOUT,
    SETTLE_TIMEOUT,
    run_all_cells,
)

pytestmark = pytest.mark.browser

CELLS = [
    "%dp_session --epsilon 1 --name panel --ledger :memory:",
    "from dpframe.examples.datasets import cps1988_path\n"
    "cps_path = cps1988_path()\n"
    "%dp_load pf $cps_path --bounds wage=0:5000 --categories region=northeast,midwest,south,west",
    "for _ in range(4):\n    pf.count(epsilon=0.2, fresh=True)  # four charged releases",
    "%dp_budget --side",
    "%dp_budget",
]


def _notebook() -> dict[str, object]:
    return {
        "cells": [
            {
                "cell_type": "code",
                "metadata": {},
                "source": [source],
                "outputs": [],
                "execution_count": None,
            }
            for source in CELLS
        ],
        "metadata": {
            "kernelspec": {
                "display_name": "Python 3 (dpframe)",
                "language": "python",
                "name": "dpframe",
            }
        },
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def test_the_side_panel_meter_shows_the_whole_bar(
    lab: LabServer, page: Page, screenshot_dir: Path
) -> None:
    (lab.root_dir / "panel.ipynb").write_text(json.dumps(_notebook()), encoding="utf-8")
    screenshot = screenshot_dir / "budget-side-panel.png"
    try:
        page.goto(lab.url("lab/tree/panel.ipynb"), timeout=PAGE_TIMEOUT)
        panel = page.locator(".jp-NotebookPanel")
        expect(panel.locator(".jp-CodeCell")).to_have_count(len(CELLS), timeout=PAGE_TIMEOUT)
        expect(panel.locator(".jp-Notebook-ExecutionIndicator")).to_have_attribute(
            "data-status", "idle", timeout=KERNEL_TIMEOUT
        )
        run_all_cells(page)
        page.wait_for_function(RUN_FINISHED_JS, timeout=RUN_TIMEOUT)

        side = page.locator(".jp-SideBar.jp-mod-right, #jp-right-stack").filter(
            has_text="Privacy budget"
        )
        expect(side.first).to_be_visible(timeout=SETTLE_TIMEOUT)
        meter = side.first.locator(".jupyter-widgets.widget-vbox").filter(has_text="Privacy budget")
        expect(meter.first).to_contain_text(
            "80% of the budget used · next release up to ε=0.2", timeout=SETTLE_TIMEOUT
        )
        expect(meter.first).to_contain_text("Guarantee so far: (ε=0.8)-DP")
        expect(meter.first).not_to_contain_text("resumed")

        container = side.first.bounding_box()
        track = meter.first.locator(".widget-hprogress .progress").first
        fill = meter.first.locator(".widget-hprogress .progress-bar").first
        track_box, fill_box = track.bounding_box(), fill.bounding_box()
        assert container and track_box and fill_box
        # the whole track is inside the panel: nothing clipped on the right
        assert track_box["x"] >= container["x"] - 1
        assert track_box["x"] + track_box["width"] <= container["x"] + container["width"] + 1, (
            track_box,
            container,
        )
        assert track_box["width"] >= 100, track_box
        # 80% used is drawn as 80% of the track (not a full bar)
        assert math.isclose(fill_box["width"] / track_box["width"], 0.8, abs_tol=0.02), (
            fill_box,
            track_box,
        )
        side.first.screenshot(path=screenshot_dir / "budget-side-panel-meter.png")

        inline = panel.locator(".jp-OutputArea-output .jupyter-widgets.widget-vbox").filter(
            has_text="Privacy budget"
        )
        expect(inline).to_have_count(2, timeout=SETTLE_TIMEOUT)  # the session's and the last
        expect(inline.last).to_contain_text("80% of the budget used")
        expect(inline.last).not_to_contain_text("resumed")
        page.screenshot(path=screenshot, full_page=True)
    finally:
        if not screenshot.exists():
            with contextlib.suppress(PlaywrightError):
                page.screenshot(path=screenshot, full_page=True)
