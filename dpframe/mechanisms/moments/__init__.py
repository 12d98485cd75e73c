"""Counts, sums, means, variances; several at once, describe, corr/cov, suggested bounds."""
