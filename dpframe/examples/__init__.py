"""Bundled data (the 1988 Current Population Survey extract) and the demo."""

from dpframe.examples.datasets import (
    CPS1988_BOUNDS,
    CPS1988_CATEGORIES,
    cps1988_path,
    load_cps1988,
)

__all__ = ["CPS1988_BOUNDS", "CPS1988_CATEGORIES", "cps1988_path", "load_cps1988"]
