"""Secure, exact noise for differential privacy (the lowest layer of dpframe, with accounting).

All randomness comes from :class:`SecureRandom` (by default :func:`os.urandom`);
the samplers are exact implementations of Canonne, Kamath and Steinke (2020),
"The Discrete Gaussian for Differential Privacy": scalar reference versions in
:mod:`dpframe.noise.exact`, vectorized ones in :mod:`dpframe.noise.vectorized`.
:mod:`dpframe.noise.distributions` gives the public facts about the noise
(pmf, cdf, quantiles, variance) used for confidence intervals.
"""

from dpframe.noise._checks import NoiseParameterError
from dpframe.noise.distributions import (
    discrete_gaussian_abs_quantile,
    discrete_gaussian_cdf,
    discrete_gaussian_pmf,
    discrete_gaussian_variance,
    discrete_laplace_abs_quantile,
    discrete_laplace_cdf,
    discrete_laplace_pmf,
    discrete_laplace_variance,
)
from dpframe.noise.exact import (
    bernoulli,
    bernoulli_exp,
    discrete_gaussian,
    discrete_laplace,
    geometric_exp,
)
from dpframe.noise.random_source import SecureRandom
from dpframe.noise.vectorized import (
    bernoulli_exp_array,
    coarsen_up,
    discrete_gaussian_array,
    discrete_laplace_array,
)

__all__ = [
    "NoiseParameterError",
    "SecureRandom",
    "bernoulli",
    "bernoulli_exp",
    "bernoulli_exp_array",
    "coarsen_up",
    "discrete_gaussian",
    "discrete_gaussian_abs_quantile",
    "discrete_gaussian_array",
    "discrete_gaussian_cdf",
    "discrete_gaussian_pmf",
    "discrete_gaussian_variance",
    "discrete_laplace",
    "discrete_laplace_abs_quantile",
    "discrete_laplace_array",
    "discrete_laplace_cdf",
    "discrete_laplace_pmf",
    "discrete_laplace_variance",
    "geometric_exp",
]
