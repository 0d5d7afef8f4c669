"""SocketSet's direct wait (shell/socket_set.py), in process with real
trio and a socketpair: while no other task can run, the loop sleeps in its
own epoll set, and a socket that becomes ready wakes it without a pass
through trio's scheduler; the other tasks still run: a sleeper wakes,
work handed in from a thread runs, a task that never blocks does not hold
the loop's sockets up; the trio-driven wait (direct=False) still works."""

import select
import socket
import threading
from time import perf_counter

import trio

from trisque.shell.socket_set import SocketSet


class Passes(trio.abc.Instrument):
    """Counts trio's scheduler passes (each ends in an I/O wait)."""

    def __init__(self):
        self.count = 0

    def before_io_wait(self, timeout):
        self.count += 1


def socketpair():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    return a, b


def later(seconds, fn):
    """Run ``fn`` from a thread after ``seconds`` (outside trio)."""
    timer = threading.Timer(seconds, fn)
    timer.start()
    return timer


async def wait_for_data(sockets, fd, busy=False):
    """Wait until ``fd`` is reported readable (other fds ignored)."""
    while True:
        for ready_fd, events in await sockets.wait(busy):
            if ready_fd == fd and events & select.EPOLLIN:
                return


def test_a_ready_socket_wakes_the_loop_without_a_trio_pass():
    passes = Passes()
    a, b = socketpair()
    seen = {}

    async def main():
        sockets = SocketSet()
        sockets.register(a.fileno(), select.EPOLLIN)
        # (the first wait goes through trio until the others are blocked)
        for round_ in range(5):
            before = passes.count
            timer = later(0.02, lambda: b.send(b"x"))
            await wait_for_data(sockets, a.fileno())
            timer.join()
            assert a.recv(10) == b"x"
            seen[round_] = passes.count - before
        assert sockets.trio_fd >= 0  # the direct wait is the one used

    trio.run(main, instruments=[passes])
    a.close()
    b.close()
    # once alone, a wake-up for our socket costs no pass through trio
    assert sum(seen[r] for r in range(1, 5)) == 0, seen


def test_other_tasks_run_while_the_loop_waits_directly():
    a, b = socketpair()
    events = []

    async def sleeper():
        await trio.sleep(0.01)
        events.append("slept")

    async def main():
        sockets = SocketSet()
        sockets.register(a.fileno(), select.EPOLLIN)
        token = trio.lowlevel.current_trio_token()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sleeper)
            # a thread hands work to trio, then (much later) writes to us
            later(0.03, lambda: token.run_sync_soon(events.append, "from thread"))
            later(0.3, lambda: b.send(b"x"))
            await wait_for_data(sockets, a.fileno())
            events.append("socket")

    trio.run(main)
    a.close()
    b.close()
    # the sleeper's deadline and the thread's call did not wait for the socket
    assert events == ["slept", "from thread", "socket"], events


def test_a_task_that_never_blocks_does_not_hold_the_socket_up():
    a, b = socketpair()
    spins = {"n": 0, "done": False}
    seen_at = []

    async def spinner():
        # checkpoints forever (as the AOF rewrite's chunks), until told
        while not spins["done"]:
            spins["n"] += 1
            await trio.lowlevel.checkpoint()

    async def main():
        sockets = SocketSet()
        sockets.register(a.fileno(), select.EPOLLIN)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(spinner)
            b.send(b"x")
            for _ in range(20):
                await wait_for_data(sockets, a.fileno())
                seen_at.append(spins["n"])
                a.recv(10)
                b.send(b"x")
            spins["done"] = True

    trio.run(main)
    a.close()
    b.close()
    assert len(seen_at) == 20
    assert spins["n"] > 0  # the spinner ran meanwhile


def test_the_trio_driven_wait_still_works():
    a, b = socketpair()
    woken = []

    async def main():
        sockets = SocketSet(direct=False)
        sockets.register(a.fileno(), select.EPOLLIN)
        async with trio.open_nursery() as nursery:
            async def waker():
                await trio.sleep(0.01)
                woken.append("wake")
                sockets.wake()
            nursery.start_soon(waker)
            assert await sockets.wait(False) == []  # ended by wake()
            later(0.01, lambda: b.send(b"x"))
            await wait_for_data(sockets, a.fileno())
        assert sockets.trio_fd == -1

    trio.run(main)
    a.close()
    b.close()
    assert woken == ["wake"]


def test_work_another_task_gave_is_seen_without_a_wake():
    """The loop's caller learns of work from its own state (``busy``):
    after the other tasks ran, wait() returns so the caller looks again,
    though nobody called wake()."""
    work = []

    async def producer():
        await trio.sleep(0.01)
        work.append("job")  # no wake(): the direct wait needs none

    async def main():
        sockets = SocketSet()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(producer)
            with trio.fail_after(5):
                while not work:
                    await sockets.wait(bool(work))

    trio.run(main)
    assert work == ["job"]


def test_the_callers_deadline_ends_the_direct_wait_without_a_trio_pass():
    """``due_s`` (the node's timers, shell/timers.py) bounds the sleep in
    our own epoll set: the wait returns by then, with nothing ready, and
    trio's scheduler is not involved."""
    passes = Passes()
    a, _b = socketpair()
    waited = []

    async def main():
        sockets = SocketSet()
        sockets.register(a.fileno(), select.EPOLLIN)
        await sockets.wait(False, perf_counter() + 0.01)  # (through trio, once)
        for _ in range(5):
            before = passes.count
            due_s = perf_counter() + 0.02
            ready = await sockets.wait(False, due_s)
            waited.append((perf_counter() >= due_s, ready, passes.count - before))
        assert sockets.trio_fd >= 0

    trio.run(main, instruments=[passes])
    a.close()
    _b.close()
    assert [w[0] for w in waited] == [True] * 5, waited
    assert [w[1] for w in waited] == [[]] * 5, waited
    assert sum(w[2] for w in waited[1:]) == 0, waited


def test_the_callers_deadline_ends_the_trio_driven_wait():
    a, _b = socketpair()
    waited = []

    async def main():
        sockets = SocketSet(direct=False)
        sockets.register(a.fileno(), select.EPOLLIN)
        with trio.fail_after(5):
            for _ in range(3):
                due_s = perf_counter() + 0.02
                while perf_counter() < due_s:  # (a wait may end early: look again)
                    assert await sockets.wait(False, due_s) == []
                waited.append(perf_counter() - due_s)

    trio.run(main)
    a.close()
    _b.close()
    assert len(waited) == 3


def test_a_deadline_moved_and_a_heap_pruned_still_bound_the_direct_wait():
    """The direct wait reads trio's deadline heap itself (``_trio_due_s``):
    a head made stale by a deadline moved later, and a heap trio replaced
    when it pruned many stale entries, still let a sleeper wake on time
    while the loop sleeps in its own epoll set."""
    a, b = socketpair()
    events = []

    async def mover():
        with trio.CancelScope() as scope:
            # stale entries: each move leaves one in trio's heap, and past
            # a thousand trio prunes it into a new list
            for i in range(1500):
                scope.deadline = trio.current_time() + 10 + i
                if i % 100 == 0:
                    await trio.lowlevel.checkpoint()
            scope.deadline = trio.current_time() + 0.02  # the head: stale ones before it
            await trio.sleep_forever()
        events.append("moved")

    async def main():
        sockets = SocketSet()
        sockets.register(a.fileno(), select.EPOLLIN)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(mover)
            later(0.5, lambda: b.send(b"x"))
            await wait_for_data(sockets, a.fileno())
            events.append("socket")
        assert sockets.trio_fd >= 0

    trio.run(main)
    a.close()
    b.close()
    assert events == ["moved", "socket"], events


def test_the_direct_wait_says_whether_the_callers_deadline_came():
    """``ready_now`` sets ``due`` (the client loop's timers then run
    without a clock reading of the turn's own): a deadline passed before
    the poll, or one the poll slept until, is due; a poll that returned a
    ready socket or a busy poll before the deadline leaves it not due."""
    a, b = socketpair()
    seen = {}

    async def direct(sockets, busy, due_s):
        """ready_now's answer, through trio until the direct wait is on."""
        for _ in range(50):
            ready = sockets.ready_now(busy, due_s)
            if ready is not None:
                return [fd for fd, _events in ready], sockets.due
            await sockets.through_trio(False, perf_counter() + 0.001)
        raise AssertionError("the direct wait never ran")

    async def main():
        sockets = SocketSet()
        sockets.register(a.fileno(), select.EPOLLIN)
        await sockets.wait(False, perf_counter() + 0.01)  # (through trio, once)
        seen["passed"] = await direct(sockets, False, perf_counter() - 0.001)
        seen["busy, not yet"] = await direct(sockets, True, perf_counter() + 10)
        due_s = perf_counter() + 0.02
        seen["slept until it"] = await direct(sockets, False, due_s)
        seen["slept until it, clock"] = perf_counter() >= due_s
        b.send(b"x")
        seen["ready first"] = await direct(sockets, False, perf_counter() + 10)
        seen["ready, passed"] = await direct(sockets, False, perf_counter() - 0.001)
        assert a.recv(10) == b"x"
        later(0.01, lambda: b.send(b"y"))
        seen["woken before it"] = await direct(sockets, False, perf_counter() + 10)

    trio.run(main)
    a.close()
    b.close()
    assert seen["passed"] == ([], True), seen
    assert seen["busy, not yet"] == ([], False), seen
    assert seen["slept until it"] == ([], True), seen
    assert seen["slept until it, clock"] is True, seen
    assert seen["ready first"][1] is False and len(seen["ready first"][0]) == 1, seen
    assert seen["ready, passed"][1] is True and len(seen["ready, passed"][0]) == 1, seen
    assert seen["woken before it"][1] is False and len(seen["woken before it"][0]) == 1, seen
