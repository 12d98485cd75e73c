"""The IPython extension behind the "Python 3 (dpframe)" kernel.

It loads the dpframe extension (magics, short refusals) and binds ``dp`` to
the :mod:`dpframe` module, so a notebook on this kernel can start with
``%dp_session`` or ``dp.Session(...)`` without an import cell.  A name ``dp``
the user already bound is left alone.
"""

from __future__ import annotations

from typing import Any

__all__ = ["bind_dp", "load_ipython_extension", "unload_ipython_extension"]


def bind_dp(ipython: Any) -> None:
    """Bind ``dp`` to :mod:`dpframe` in the user's namespace, unless ``dp`` is taken."""
    import dpframe

    if "dp" not in ipython.user_ns:
        # interactive=False: kept out of %who, like a name the kernel set up.
        ipython.push({"dp": dpframe}, interactive=False)


def load_ipython_extension(ipython: Any) -> None:
    """Load the dpframe magics and bind ``dp``."""
    import dpframe

    dpframe.load_ipython_extension(ipython)
    bind_dp(ipython)


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the dpframe magics (``dp`` stays bound, as an import would)."""
    import dpframe

    dpframe.unload_ipython_extension(ipython)
