"""A Celery result backend on the nodes' keyspace: ``result_backend =
"trisque://h1:7711;trisque://h2:7711"``.

Why the keyspace and not jobs: a result is read by its task's ID, maybe
several times and by several callers, and expires; a job is consumed once
and found by its own ID.  The keyspace is a node's own (not replicated), so
the backend writes each result to every node it knows (SET with the
result's expiry) and reads it from the first node that has it
(trisque/client/every_node.py): a result survives while one node that
stored it lives.  Chord counters (INCR) live on the first node that answers.
"""

from __future__ import annotations

from typing import Any, Optional

from celery.backends.base import KeyValueStoreBackend

from trisque.client import Client
from trisque.client.every_node import EveryNode


def node_urls(url: str) -> list[str]:
    """``trisque://h1:7711;trisque://h2:7711`` (or h1:7711,h2:7711) -> URLs."""
    urls = []
    for part in url.replace(",", ";").split(";"):
        part = part.strip()
        if not part:
            continue
        if "://" not in part:
            part = f"trisque://{part}"
        scheme, rest = part.split("://", 1)
        urls.append(f"{scheme}://{rest.split('/', 1)[0]}")
    return urls


class TrisqueBackend(KeyValueStoreBackend):
    supports_native_join = False
    supports_autoexpire = True
    implements_incr = True

    def __init__(self, url: Optional[str] = None, **kwargs: Any) -> None:
        super().__init__(url=url, **kwargs)
        self.client = Client(node_urls(url or "trisque://127.0.0.1:7711"))
        self.every_node = EveryNode(self.client)

    def as_uri(self, include_password: bool = False) -> str:
        """The node list, without passwords unless asked (Celery's banner
        parses one URL; ours is a list)."""
        urls = node_urls(self.url or "")
        if not include_password:
            urls = [u.split("://", 1)[0] + "://" + u.split("@", 1)[-1].split("://")[-1]
                    for u in urls]
        return ";".join(urls)

    def get(self, key: bytes | str) -> Optional[bytes]:
        return self.every_node.get(key)

    def mget(self, keys: list[bytes | str]) -> list[Optional[bytes]]:
        return [self.get(key) for key in keys]

    def set(self, key: bytes | str, value: bytes | str) -> None:
        if self.expires:
            self.every_node.write("SET", key, value, "PX", int(self.expires * 1000))
        else:
            self.every_node.write("SET", key, value)

    def delete(self, key: bytes | str) -> None:
        self.every_node.write("DEL", key)

    def incr(self, key: bytes | str) -> int:
        return int(self.every_node.first("INCR", key))

    def expire(self, key: bytes | str, value: int) -> None:
        self.every_node.write("EXPIRE", key, int(value))
