"""The noise pool: every draw handed out once, dropped after a fork, same distribution."""

from __future__ import annotations

import pickle
from fractions import Fraction

import numpy as np
import pytest

from dpframe.noise import SecureRandom, discrete_gaussian_array, discrete_laplace_array
from dpframe.noise.pool import NoisePool
from tests.stats_helpers import ALPHA, chi2_pvalue, dgauss_pmf, dlaplace_pmf


class Counter:
    """A fake sampler: consecutive integers, and a record of the batch sizes asked for."""

    def __init__(self) -> None:
        self.next = 0
        self.calls: list[int] = []

    def __call__(self, k: int) -> np.ndarray:
        self.calls.append(k)
        out = np.arange(self.next, self.next + k, dtype=np.int64)
        self.next += k
        return out


def test_every_draw_is_handed_out_exactly_once() -> None:
    pool, draw = NoisePool(batch=8), Counter()
    taken = [pool.take("a", size, draw) for size in (1, 1, 3, 1, 4, 2, 1, 5, 1)]
    values = np.concatenate(taken)
    assert len(values) == len(set(values.tolist())) == 19
    assert draw.calls[0] == 1  # a first request is drawn directly, no batch
    assert all(k == 8 for k in draw.calls[1:])
    assert pool.stocked() == draw.next - 19


def test_large_requests_bypass_and_parameters_do_not_mix() -> None:
    pool, draw_a, draw_b = NoisePool(batch=8, small=4), Counter(), Counter()
    assert pool.take("a", 100, draw_a).tolist() == list(range(100))
    pool.take("a", 1, draw_a)
    pool.take("b", 1, draw_b)
    pool.take("b", 1, draw_b)
    assert draw_a.calls == [100, 1]  # the large request did not count as a first request
    assert draw_b.calls == [1, 8]
    assert pool.stocked() == 7  # "b": a batch of 8 minus 1; "a" has no stock yet


def test_least_recently_used_parameters_lose_their_stock() -> None:
    pool, draw = NoisePool(batch=4, kinds=2), Counter()
    for key in ("a", "a", "b", "b", "c", "c"):
        pool.take(key, 1, draw)
    assert pool.stocked() == 2 * 3  # only "b" and "c" keep a stock


def test_a_forked_process_forgets_the_parents_draws(monkeypatch: pytest.MonkeyPatch) -> None:
    pool, draw = NoisePool(batch=8), Counter()
    pool.take("a", 1, draw)
    pool.take("a", 1, draw)
    assert pool.stocked() == 7
    monkeypatch.setattr("dpframe.noise.pool.os.getpid", lambda: -1)
    first_in_child = pool.take("a", 1, draw)
    assert first_in_child.tolist() == [9]  # fresh: not one of the parent's stock (1..8)
    assert pool.stocked() == 0


def test_a_pickled_pool_arrives_empty() -> None:
    pool, draw = NoisePool(batch=8), Counter()
    pool.take("a", 1, draw)
    pool.take("a", 1, draw)
    copy = pickle.loads(pickle.dumps(pool))
    assert copy.stocked() == 0 and pool.stocked() == 7


def test_pooled_laplace_draws_have_the_exact_distribution() -> None:
    rng = SecureRandom(pool=NoisePool())
    scale = Fraction(3, 2)
    samples = np.concatenate([discrete_laplace_array(scale, 1, rng) for _ in range(6000)])
    assert rng.pool is not None and rng.pool.stocked() < 256
    assert chi2_pvalue(samples, dlaplace_pmf(1.5)) > ALPHA
    assert chi2_pvalue(samples, dlaplace_pmf(0.7 * 1.5)) < ALPHA  # 30% narrower is rejected


def test_pooled_gaussian_draws_have_the_exact_distribution() -> None:
    rng = SecureRandom(pool=NoisePool())
    samples = np.concatenate([discrete_gaussian_array(Fraction(4), 2, rng) for _ in range(3000)])
    assert chi2_pvalue(samples, dgauss_pmf(4.0)) > ALPHA
    assert chi2_pvalue(samples, dgauss_pmf(0.49 * 4.0)) < ALPHA  # σ 30% smaller is rejected


def test_refills_start_small_and_double_up_to_the_batch() -> None:
    pool, draw = NoisePool(batch=64, first=4), Counter()
    for _ in range(200):
        pool.take("a", 1, draw)
    assert draw.calls[:8] == [1, 4, 8, 16, 32, 64, 64, 64]
    assert draw.next - pool.stocked() == 200  # every draw handed out once or still stocked
