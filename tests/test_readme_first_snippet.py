"""The README's first snippet runs as written, and its output comments are true (issue 29)."""

from __future__ import annotations

import ast
import re
from pathlib import Path
from typing import Any

import dpframe as dp

README = Path(__file__).resolve().parent.parent / "README.md"


def first_snippet() -> str:
    """The first ```python block of the README (before "The two commands")."""
    text = README.read_text(encoding="utf-8")
    head = text[: text.index("## The two commands")]
    found = re.search(r"```python\n(.*?)```", head, flags=re.S)
    assert found is not None
    return found.group(1)


def _shown(comment: str) -> re.Pattern[str]:
    """A comment's ``Release(...)``/``Budget(...)`` text as a pattern: ``...`` is any text."""
    start = min(i for i in (comment.find("Release("), comment.find("(Budget(")) if i >= 0)
    parts = [re.escape(p) for p in comment[start:].strip().split("...")]
    return re.compile(".*".join(parts))


def test_first_snippet_runs_on_its_own_and_its_comments_are_true() -> None:
    source = first_snippet()
    lines = source.splitlines()
    namespace: dict[str, Any] = {}
    checked = 0
    for statement in ast.parse(source).body:
        code = compile(ast.Module(body=[statement], type_ignores=[]), str(README), "exec")
        if not isinstance(statement, ast.Expr):
            exec(code, namespace)
            continue
        value = eval(compile(ast.Expression(statement.value), str(README), "eval"), namespace)
        line = lines[(statement.end_lineno or statement.lineno) - 1]
        comment = line.split("#", 1)[1] if "#" in line else ""
        if "Release(" in comment or "(Budget(" in comment:
            assert _shown(comment).fullmatch(repr(value)), (comment, repr(value))
            checked += 1
        if "one row per declared key" in comment:
            assert list(value.index) == ["midwest", "northeast", "south", "west"]  # as pandas
            assert "±" in repr(value)
            checked += 1
    assert checked == 3
    session = namespace["session"]
    assert isinstance(session, dp.Session)
    assert len(session.ledger) == 3  # the snippet's own trial ledger, nothing else
