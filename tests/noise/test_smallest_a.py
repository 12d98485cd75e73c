"""The tail search behind noise quantiles: exact, and O(log) however far the guess is."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from dpframe.noise.distributions import _smallest_a


def _linear(tail: object, target: float) -> int:
    a = 0
    while tail(a) > target:  # type: ignore[operator]
        a += 1
    return a


@given(
    st.integers(0, 300),
    st.integers(0, 400),
    st.floats(0, 1, allow_nan=False),
)
def test_matches_a_linear_search(answer: int, guess: int, target: float) -> None:
    def tail(a: int) -> float:  # non-increasing, crosses the target at `answer`
        return target + 1.0 if a < answer else target

    assert _smallest_a(tail, guess, target) == answer == _linear(tail, target)


def test_a_far_answer_takes_few_evaluations() -> None:
    """A tiny ε puts the answer near 1e12 grid units; the old walk took minutes."""
    calls = []

    def tail(a: int) -> float:
        calls.append(a)
        return 1.0 if a < 10**12 else 0.0

    assert _smallest_a(tail, 3, 0.5) == 10**12
    assert len(calls) < 200
    calls.clear()
    assert _smallest_a(tail, 10**15, 0.5) == 10**12  # a guess far above: searched down
    assert len(calls) < 200
