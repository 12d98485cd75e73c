"""Issue 30's pandas steps on releases answered by a curator in another process."""

from __future__ import annotations

import dpframe as dp
from tests.answer_steps import STEPS, check_steps
from tests.curator.support import ALICE, Server


def test_every_step_keeps_the_intervals_of_remote_releases(server: Server) -> None:
    remote = dp.connect(server.url, token=ALICE).open("cps")
    assert check_steps(remote) == dict.fromkeys(STEPS, "kept")
