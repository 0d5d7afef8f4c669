"""Fixtures for trisque.client's tests: real nodes on loopback.

``node`` is one server shared by a module (emptied per test by ``fresh``);
``cluster3`` and ``make_cluster`` come from tests/cluster/conftest.py (a
test that kills nodes builds its own cluster)."""

import socket
import threading

import hiredis
import pytest

from tests.cluster.conftest import cluster3, cluster3_shared, make_cluster  # noqa: F401
from tests.harness import Server, free_port


@pytest.fixture(scope="module")
def node():
    srv = Server().start()
    yield srv
    srv.cleanup()


@pytest.fixture
def fresh(node):
    """The module's node, emptied (and its config back) before the test."""
    with node.client() as c:
        c.execute_command("DEBUG", "FLUSHALL")
    yield node
    with node.client() as c:
        c.execute_command("CONFIG", "SET", "maxmemory", "0")
        c.execute_command("DEBUG", "FLUSHALL")


def addr(server):
    return f"127.0.0.1:{server.port}"


def dead_address():
    """An address nothing listens on (a port free now)."""
    return f"127.0.0.1:{free_port()}"


@pytest.fixture
def silent_node():
    """A TCP listener that accepts connections and never answers: a node
    that hangs.  Its address as 'host:port'."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    accepted = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                accepted.append(listener.accept()[0])
            except OSError:
                continue
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join()
    for s in accepted:
        s.close()
    listener.close()


@pytest.fixture
def loading_node():
    """A listener that answers every command with -LOADING, as a node
    still loading its AOF does (a real node loads too fast to be caught
    at it).  Its address as 'host:port'."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    stop = threading.Event()
    threads = []

    def serve(conn):
        requests = hiredis.Reader()
        with conn:
            conn.settimeout(0.1)
            while not stop.is_set():
                try:
                    data = conn.recv(65536)
                except OSError:
                    continue
                if not data:
                    return
                requests.feed(data)
                while requests.gets() is not False:  # one error per command
                    conn.sendall(b"-LOADING Disque is loading the dataset in memory\r\n")

    def accept():
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                conn = listener.accept()[0]
            except OSError:
                continue
            thread = threading.Thread(target=serve, args=(conn,), daemon=True)
            thread.start()
            threads.append(thread)
    acceptor = threading.Thread(target=accept, daemon=True)
    acceptor.start()
    yield f"127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    acceptor.join()
    for thread in threads:
        thread.join()
    listener.close()
