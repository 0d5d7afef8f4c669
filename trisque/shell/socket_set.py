"""A set of non-blocking sockets served by one trio task: an epoll set
waited on with a single trio wait, which ``wake()`` interrupts.  The client
loop (connection.py) owns it; the cluster bus (cluster/tcp/transport.py)
puts its links in the same set and is served in the same turns, as a
``SocketOwner``."""

import select
from typing import Any, Callable, Final

import trio
from mypy_extensions import trait

# trio.testing's wait_all_tasks_blocked, from where trio keeps it:
# importing trio.testing imports pytest.
from trio._core import wait_all_tasks_blocked

from . import fdio
from .ticks import perf_counter

# Turns a busy loop may take without going through trio's scheduler: a
# pass (a checkpoint, or waiting on the epoll set's fd) costs more than a
# turn of unpipelined requests itself (bench/README.md, "What the ninth
# session took out").  With sockets ready, wait() returns them at once up
# to this many times in a row, then lets the other tasks (the other loop,
# timers, the AOF's fsyncs) run; an idle loop still sleeps in trio at once.
# (The trio-driven wait only; the direct one below needs no such count.)
TURNS_PER_YIELD = 8

# The direct wait: when no other task can run, the loop sleeps in its own
# epoll set, which watches trio's too, rather than in trio's scheduler;
# a wake-up for one of our sockets is then a turn without a pass through
# trio (bench/README.md, "Cluster: replicated ADDJOB").  Waiting for the
# other tasks to be done gives up after this long: one that never blocks
# (the AOF rewrite's chunks) does not hold our sockets up longer.
IDLE_WAIT_S = 0.001
_FOREVER_S: Final = 86400.0
_NEVER_S: Final = float("inf")  # wait()'s due_s when the caller has no deadline
# Ready sockets a wait returns at most; the others (the set is level-
# triggered) come in the next turn.  epoll.poll allocates room for this
# many events each call: by default 1,023, a 12 KB malloc and free a turn
# (~550 instructions); 32 fit Python's small-object allocator.
MAX_EVENTS: Final = 32
# ready_now's poll: fdio.c's, by the set's fd, where built (the GIL kept
# unless it waits, the pairs made directly); else the set's epoll.poll.
_POLL: Final = fdio.poll

# A trait, not a base class: the bus's transport has outbox.Transport as
# its one native base (its send and ensure_link called natively).
@trait
class SocketOwner:
    """Sockets of another part served in the client loop's turns (the
    cluster bus): one task and one wait for every socket, so a turn that
    produced bus frames sends them itself, and a wake-up is one pass of
    trio's scheduler whichever socket it was for (bench/README.md, "The
    client loop")."""

    def serve_ready(self, ready: list[tuple[int, int]]) -> None:
        """Handle the turn's ready (fd, events) pairs that are this
        owner's (the clients' are in the list too: skip them)."""
        raise NotImplementedError

    def end_turn(self) -> None:
        """The turn's reading and running is done: send what it produced
        (before the clients' replies go)."""
        raise NotImplementedError

    def busy(self) -> bool:
        """Whether work waits for a turn (the loop must not sleep)."""
        raise NotImplementedError

    def after_replies(self) -> bool:
        """The turn's replies went out: do the work kept for after them.
        Whether there was any (it may have replies of its own to send)."""
        return False

    def close_all(self) -> None:
        """The loop stops: close every socket."""
        raise NotImplementedError


class SocketSet:
    register: Callable[[int, int], None]
    modify: Callable[[int, int], None]
    unregister: Callable[[int], None]
    fileno: Callable[[], int]
    poll: Callable[..., list[tuple[int, int]]]  # (timeout, maxevents)
    epfd: int  # the epoll set's fd (ready_now's poll)
    sleeping: bool
    unyielded: int  # turns since the last pass through trio
    trio_fd: int  # trio's epoll set, in ours (-1: the trio-driven wait)
    alone: bool  # no other task can be in the batch we run in
    # trio's runner's parts the direct wait reads (set by _watch_trio)
    _runq: Any  # tasks runnable now
    # callbacks from threads and signals waiting to run: the entry queue's
    # deque and dict (trio keeps them, clears them)
    _entries: Any
    _entries_idempotent: Any
    _deadlines: Any  # trio's cancel scopes' deadlines
    _deadline_heap: list[tuple[Any, ...]]  # theirs, (deadline, tie, scope): see _trio_due_s
    _next_deadline: Callable[[], float]  # trio's earliest deadline, its clock
    _clock_offset: float  # trio's clock: perf_counter() + this
    # ready_now's last wait came to the caller's due_s (its timers are due):
    # known from the clock read before the poll and the poll timing out, so
    # the turn needs no reading of its own to ask
    due: bool

    def __init__(self, direct: bool = True) -> None:
        epoll = self._epoll = select.epoll()
        self.register = epoll.register  # fd, events
        self.modify = epoll.modify
        self.unregister = epoll.unregister
        self.fileno = epoll.fileno
        self.poll = epoll.poll
        self.epfd = epoll.fileno()
        self.sleeping = False  # a task waits in wait()
        self.unyielded = 0
        self.trio_fd = -2 if direct else -1  # (-2: looked up at the first wait)
        self.alone = False
        self.due = False

    async def wait(self, busy: bool, due_s: float = _NEVER_S) -> list[tuple[int, int]]:
        """The ready (fd, events) pairs: at once when some are ready or
        ``busy`` (work is waiting), else once a socket is ready, the
        caller's own deadline ``due_s`` (on perf_counter's clock: the
        node's timers, shell/timers.py) has come, or ``wake()`` is called.
        The other tasks run first when nothing is ready, and every
        TURNS_PER_YIELD turns.

        Where trio's internals are known (``_watch_trio``), the direct
        wait: it sleeps in our epoll set while trio has nothing to do.
        Blocking in a task stops every other task, so only while none can
        run: none is runnable, none is due (trio's next deadline bounds the
        sleep), trio's own sockets and wake-ups (its epoll set is in ours)
        are quiet, and no other task shares our batch: trio runs the tasks
        woken together one after another, and one after us in the batch
        would not be counted as runnable.  So the loop sleeps directly only
        in a step that trio began because all the others were blocked
        (``alone``), and goes through trio again as soon as it woke one.
        (trio's state is read inline, and the direct part is a plain call,
        ``ready_now``: this runs every turn, bench/README.md, "A turn's
        fixed costs".)"""
        trio_fd = self.trio_fd
        if trio_fd == -2:
            trio_fd = self.trio_fd = self._watch_trio()
        if trio_fd < 0:
            return await self._wait_trio(busy, due_s)
        ready = self.ready_now(busy, due_s)
        if ready is not None:
            return ready
        return await self.through_trio(busy, due_s)

    def ready_now(self, busy: bool, due_s: float = _NEVER_S) -> list[tuple[int, int]] | None:
        """wait()'s direct part, a plain call: the ready pairs, or None
        when the wait must go through trio (``await through_trio(...)``)
        or the direct wait is not known to work yet (``await wait(...)``).
        (A coroutine's call makes its frame an object and returns through
        the generator protocol: each turn paid that, bench/README.md,
        "The turn's own costs".)  With pairs returned, ``due`` says
        whether ``due_s`` has come: it had before the poll, or the poll
        waited for it and timed out (a poll that returned pairs first
        leaves it to the next turn's look)."""
        trio_fd = self.trio_fd
        if trio_fd < 0 or not self.alone:
            return None
        if self._runq or self._entries or self._entries_idempotent:
            return None
        now_s = perf_counter()
        left = self._trio_due_s() - now_s
        if left <= 0:
            return None
        due = False
        ours = due_s - now_s  # (before trio's: a timeout is ours)
        if ours < left:
            if ours <= 0:
                due = busy = True
            left = ours
        timeout = 0.0 if busy else (left if left < _FOREVER_S else -1.0)
        if _POLL is not None:
            ready = _POLL(self.epfd, timeout, MAX_EVENTS)
        else:
            ready = self.poll(timeout, MAX_EVENTS)
        for i in range(len(ready)):
            if ready[i][0] == trio_fd:
                return None  # trio has work: it goes first
        if len(ready) or busy:
            self.due = due
            return ready
        if left == ours:
            self.due = True  # (the wait timed out at our deadline)
            return ready
        return None

    async def through_trio(self, busy: bool,
                           due_s: float = _NEVER_S) -> list[tuple[int, int]]:
        """wait() through trio, the direct wait known (``ready_now``
        said None): a checkpoint while work waits (our deadline come
        counts) or others run, else until every other task is blocked
        (then we run alone)."""
        trio_fd = self.trio_fd
        self.alone = False
        if busy or due_s <= perf_counter() or self._trio_busy():
            await trio.lowlevel.checkpoint()
        else:
            with trio.move_on_after(IDLE_WAIT_S) as scope:
                await wait_all_tasks_blocked()
            self.alone = not scope.cancelled_caught
        self._deadline_heap = self._deadlines._heap  # (see _trio_due_s)
        # (back to the caller even with nothing ready: the tasks that ran
        # meanwhile may have given it work, and no wake() says so)
        return [event for event in self.poll(0, MAX_EVENTS) if event[0] != trio_fd]

    def _trio_due_s(self) -> float:
        """trio's earliest deadline on perf_counter's clock: the head of
        its heap read here, trio's own next_deadline (interpreted, ~900
        instructions a call, each turn) only when the head is stale.  The heap
        is the list read after the last pass through trio: trio replaces
        it only when it prunes, in its run loop, and the direct wait runs
        only in a step begun since that pass ended (``alone``)."""
        heap = self._deadline_heap
        if not heap:
            return _NEVER_S
        head = heap[0]
        deadline = head[0]
        if deadline == head[2]._registered_deadline:
            return float(deadline) - self._clock_offset
        return self._next_deadline() - self._clock_offset

    async def _wait_trio(self, busy: bool, due_s: float) -> list[tuple[int, int]]:
        """wait() through trio's scheduler (trio's internals unknown)."""
        if self.unyielded < TURNS_PER_YIELD:
            ready = self.poll(0)
            if ready or busy:
                self.unyielded += 1
                return ready
        self.unyielded = 0
        left = due_s - perf_counter()
        if busy or left <= 0:
            await trio.lowlevel.checkpoint()
        else:
            self.sleeping = True
            try:
                if left < _FOREVER_S:
                    with trio.move_on_after(left):
                        await trio.lowlevel.wait_readable(self.fileno())
                else:
                    await trio.lowlevel.wait_readable(self.fileno())
            except trio.ClosedResourceError:
                pass  # woken: see wake()
            self.sleeping = False
        return self.poll(0)

    # What trio.lowlevel.current_statistics() says, read from trio's
    # runner: that builds two attrs objects and counts every registered fd,
    # once a turn (bench/README.md, "The end-to-end tail").
    def _trio_busy(self) -> bool:
        """Another task can run now, or a callback from a thread waits."""
        return bool(self._runq or self._entries or self._entries_idempotent)

    def yielded(self) -> None:
        """The task that waits here awaited something else meanwhile."""
        self.alone = False

    def _watch_trio(self) -> int:
        """Put trio's epoll set in ours: its fd, or -1 where trio's
        internals differ (trio on another platform or version): then the
        trio-driven wait is used."""
        try:
            from trio._core._run import GLOBAL_RUN_CONTEXT, SystemClock
            runner = GLOBAL_RUN_CONTEXT.runner
            fd = runner.io_manager._epoll.fileno()
            if not isinstance(fd, int):
                return -1
            clock = runner.clock
            if type(clock) is not SystemClock:
                return -1  # (its time is not perf_counter's plus an offset)
            self._clock_offset = float(clock.offset)
            self._deadlines = runner.deadlines
            self._next_deadline = runner.deadlines.next_deadline
            self._runq = runner.runq  # (trio clears this deque, keeps it)
            self._entries = runner.entry_queue.queue  # (kept too)
            self._entries_idempotent = runner.entry_queue.idempotent_queue
            self._trio_busy()  # (what it reads is there)
            heap = runner.deadlines._heap
            if not isinstance(heap, list):
                return -1
            self._deadline_heap = heap
            if not isinstance(trio.CancelScope()._registered_deadline, float):
                return -1  # (what _trio_due_s compares)
            self._next_deadline() - self._clock_offset - perf_counter()
            self.register(fd, select.EPOLLIN)
        except (ImportError, AttributeError, OSError, ValueError, TypeError):
            return -1
        return fd

    def wake(self) -> None:
        """End a wait() now, from another task or a callback.  (The direct
        wait needs none: another task runs only while the loop is in a
        trio wait that ends once the others are blocked.)"""
        if self.sleeping:
            self.sleeping = False
            # The wait ends with ClosedResourceError: no cancel scope per
            # wait (dear under trio: bench/README.md, "What was changed").
            trio.lowlevel.notify_closing(self.fileno())
