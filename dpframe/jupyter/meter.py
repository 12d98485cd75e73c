"""The live budget meter: an ipywidgets view of a session's spend.

The meter listens to the session's release events (one-way: it has no way to
change the budget) and redraws after every release, from any cell, loop or
other meter of the same session.  Outside a notebook it shows a text line.

One currency: the first line counts in the units queries ask in (``epsilon=``
shares of the session's total), so that used + left = total and each release
adds exactly what it asked; the second line gives the actual (ε, δ) guarantee
of everything released so far (:attr:`Session.spent`), which under zCDP is
not the sum of the shares (the conversion from ρ is not additive).
"""

from __future__ import annotations

import html
from collections import deque
from typing import TYPE_CHECKING, Any

from dpframe.errors import DPError
from dpframe.plan.privacy import Budget

if TYPE_CHECKING:
    from dpframe.api.session import Session
    from dpframe.engine.session import ReleaseEvent
    from dpframe.remote.client import RemoteSession

__all__ = ["AMBER_AT", "COLOURS", "BudgetMeter"]

#: Bar colours: green below 75% spent, amber from 75%, red at 100%.
COLOURS = {"green": "#2e7d32", "amber": "#f9a825", "red": "#c62828"}
AMBER_AT = 0.75


def _fraction_used(total: Budget, remaining: Budget, part: str) -> float:
    whole = float(getattr(total, part))
    if whole == 0:
        return 0.0
    return min(max(1.0 - float(getattr(remaining, part)) / whole, 0.0), 1.0)


def colour_for(fraction: float) -> str:
    """``green``, ``amber`` (≥ 75%) or ``red`` (≥ 100%)."""
    if fraction >= 1.0:
        return "red"
    if fraction >= AMBER_AT:
        return "amber"
    return "green"


class BudgetMeter:
    """A live view of a session's budget.

    Args:
        session: the session to watch.
        history: how many recent releases to list.

    Attributes:
        widget: the ipywidgets ``VBox`` shown in notebooks.
    """

    def __init__(self, session: Session | RemoteSession, history: int = 5) -> None:
        import ipywidgets as widgets

        self._session = session
        self._recent: deque[tuple[str, str]] = deque(maxlen=max(int(history), 1))
        ledger = session.ledger
        for query, eps in zip(
            ledger["query"].tail(history), ledger["epsilon"].tail(history), strict=True
        ):
            self._recent.append((str(query), f"ε={eps:.4g}"))
        self._title = widgets.HTML()
        self._epsilon_bar = widgets.FloatProgress(min=0.0, max=1.0, description="ε")
        self._delta_bar = widgets.FloatProgress(min=0.0, max=1.0, description="δ")
        self._numbers = widgets.HTML()
        self._history = widgets.HTML()
        rows: list[Any] = [self._title, self._epsilon_bar]
        if session.total.delta > 0:
            rows.append(self._delta_bar)
        rows += [self._numbers, self._history]
        self.widget = widgets.VBox(rows)
        self._spent = session.spent
        self._remaining = session.remaining
        #: What was used before this meter opened (a resumed session), in share units.
        self.resumed = session.total - self._remaining
        self._renyi: Any = None  # the second view, built on first use
        self._unsubscribe = session.subscribe(self._on_release)
        self._redraw()

    # -- state (read by tests and by the text view) ---------------------------

    @property
    def spent(self) -> Budget:
        """The (ε, δ) guarantee last shown (:attr:`Session.spent`)."""
        return self._spent

    @property
    def used(self) -> Budget:
        """What releases asked for so far, in share units: ``total - remaining``."""
        return self._session.total - self._remaining

    @property
    def remaining(self) -> Budget:
        """The remaining budget last shown."""
        return self._remaining

    @property
    def fraction(self) -> float:
        """Share of the ε budget used, in [0, 1]."""
        return _fraction_used(self._session.total, self._remaining, "epsilon")

    @property
    def delta_fraction(self) -> float:
        """Share of the δ budget used, in [0, 1]."""
        return _fraction_used(self._session.total, self._remaining, "delta")

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
        if self.resumed.epsilon == 0 and self.resumed.delta == 0:
            return ""
        return f"resumed: {self.resumed} used before"

    def guarantee_text(self) -> str:
        """The second line: the actual (ε, δ) guarantee of everything released so far."""
        return f"guarantee so far {self._spent} ({self._session.accounting} accounting)"

    def text(self) -> str:
        """The view used outside notebooks: used + left = total, then the guarantee."""
        resumed = self._resumed_text()
        return (
            f"dpframe budget [{self._session.name}]: used {self.used}, left "
            f"{self._remaining} of {self._session.total} ({self.fraction:.0%} used, {self.colour})"
            f"{'; ' + resumed if resumed else ''}; {self.guarantee_text()}"
        )

    # -- updates -------------------------------------------------------------

    def _on_release(self, event: ReleaseEvent) -> None:
        self._spent = event.spent
        self._remaining = event.remaining
        self._recent.append((event.query, str(event.cost)))
        self._redraw()
        self._draw_renyi()

    def _redraw(self) -> None:
        colour = COLOURS[self.colour]
        resumed = self._resumed_text()
        self._title.value = (
            f"<b>Privacy budget</b> · session <code>{html.escape(self._session.name)}</code>"
            f" · {html.escape(self._session.accounting)} accounting"
            + (f" · <i>{html.escape(resumed)}</i>" if resumed else "")
        )
        self._epsilon_bar.value = self.fraction
        self._epsilon_bar.style.bar_color = colour
        self._delta_bar.value = self.delta_fraction
        self._delta_bar.style.bar_color = colour
        self._numbers.value = (
            f"used <b>{html.escape(str(self.used))}</b> · left "
            f"<b>{html.escape(str(self._remaining))}</b> of {html.escape(str(self._session.total))}"
            f" ({self.fraction:.0%} used)<br><span style='color:#666'>"
            f"{html.escape(self.guarantee_text())}</span>"
        )
        items = "".join(
            f"<li><code>{html.escape(q)}</code> — {html.escape(c)}</li>"
            for q, c in reversed(self._recent)
        )
        self._history.value = f"<ul style='margin:0'>{items}</ul>" if items else ""

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
