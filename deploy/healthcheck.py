#!/usr/bin/env python3
"""The image's HEALTHCHECK (``trisque-healthcheck``): PING the node from
inside its container.

Healthy means the node serves clients: it answers ``+PONG``, or
``-NOAUTH`` when it has a requirepass. ``-LOADING`` (still reading its
AOF), any other reply, a refused connection or no reply within 2 s are
unhealthy. The client port is TRISQUE_PORT's, else the config file's
``port``, else 7711. Standard library only: the image has no redis-cli.
"""

import os
import socket
import sys

CONFIG_FILE = "/etc/trisque/disque.conf"
DEFAULT_PORT = 7711
TIMEOUT_S = 2.0
MAX_REPLY_BYTES = 4096  # a PING's reply is one short line
HEALTHY_REPLIES = (b"+PONG", b"-NOAUTH")


def client_port(config_file: str = CONFIG_FILE) -> int:
    """The port the entry point gives trisque-server (its last ``port``)."""
    from_env = os.environ.get("TRISQUE_PORT", "").split()
    if from_env:
        return int(from_env[0])
    port = DEFAULT_PORT
    try:
        with open(config_file, encoding="utf-8", errors="replace") as f:
            for line in f:
                words = line.split()
                if len(words) == 2 and words[0].lower() == "port":
                    port = int(words[1])
    except (OSError, ValueError):
        pass
    return port


def ping(port: int) -> bytes:
    """The first line the node answers to an inline PING."""
    with socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT_S) as conn:
        conn.sendall(b"PING\r\n")
        reply = b""
        while b"\r\n" not in reply and len(reply) < MAX_REPLY_BYTES:
            chunk = conn.recv(MAX_REPLY_BYTES)
            if not chunk:
                break
            reply += chunk
    return reply


def main() -> int:
    port = client_port()
    try:
        reply = ping(port)
    except OSError as exc:
        print(f"port {port}: {exc}")
        return 1
    if reply.startswith(HEALTHY_REPLIES):
        return 0
    print(f"port {port}: {reply[:200]!r}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
