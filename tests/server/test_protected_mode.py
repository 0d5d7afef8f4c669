"""Protected mode: no password and a client from outside loopback: Redis 7's
-DENIED, then closed.  A second address on lo inside 198.18.0.0/15 (the
benchmarking range, never routed) gives a non-loopback source; without the
right to add one the live tests skip and the decision function is tested."""

import socket
import subprocess

import pytest

from tests.server.util import Raw
from trisque.core.admin import protected_mode
from trisque.core.admin.config import Config

OUTSIDE = "198.18.0.77"


@pytest.fixture(scope="module")
def outside_address():
    present = OUTSIDE in subprocess.run(["ip", "-4", "addr", "show", "dev", "lo"],
                                        capture_output=True, text=True).stdout
    added = False
    if not present:
        done = subprocess.run(["ip", "addr", "add", f"{OUTSIDE}/32", "dev", "lo"],
                              capture_output=True)
        if done.returncode != 0:
            pytest.skip("cannot add an address in 198.18.0.0/15 here")
        added = True
    yield OUTSIDE
    if added:
        subprocess.run(["ip", "addr", "del", f"{OUTSIDE}/32", "dev", "lo"], capture_output=True)


def _first_reply(address, port):
    with socket.create_connection((address, port), timeout=5,
                                  source_address=(address, 0)) as sock:
        sock.settimeout(0.3)
        try:  # a refusal comes at once, before any request
            data = sock.recv(65536)
        except socket.timeout:
            data = b""
        sock.settimeout(5)
        if not data:
            sock.sendall(b"PING\r\n")
        while not data.endswith(b"\r\n"):
            chunk = sock.recv(65536)
            if not chunk:
                return data  # closed by the node
            data += chunk
        return data


def test_decision():
    config = Config()  # the defaults: protected, no password
    assert protected_mode.denied(config.protected_mode, config.requirepass, "198.18.0.1")
    for outside in ("10.1.2.3", "2001:db8::1", "::ffff:10.0.0.1", "not-an-ip"):
        assert protected_mode.denied(True, "", outside), outside
    for local in ("127.0.0.1", "127.9.9.9", "::1", "::ffff:127.0.0.1", None):
        assert not protected_mode.denied(True, "", local), local
    assert not protected_mode.denied(True, "pw", "198.18.0.1")
    assert not protected_mode.denied(False, "", "198.18.0.1")


def test_denied_from_outside_loopback(make_server, outside_address):
    srv = make_server(config=f"bind 127.0.0.1 {outside_address}\n")
    assert _first_reply(outside_address, srv.port) == protected_mode.DENIED
    assert b"Setup a an authentication password" in protected_mode.DENIED  # Redis 7.0.15
    with Raw(srv.port) as local:  # loopback: served
        assert local.call("PING") == b"PONG"
        assert "protected_mode_denied:1" in local.call("INFO", "stats").decode()
        # a password lifts it, as does protected-mode no
        assert local.call("CONFIG", "SET", "requirepass", "pw") == b"OK"
        assert _first_reply(outside_address, srv.port).startswith(b"-NOAUTH")
        assert local.call("CONFIG", "SET", "protected-mode", "no") == b"OK"
        assert local.call("CONFIG", "SET", "requirepass", "") == b"OK"
        assert _first_reply(outside_address, srv.port) == b"+PONG\r\n"
    assert "refused: protected mode" in srv.log()


def test_protected_mode_no_from_the_config_file(make_server, outside_address):
    srv = make_server(config=f"bind 127.0.0.1 {outside_address}\nprotected-mode no\n")
    assert _first_reply(outside_address, srv.port) == b"+PONG\r\n"
