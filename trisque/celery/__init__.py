"""Celery on trisque: ``import trisque.celery`` in the app's module makes
``trisque://`` a kombu transport (transport.py: each message a replicated
job) and a Celery result backend (backend.py).  docs/celery.md is the guide.
"""

from kombu.transport import TRANSPORT_ALIASES

TRANSPORT_ALIASES.setdefault("trisque", "trisque.celery.transport:Transport")
TRANSPORT_ALIASES.setdefault("trisques", "trisque.celery.transport:Transport")

try:  # the backend alias needs Celery; the transport alone needs only kombu
    from celery.app.backends import BACKEND_ALIASES
except ImportError:  # pragma: no cover
    pass
else:
    BACKEND_ALIASES.setdefault("trisque", "trisque.celery.backend:TrisqueBackend")
    BACKEND_ALIASES.setdefault("trisques", "trisque.celery.backend:TrisqueBackend")
