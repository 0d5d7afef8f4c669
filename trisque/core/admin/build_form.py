"""Which form of the core this process runs: compiled by mypyc (setup.py
builds it when it can) or the interpreted sources (TRISQUE_PURE=1, or no
mypy or C compiler at install time)."""

import os
import sys
from importlib.machinery import EXTENSION_SUFFIXES

from .. import node


def is_compiled() -> bool:
    """A compiled module is imported from an extension file, not a .py."""
    return (node.__file__ or "").endswith(tuple(EXTENSION_SUFFIXES))


def build_form() -> str:
    """As INFO server's trisque_build field and --version say it."""
    return "compiled (mypyc)" if is_compiled() else "interpreted"


def stale_sources() -> list[str]:
    """Sources edited since their compiled module was built (an editable
    install): they do not run until it is built again."""
    # The modules' own extension files are stubs, rebuilt only when they
    # change; the code is in the shared library setup.py names trisque__mypyc.
    shared = sys.modules.get("trisque__mypyc")
    shared_ms = os.path.getmtime(shared.__file__) if shared and shared.__file__ else 0.0
    stale = []
    # Every compiled module of the package (setup.py's COMPILED list, the
    # cluster's too), imported yet or not: an extension file beside its source.
    package = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for folder, _dirs, files in os.walk(package):
        for name in files:
            if name.endswith(tuple(EXTENSION_SUFFIXES)):
                built = os.path.join(folder, name)
                source = built[:built.index(".", built.rindex(os.sep))] + ".py"
                built_ms = max(os.path.getmtime(built), shared_ms)
                if os.path.exists(source) and os.path.getmtime(source) > built_ms:
                    stale.append(source)
    return sorted(stale)
