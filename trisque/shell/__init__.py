"""The trio shell's shared parts: logging, socket sets, listeners, TLS, and the
process's memory and descriptor tuning, used by every I/O part (clients, bus,
HTTP)."""
