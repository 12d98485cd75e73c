"""Release labels in the user's own terms (display only: the ledger keeps the full label).

The engine names temporary columns (``_a``, ``_b``) and adds the "rows where
both are present" clause a pair of columns implies; people asked for
``corr(wage, education)``.  Used by the meter, ``%dp_ledger`` and ``explain``.
"""

from __future__ import annotations

import re

__all__ = ["user_label"]

_BINDING = re.compile(r" with (_\w+) = (.+?)(?= with _\w+ = | where |$)")
_NOT_NULL = re.compile(
    r" where \((?:not\(isnull\([^()]*\)\)(?: & )?)+\)| where not\(isnull\([^()]*\)\)"
)


def user_label(label: str) -> str:
    """A release's ledger label in the user's terms: the engine's names put back.

    ``corr(_a, _b) with _a = wage with _b = education where (not(isnull(_a)) &
    not(isnull(_b)))`` reads ``corr(wage, education)``: the temporary names are
    replaced by the columns they stand for, and the "rows where both are
    present" clause that pairs imply is dropped.  Display only; the ledger keeps
    the full label.
    """
    bindings = dict(_BINDING.findall(label))
    text = _BINDING.sub("", label)
    text = _NOT_NULL.sub("", text)
    for name, expression in bindings.items():
        text = re.sub(rf"\b{re.escape(name)}\b", expression, text)
    found = re.fullmatch(r"(\w+)\(\((.*)\)\)(.*)", text)
    if found and _balanced(found[2]):
        text = f"{found[1]}({found[2]}){found[3]}"
    return text


def _balanced(text: str) -> bool:
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0
