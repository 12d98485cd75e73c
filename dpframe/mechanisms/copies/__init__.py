"""Sanitized copies of a column by input perturbation: randomized response, the Laplace copy."""
