"""The live budget meter: an ipywidgets view of a session's spend.

The meter listens to the session's release events (one-way: it has no way to
change the budget) and redraws after every release, from any cell, loop or
other meter of the same session.  Outside a notebook it shows a text line.

Figures that add up (:mod:`dpframe.accounting.status`): the bar and the first
line show the **share of the budget used**, a percentage counted in the
accountant's own unit (ε for pure DP, ρ for zCDP, μ² for Gaussian DP), in
which releases add up, and the **largest next release** (``epsilon=`` a query
may still ask).  The second line states the formal **guarantee so far**, the
(ε, δ) of everything released, in words: under zCDP and Gaussian DP it is not
the sum of the releases' ``epsilon=`` (the conversion is not additive), which
is why it is not on the bar.
"""

from __future__ import annotations

import html
import math
from collections import deque
from typing import TYPE_CHECKING, Any

from dpframe.accounting.status import BudgetStatus, share_text
from dpframe.errors import DPError
from dpframe.plan.labels import user_label
from dpframe.plan.privacy import Budget

if TYPE_CHECKING:
    import pandas as pd

    from dpframe.api.session import Session
    from dpframe.engine.session import ReleaseEvent
    from dpframe.remote.client import RemoteSession

__all__ = ["AMBER_AT", "COLOURS", "MAX_WIDTH", "BudgetMeter", "ledger_view", "user_label"]

#: Bar colours: green below 75% spent, amber from 75%, red at 100%.
COLOURS = {"green": "#2e7d32", "amber": "#f9a825", "red": "#c62828"}
AMBER_AT = 0.75
#: The meter's width: the whole output area or side panel, up to this (the bar is never clipped).
MAX_WIDTH = "44em"


def colour_for(fraction: float) -> str:
    """``green``, ``amber`` (≥ 75%) or ``red`` (≥ 100%)."""
    if fraction >= 1.0:
        return "red"
    if fraction >= AMBER_AT:
        return "amber"
    return "green"


def _short(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class BudgetMeter:
    """A live view of a session's budget: share used, largest next release, guarantee so far.

    Args:
        session: the session to watch.
        history: how many recent releases to list.

    Attributes:
        widget: the ipywidgets ``VBox`` shown in notebooks (as wide as the output
            area or side panel, up to :data:`MAX_WIDTH`).
    """

    def __init__(self, session: Session | RemoteSession, history: int = 5) -> None:
        import ipywidgets as widgets

        self._session = session
        self._recent: deque[tuple[str, str]] = deque(maxlen=max(int(history), 1))
        ledger = session.ledger
        for query, eps in zip(
            ledger["query"].tail(history), ledger["epsilon"].tail(history), strict=True
        ):
            self._recent.append((_short(user_label(str(query))), f"ε={eps:.2g}"))
        # "auto", not "100%": a bar stretches to the box less its own margins (at
        # 100% its 2 px margin pushed the track's end past a side panel's edge)
        full = widgets.Layout(width="auto")
        self._title = widgets.HTML(layout=full)
        self._epsilon_bar = widgets.FloatProgress(
            min=0.0,
            max=1.0,
            description="used",
            layout=widgets.Layout(width="auto"),
            style={"description_width": "3em"},
        )
        self._delta_bar = widgets.FloatProgress(
            min=0.0,
            max=1.0,
            description="δ used",
            layout=widgets.Layout(width="auto"),
            style={"description_width": "3em"},
        )
        self._numbers = widgets.HTML(layout=widgets.Layout(width="100%"))
        self._history = widgets.HTML(layout=widgets.Layout(width="100%"))
        rows: list[Any] = [self._title, self._epsilon_bar]
        if session.accounting == "approx" and session.total.delta > 0:
            rows.append(self._delta_bar)  # δ adds up under approximate DP only
        rows += [self._numbers, self._history]
        self.widget = widgets.VBox(
            rows, layout=widgets.Layout(width="100%", max_width=MAX_WIDTH, overflow="hidden")
        )
        self._status: BudgetStatus = session.budget_status
        #: The share of the budget used before the session opened (an earlier kernel's), or 0.
        self.resumed: float = session.resumed_share
        self._renyi: Any = None  # the second view, built on first use
        self._unsubscribe = session.subscribe(self._on_release)
        self._redraw()

    # -- state (read by tests and by the text view) ---------------------------

    @property
    def status(self) -> BudgetStatus:
        """The three figures last shown (:mod:`dpframe.accounting.status`)."""
        return self._status

    @property
    def spent(self) -> Budget:
        """The (ε, δ) guarantee last shown (:attr:`Session.spent`)."""
        return self._status.guarantee

    @property
    def used(self) -> Budget:
        """What releases asked for so far, in share units: ``total - remaining``."""
        return self._session.total - self._status.next_release

    @property
    def remaining(self) -> Budget:
        """The largest next release last shown (:attr:`Session.remaining`)."""
        return self._status.next_release

    @property
    def fraction(self) -> float:
        """Share of the budget used, in [0, 1], in the accountant's unit (ε, ρ or μ²)."""
        return float(self._status.used_share)

    @property
    def delta_fraction(self) -> float:
        """Share of the δ budget used, in [0, 1] (approximate DP; 0 for other accountings)."""
        return float(self._status.delta_share)

    @property
    def colour(self) -> str:
        """``green``, ``amber`` or ``red``."""
        return colour_for(max(self.fraction, self.delta_fraction))

    @property
    def recent(self) -> list[tuple[str, str]]:
        """The last releases shown: (query, cost)."""
        return list(self._recent)

    @property
    def renyi_view(self) -> Any:
        """The second view: the session's Rényi-DP curve ε(α) and its best (ε, δ), kept live.

        An ipywidgets ``HTML`` with an SVG plot (see :meth:`Session.renyi`);
        the conversion uses the session's δ (or 10⁻⁶ in a pure session).
        """
        if self._renyi is None:
            import ipywidgets as widgets

            self._renyi = widgets.HTML()
            self._draw_renyi()
        return self._renyi

    def renyi_text(self) -> str:
        """The Rényi view as text: the best conversion of the session's curve."""
        curve = self._local().renyi()
        delta = float(self._session.total.delta) or 1e-6
        eps, alpha = curve.to_dp(delta)
        return (
            f"dpframe Rényi view [{self._session.name}]: {curve.releases} releases; "
            f"best (ε, δ={delta:g}) conversion ε={eps:.4g} at α={alpha:g}"
        )

    def _draw_renyi(self) -> None:
        if self._renyi is None:
            return
        delta = float(self._session.total.delta) or 1e-6
        self._renyi.value = self._local().renyi().to_svg(delta)

    def _local(self) -> Session:
        """The embedded session (the Rényi view needs the ledger's per-release noise)."""
        from dpframe.api.session import Session

        if not isinstance(self._session, Session):
            raise DPError(
                "The Rényi view is computed from an embedded session's ledger; a curator "
                "session shows its budget only."
            )
        return self._session

    def _resumed_text(self) -> str:
        if self.resumed <= 0:
            return ""
        return f"resumed: {share_text(self.resumed)} was used before this session opened"

    def headline(self) -> str:
        """The first line: the share used, the largest next release, the total."""
        return self._status.headline()

    def guarantee_text(self) -> str:
        """The second line: the formal (ε, δ) guarantee of everything released so far, in words."""
        return self._status.guarantee_text()

    def text(self) -> str:
        """The view used outside notebooks: share used and next release, then the guarantee."""
        resumed = self._resumed_text()
        return (
            f"dpframe budget [{self._session.name}]: {self.headline()} "
            f"({self._session.accounting} accounting, {self.colour})"
            f"{'; ' + resumed if resumed else ''}\n{self.guarantee_text()}"
        )

    # -- updates -------------------------------------------------------------

    def _on_release(self, event: ReleaseEvent) -> None:
        from dpframe.accounting.status import budget_status

        self._status = budget_status(
            self._session.accounting, event.total, event.spent, event.remaining
        )
        label = _short(user_label(event.query))
        if event.recorded is None:
            self._recent.append((label, str(event.cost)))
        else:  # answered from the ledger: free
            self._recent.append((label, f"{event.recorded}, charged nothing"))
        self._redraw()
        self._draw_renyi()

    def _redraw(self) -> None:
        colour = COLOURS[self.colour]
        resumed = self._resumed_text()
        self._title.value = (
            f"<b>Privacy budget</b> · session <code>{html.escape(_short(self._session.name))}"
            f"</code> · {html.escape(self._session.accounting)} accounting"
            + (f" · <i>{html.escape(resumed)}</i>" if resumed else "")
        )
        self._epsilon_bar.value = self.fraction
        self._epsilon_bar.style.bar_color = colour
        self._delta_bar.value = self.delta_fraction
        self._delta_bar.style.bar_color = colour
        status = self._status
        self._numbers.value = (
            f"<b>{html.escape(status.used_text())}</b> · {html.escape(status.next_text())}"
            f" (total {html.escape(str(self._session.total))})<br>"
            f"<span style='color:#555'>{html.escape(status.guarantee_text())}</span>"
        )
        items = "".join(
            f"<li><code>{html.escape(q)}</code> — {html.escape(c)}</li>"
            for q, c in reversed(self._recent)
        )
        self._history.value = (
            f"<ul style='margin:0;overflow-wrap:anywhere'>{items}</ul>" if items else ""
        )

    def close(self) -> None:
        """Stop listening and close the widget."""
        self._unsubscribe()
        self.widget.close()

    def __repr__(self) -> str:
        return self.text()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle: dict[str, Any] = dict(self.widget._repr_mimebundle_(**kwargs) or {})
        bundle["text/plain"] = self.text()
        return bundle


def _significant(value: object) -> str:
    """A ledger value to four significant digits (a release's own display rounds further)."""
    if isinstance(value, (int, float)) and math.isfinite(float(value)):
        number = float(value)
        if number == 0 or 1e-3 <= abs(number) < 1e9:
            places = max(0, 3 - math.floor(math.log10(abs(number)))) if number else 0
            return f"{round(number, places):,.{places}f}"
        return f"{number:.4g}"
    return "—"


def ledger_view(ledger: pd.DataFrame, width: int = 60) -> pd.DataFrame:
    """``session.ledger`` as a person reads it: labels in the user's terms, values rounded.

    Columns: the query, the ε (and δ, when any release spent one) it asked,
    the value released (four significant digits; composite releases show —),
    the status and the time of day.  It fits a notebook's width: labels are
    cut at ``width`` characters.  ``session.ledger`` keeps every column.
    """
    import pandas as pd

    view: pd.DataFrame = pd.DataFrame(index=ledger.index)
    view["query"] = [_short(user_label(str(q)), width) for q in ledger["query"]]
    view["epsilon"] = [f"{float(e):.2g}" for e in ledger["epsilon"]]
    if "delta" in ledger and (ledger["delta"].astype(float) > 0).any():
        view["delta"] = [f"{float(d):.2g}" for d in ledger["delta"]]
    view["value"] = [_significant(v) for v in ledger["value"]]
    view["status"] = ledger["status"]
    if "time" in ledger:
        view["time"] = [pd.Timestamp(t).strftime("%H:%M:%S") for t in ledger["time"]]
    return view
