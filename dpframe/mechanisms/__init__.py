"""Mechanisms: the noise math of each release kind, and the family that releases it.

Each ``*_family`` module turns a node's noise allocation into a noise plan
before the charge (its privacy map), releases from the backend's exact values
once the charge stands, and explains the release without reading data.

Subpackages, one concern each: ``core`` (the family protocol, allocation,
explanations), ``calibration`` (noise laws), ``runtime`` (progress, stop points),
``answers`` (released values and how they read), ``tables`` (free consistency of
released tables), and one per kind of release: ``moments``, ``quantiles``,
``selection``, ``thresholds``, ``copies``, ``models``, ``synth``.
"""
