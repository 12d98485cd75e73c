"""Model releases: the kernel density estimate and the regressions."""
