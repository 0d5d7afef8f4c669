"""The floor: the least work a Python server can do to answer the
benchmark's requests, measured beside trisque (``python -m bench --floor``).

It is not a broker.  One process, one ``select.epoll`` loop, no trio,
hiredis parsing, a dict dispatch, and jobs that are only stored and handed
out: no TTL or retry timers, no argument checks, no memory accounting, no
AOF or cluster hooks, no statistics.  It does, per request, what any
Python server must (read, parse, run a function, format, send), so its
requests/s bound what trisque, or any Python server on this machine,
can reach; the throughput table shows both as ratios to redis-server.

    python -m bench.floor PORT      # serve (the benchmark starts it itself)

Requests it answers, as much as redis-benchmark and bench.throughput send:
PING, ADDJOB q body timeout, GETJOB [NOHANG] [COUNT n] FROM q, ACKJOB
id..., QLEN q, JSCAN cursor ... (every active job at once), INFO (only
registered_jobs), CONFIG GET (empty).
"""

import base64
import collections
import os
import select
import socket
import sys

import hiredis

jobs = {}  # id -> [queue, body, state]
queues = collections.defaultdict(collections.deque)
ids = {"pool": b"", "pos": 0}


def new_id():
    pool, pos = ids["pool"], ids["pos"]
    if pos + 32 > len(pool):
        pool, pos = base64.b64encode(os.urandom(3 * 8 * 4096)), 0
        ids["pool"] = pool
    ids["pos"] = pos + 32
    return b"D-" + pool[pos:pos + 32] + b"-05SQ"


def addjob(argv):
    job_id = new_id()
    job = [argv[1], argv[2], 0]
    jobs[job_id] = job
    queues[argv[1]].append((job_id, job))
    return b"+%s\r\n" % job_id


def getjob(argv):
    count = int(argv[argv.index(b"COUNT") + 1]) if b"COUNT" in argv else 1
    queue = queues.get(argv[-1])
    out = []
    while queue and len(out) < count:
        job_id, job = queue.popleft()
        job[2] = 1
        out.append(b"*3\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n" % (
            len(job[0]), job[0], len(job_id), job_id, len(job[1]), job[1]))
    if not out:
        return b"*-1\r\n"
    return b"*%d\r\n%s" % (len(out), b"".join(out))


def ackjob(argv):
    known = 0
    for job_id in argv[1:]:
        if jobs.pop(job_id, None) is not None:
            known += 1
    return b":%d\r\n" % known


def qlen(argv):
    return b":%d\r\n" % len(queues.get(argv[1], ()))


def jscan(argv):
    active = [job_id for job_id, job in jobs.items() if job[2] == 1]
    items = b"".join(b"$%d\r\n%s\r\n" % (len(i), i) for i in active)
    return b"*2\r\n$1\r\n0\r\n*%d\r\n%s" % (len(active), items)


def info(argv):
    text = b"registered_jobs:%d\r\n" % len(jobs)
    return b"$%d\r\n%s\r\n" % (len(text), text)


COMMANDS = {b"PING": lambda argv: b"+PONG\r\n", b"ADDJOB": addjob, b"GETJOB": getjob,
            b"ACKJOB": ackjob, b"QLEN": qlen, b"JSCAN": jscan, b"INFO": info,
            b"CONFIG": lambda argv: b"*0\r\n"}


def unknown(argv):
    return b"-ERR unknown command\r\n"


def serve(port):
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", port))
    listener.listen(512)
    epoll = select.epoll()
    epoll.register(listener.fileno(), select.EPOLLIN)
    clients = {}  # fd -> (socket, reader)
    table = {**COMMANDS, **{name.lower(): f for name, f in COMMANDS.items()}}
    while True:
        for fd, _ in epoll.poll():
            if fd == listener.fileno():
                sock, _ = listener.accept()
                sock.setblocking(False)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                clients[sock.fileno()] = (sock, hiredis.Reader())
                epoll.register(sock.fileno(), select.EPOLLIN)
                continue
            sock, reader = clients[fd]
            try:
                data = sock.recv(16384)
            except BlockingIOError:
                continue
            if not data:
                epoll.unregister(fd)
                del clients[fd]
                sock.close()
                continue
            reader.feed(data)
            out = []
            argv = reader.gets()
            while argv is not False:
                out.append(table.get(argv[0], unknown)(argv))
                argv = reader.gets()
            reply = b"".join(out)
            if len(reply) > 65536:  # (only JSCAN's: wait for the client)
                sock.setblocking(True)
                sock.sendall(reply)
                sock.setblocking(False)
            else:
                sock.send(reply)  # the kernel's buffer always takes this much


if __name__ == "__main__":
    serve(int(sys.argv[1]))
