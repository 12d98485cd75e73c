"""``python -m dpframe.demo``: the demo on the bundled CPS 1988 data.

A documented entry point kept in place; the demo is :mod:`dpframe.examples.demo`.
"""

from dpframe.examples.demo import main

__all__ = ["main"]

if __name__ == "__main__":
    main()
