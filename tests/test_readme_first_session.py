"""The README's "Your first session" code blocks run as written, in order, in one namespace."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

import dpframe as dp

README = Path(__file__).resolve().parent.parent / "README.md"


def first_session_blocks() -> list[str]:
    """The ```python blocks of the section, in order."""
    text = README.read_text(encoding="utf-8")
    start = text.index("## Your first session")
    end = text.index("\n## ", start + 1)
    return re.findall(r"```python\n(.*?)```", text[start:end], flags=re.S)


def test_section_covers_the_five_points() -> None:
    """All five first-session points are there, each with code (five blocks)."""
    assert len(first_session_blocks()) == 5
    text = README.read_text(encoding="utf-8")
    section = text[text.index("## Your first session") : text.index("## In Jupyter")]
    for phrase in (
        "What is protected",
        "What is public",
        "Plan the whole budget",
        "Check accuracy before spending",
        "Which count is which",
    ):
        assert phrase in section


def test_first_session_code_runs_and_spends_the_plan(capsys: pytest.CaptureFixture[str]) -> None:
    """The blocks run; explain spends nothing; the five counts spend exactly the session's ε."""
    namespace: dict[str, Any] = {}
    blocks = first_session_blocks()
    for block in blocks[:4]:
        exec(compile(block, str(README), "exec"), namespace)
    session: dp.Session = namespace["session"]
    assert float(session.spent.epsilon) == 0.0  # explain charged nothing
    assert "within" in capsys.readouterr().out
    exec(compile(blocks[4], str(README), "exec"), namespace)
    assert float(session.spent.epsilon) == pytest.approx(1.0)
    assert float(session.remaining.epsilon) == 0.0
    assert len(session.ledger) == 5
    with pytest.raises(dp.BudgetExceededError, match="Requested"):
        namespace["pf"].count(epsilon=0.01)
    people: dp.Session = namespace["people"]
    assert float(people.spent.epsilon) == 0.0
