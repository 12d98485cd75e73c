"""A documented entry point kept in place.

The copy family now lives in :mod:`dpframe.mechanisms.copy_family`.
"""

from dpframe.mechanisms.copy_family import estimate_frequencies

__all__ = ["estimate_frequencies"]
