"""A bounded fuzz campaign against a live node: connections sending random
bytes, and valid request streams (Disque's and the keyspace's commands with
random arguments) mutated at the byte level, split into random reads.  The
node must not crash, hang or log an internal error, and a well-behaved
redis-py client keeps working throughout.  TRISQUE_FUZZ_CAMPAIGN_S sets the
length (4 s in make test); the seed is printed, and TRISQUE_FUZZ_SEED
replays one."""

import os
import random
import socket
import time

from tests.fuzz_settings import CAMPAIGN_S
from tests.harness import wait_for
from tests.server.util import encode

# Admin commands (SHUTDOWN, CONFIG, DEBUG, CLUSTER, CLIENT KILL, FLUSHALL,
# SCRIPT, EVAL loops...) are left out: they may stop the node by design.
COMMANDS = [
    ("ADDJOB", "q", "W", "N"), ("ADDJOB", "q", "W", "N", "RETRY", "N", "TTL", "N"),
    ("ADDJOB", "W", "W", "N", "DELAY", "N", "MAXLEN", "N", "ASYNC"),
    ("GETJOB", "NOHANG", "FROM", "q"), ("GETJOB", "TIMEOUT", "N", "COUNT", "N", "FROM", "q", "W"),
    ("GETJOB", "NOHANG", "WITHCOUNTERS", "FROM", "W"), ("ACKJOB", "J"), ("FASTACK", "J", "J"),
    ("NACK", "J"), ("WORKING", "J"), ("SHOW", "J"), ("ENQUEUE", "J"), ("DEQUEUE", "J"),
    ("DELJOB", "J"), ("QLEN", "q"), ("QPEEK", "q", "N"), ("QSTAT", "q"),
    ("JSCAN", "N", "COUNT", "N", "QUEUE", "W", "STATE", "W", "REPLY", "W"),
    ("QSCAN", "COUNT", "N", "MINLEN", "N"), ("PING",), ("ECHO", "W"), ("HELLO",),
    ("HELLO", "N"), ("INFO", "W"), ("TIME",), ("SET", "W", "W"), ("GET", "W"),
    ("INCR", "W"), ("INCRBY", "W", "N"), ("LPUSH", "W", "W", "W"), ("RPOP", "W"),
    ("LRANGE", "W", "N", "N"), ("LINDEX", "W", "N"), ("LSET", "W", "N", "W"),
    ("HSET", "W", "W", "W"), ("HGETALL", "W"), ("SADD", "W", "W"), ("SMEMBERS", "W"),
    ("ZADD", "W", "N", "W"), ("ZRANGE", "W", "N", "N", "WITHSCORES"), ("EXPIRE", "W", "N"),
    ("DEL", "W", "W"), ("EXISTS", "W"), ("TYPE", "W"), ("SCAN", "N", "COUNT", "N"),
    ("MULTI",), ("EXEC",), ("DISCARD",), ("WATCH", "W"), ("BLPOP", "W", "N"),
    ("SELECT", "N"), ("SETRANGE", "W", "N", "W"), ("GETRANGE", "W", "N", "N"),
]
WORDS = ["q", "k", "l", "h", "", "x" * 300, "\x00\r\n", "-1", "0", "1", "9999999999999",
         "NOHANG", "COUNT", "FROM", "BODY", "all", "*"]
NUMBERS = ["0", "1", "-1", "2", "100", "65535", "65536", "9223372036854775807",
           "-9223372036854775808", "99999999999999999999", "1.5", "nan", "x"]


def random_request(rng, job_ids):
    shape = rng.choice(COMMANDS)
    argv = [shape[0]]
    for slot in shape[1:]:
        if slot == "W":
            argv.append(rng.choice(WORDS))
        elif slot == "N":
            argv.append(rng.choice(NUMBERS) if rng.random() < 0.7 else str(rng.randint(0, 5)))
        elif slot == "J":
            argv.append(rng.choice(job_ids) if job_ids and rng.random() < 0.7 else
                        "D-" + "".join(rng.choice("0123456789abcdef-") for _ in range(38)))
        else:
            argv.append(slot)
    return encode(*argv)


def mutate(rng, data):
    data = bytearray(data)
    for _ in range(rng.randint(0, 4)):
        pos = rng.randrange(len(data) + 1)
        how = rng.random()
        if how < 0.4 and pos < len(data):
            data[pos] = rng.randrange(256)
        elif how < 0.7:
            data[pos:pos] = rng.choice([b"*", b"$", b"\r\n", b"*99999999\r\n", b"$-1\r\n",
                                        b"$1048577\r\n", bytes([rng.randrange(256)])])
        else:
            del data[pos:pos + rng.randint(1, 8)]
    return bytes(data)


def one_connection(port, rng, job_ids):
    if rng.random() < 0.2:
        stream = rng.randbytes(rng.randint(1, 3000))
    else:
        stream = b"".join(random_request(rng, job_ids) for _ in range(rng.randint(1, 40)))
        if rng.random() < 0.8:
            stream = mutate(rng, stream)
    with socket.create_connection(("127.0.0.1", port), timeout=2) as sock:
        sock.settimeout(0.3)
        pos = 0
        try:
            while pos < len(stream):
                step = rng.randint(1, 600)
                sock.sendall(stream[pos:pos + step])
                pos += step
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline and sock.recv(65536):
                pass
        except OSError:  # closed on a protocol error, or a timeout: both fine
            pass


def test_random_and_mutated_streams_against_a_live_node(make_server):
    seed = int(os.environ.get("TRISQUE_FUZZ_SEED", random.randrange(1 << 30)))
    print(f"fuzz campaign seed {seed}")
    rng = random.Random(seed)
    srv = make_server(config="busy-reply-threshold 200\n")
    witness = srv.client(socket_timeout=5)
    job_ids = [witness.execute_command("ADDJOB", "q", "seed%d" % i, 0).decode() for i in range(5)]
    deadline = time.monotonic() + CAMPAIGN_S
    connections = 0
    while time.monotonic() < deadline:
        one_connection(srv.port, rng, job_ids)
        connections += 1
        if connections % 10 == 0:
            started = time.monotonic()
            assert witness.ping()
            assert time.monotonic() - started < 2, "the node stalled"
            assert srv.proc.poll() is None, srv.log()[-3000:]
    # the well-behaved client's work still goes through
    job = witness.execute_command("ADDJOB", "witness", "w", 0)
    got = witness.execute_command("GETJOB", "TIMEOUT", 1000, "FROM", "witness")
    assert got[0][1] == job
    assert witness.execute_command("ACKJOB", job) == 1
    wait_for(lambda: b"connected_clients:1\r" in witness.execute_command("INFO", "clients")
             or witness.info("clients")["connected_clients"] == 1, timeout=10)
    log = srv.log()
    assert "Internal error" not in log, log[log.find("Internal error"):][:3000]
    assert srv.proc.poll() is None
    assert connections > 10
    print(f"fuzz campaign: {connections} connections, seed {seed}: passed")
