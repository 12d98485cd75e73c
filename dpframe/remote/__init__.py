"""Curator mode, the analyst's side: plans and releases as JSON, and the HTTP client.

``dp.connect(url, token=...)`` (in :mod:`dpframe.remote.client`) opens frames
whose releases are computed by a curator process that holds the data.
"""
