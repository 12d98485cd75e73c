"""The facade's verbs: functions of handles (:mod:`dpframe.api.handle`).

Each module holds one family of pandas verbs.  A free verb (selecting,
filtering, deriving columns) maps a handle to a new handle; a release verb
builds a release node from a handle (validated against the public schema,
nothing read, nothing charged) and, where pandas' shape needs it,
post-processes the released result.  No verb imports the facade's classes:
:class:`~dpframe.PrivateFrame`, :class:`~dpframe.PrivateSeries` and
:class:`~dpframe.PrivateGroupBy` call the verbs, never the reverse.
"""
