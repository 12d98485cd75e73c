"""dpframe benchmarks: speed, import time, memory and accuracy against plain pandas.

Run ``python -m benchmarks.run_core --help`` from the repository root; see
``benchmarks/README.md``.  Benchmarks are never timed tests.
"""
