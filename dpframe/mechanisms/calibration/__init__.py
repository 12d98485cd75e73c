"""Noise laws and their calibration, shared by the families.

The discrete Laplace and Gaussian mechanisms on a grid (:mod:`.additive`), the
Gaussian mechanism for a vector (:mod:`.gaussian_vector`), μ-GDP curves
(:mod:`.gdp_curves`) and tail bounds of sums of noises (:mod:`.noise_sums`).
"""
