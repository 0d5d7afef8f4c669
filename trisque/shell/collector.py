"""The cyclic garbage collector, set for a broker's allocation pattern.

Every request allocates a few short-lived containers (its argument list,
tuples) and some requests a long-lived job.  Python's default first
generation ran a young collection every hundred or so ADDJOBs, walking
each new job and the containers still alive (bench/README.md, "The
collector").  With a larger first generation most short-lived objects
are freed by their reference count before any collection sees them.  Reference cycles (a closed client and
its connection, an aborted replication) are still collected, later.
"""

import gc

YOUNG_OBJECTS = 20_000  # first-generation threshold (Python's default: 700)


def tune() -> None:
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, middle, old)
