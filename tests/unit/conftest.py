"""A node core driven without sockets, on a fake clock.

``core.run(client, *args)`` executes one request and returns its decoded
reply (hiredis decodes RESP2 and RESP3; an error reply comes back as a
``hiredis.ReplyError`` instance, see ``is_error``).  ``core.advance(s)``
moves the fake clock and runs every deadline that became due, as the
shell's timer loop would.
"""

import random

import hiredis
import pytest

from tests.harness import decode_all
from trisque.core.admin.config import Config
from trisque.core.node import Node
from trisque.core.table import COMMANDS

NODE_ID = "a" * 40
START = 1_700_000_000.0  # a fixed, realistic unix time


def is_error(reply, prefix=""):
    return isinstance(reply, hiredis.ReplyError) and str(reply).startswith(prefix)


class Core:
    def __init__(self, config=None, seed=1, random_bytes=None):
        self.now = START
        self.node = Node(config or Config(), NODE_ID, clock=lambda: self.now, table=COMMANDS,
                         rng=random.Random(seed), random_bytes=random_bytes)
        self.default = self.client()

    def client(self, proto=2, disque_resp3=False):
        """A new client speaking RESP ``proto``; ``disque_resp3``: it sent
        CLIENT DISQUE-RESP3 ON (Disque's commands answer in RESP3 types)."""
        client = self.node.add_client("127.0.0.1:%d" % (40000 + self.node.next_client_id))
        client.proto = proto
        if disque_resp3:
            assert self.run("CLIENT", "DISQUE-RESP3", "ON", client=client) == b"OK"
        return client

    @staticmethod
    def _args(args):
        return [a if isinstance(a, bytes) else str(a).encode() for a in args]

    def run(self, *args, client=None):
        """Execute one command; return its single reply (None if none was
        produced, e.g. a blocked GETJOB)."""
        client = client or self.default
        before = len(client.out)
        assert before == 0, "unread output: %r" % client.out
        self.node.execute(client, self._args(args))
        replies = self.replies(client)
        assert len(replies) <= 1, replies
        return replies[0] if replies else None

    def __call__(self, *args, client=None):
        return self.run(*args, client=client)

    def replies(self, client=None):
        """Decode and consume everything queued for ``client``."""
        client = client or self.default
        data = b"".join(client.out)
        client.out.clear()
        return decode_all(data)

    def advance(self, seconds):
        """Move the clock forward, running deadlines at every point where
        one falls due (as a timer loop that never oversleeps would)."""
        target = self.now + seconds
        while True:
            next_ms = self.node.deadlines.next_ms()
            if next_ms is None or next_ms / 1000 > target:
                break
            self.now = max(self.now, next_ms / 1000)
            self.node.run_timers()
        self.now = target
        self.node.run_timers()
        self.node.check_invariants()

    def cron(self):
        self.node.cron()

    def job(self, job_id):
        if isinstance(job_id, str):
            job_id = job_id.encode()
        return self.node.jobs.get(job_id)

    def show(self, job_id):
        reply = self.run("SHOW", job_id)
        if reply is None:
            return None
        return {k.decode(): v for k, v in zip(reply[::2], reply[1::2])}


@pytest.fixture
def core():
    c = Core()
    yield c
    c.node.check_invariants()


@pytest.fixture
def make_core():
    def make(**settings):
        config = Config()
        for name, value in settings.items():
            setattr(config, name, value)
        return Core(config)
    return make
