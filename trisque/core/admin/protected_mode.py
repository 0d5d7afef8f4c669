"""Protected mode, as Redis 7: a node with no password answers only its own
host.  With ``protected-mode yes`` (the default) and no ``requirepass``, a
client connecting from anywhere but the loopback interface or the unix
socket gets Redis's explanatory -DENIED error and is closed at once.  With
the default ``bind 127.0.0.1`` no such client can reach us; the rule
matters once the node binds other addresses (``bind 0.0.0.0``).
"""

from __future__ import annotations

import ipaddress

# Redis 7.0's text, byte for byte (its typo "Setup a an" too).
DENIED = (
    b"-DENIED Redis is running in protected mode because protected mode is "
    b"enabled and no password is set for the default user. In this mode "
    b"connections are only accepted from the loopback interface. If you want "
    b"to connect from external computers to Redis you may adopt one of the "
    b"following solutions: 1) Just disable protected mode sending the command "
    b"'CONFIG SET protected-mode no' from the loopback interface by connecting "
    b"to Redis from the same host the server is running, however MAKE SURE "
    b"Redis is not publicly accessible from internet if you do so. Use CONFIG "
    b"REWRITE to make this change permanent. 2) Alternatively you can just "
    b"disable the protected mode by editing the Redis configuration file, and "
    b"setting the protected mode option to 'no', and then restarting the "
    b"server. 3) If you started the server manually just for testing, restart "
    b"it with the '--protected-mode no' option. 4) Setup a an authentication "
    b"password for the default user. NOTE: You only need to do one of the "
    b"above things in order for the server to start accepting connections "
    b"from the outside.\r\n"
)


def is_local(peer_ip: str | None) -> bool:
    """Loopback (127.0.0.0/8, ::1, ::ffff:127.x) or a unix socket (None)."""
    if peer_ip is None:
        return True
    try:
        address = ipaddress.ip_address(peer_ip.split("%", 1)[0])
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


def denied(protected_mode: bool, requirepass: str, peer_ip: str | None) -> bool:
    """Whether a client from ``peer_ip`` (None: the unix socket) is refused
    (``protected-mode`` and ``requirepass`` as configured now)."""
    return protected_mode and not requirepass and not is_local(peer_ip)
