"""The HTTP port's password: the node's ``requirepass``, when it has one.

A request proves it knows the password with HTTP Basic authentication
(any user name: the node has one password, no users) or a bearer token
equal to the password.  The comparison takes constant time.  A request
without credentials gets 401 with a ``WWW-Authenticate`` challenge at
once (a browser then asks for them); a wrong password is logged, counted
in INFO's ``auth_failures`` and answered ``auth-failure-delay-ms`` late, as
a wrong AUTH on the client port is (only that connection waits).

Without ``requirepass`` nothing is asked: the port is as open as the client
port (protected mode aside), and read-only (job_actions.py).
"""

import base64
import binascii
import hmac
from typing import Any, Optional

import trio

from ..shell import log
from .http_connection import Request, Response

REALM = "trisque"
CHALLENGE = f'Basic realm="{REALM}", charset="UTF-8"'


def password_in(request: Request) -> Optional[bytes]:
    """The password the request carries (Basic or Bearer), None if none
    or a header that cannot be read."""
    header = request.headers.get("authorization", "")
    scheme, _, value = header.strip().partition(" ")
    scheme = scheme.lower()
    if scheme == "bearer":
        return value.strip().encode("latin-1")
    if scheme == "basic":
        try:
            decoded = base64.b64decode(value.strip(), validate=True)
        except (binascii.Error, ValueError):
            return None
        _user, colon, password = decoded.partition(b":")
        return password if colon else None
    return None


def matches(given: bytes, password: str) -> bool:
    """Constant time: the answer says nothing of how much matched."""
    return hmac.compare_digest(given, password.encode())


async def refusal(node: Any, request: Request) -> Optional[Response]:
    """None if ``request`` may go on (no password set, or the right one);
    else the 401 to answer, after the failure delay for a wrong one."""
    password: str = node.config.requirepass
    if not password:
        return None
    given = password_in(request)
    if given is not None and matches(given, password):
        return None
    if request.headers.get("authorization"):
        node.stats.auth_failures += 1
        log.warning(f"Failed HTTP authentication from {request.peer} "
                    f"({request.method} {request.path}): wrong password")
        delay_ms: int = node.config.auth_failure_delay_ms
        if delay_ms > 0:
            await trio.sleep(delay_ms / 1000)
        text = b"wrong password\n"
    else:
        text = b"authentication required: the node's password (requirepass)\n"
    return Response(401, "text/plain; charset=utf-8", text,
                    (("www-authenticate", CHALLENGE),))
