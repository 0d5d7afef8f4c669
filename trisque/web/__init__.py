"""The optional HTTP port (``http-port``): /metrics, the dashboard and its JSON.

It reads the node core's counters at request time and owns none; it runs
in the node's own trio loop.  (Named ``web``, not ``http``: a top-level
``http/`` folder would shadow the standard library's ``http`` package
wherever the repository root is on sys.path, as under pytest.)
"""
