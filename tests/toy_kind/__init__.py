"""A toy release kind in three pieces, as docs/architecture.md's walkthrough adds one.

:mod:`.node` (the release node: what ``dpframe/plan/releases/`` would hold),
:mod:`.toy_family` (its family: what ``dpframe/mechanisms/`` would hold) and
:mod:`.facade` (the facade's method body, on a frame's public ``plan`` and
``session``).  Nothing else names it: the engine finds the family by its
``node_type``, sizes the node from its fields and records it in the ledger.

Imported only in a subprocess (``tests/test_toy_release_kind.py``): the family
joins :class:`~dpframe.mechanisms.core.family.Family`'s subclasses for the
whole process it is imported in.
"""
