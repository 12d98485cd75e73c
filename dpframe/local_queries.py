"""A documented entry point kept in place.

The copy family now lives in :mod:`dpframe.mechanisms.copies.copy_family`.
"""

from dpframe.mechanisms.copies.copy_family import estimate_frequencies

__all__ = ["estimate_frequencies"]
