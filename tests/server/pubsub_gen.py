"""Random Pub/Sub sessions for the differential test against redis-server
(test_pubsub_vs_redis.py): a few connections, each RESP2 or RESP3, that
subscribe, unsubscribe, publish, ping, RESET and run commands refused in
subscribed mode, in a seeded order.

A session is a list of steps ``(connection index, [argv, ...])``: the
requests one connection sends at once.  Every reply and push is compared
byte for byte, so the generator keeps to what has one right answer: an
UNSUBSCRIBE (SUNSUBSCRIBE) without arguments only while the connection has
at most one channel (Redis walks a hash table for the others), PUBSUB
CHANNELS only with a pattern that can name one channel.  It tracks each
connection's subscriptions for that, and its protocol (RESET goes back to
RESP2).  HELLO's reply names the server: a step that is a HELLO alone is
run but not compared (``UNCOMPARED``).
"""

from __future__ import annotations

import random

CHANNELS = [b"news", b"news.eu", b"news.us", b"jobs", b"x", b""]
# Each pattern and the channels above it matches.  Redis delivers one
# message to a client's matching patterns in the order of its pattern hash
# table, seeded at random at each start: the generator never gives a
# connection two patterns that match one channel.
MATCHES = {
    b"news.*": {b"news.eu", b"news.us"},
    b"*": {b"news", b"news.eu", b"news.us", b"jobs", b"x"},
    b"n?ws": {b"news"},
    b"[jx]*": {b"jobs", b"x"},
    b"news\\.eu": {b"news.eu"},
    b"*.us": {b"news.us"},
}
PATTERNS = list(MATCHES)
UNCOMPARED = b"HELLO"
MESSAGES = [b"hello", b"", b"\x00\xff\r\n", b"m" * 300, b"caf\xc3\xa9"]


class ConnState:
    def __init__(self, proto: int) -> None:
        self.proto = proto
        self.channels: set[bytes] = set()
        self.patterns: set[bytes] = set()
        self.shard: set[bytes] = set()

    def subscribed(self) -> bool:
        return bool(self.channels or self.patterns or self.shard)


def session(seed: int, conns: int = 3, steps: int = 60) -> tuple[list[int], list[tuple[int, list[list[bytes]]]]]:
    """The connections' protocols and the steps of one session."""
    rng = random.Random(seed)
    protos = [rng.choice([2, 3]) for _ in range(conns)]
    states = [ConnState(p) for p in protos]
    out: list[tuple[int, list[list[bytes]]]] = []
    for _ in range(steps):
        i = rng.randrange(conns)
        st = states[i]
        kind = rng.choices(
            ["sub", "psub", "ssub", "unsub", "punsub", "sunsub", "publish", "spublish",
             "ping", "refused", "pubsub", "reset", "multi", "lua", "hello"],
            [8, 6, 3, 5, 4, 2, 20, 4, 3, 3, 4, 1, 2, 2, 1])[0]
        if kind == "sub":
            names = rng.sample(CHANNELS, rng.randint(1, 3))
            st.channels.update(names)
            out.append((i, [[b"SUBSCRIBE", *names]]))
        elif kind == "psub":
            names = []
            for name in rng.sample(PATTERNS, rng.randint(1, 2)):
                taken = set().union(*(MATCHES[p] for p in st.patterns | set(names)
                                      if p != name))
                if not MATCHES[name] & taken:
                    names.append(name)
            if not names:
                continue
            st.patterns.update(names)
            out.append((i, [[b"PSUBSCRIBE", *names]]))
        elif kind == "ssub":
            name = rng.choice(CHANNELS)
            st.shard.add(name)
            out.append((i, [[b"SSUBSCRIBE", name]]))
        elif kind == "unsub":
            if len(st.channels) <= 1 and rng.random() < 0.4:
                st.channels.clear()
                out.append((i, [[b"UNSUBSCRIBE"]]))
            else:
                names = rng.sample(CHANNELS, rng.randint(1, 2))
                st.channels.difference_update(names)
                out.append((i, [[b"UNSUBSCRIBE", *names]]))
        elif kind == "punsub":
            if rng.random() < 0.4:  # (Redis 7.0 keeps patterns in a list: ordered)
                st.patterns.clear()
                out.append((i, [[b"PUNSUBSCRIBE"]]))
            else:
                name = rng.choice(PATTERNS)
                st.patterns.discard(name)
                out.append((i, [[b"PUNSUBSCRIBE", name]]))
        elif kind == "sunsub":
            if len(st.shard) <= 1 and rng.random() < 0.5:
                st.shard.clear()
                out.append((i, [[b"SUNSUBSCRIBE"]]))
            else:
                name = rng.choice(CHANNELS)
                st.shard.discard(name)
                out.append((i, [[b"SUNSUBSCRIBE", name]]))
        elif kind == "publish":
            burst = [[b"PUBLISH", rng.choice(CHANNELS), rng.choice(MESSAGES)]
                     for _ in range(rng.randint(1, 4))]
            out.append((i, burst))
        elif kind == "spublish":
            out.append((i, [[b"SPUBLISH", rng.choice(CHANNELS), rng.choice(MESSAGES)]]))
        elif kind == "ping":
            out.append((i, [[b"PING"] if rng.random() < 0.5 else [b"PING", b"hey"]]))
        elif kind == "refused":
            out.append((i, [rng.choice([[b"GET", b"k"], [b"SET", b"k", b"v"],
                                        [b"CLIENT", b"GETNAME"], [b"ECHO", b"e"]])]))
        elif kind == "pubsub":
            out.append((i, [rng.choice([
                [b"PUBSUB", b"NUMSUB", *rng.sample(CHANNELS, 2)],
                [b"PUBSUB", b"NUMPAT"],
                [b"PUBSUB", b"CHANNELS", rng.choice(CHANNELS[:-1])],
                [b"PUBSUB", b"SHARDNUMSUB", rng.choice(CHANNELS)],
                [b"PUBSUB", b"SHARDCHANNELS", rng.choice(CHANNELS[:-1])]])]))
        elif kind == "reset":
            states[i] = ConnState(2)
            out.append((i, [[b"RESET"]]))
        elif kind == "multi":
            if st.subscribed() and st.proto == 2:
                continue  # MULTI refused, the rest would run at once
            out.append((i, [[b"MULTI"], [b"PUBLISH", rng.choice(CHANNELS), b"in-multi"],
                            [b"SET", b"k", b"v"], [b"EXEC"]]))
        elif kind == "lua":
            out.append((i, [[b"EVAL", b"return redis.call('publish', ARGV[1], ARGV[2])", b"0",
                             rng.choice(CHANNELS), b"from-lua"]]))
        elif kind == "hello":
            if st.subscribed():
                continue  # (HELLO's map names the server: not compared)
            st.proto = rng.choice([2, 3])
            out.append((i, [[b"HELLO", str(st.proto).encode()]]))
    return protos, out
