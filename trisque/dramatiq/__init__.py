"""dramatiq on trisque: ``TrisqueBroker`` (each message a replicated job)
and ``TrisqueResultBackend`` for the Results middleware.  docs/dramatiq.md
is the guide."""

from trisque.dramatiq.broker import TrisqueBroker, TrisqueResultBackend

__all__ = ["TrisqueBroker", "TrisqueResultBackend"]
