"""No row ceiling on Dask: partition totals are added as integers, never rounded.

More than 2**31 rows cannot be materialised in a test, so the combine step is
tested on synthetic partition totals (as large as 2**31 rows of the widest
terms give, and near the int64 limit), both directly and through the Dask
backend's own reduction tree on the cluster; ``benchmarks/run_dask_rows.py``
runs a real 3·10^9-row table.
"""

from __future__ import annotations

import functools
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from dask.delayed import delayed
from distributed import Client

from dpframe.backends import dask_backend as dask_module
from dpframe.backends.exact_totals import (
    EXACT_FLOAT,
    SATURATE,
    add_exact,
    exact_partial,
    final_totals,
)
from dpframe.mechanisms.calibration.additive import release_integer_sums
from dpframe.mechanisms.core.allocation import NoiseAllocation
from dpframe.noise import SecureRandom

WIDEST = 2**22  # the largest term of a sum, in quanta
PARTITION_MAX = 2**31 * WIDEST  # a full partition of widest terms: 2**53


def _partials(cells: list[list[int]]) -> list[list[npt.NDArray[Any]]]:
    """One partial per row of ``cells``: a single measure, one int64 entry per cell."""
    return [exact_partial([np.array(row, dtype=np.float64)]) for row in cells]


def test_partition_totals_convert_exactly() -> None:
    values = [np.array([0.0, -(2.0**53), 2.0**53, 12345.0])]
    (converted,) = exact_partial(values)
    assert converted.dtype == np.int64
    assert converted.tolist() == [0, -(2**53), 2**53, 12345]


def test_sums_past_two_to_the_53_are_exact() -> None:
    # Three full partitions of widest terms, plus odd amounts float64 cannot hold past 2**53.
    cells = [[PARTITION_MAX, 1, -PARTITION_MAX], [PARTITION_MAX - 1, 3, -PARTITION_MAX + 7]] * 3
    (total,) = add_exact(*_partials(cells))
    expected = [sum(row[i] for row in cells) for i in range(3)]
    assert total.tolist() == expected
    assert expected[0] > EXACT_FLOAT and expected[0] % 2 == 1  # not a float64
    (final,) = final_totals([total])
    assert final.dtype == np.int64 and final.tolist() == expected


def test_near_int64_limits_fall_back_to_python_integers() -> None:
    big = np.array([2**62, -(2**62), 2**61 + 5], dtype=np.int64)
    partials = [[big], [big], [np.array([1, -1, 2**61], dtype=np.int64)]]
    (total,) = add_exact(*partials)
    expected = [2**63 + 1, -(2**63) - 1, 3 * 2**61 + 10]  # past int64: Python ints, exact
    assert total.dtype == object and total.tolist() == expected
    # Adding back down returns to int64 without losing a unit.
    (back,) = add_exact([total], [np.array([-(2**63), 2**63, -3 * 2**61], dtype=object)])
    assert back.dtype == np.int64 and back.tolist() == [1, -1, 10]
    (final,) = final_totals([total])
    assert final.tolist() == [SATURATE, -SATURATE, SATURATE]  # saturated, 1-Lipschitz


def test_many_addends_do_not_overflow_int64() -> None:
    addends = [[np.array([2**58 + i], dtype=np.int64)] for i in range(40)]
    level = addends
    while len(level) > 1:  # a tree of fan-in 16 and 3, as a reduction might make
        level = [add_exact(*level[i : i + 16]) for i in range(0, len(level), 16)]
        level = [add_exact(*level[i : i + 3]) for i in range(0, len(level), 3)]
    assert level[0][0].tolist() == [40 * 2**58 + sum(range(40))]


def test_small_totals_stay_float_and_bit_identical() -> None:
    floats = [np.array([0.0, 3.0, -7.0]), np.array([2.0**53 - 1.0])]
    halves = [[floats[0] - 1.0, floats[1] - 2.0**52], [np.ones(3), np.array([2.0**52])]]
    total = final_totals(add_exact(*(exact_partial(h) for h in halves)))
    assert [t.dtype for t in total] == [np.float64, np.float64]
    assert [t.tobytes() for t in total] == [f.tobytes() for f in floats]
    assert np.signbit(final_totals([np.array([0], dtype=np.int64)])[0]).tolist() == [False]


def test_empty_cells() -> None:
    (total,) = final_totals(add_exact([np.zeros(0, dtype=np.int64)], [np.zeros(0, dtype=np.int64)]))
    assert total.dtype == np.float64 and total.size == 0


def test_add_refuses_mismatched_partials() -> None:
    with pytest.raises(ValueError, match="Nothing to add"):
        add_exact()
    with pytest.raises(ValueError, match="different numbers of measures"):
        add_exact([np.zeros(1, dtype=np.int64)], [])


def test_int64_totals_release_through_the_integer_mechanism() -> None:
    """An int64 total past 2**53 goes through the discrete mechanisms without a float step."""
    total = np.array([3 * PARTITION_MAX + 12345], dtype=np.int64)
    # Noise of scale 2**22 / 2**40 units: P(any noise) = 2a/(1+a) with a = e**-(2**18): zero.
    allocation = NoiseAllocation("laplace", Fraction(2**40))
    values, spec = release_integer_sums(total, WIDEST, 1.0, allocation, SecureRandom())
    assert spec.grid == 1.0
    assert values.tolist() == [float(3 * PARTITION_MAX + 12345)]


def _synthetic_partition(total: int, index: int) -> list[npt.NDArray[Any]]:
    """A partition's exact totals as a worker would return them (no rows materialised)."""
    return exact_partial([np.array([float(total - index)]), np.array([float(index)])])


def test_cluster_reduction_of_partitions_past_two_to_the_31_rows(dask_client: Client) -> None:
    """200 synthetic partitions of 2**31 widest-term rows each, added on the workers."""
    count = 200
    make = functools.partial(_synthetic_partition, PARTITION_MAX)
    partials = [delayed(make, pure=False)(i) for i in range(count)]
    tree = dask_module._tree_reduce(partials, add_exact)
    (first, second) = final_totals(dask_module._compute(tree))
    assert first.dtype == np.int64
    assert first.tolist() == [count * PARTITION_MAX - sum(range(count))]
    assert second.dtype == np.float64 and second.tolist() == [float(sum(range(count)))]


def test_the_centred_sums_take_int64_totals_as_they_are() -> None:
    """Totals past 2^53 reach the mean's and variance's centred sums unrounded."""
    from dpframe.mechanisms.calibration.additive import exact_int64

    big = np.array([2**53 + 1, -(2**60) - 3], dtype=np.int64)
    assert exact_int64(big).tolist() == [2**53 + 1, -(2**60) - 3]
    assert exact_int64(np.array([2.5, -1.4, 7.0])).tolist() == [2, -1, 7]
