"""A set of non-blocking sockets served by one trio task: an epoll set
waited on with a single trio wait, which ``wake()`` interrupts.  The client
loop (connection.py) and the bus loop (bus_links.py) each own one."""

import select
from typing import Callable

import trio


class SocketSet:
    register: Callable[[int, int], None]
    modify: Callable[[int, int], None]
    unregister: Callable[[int], None]
    fileno: Callable[[], int]
    poll: Callable[..., list[tuple[int, int]]]  # (timeout, maxevents)
    sleeping: bool

    def __init__(self) -> None:
        epoll = self._epoll = select.epoll()
        self.register = epoll.register  # fd, events
        self.modify = epoll.modify
        self.unregister = epoll.unregister
        self.fileno = epoll.fileno
        self.poll = epoll.poll
        self.sleeping = False  # a task waits in wait()

    async def wait(self, busy: bool) -> list[tuple[int, int]]:
        """Let the other tasks run, then return the ready (fd, events)
        pairs: at once when ``busy`` (work is waiting), else when a socket
        is ready or ``wake()`` is called."""
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
            # wait (they cost ~8 us each under trio 0.35).
            trio.lowlevel.notify_closing(self.fileno())
