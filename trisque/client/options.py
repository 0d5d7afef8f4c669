"""A client's settings, shared by its connections (sync or asyncio)."""

import ssl
from dataclasses import dataclass
from typing import Optional

from trisque.client.nodes import NodeAddress


@dataclass(frozen=True)
class ClientOptions:
    password: Optional[str] = None
    username: Optional[str] = None
    protocol: int = 2  # 3: HELLO 3 on connect (RESP3)
    tls: bool = False  # every node over TLS (trisques:// turns it on per node)
    ssl_context: Optional[ssl.SSLContext] = None  # default: the system's CAs
    tls_ca_file: Optional[str] = None
    tls_cert_file: Optional[str] = None  # a client certificate, for tls-auth-clients
    tls_key_file: Optional[str] = None
    connect_timeout_s: float = 5.0
    read_timeout_s: float = 10.0  # beyond the time a command blocks on purpose
    max_idle_per_node: int = 16  # idle connections kept per node

    def __post_init__(self) -> None:
        if self.protocol not in (2, 3):
            raise ValueError("protocol must be 2 or 3")
        if self.connect_timeout_s <= 0 or self.read_timeout_s <= 0:
            raise ValueError("timeouts must be positive")

    def password_for(self, address: NodeAddress) -> Optional[str]:
        return address.password if address.password is not None else self.password

    def uses_tls(self, address: NodeAddress) -> bool:
        return self.tls or address.tls

    def make_ssl_context(self) -> ssl.SSLContext:
        if self.ssl_context is not None:
            return self.ssl_context
        context = ssl.create_default_context(cafile=self.tls_ca_file)
        if self.tls_cert_file is not None:
            context.load_cert_chain(self.tls_cert_file, self.tls_key_file)
        return context
