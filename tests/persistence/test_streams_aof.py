"""Streams in the AOF with real processes: with ``appendfsync always``,
producers (XADD with ``*`` IDs and approximate MAXLEN trims) and group
consumers (XREADGROUP ``>`` then XACK) under kill -9, also across a
rewrite in the middle of the load: every acknowledged XADD is there with
its ID (or was trimmed off the front), every entry a consumer was given
and did not ack is still pending for it, every acked one is not."""

import threading

import pytest
import redis

from tests.harness import wait_for
from tests.persistence.util import kill9_under_load

MAXLEN = 400


class StreamLoad:
    """A producer and a consumer per stream; what every reply implied."""

    def __init__(self, server, streams=2):
        self.server = server
        self.stop = threading.Event()
        self.added = [[] for _ in range(streams)]  # IDs acknowledged by XADD
        self.pending = [set() for _ in range(streams)]  # given, not acked (acked: gone)
        self.acked = [set() for _ in range(streams)]
        self.in_flight = [None] * streams  # an XACK sent without its reply
        self.writes = 0
        c = server.client()
        for i in range(streams):
            c.xgroup_create(f"s{i}", "g", id="$", mkstream=True)
        self.threads = []
        for i in range(streams):
            self.threads += [threading.Thread(target=self.produce, args=(i,), daemon=True),
                             threading.Thread(target=self.consume, args=(i,), daemon=True)]
        for t in self.threads:
            t.start()

    def produce(self, i):
        c = self.server.client(socket_timeout=5)
        try:
            n = 0
            while not self.stop.is_set():
                n += 1
                self.added[i].append(c.xadd(f"s{i}", {"n": n}, maxlen=MAXLEN,
                                            approximate=True))
                self.writes += 1
        except (redis.ConnectionError, redis.TimeoutError):
            pass  # killed

    def consume(self, i):
        c = self.server.client(socket_timeout=5)
        try:
            while not self.stop.is_set():
                got = c.xreadgroup("g", "c", {f"s{i}": ">"}, count=5, block=100)
                for _, entries in got or ():
                    for entry_id, _ in entries:
                        self.pending[i].add(entry_id)
                for entry_id in sorted(self.pending[i])[:3]:
                    self.in_flight[i] = entry_id
                    c.xack(f"s{i}", "g", entry_id)
                    self.pending[i].discard(entry_id)
                    self.acked[i].add(entry_id)
                    self.in_flight[i] = None
                    self.writes += 1
        except (redis.ConnectionError, redis.TimeoutError):
            pass

    def wait(self, writes):
        wait_for(lambda: self.writes >= writes, timeout=90, message=f"{writes} writes")

    def join(self):
        self.stop.set()
        for t in self.threads:
            t.join(10)


@pytest.mark.parametrize("rewrite", [False, True], ids=["plain", "mid-rewrite"])
def test_kill9_keeps_acknowledged_entries_and_the_pel(make_server, rewrite):
    server, load = kill9_under_load(make_server, StreamLoad, 600, rewrite)
    c = server.client()
    for i in range(len(load.added)):
        key = f"s{i}"
        ids = [entry_id for entry_id, _ in c.xrange(key)]
        added = load.added[i]
        assert added, "nothing was added"
        # The entries are the acknowledged ones from some point on (the
        # trims took the front), maybe one more whose reply was lost.
        known = set(added)
        kept = [entry_id for entry_id in ids if entry_id in known]
        extra = [entry_id for entry_id in ids if entry_id not in known]
        assert kept == added[len(added) - len(kept):] and kept[-1] == added[-1], key
        assert extra in ([], ids[-1:]), key
        assert len(ids) >= min(MAXLEN, len(added)), key
        pel = {p["message_id"] for p in c.xpending_range(key, "g", "-", "+", 100000)}
        lost_ack = {load.in_flight[i]} - {None}
        assert load.pending[i] - lost_ack <= pel, key  # given, not acked: still pending
        assert not (pel & load.acked[i]) - lost_ack, key  # acked: gone
    info = c.xinfo_stream("s0")
    assert info["entries-added"] >= len(load.added[0])
