"""Progress of long releases (regressions, many passes): ``tqdm.auto`` when installed.

``tqdm.auto`` draws a widget in notebooks and a text bar elsewhere; it comes
with the ``notebook`` extra.  Without it a plain fallback draws: an ipywidgets
bar in a notebook kernel, a text line on stderr otherwise.  Progress reports
only public facts (the step count, fixed before any data is read), never a
value computed from the data.  Each report is a stop point where a curator
can stop a release past its wall-clock limit (:mod:`dpframe.mechanisms.runtime.stopping`).
"""

from __future__ import annotations

import sys
from typing import Any

from dpframe.mechanisms.runtime.stopping import check_stop

__all__ = ["ProgressBar"]


def _tqdm() -> Any:
    """``tqdm.auto.tqdm``, or None when tqdm is not installed."""
    try:
        from tqdm.auto import tqdm
    except ImportError:
        return None
    return tqdm


class ProgressBar:
    """Show ``done`` of ``total`` steps of a release.

    Args:
        label: the text in front of the bar.
        enabled: False draws nothing.
        use_tqdm: False forces the plain fallback (tests, or a tqdm that misbehaves).
    """

    def __init__(self, label: str, enabled: bool = True, use_tqdm: bool = True) -> None:
        self._label = label
        self._enabled = enabled
        self._tqdm_class = _tqdm() if enabled and use_tqdm else None
        self._bar: Any = None
        self._widget: Any = None
        self._last = -1
        if enabled and self._tqdm_class is None and _in_notebook():
            import ipywidgets as widgets
            from IPython.display import display

            self._widget = widgets.IntProgress(min=0, max=1, description=label[:20])
            display(self._widget)  # type: ignore[no-untyped-call]

    @property
    def kind(self) -> str:
        """``"tqdm"``, ``"widget"``, ``"text"`` or ``"off"``: what draws the progress."""
        if not self._enabled:
            return "off"
        if self._tqdm_class is not None:
            return "tqdm"
        return "widget" if self._widget is not None else "text"

    def __call__(self, done: int, total: int) -> None:
        """Show ``done`` of ``total`` (the plain fallback redraws at most 20 times).

        Every report is also a stop point (:mod:`dpframe.mechanisms.runtime.stopping`).
        """
        check_stop()
        if not self._enabled:
            return
        if self._tqdm_class is not None:
            if self._bar is None:
                self._bar = self._tqdm_class(total=total, desc=self._label, leave=True)
            self._bar.update(done - self._bar.n)
            if done >= total:
                self._bar.close()
            return
        step = max(total // 20, 1)
        if done != total and done // step == self._last:
            return
        self._last = done // step
        if self._widget is not None:
            self._widget.max = total
            self._widget.value = done
            return
        filled = round(20 * done / max(total, 1))
        end = "\n" if done >= total else ""
        sys.stderr.write(
            f"\r{self._label} [{'#' * filled}{'.' * (20 - filled)}] {done}/{total}{end}"
        )
        sys.stderr.flush()


def _in_notebook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    shell = get_ipython()
    return shell is not None and type(shell).__name__ == "ZMQInteractiveShell"
