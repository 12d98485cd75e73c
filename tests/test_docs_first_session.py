"""The guide's "Your first session" page (docs/first-session.md, once the README's section).

Its code blocks run as written, in order, in one namespace, and spend the plan they describe.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import dpframe as dp

PAGE = Path(__file__).resolve().parent.parent / "docs" / "first-session.md"


def first_session_blocks() -> list[str]:
    """The ```python blocks of the page, in order."""
    text = PAGE.read_text(encoding="utf-8")
    return re.findall(r"```python\n(.*?)```", text, flags=re.S)


def test_section_covers_the_five_points() -> None:
    """All five first-session points are there, each with code (five blocks)."""
    assert len(first_session_blocks()) == 5
    section = PAGE.read_text(encoding="utf-8")
    for phrase in (
        "What is protected",
        "What is public",
        "Plan the whole budget",
        "Check accuracy before spending",
        "Which count is which",
    ):
        assert phrase in section


def test_first_session_code_runs_and_spends_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    """The blocks run; explain spends nothing; the counts spend 0.8 (the last is a re-run, free)."""
    namespace: dict[str, Any] = {}
    blocks = first_session_blocks()
    for block in blocks[:4]:
        exec(compile(block, str(PAGE), "exec"), namespace)
    session: dp.Session = namespace["session"]
    assert float(session.spent.epsilon) == 0.0  # explain charged nothing
    assert "within" in capsys.readouterr().out
    exec(compile(blocks[4], str(PAGE), "exec"), namespace)
    assert float(session.spent.epsilon) == pytest.approx(0.8)  # as the page's comment says
    assert float(session.remaining.epsilon) == pytest.approx(0.2)
    assert len(session.ledger) == 4  # the repeated histogram adds no row
    with pytest.raises(dp.BudgetExceededError, match="Requested"):
        namespace["pf"].count(epsilon=0.3)
    people: dp.Session = namespace["people"]
    assert float(people.spent.epsilon) == 0.0
