"""Test helpers for the embedded session behind a private frame."""

from __future__ import annotations

from typing import Any

import dpframe as dp


def local(pf: dp.PrivateFrame) -> dp.Session:
    """The embedded session of ``pf`` (a curator frame's session is remote)."""
    session = pf.session
    assert isinstance(session, dp.Session)
    return session


def backends(session: dp.Session) -> dict[tuple[str, str], Any]:
    """The session's backend of each loaded source (unchanged: read through the seam)."""
    found: dict[tuple[str, str], Any] = {}

    def keep(key: tuple[str, str], backend: Any) -> Any:
        found[key] = backend
        return backend

    session.replace_backends(keep)
    return found
