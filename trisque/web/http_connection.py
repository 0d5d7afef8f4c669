"""One HTTP/1.1 connection: h11 parses, this task does the I/O, with limits.

A slow or hostile client must never hold up job traffic, which shares the
trio loop.  So every step is bounded: the request head (h11's
``max_incomplete_event_size``), the time a whole request may take to
arrive (slowloris), the time a response may take to leave (a client that
does not read), the requests one connection may send, and request bodies
(none accepted: GET and HEAD, and POST without a body for the dashboard's
job actions).  At a bound the connection is answered an error where HTTP
still allows one, and closed.
"""

from dataclasses import dataclass
from http import HTTPStatus
from typing import Awaitable, Callable, Optional

import h11
import trio

RECEIVE_BYTES = 16 * 1024


@dataclass(frozen=True)
class Limits:
    """Bounds on one HTTP connection."""

    max_head_bytes: int = 16 * 1024  # request line + headers
    request_timeout_s: float = 10.0  # a whole request, or the idle wait for it
    send_timeout_s: float = 10.0  # a whole response
    max_requests: int = 1000  # per connection, then it is closed


@dataclass(frozen=True)
class Response:
    status: int
    content_type: str
    body: bytes
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Request:
    method: str
    path: str  # without its query string
    headers: dict[str, str]  # names lower-cased; a repeated header: its last value
    peer: str  # "ip:port", for the log


# A request -> its response (async: a refused password is answered late).
Handler = Callable[[Request], Awaitable[Response]]
METHODS = ("GET", "HEAD", "POST")


def plain(status: int, text: str) -> Response:
    return Response(status, "text/plain; charset=utf-8", text.encode())


async def serve_connection(stream: trio.abc.Stream, handle: Handler, limits: Limits,
                           peer: str = "") -> None:
    """Answer requests on ``stream`` until the client or a limit ends it."""
    conn = h11.Connection(h11.SERVER, max_incomplete_event_size=limits.max_head_bytes)
    try:
        for _ in range(limits.max_requests):
            response: Optional[Response] = None
            method = ""
            with trio.move_on_after(limits.request_timeout_s) as waited:
                try:
                    request = await _next_request(stream, conn)
                except h11.RemoteProtocolError as exc:
                    response = plain(exc.error_status_hint, "bad request\n")
                    request = None
                    if conn.our_state not in (h11.IDLE, h11.SEND_RESPONSE):
                        return
                    conn = _fresh_for_error(conn)
            if waited.cancelled_caught:
                if conn.their_state is h11.IDLE and not conn.trailing_data[0]:
                    return  # idle keep-alive connection: just close it
                response = plain(408, "request timeout\n")
                conn = _fresh_for_error(conn)
                request = None
            if request is None and response is None:
                return  # the client closed the connection
            if request is not None:
                method = request.method.decode("ascii", "replace")
                response = await _answer(request, handle, peer)
            assert response is not None
            keep = request is not None and conn.our_state is h11.SEND_RESPONSE
            if not await _send(stream, conn, response, method == "HEAD", keep, limits):
                return
            if not keep or conn.our_state is not h11.DONE or conn.their_state is not h11.DONE:
                return
            conn.start_next_cycle()
    finally:
        with trio.move_on_after(0):
            await stream.aclose()


async def _next_request(stream: trio.abc.Stream, conn: h11.Connection) -> Optional[h11.Request]:
    """The next request, its (empty) body read too; None if the peer closed."""
    request: Optional[h11.Request] = None
    while True:
        event = conn.next_event()
        if event is h11.NEED_DATA:
            data = await stream.receive_some(RECEIVE_BYTES)
            conn.receive_data(bytes(data))  # b"": end of stream, h11 notices
            continue
        if isinstance(event, h11.ConnectionClosed):
            return None
        if isinstance(event, h11.Request):
            request = event
            for name, value in event.headers:
                if name == b"content-length" and value != b"0":
                    raise h11.RemoteProtocolError("no request bodies", 413)
                if name == b"transfer-encoding":
                    raise h11.RemoteProtocolError("no request bodies", 413)
            continue
        if isinstance(event, h11.EndOfMessage):
            return request
        if isinstance(event, h11.Data):
            raise h11.RemoteProtocolError("no request bodies", 413)


def _fresh_for_error(conn: h11.Connection) -> h11.Connection:
    """A connection in SEND_RESPONSE state to carry an error reply: h11
    refuses to send after a protocol error of the peer, so a new machine
    with a dummy request answers it (the connection closes after)."""
    fresh = h11.Connection(h11.SERVER)
    fresh.receive_data(b"GET / HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
    fresh.next_event()
    return fresh


async def _answer(request: h11.Request, handle: Handler, peer: str) -> Response:
    method = request.method.decode("ascii", "replace")
    if method not in METHODS:
        return Response(405, "text/plain; charset=utf-8", b"method not allowed\n",
                        (("allow", ", ".join(METHODS)),))
    target = request.target.decode("ascii", "replace")
    path = target.split("?", 1)[0]
    # (latin-1: any header bytes decode, and base64 credentials are ASCII)
    headers = {name.decode("latin-1"): value.decode("latin-1")
               for name, value in request.headers}
    return await handle(Request(method, path, headers, peer))


async def _send(stream: trio.abc.Stream, conn: h11.Connection, response: Response,
                head_only: bool, keep: bool, limits: Limits) -> bool:
    """Write ``response``; False if the client did not take it in time."""
    headers = [("content-type", response.content_type),
               ("content-length", str(len(response.body))),
               ("cache-control", "no-store"),
               *response.headers]
    if not keep:
        headers.append(("connection", "close"))
    data = conn.send(h11.Response(status_code=response.status, headers=headers,
                                  reason=_reason(response.status))) or b""
    if not head_only:  # (h11 knows a reply to HEAD has no body)
        data += conn.send(h11.Data(data=response.body)) or b""
    data += conn.send(h11.EndOfMessage()) or b""
    with trio.move_on_after(limits.send_timeout_s):
        try:
            await stream.send_all(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return False
        return True
    return False


def _reason(status: int) -> bytes:
    """The status line's phrase ("Unauthorized"), for people reading curl -i."""
    try:
        return HTTPStatus(status).phrase.encode()
    except ValueError:
        return b""
