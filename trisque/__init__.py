"""trisque: a Disque-compatible distributed job broker on trio."""

__version__ = "0.1.0"
