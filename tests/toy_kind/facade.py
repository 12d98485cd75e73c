"""Piece 3, the facade: the body of a ``PrivateFrame.nonnull_count`` method.

In the package it would be a method of :class:`~dpframe.api.frame_releases.FrameReleases`
(``self`` for ``frame``); here it is a function on the frame's public ``plan``
and ``session``, so the test needs no change to the package.
"""

from __future__ import annotations

from typing import Any

import dpframe as dp
from dpframe.api.verbs.requests import request_of
from tests.toy_kind.node import NonNullCount


def nonnull_count(frame: dp.PrivateFrame, column: str, *, epsilon: float) -> Any:
    """How many rows hold a value in ``column``, released with noise."""
    node = NonNullCount(
        plan=frame.plan, privacy=request_of(epsilon, None, None, None), column=column
    )
    return frame.session.run(node)
