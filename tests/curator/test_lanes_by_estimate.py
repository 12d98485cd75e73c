"""Every request is routed by its public estimate: heavy lane from ``heavy_seconds`` (issue 27).

Before: the ten regex replaces over 200,000 distinct ids were estimated at
0.19 s and went to the light lane, where two such requests held both light
workers for 132 s.  The lane is chosen from the worst-case estimate alone
(public inputs and the declared row ceiling), so with text priced by what it
does the same request is heavy (or refused); this checks, for one request
of every kind and text variations, that the lane is the estimate's, and
that the attack's request is no longer light.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import dpframe as dp
from dpframe.curator.catalog import Catalog
from dpframe.curator.service import Curator, ServiceError
from dpframe.curator.worst_case import CostModel, check_worst_case, worst_case_seconds
from dpframe.errors import ResourceLimitError
from dpframe.plan.codec import decode_node
from tests.curator.support import (
    ALICE,
    RELEASES,
    SENTINEL_MAX_ROWS,
    node_on,
    release_body,
    write_catalog,
)

TEXT: dict[str, Any] = {
    "upper then contains": lambda pf: pf[pf["note"].str.upper().str.contains("ORD")].count(
        epsilon=0.1
    ),
    "regex contains": lambda pf: pf[pf["note"].str.contains(r"o\w+", regex=True)].count(
        epsilon=0.1
    ),
    "case-insensitive replace": lambda pf: pf[
        pf["note"].str.replace("o", "0", case=False).str.startswith("0")
    ].count(epsilon=0.1),
    "isin of many notes": lambda pf: pf[pf["note"].isin([f"n{i}" for i in range(5_000)])].count(
        epsilon=0.1
    ),
}


def _attack(pf: dp.PrivateFrame) -> object:
    """The issue's ten replaces (case-insensitive here: the note has no declared length)."""
    note = pf["note"]
    for _ in range(10):
        note = note.str.replace("-", "_", case=False)
    return pf[note.str.contains("x")].count(epsilon=0.1)


def _regex_attack(pf: dp.PrivateFrame) -> object:
    """The issue's: ten regex replaces over distinct ids, then a filter and a count."""
    ids = pf["id"]
    for _ in range(10):
        ids = ids.str.replace(r"(\d)-", r"\1_", regex=True)
    return pf[ids.str.contains("x")].count(epsilon=0.1)


@pytest.mark.parametrize("heavy_seconds", [0.1, 1.0])
def test_every_request_goes_to_the_lane_of_its_estimate(
    tmp_path: Path, heavy_seconds: float, monkeypatch: pytest.MonkeyPatch
) -> None:
    server = f"heavy_seconds = {heavy_seconds}"  # sentinel declares SENTINEL_MAX_ROWS
    curator = Curator(Catalog.load(write_catalog(tmp_path, server=server)))
    routed: list[tuple[Any, bool]] = []

    def release(
        seat: Any, node: Any, heavy: bool = False, fresh: bool = False, rows: Any = None
    ) -> dict[str, Any]:
        routed.append((node, heavy))  # where it would compute; nothing is computed here
        return {}

    monkeypatch.setattr(curator, "_release", release)
    analyst = curator.authenticate(f"Bearer {ALICE}")
    settings = curator.catalog.settings
    seat = curator._seats.get(analyst, "sentinel")
    cases = {**{k: v for k, v in RELEASES.items() if k != "synthesize"}, **TEXT, "attack": _attack}
    lanes = {}
    for name, build in cases.items():
        body = release_body(build)
        node = decode_node(body, seat.source)
        estimate = worst_case_seconds(
            node,
            SENTINEL_MAX_ROWS,
            settings.cost,
            settings.limits,
            seat.text_lengths,
            settings.text_chars,
        )
        if estimate > settings.release_estimate_seconds:  # refused before the charge
            with pytest.raises(ServiceError, match="could take up to"):
                curator.answer(analyst, "sentinel", body)
            lanes[name] = "refused"
            continue
        curator.answer(analyst, "sentinel", body)
        assert estimate <= settings.release_estimate_seconds, name
        _, heavy = routed[-1]
        assert heavy == (estimate >= heavy_seconds), (name, estimate)
        lanes[name] = "heavy" if heavy else "light"
    assert "light" in lanes.values() and "heavy" in lanes.values()
    assert lanes["attack"] != "light"  # was light: estimated 0.19 s, ran 111 s
    assert lanes["upper then contains"] == "heavy"  # was light: 200,000 x 4 x 5e-8 s = 0.09 s


def test_the_regex_attack_is_refused_before_the_charge_at_200_000_rows() -> None:
    stand_in = pd.DataFrame({"id": [f"id-{i:08d}-x" for i in range(3)], "wage": [1.0] * 3})
    node = node_on(stand_in, _regex_attack, bounds={"wage": (0, 1)}, dtypes={"id": "text(40)"})
    before = CostModel(
        hash_row_seconds=0.0,
        list_item_seconds=0.0,
        text_value_seconds=0.0,
        regex_value_seconds=0.0,
        text_char_seconds=0.0,
        text_match_seconds=0.0,
    )  # text priced as a vectorized pass, as before issue 27
    assert worst_case_seconds(node, 200_000, before) == pytest.approx(0.19, abs=0.005)
    with pytest.raises(
        ResourceLimitError, match=r"up to [\d,.]+ s on .* 200,000 rows.*text methods"
    ):
        check_worst_case(node, 200_000, CostModel(), 30.0, lengths={"id": 40})
