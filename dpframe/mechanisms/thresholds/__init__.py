"""Thresholded releases: the sparse vector technique and private key discovery."""
