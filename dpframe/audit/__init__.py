"""A built-in privacy auditor: test a release's (ε, δ) claim on neighbouring datasets.

>>> import dpframe as dp
>>> pairs = dp.audit.neighbours(df, bounds={"wage": (0, 5000)})  # doctest: +SKIP
>>> results = dp.audit.audit_query(
...     lambda pf: pf["wage"].mean(epsilon=1), pairs, epsilon=1, bounds={"wage": (0, 5000)}
... )  # doctest: +SKIP
>>> all(r.passed for r in results.values())  # doctest: +SKIP
True

An audit can show a violation (a majority of votes finds an event whose
probability differs by more than e^ε and δ allow) but never prove privacy: a
pass means only that no violation showed at the sample size used.  See
``docs/audit.md`` for the statistics and the measured false-alarm and miss
rates.
"""

from dpframe.audit.hockey_stick import (
    Binning,
    Direction,
    Vote,
    clopper_pearson,
    features,
    hockey_stick_vote,
    majority_false_alarm,
    vote_level,
)
from dpframe.audit.neighbours import NeighbourPair, neighbours
from dpframe.audit.runner import AuditResult, SessionSampler, audit, audit_pairs, audit_query

__all__ = [
    "AuditResult",
    "Binning",
    "Direction",
    "NeighbourPair",
    "SessionSampler",
    "Vote",
    "audit",
    "audit_pairs",
    "audit_query",
    "clopper_pearson",
    "features",
    "hockey_stick_vote",
    "majority_false_alarm",
    "neighbours",
    "vote_level",
]
