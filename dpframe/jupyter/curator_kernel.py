"""The IPython extension behind the "Python 3 (dpframe) — curator client" kernel.

At start it connects to the curator named by ``DPFRAME_CURATOR_URL`` with
the token in ``DPFRAME_TOKEN`` (or in the file named by
``DPFRAME_TOKEN_FILE``), binds ``dp_conn`` and opens every granted dataset
under its own name, each with a live budget meter; ``dp`` is bound to
:mod:`dpframe` as on the local kernel.  The kernel spec sets
``DPFRAME_CLIENT_ONLY=1``, so :class:`dpframe.Session` refuses to start: no
private data can be loaded into this kernel through dpframe.  (Python can
still read any file the kernel's OS user can read: keep the data where that
user cannot, e.g. on the curator's host — see docs/curator.md.)
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

__all__ = ["load_ipython_extension", "unload_ipython_extension"]


def _token() -> str | None:
    token = os.environ.get("DPFRAME_TOKEN")
    path = os.environ.get("DPFRAME_TOKEN_FILE")
    if not token and path:
        try:
            token = Path(path).read_text(encoding="utf-8").strip()
        except OSError:
            print(f"dpframe curator kernel: cannot read DPFRAME_TOKEN_FILE {path!r}.")
            return None
        os.environ["DPFRAME_TOKEN"] = token
    return token or None


def load_ipython_extension(ipython: Any) -> None:
    """Load the dpframe magics, then connect to the configured curator."""
    import dpframe
    from dpframe.jupyter.kernel import bind_dp

    os.environ["DPFRAME_CLIENT_ONLY"] = "1"
    dpframe.load_ipython_extension(ipython)
    bind_dp(ipython)
    url = os.environ.get("DPFRAME_CURATOR_URL")
    if not url or _token() is None:
        print(
            "dpframe curator kernel: set DPFRAME_CURATOR_URL and DPFRAME_TOKEN (or "
            "DPFRAME_TOKEN_FILE) in the kernel's environment, then run "
            "%dp_connect $DPFRAME_CURATOR_URL --open DATASET."
        )
        return
    try:
        datasets = dpframe.connect(url).datasets()
    except dpframe.DPError as error:
        print(f"dpframe curator kernel: {error}")
        return
    opened = " ".join(d for d in datasets if d.isidentifier())
    ipython.run_line_magic("dp_connect", f"{url} --open {opened}".strip())


def unload_ipython_extension(ipython: Any) -> None:
    """Remove the dpframe magics."""
    import dpframe

    dpframe.unload_ipython_extension(ipython)
