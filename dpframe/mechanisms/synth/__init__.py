"""Synthetic copies: MST and AIM, their marginals, graphical models and rows."""
