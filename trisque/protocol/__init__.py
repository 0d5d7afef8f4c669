"""Wire formats: RESP, arguments, errors, job IDs, the cluster bus codec.

Pure functions and data; nothing here does I/O or reads a clock.
"""
