"""Redis's conversions between RESP replies and Lua values (script_lua.c).

RESP -> Lua (what ``redis.call`` returns), RESP2 (the default):
integer -> number, bulk -> string, null bulk / null array -> false, array
-> table, status -> ``{ok=...}``, error -> ``{err=...}``.  After
``redis.setresp(3)`` also: map -> ``{map={...}}``, set -> ``{set={k=true}}``,
null -> nil, double -> ``{double=n}``, boolean -> true/false, big number ->
``{big_number=s}``, verbatim -> ``{verbatim_string={format=, string=}}``.

Lua -> RESP (what the script returns), in the caller's protocol: string ->
bulk, number -> integer (truncated toward zero; out of range or NaN gives
LLONG_MIN as C's cast does on x86), true -> 1 (RESP3 scripts: #t), false
and nil -> null (RESP3 scripts: false -> #f), a table with ``ok`` -> status,
``err`` -> error, ``double``/``map``/``set``/``big_number`` -> those types,
any other table -> an array of its items 1, 2, ... up to the first nil.
"""

from __future__ import annotations

from typing import Any, Final

from .lua_sandbox import Sandbox, lua_type

LLONG_MIN: Final = -(1 << 63)
MAX_DEPTH = 100  # nested tables (a table holding itself never ends)


class _Reader:
    __slots__ = ("data", "pos", "sandbox")

    def __init__(self, data: bytes, sandbox: Sandbox) -> None:
        self.data = data
        self.pos = 0
        self.sandbox = sandbox

    def line(self) -> bytes:
        end = self.data.index(b"\r\n", self.pos)
        text = self.data[self.pos + 1:end]
        self.pos = end + 2
        return text

    def value(self) -> Any:
        """The next reply as a Lua value; errors come back as {err=...}."""
        kind = self.data[self.pos]
        line = self.line()
        table = self.sandbox.table
        if kind == 36:  # $
            n = int(line)
            if n < 0:
                return False
            start = self.pos
            self.pos = start + n + 2
            return self.data[start:start + n]
        if kind == 58:  # :
            return int(line)
        if kind == 43:  # +
            return table({b"ok": line})
        if kind == 45:  # -
            return table({b"err": line})
        if kind == 42:  # *
            n = int(line)
            if n < 0:
                return False
            return table([self.value() for _ in range(n)])
        if kind == 37:  # %
            items = {}
            for _ in range(int(line)):
                key = self.value()
                items[key] = self.value()
            return table({b"map": table(items)})
        if kind == 126:  # ~
            return table({b"set": table({self.value(): True for _ in range(int(line))})})
        if kind == 95:  # _
            return None
        if kind == 44:  # ,
            return table({b"double": float(line)})
        if kind == 35:  # #
            return line == b"t"
        if kind == 40:  # (
            return table({b"big_number": line})
        if kind == 61:  # =
            n = int(line)
            start = self.pos
            self.pos = start + n + 2
            text = self.data[start:start + n]
            return table({b"verbatim_string": table({b"format": text[:3], b"string": text[4:]})})
        raise ValueError(f"unexpected reply type {chr(kind)!r}")


def reply_to_lua(data: bytes, sandbox: Sandbox) -> tuple[bool, Any]:
    """A command's encoded reply as a Lua value; True first if an error."""
    if data[:1] == b"-":  # (counted in INFO errorstats already: see scripting.py)
        return True, sandbox.table({b"err": data[1:-2], b"ignore_error_stats_update": True})
    return False, reply_value(data, sandbox)


def reply_value(data: bytes, sandbox: Sandbox) -> Any:
    """A command's encoded reply (not an error) as a Lua value: a bulk
    string, an integer and +OK without the reader (most replies a script
    gets)."""
    kind = data[0]
    if kind == 36:  # $
        if data[1] == 45:  # $-1
            return False
        # the header's length digits, read in place (cheaper than a
        # method call to find the CRLF for the short replies scripts get)
        i = 1
        while data[i] != 13:
            i += 1
        return data[i + 2:-2]
    if kind == 58:  # :
        return int(data[1:-2])
    if data == b"+OK\r\n":
        return status_ok(sandbox)
    return _Reader(data, sandbox).value()


OK_TABLES_AT_ONCE: Final = 64


def status_ok(sandbox: Sandbox) -> Any:
    """A new ``{ok="OK"}`` table (a script may change what it gets),
    taken from the ones the sandbox's Lua made n at a time (one crossing
    into Lua per n)."""
    tables: list[Any] = sandbox.ok_tables
    if not tables:
        tables.extend(sandbox.status_tables(OK_TABLES_AT_ONCE, b"OK"))
    return tables.pop()


def to_integer(number: float) -> int:
    if type(number) is int:
        return number if LLONG_MIN <= number < -LLONG_MIN else LLONG_MIN
    if number != number or not (-9.3e18 < number < 9.3e18):
        return LLONG_MIN
    value = int(number)  # toward zero, as C's (long long) cast
    return value if LLONG_MIN <= value < -LLONG_MIN else LLONG_MIN


def one_line(text: bytes) -> bytes:
    return text.replace(b"\r", b" ").replace(b"\n", b" ")


def _double(value: float, proto: int) -> bytes:
    if value != value:
        text = b"nan"
    elif value in (float("inf"), float("-inf")):
        text = b"inf" if value > 0 else b"-inf"
    else:
        text = b"%.17g" % value
    return b",%s\r\n" % text if proto == 3 else b"$%d\r\n%s\r\n" % (len(text), text)


def lua_to_reply(value: Any, proto: int, script_resp: int, rawget: Any,
                 depth: int = 0) -> bytes:
    """A script's result as a reply to a client speaking ``proto``.
    Tables are read with ``rawget`` (the script's Lua state's): no
    metamethod runs, as Redis's lua_rawget (``return _G`` is an empty
    array, not an error from the globals' guard)."""
    kind = type(value)
    if kind is bytes:
        return b"$%d\r\n%s\r\n" % (len(value), value)
    if kind is bool:
        if script_resp == 3:
            if proto == 3:
                return b"#t\r\n" if value else b"#f\r\n"
            return b":1\r\n" if value else b":0\r\n"
        if value:
            return b":1\r\n"
        return b"_\r\n" if proto == 3 else b"$-1\r\n"
    if kind is int or kind is float:
        return b":%d\r\n" % to_integer(value)
    if value is None or lua_type(value) != "table":
        return b"_\r\n" if proto == 3 else b"$-1\r\n"
    if depth >= MAX_DEPTH:
        return b"-ERR reached lua stack limit\r\n"
    err = rawget(value, b"err")
    if type(err) is bytes:
        text = one_line(err)
        return b"-%s\r\n" % text  # (no code of its own: Redis sends it as is)
    ok = rawget(value, b"ok")
    if type(ok) is bytes:
        return b"+%s\r\n" % one_line(ok)
    double = rawget(value, b"double")
    if type(double) in (int, float):
        return _double(float(double), proto)
    big = rawget(value, b"big_number")
    if type(big) is bytes:
        return b"(%s\r\n" % big if proto == 3 else b"$%d\r\n%s\r\n" % (len(big), big)
    mapping = rawget(value, b"map")
    if lua_type(mapping) == "table":
        parts = []
        for key, item in mapping.items():
            parts.append(lua_to_reply(key, proto, script_resp, rawget, depth + 1))
            parts.append(lua_to_reply(item, proto, script_resp, rawget, depth + 1))
        n = len(parts) // 2
        return (b"%%%d\r\n" % n if proto == 3 else b"*%d\r\n" % (2 * n)) + b"".join(parts)
    members = rawget(value, b"set")
    if lua_type(members) == "table":
        parts = [lua_to_reply(key, proto, script_resp, rawget, depth + 1) for key in members.keys()]
        return (b"~%d\r\n" if proto == 3 else b"*%d\r\n") % len(parts) + b"".join(parts)
    parts = []
    i = 1
    while True:
        item = rawget(value, i)
        if item is None:
            break
        parts.append(lua_to_reply(item, proto, script_resp, rawget, depth + 1))
        i += 1
    return b"*%d\r\n%s" % (len(parts), b"".join(parts))
