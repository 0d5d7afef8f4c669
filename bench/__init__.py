"""Benchmarks of trisque against redis-server on the same machine.

``python -m bench`` (or ``make bench``) runs the throughput benchmark,
``python -m bench memory`` the memory one; see bench/README.md.  Not part
of the test suite.
"""
