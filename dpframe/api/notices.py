"""What a release method says in any kernel, once per answer: keys found privately, ledger answers.

A released Series or DataFrame prints as pandas prints it: its repr has no
room for a caption, so what the notebook's caption says (``%load_ext
dpframe``) would be lost in a plain Python process or a stock kernel.  After
a release method returns (:func:`dpframe.api.fresh.fresh_aware`, and
``session.sql``), :func:`told` says it as warnings, once per answer:

* :class:`~dpframe.errors.DiscoveredKeysWarning` when the result's keys were
  found privately (a group-by column with no declared keys): a key with
  fewer rows than the public threshold is not shown and its rows are in no
  group; discovered counts have no interval.  The text is the release's own
  notes (:mod:`dpframe.mechanisms.thresholds.discovery_family`): public
  numbers only, the threshold (from ε, δ and the privacy unit), never how
  many keys were left out.
* :class:`~dpframe.errors.FromLedgerWarning` when the answer came from the
  ledger (:mod:`dpframe.engine.reruns`): charged nothing now.  Every result
  so answered is marked too (:func:`dpframe.engine.recorded.mark`), also
  when the method reshaped the ledger's answer after it was marked
  (``dp.crosstab``, ``value_counts``).  ``%load_ext dpframe`` filters this
  warning out while it is loaded (a ``warnings`` filter, no state of ours):
  the caption, the release's repr and the budget meter say it there.

Both read the released result and the session's own record of how each
release was answered (:func:`dpframe.engine.observable.answers_collected`),
never the data: post-processing, free.
"""

from __future__ import annotations

import warnings
from typing import TypeVar

from dpframe.api.thin import warn_if_thin
from dpframe.engine.recorded import mark
from dpframe.errors import DiscoveredKeysWarning, FromLedgerWarning, caller_stacklevel
from dpframe.mechanisms.thresholds.discovery_family import discovery_notes

__all__ = ["discovery_message", "ledger_message", "told"]

T = TypeVar("T")


def _parts(result: object) -> list[object]:
    """``result`` and, for a tuple, list or dict of results, each of its items."""
    if isinstance(result, (tuple, list)):
        return [result, *result]
    if isinstance(result, dict):
        return [result, *result.values()]
    return [result]


def discovery_message(result: object) -> str | None:
    """The :class:`DiscoveredKeysWarning` text for ``result``; None when its keys were declared.

    The release's notes about its privately found keys (public: the column's
    name and the threshold), said once even when several parts share them.
    """
    notes: list[str] = []
    for part in _parts(result):
        attrs = getattr(part, "attrs", None)
        meta = attrs.get("dpframe") if isinstance(attrs, dict) else None
        for note in discovery_notes(getattr(meta, "notes", ()) or ()):
            if note not in notes:
                notes.append(note)
    if not notes:
        return None
    text = "; ".join(notes)
    return f"{text[:1].upper()}{text[1:]}. Declared keys (pf.with_categories(...)) are all shown."


def ledger_message(answers: list[str | None]) -> str | None:
    """The :class:`FromLedgerWarning` text of a method's releases (None: none from the ledger).

    ``answers``: per release, its ledger note (answered from the ledger) or
    None (charged), as :func:`dpframe.engine.observable.note_answer` collected them.
    """
    recorded = [note for note in answers if note is not None]
    if not recorded:
        return None
    note = recorded[0]
    if len(recorded) == len(answers):
        return (
            f"{note[:1].upper()}{note[1:]}: the same request on the same data was answered "
            "before, so this is that answer again, charged nothing now (fresh=True asks for "
            "a new, charged release)."
        )
    return (
        f"{len(recorded)} of the {len(answers)} releases behind this answer came {note}, "
        "charged nothing now; the others were charged."
    )


def told(result: T, answers: list[str | None], thin: bool = True) -> T:
    """``result`` marked when it came from the ledger, after its warnings (each at most once).

    Args:
        result: what the release method returns.
        answers: how each of its releases was answered (see :func:`ledger_message`).
        thin: also warn when cells are too thin to read (:func:`dpframe.api.thin.warn_if_thin`).
    """
    if answers and all(note is not None for note in answers):
        result = mark(result, str(answers[0]), keep=True)
    if thin:
        warn_if_thin(result)
    discovered = discovery_message(result)
    if discovered is not None:
        warnings.warn(discovered, DiscoveredKeysWarning, stacklevel=caller_stacklevel())
    from_ledger = ledger_message(answers)
    if from_ledger is not None:
        warnings.warn(from_ledger, FromLedgerWarning, stacklevel=caller_stacklevel())
    return result
