"""The release path: validate, privacy map, charge, compute, release, record, notify.

:mod:`~dpframe.engine.session` holds the budget, the ledger, the loaded data
and the listeners; :mod:`~dpframe.engine.release_path` runs one node (or a
batch of nodes, :mod:`~dpframe.engine.batch`) through the mechanism
family that releases it.
"""
