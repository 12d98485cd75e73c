"""The analyst's facade: PrivateFrame, PrivateSeries, PrivateGroupBy and their session.

Pandas verbs build plan steps; a release method builds a release node and
hands it to the engine (``session.run(node)``).  Nothing here reads data or
draws noise.
"""
