"""The cyclic garbage collector, set for a broker's allocation pattern.

Every request allocates a few short-lived containers (its argument list,
tuples) and some requests a long-lived job.  Python's default first
generation of 700 objects ran a young collection every ~100 ADDJOBs,
walking each new job and the containers still alive: ~900 of ADDJOB's
instructions (callgrind, bench.instructions).  With a larger first
generation most short-lived objects are freed by their reference count
before any collection sees them.  Reference cycles (a closed client and
its connection, an aborted replication) are still collected, later.
"""

import gc

YOUNG_OBJECTS = 20_000  # first-generation threshold (Python's default: 700)


def tune() -> None:
    _young, middle, old = gc.get_threshold()
    gc.set_threshold(YOUNG_OBJECTS, middle, old)
