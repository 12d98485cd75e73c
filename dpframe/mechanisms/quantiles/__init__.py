"""Quantiles by the exponential mechanism over public candidates, overall or per group."""
