"""A set of non-blocking sockets served by one trio task: an epoll set
waited on with a single trio wait, which ``wake()`` interrupts.  The client
loop (connection.py) and the bus loop (cluster/tcp/transport.py) each own one."""

import select
from typing import Callable

import trio

# Turns a busy loop may take without going through trio's scheduler: a
# pass (a checkpoint, or waiting on the epoll set's fd) costs more than a
# turn of unpipelined requests itself (bench/README.md, "What the ninth
# session took out").  With sockets ready, wait() returns them at once up
# to this many times in a row, then lets the other tasks (the other loop,
# timers, the AOF's fsyncs) run; an idle loop still sleeps in trio at once.
TURNS_PER_YIELD = 8


class SocketSet:
    register: Callable[[int, int], None]
    modify: Callable[[int, int], None]
    unregister: Callable[[int], None]
    fileno: Callable[[], int]
    poll: Callable[..., list[tuple[int, int]]]  # (timeout, maxevents)
    sleeping: bool
    unyielded: int  # turns since the last pass through trio

    def __init__(self) -> None:
        epoll = self._epoll = select.epoll()
        self.register = epoll.register  # fd, events
        self.modify = epoll.modify
        self.unregister = epoll.unregister
        self.fileno = epoll.fileno
        self.poll = epoll.poll
        self.sleeping = False  # a task waits in wait()
        self.unyielded = 0

    async def wait(self, busy: bool) -> list[tuple[int, int]]:
        """The ready (fd, events) pairs: at once when some are ready or
        ``busy`` (work is waiting), else once a socket is ready or
        ``wake()`` is called.  The other tasks run first when nothing is
        ready, and every TURNS_PER_YIELD turns."""
        if self.unyielded < TURNS_PER_YIELD:
            ready = self.poll(0)
            if ready or busy:
                self.unyielded += 1
                return ready
        self.unyielded = 0
        if busy:
            await trio.lowlevel.checkpoint()
        else:
            self.sleeping = True
            try:
                await trio.lowlevel.wait_readable(self.fileno())
            except trio.ClosedResourceError:
                pass  # woken: see wake()
            self.sleeping = False
        return self.poll(0)

    def wake(self) -> None:
        """End a wait() now, from another task or a callback."""
        if self.sleeping:
            self.sleeping = False
            # The wait ends with ClosedResourceError: no cancel scope per
            # wait (dear under trio: bench/README.md, "What was changed").
            trio.lowlevel.notify_closing(self.fileno())
