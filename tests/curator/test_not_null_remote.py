"""A catalog declares columns not null: the analyst's describe shows one row count."""

from __future__ import annotations

from pathlib import Path

import numpy as np

import dpframe as dp
from dpframe.mechanisms.calibration.noise_sums import half_width
from tests.curator.support import ALICE, start_server, write_catalog


def test_a_catalogs_not_null_columns_share_describes_row_count(tmp_path: Path) -> None:
    catalog = write_catalog(tmp_path)
    text = catalog.read_text()
    declared = 'dtypes = { wage = "numeric not null", education = "integer not null" }\n'
    catalog.write_text(text.replace("\n[datasets.sentinel]", f"{declared}\n[datasets.sentinel]", 1))
    server = start_server(catalog)
    try:
        pf = dp.connect(server.url, token=ALICE).open("cps")
        schema = pf.schema
        assert schema.loc["wage", "not_null"] and schema.loc["education", "not_null"]
        assert not schema.loc["experience", "not_null"]
        table = pf.describe(epsilon=0.9)
    finally:
        server.stop()
    counts = table.loc["count"]
    assert counts["wage"] == counts["education"]
    # experience's count is its own release: another interval (its value equalled the shared
    # one by chance in a CI run, 28,144 ± 14 against 28,144 ± 19, so values are not compared)
    each = dp.ci(table)
    shared, own = (
        (each.loc["count", (c, "low")], each.loc["count", (c, "high")])
        for c in ("wage", "experience")
    )
    assert shared != own
    shared = table.attrs["dpframe"].intervals.row_count
    assert shared is not None and shared.columns == (0, 1)
    ends = dp.ci(table)
    half = half_width(np.array(shared.weights), shared.noises, 0.05)
    assert ends.loc["count", ("wage", "high")] == counts["wage"] + half
    assert table["education"].array.whole.tolist() == [True, False, False, True, True, True]
