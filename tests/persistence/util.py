"""Helpers for the persistence tests: load generators that remember which
commands were answered, the AOF's content, server exits."""

import os
import threading
import time

import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from tests.harness import decode_all, wait_for


def aof_path(server, name="disque.aof"):
    return os.path.join(server.dir, name)


def aof_records(server):
    """Every record of the file, parsed by hiredis (a standard RESP reader)."""
    with open(aof_path(server), "rb") as f:
        return decode_all(f.read())


def kill9_under_load(make_server, make_load, writes, rewrite):
    """A node with ``appendfsync always`` killed -9 under ``make_load(server)``
    (an object with ``wait(writes)`` and ``join()``) after ``writes``
    writes, with a BGREWRITEAOF and as many again in the middle if
    ``rewrite``; restarted.  Returns (server, load)."""
    server = make_server(config="appendonly yes\nappendfsync always\n")
    load = make_load(server)
    load.wait(writes)
    if rewrite:
        server.client().bgrewriteaof()
        load.wait(2 * writes)
    server.kill()
    load.join()
    server.start()
    return server, load


def all_job_ids(client):
    ids = set()
    cursor = 0
    while True:
        cursor, batch = client.execute_command("JSCAN", cursor, "COUNT", 1000)
        ids.update(batch)
        if int(cursor) == 0:
            return ids


def persistence(client):
    return client.info("persistence")


def wait_rewrite_done(client, timeout=20):
    def done():
        info = persistence(client)
        return (not info["aof_rewrite_in_progress"] and not info["aof_rewrite_scheduled"]
                and info)
    return wait_for(done, timeout, message="the AOF rewrite to finish")


def wait_exit(server, timeout=15):
    server.proc.wait(timeout)
    return server.proc.returncode


class Load:
    """Threads sending ADDJOB (and ACKJOB for every third job) until the
    server dies or ``stop()``; ``added``/``acked`` hold what was answered."""

    def __init__(self, server, threads=4, pipeline=1, queue="q", ack=True):
        self.server = server
        self.added = []
        self.acked = []  # ACKJOB answered 1
        self.ack_sent = []  # ACKJOB sent (maybe applied, maybe not answered)
        self.errors = []
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._run, args=(k, pipeline, queue, ack),
                                          daemon=True) for k in range(threads)]
        for t in self._threads:
            t.start()

    def _run(self, k, pipeline, queue, ack):
        # No retries: a dead server must end the load at once.
        client = self.server.client(socket_timeout=20, retry=Retry(NoBackoff(), 0))
        n = 0
        try:
            while not self._stop.is_set():
                if pipeline > 1:
                    pipe = client.pipeline(transaction=False)
                    for i in range(pipeline):
                        pipe.execute_command("ADDJOB", queue, f"t{k}-{n + i}", 0)
                    ids = pipe.execute()
                else:
                    ids = [client.execute_command("ADDJOB", queue, f"t{k}-{n}", 0)]
                n += len(ids)
                with self._lock:
                    self.added.extend(ids)
                if ack and n % 3 == 0:
                    victim = ids[0]
                    with self._lock:
                        self.ack_sent.append(victim)
                    if client.execute_command("ACKJOB", victim) == 1:
                        with self._lock:
                            self.acked.append(victim)
        except (redis.ConnectionError, redis.TimeoutError, ConnectionError, OSError):
            pass
        except redis.ResponseError as exc:
            self.errors.append(exc)
        finally:
            client.close()

    def wait_added(self, count, timeout=20):
        wait_for(lambda: len(self.added) >= count, timeout,
                 message=f"{count} jobs added by the load")

    def stop(self):
        self._stop.set()
        for t in self._threads:
            t.join(30)


def sleep_until(condition, timeout=10, interval=0.002):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(interval)
    return False
