"""The backend's fast binning over equally spaced edges equals ``np.searchsorted`` exactly."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from dpframe.backends.evaluate import edges_at_or_below as _edges_at_or_below


def _reference(values: npt.NDArray[np.float64], edges: npt.NDArray[np.float64]) -> np.ndarray:
    return np.searchsorted(edges, values, side="right")


def _probe_values(edges: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    """Every edge, its float neighbours, the midpoints, and the special values."""
    near = np.concatenate(
        [
            edges,
            np.nextafter(edges, -np.inf),
            np.nextafter(edges, np.inf),
            (edges[:-1] + edges[1:]) / 2,
        ]
    )
    special = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e308, -1e308, 5e-324, -5e-324])
    return np.concatenate([near, special])


@given(
    low=st.floats(-1e12, 1e12, allow_nan=False),
    width=st.floats(1e-9, 1e12, allow_nan=False),
    count=st.integers(3, 5000),
    data=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=200),
)
@settings(max_examples=300, deadline=None)
def test_equally_spaced_edges_match_searchsorted(
    low: float, width: float, count: int, data: list[float]
) -> None:
    edges = np.linspace(low, low + width, count)
    values = np.concatenate([_probe_values(edges), np.asarray(data, dtype=np.float64)])
    assert np.array_equal(_edges_at_or_below(values, edges), _reference(values, edges))


def test_extreme_and_tiny_bounds_match_searchsorted() -> None:
    for low, high in [(-1e308, 1e308), (0.0, 5e-324 * 64), (1e-300, 2e-300), (-0.0, 0.0 + 1e-9)]:
        edges = np.linspace(low, high, 4097)
        values = _probe_values(edges)
        assert np.array_equal(_edges_at_or_below(values, edges), _reference(values, edges))


def test_uneven_edges_fall_back_to_searchsorted() -> None:
    edges = np.array([0.0, 1.0, 10.0, 100.0])
    values = _probe_values(edges)
    assert np.array_equal(_edges_at_or_below(values, edges), _reference(values, edges))
