"""The ``nodes`` option: which broker nodes to talk to, and failing over
from one to the next when a node does not answer."""

from __future__ import annotations

from typing import Sequence

from .connection import Address, Connection, NodeUnavailable, format_address
from .options import OptionError


def parse_nodes(text: str) -> list[Address]:
    """"h1:7711,h2:7711" -> [("h1", 7711), ("h2", 7711)]; a bare host means
    port 7711."""
    nodes: list[Address] = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        host, _, port_text = item.rpartition(":")
        if not host:
            host, port_text = port_text, "7711"
        try:
            port = int(port_text)
        except ValueError:
            raise OptionError(f"option 'nodes': bad port in {item!r}") from None
        if not 0 < port < 65536:
            raise OptionError(f"option 'nodes': port out of range in {item!r}")
        nodes.append((host, port))
    if not nodes:
        raise OptionError("option 'nodes' lists no node")
    return nodes


def connect_first(nodes: Sequence[Address], start: int,
                  timeout_s: float) -> tuple[int, Connection]:
    """Connect to nodes[start], or to the next ones in turn when it is down:
    returns the index reached and its connection."""
    errors = []
    for k in range(len(nodes)):
        index = (start + k) % len(nodes)
        try:
            return index, Connection(nodes[index], timeout_s)
        except NodeUnavailable as e:
            errors.append(str(e))
    raise NodeUnavailable("option 'nodes': no node reachable (" + "; ".join(errors) + ")")


def check_reachable(nodes: Sequence[Address], timeout_s: float) -> None:
    """Fail planning at once, naming the option, when no node answers."""
    _, conn = connect_first(nodes, 0, timeout_s)
    conn.close()


def address_key(address: Address) -> str:
    return format_address(address)


def parse_address_key(key: str) -> Address:
    host, _, port = key.rpartition(":")
    return host, int(port)
