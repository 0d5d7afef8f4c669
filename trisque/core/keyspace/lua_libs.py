"""The C libraries Redis links into its Lua, written here against lupa:
``cjson`` (lua-cjson 2.1 as Redis 7.0.15 ships it, deps/lua/src/lua_cjson.c)
and ``cmsgpack`` (lua-cmsgpack 0.4, lua_cmsgpack.c).

Each function takes and returns Lua values (lupa objects: tables are read
in ``next`` order, so a table's keys come out in the order the C library
would see them).  Errors are ``LibError``: the sandbox raises their text in
Lua as the C library's ``luaL_error`` does (no position).

cjson: ``encode`` (numbers as ``%.14g``; strings escaped as lua-cjson,
``/`` included; a table whose keys are all integers >= 1 is an array
unless excessively sparse, an empty table is ``{}``), ``decode``,
``encode_max_depth``, ``decode_max_depth``, ``encode_invalid_numbers``,
``encode_keep_buffer``, ``encode_number_precision``,
``encode_sparse_array``, ``decode_invalid_numbers``, ``null``.
cmsgpack: ``pack``, ``unpack``, ``unpack_one``, ``unpack_limit``
(``safe`` variants: nil and the error instead of raising).
"""

from __future__ import annotations

import math
import struct
from typing import Any, Callable

import lupa.lua51 as lua51


def lua_type(value: object) -> str | None:
    kind: str | None = lua51.lua_type(value)
    return kind


class LibError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


def error_text(exc: object) -> bytes | None:
    """A library's failure: the C library's text (None: not one)."""
    if isinstance(exc, LibError):
        return exc.message.encode("utf-8", "replace")
    return None


def _number_text(value: float, precision: int) -> bytes:
    return (b"%%.%dg" % precision) % value


# ----------------------------------------------------------------- cjson

_ESCAPES = {c: b"\\u%04x" % c for c in range(32)}
_ESCAPES.update({8: b"\\b", 9: b"\\t", 10: b"\\n", 12: b"\\f", 13: b"\\r",
                 34: b'\\"', 47: b"\\/", 92: b"\\\\", 127: b"\\u007f"})
_NEEDS_ESCAPE = bytes(sorted(_ESCAPES))


def _json_string(data: bytes) -> bytes:
    if not any(c in _ESCAPES for c in data):
        return b'"' + data + b'"'
    return b'"' + b"".join(_ESCAPES.get(c, bytes((c,))) for c in data) + b'"'


class CJson:
    """One cjson configuration (Redis has one per Lua state)."""

    def __init__(self, lua: Any, null: Any) -> None:
        self.lua = lua
        self.null = null  # cjson.null: a value decode gives for JSON null
        # (two lupa wrappers of one userdata are not ==: compare in Lua)
        self.is_null = lua.eval(b"function(null) return function(v) return rawequal(v, null) "
                                b"end end")(null)
        self.encode_max_depth = 1000
        self.decode_max_depth = 1000
        self.encode_invalid_numbers = 0  # 0 refuse, 1 write nan/inf, 2 write null
        self.decode_invalid_numbers = 1
        self.encode_number_precision = 14
        self.sparse_convert = False
        self.sparse_ratio = 2
        self.sparse_safe = 10
        self.keep_buffer = True

    # ------------------------------------------------------ configuration

    def _int_option(self, name: str, value: Any, low: int, high: int) -> int:
        current: int = getattr(self, name)
        if value is None:
            return current
        if value.__class__ not in (int, float) or not low <= value <= high:
            raise LibError(f"bad argument #1 to '{name}' (expected integer between "
                           f"{low} and {high})")
        setattr(self, name, int(value))
        return int(value)

    def _bool_option(self, name: str, value: Any, allow_null: bool = False) -> Any:
        if value is None:
            pass
        elif value is True or value == b"on":
            setattr(self, name, 1)
        elif value is False or value == b"off":
            setattr(self, name, 0)
        elif allow_null and value == b"null":
            setattr(self, name, 2)
        else:
            raise LibError(f"bad argument #1 to '{name}' (invalid option '{value!r}')")
        current = getattr(self, name)
        return b"null" if current == 2 else bool(current)

    def functions(self) -> dict[bytes, Callable[..., Any]]:
        return {
            b"encode": self.encode,
            b"decode": self.decode,
            b"encode_max_depth": lambda v=None: self._int_option(
                "encode_max_depth", v, 1, 2**31 - 1),
            b"decode_max_depth": lambda v=None: self._int_option(
                "decode_max_depth", v, 1, 2**31 - 1),
            b"encode_number_precision": lambda v=None: self._int_option(
                "encode_number_precision", v, 1, 14),
            b"encode_invalid_numbers": lambda v=None: self._bool_option(
                "encode_invalid_numbers", v, allow_null=True),
            b"decode_invalid_numbers": lambda v=None: self._bool_option(
                "decode_invalid_numbers", v),
            b"encode_keep_buffer": lambda v=None: self._bool_option("keep_buffer", v),
            b"encode_sparse_array": self._sparse,
        }

    def _sparse(self, convert: Any = None, ratio: Any = None, safe: Any = None) -> Any:
        if convert is not None:
            self.sparse_convert = bool(convert)
        if ratio is not None:
            self.sparse_ratio = int(ratio)
        if safe is not None:
            self.sparse_safe = int(safe)
        return self.sparse_convert, self.sparse_ratio, self.sparse_safe

    # ------------------------------------------------------------ encoding

    def encode(self, *args: Any) -> bytes:
        if len(args) != 1:
            raise LibError("bad argument #1 to 'encode' (expected 1 argument)")
        out: list[bytes] = []
        self._value(args[0], 0, out)
        return b"".join(out)

    def _number(self, value: Any, out: list[bytes]) -> None:
        if value.__class__ is float and (math.isnan(value) or math.isinf(value)):
            if self.encode_invalid_numbers == 0:
                raise LibError("Cannot serialise number: must not be NaN or Inf")
            if self.encode_invalid_numbers == 2:
                out.append(b"null")
                return
            if math.isnan(value):
                out.append(b"nan")
                return
        out.append(_number_text(value, self.encode_number_precision))

    def _value(self, value: Any, depth: int, out: list[bytes]) -> None:
        kind = value.__class__
        if kind is bytes:
            out.append(_json_string(value))
        elif kind is bool:
            out.append(b"true" if value else b"false")
        elif kind is int or kind is float:
            self._number(value, out)
        elif value is None:
            out.append(b"null")
        else:
            ltype = lua_type(value)
            if ltype == "table":
                depth += 1
                if depth > self.encode_max_depth:
                    raise LibError(f"Cannot serialise, excessive nesting ({depth})")
                length = self._array_length(value)
                if length > 0:
                    out.append(b"[")
                    for i in range(1, length + 1):
                        if i > 1:
                            out.append(b",")
                        self._value(value[i], depth, out)
                    out.append(b"]")
                else:
                    self._object(value, depth, out)
            elif self.is_null(value):
                out.append(b"null")
            else:
                raise LibError(f"Cannot serialise {ltype or 'userdata'}: type not supported")

    def _array_length(self, table: Any) -> int:
        """lua_array_length: the largest key if every key is an integer >= 1
        (excessively sparse: an error), else -1."""
        largest = items = 0
        for key in table.keys():
            if key.__class__ not in (int, float) or not key or key != math.floor(key) or key < 1:
                return -1
            largest = max(largest, int(key))
            items += 1
        if (self.sparse_ratio > 0 and largest > items * self.sparse_ratio
                and largest > self.sparse_safe):
            if not self.sparse_convert:
                raise LibError("Cannot serialise table: excessively sparse array")
            return -1
        return largest

    def _object(self, table: Any, depth: int, out: list[bytes]) -> None:
        out.append(b"{")
        first = True
        for key, item in table.items():
            if not first:
                out.append(b",")
            first = False
            if key.__class__ in (int, float):
                out.append(b'"')
                self._number(key, out)
                out.append(b'":')
            elif key.__class__ is bytes:
                out.append(_json_string(key))
                out.append(b":")
            else:
                kind = "boolean" if key.__class__ is bool else (lua_type(key) or "userdata")
                raise LibError(f"Cannot serialise {kind}: table key must be a number or string")
            self._value(item, depth, out)
        out.append(b"}")

    # ------------------------------------------------------------ decoding

    def decode(self, *args: Any) -> Any:
        if len(args) != 1:
            raise LibError("bad argument #1 to 'decode' (expected 1 argument)")
        text = args[0]
        if text.__class__ in (int, float):
            text = _number_text(text, 14)
        if text.__class__ is not bytes:
            raise LibError("bad argument #1 to 'decode' (string expected, got "
                           f"{lua_type(text) or 'nil'})")
        if len(text) >= 2 and (not text[0] or not text[1]):
            raise LibError("JSON parser does not support UTF-16 or UTF-32")
        parser = _JsonParser(text, self)
        value = parser.value(0)
        parser.skip_space()
        if parser.pos < len(text):
            parser.fail("the end", parser.pos)
        return value


_JSON_SPACE = b" \t\n\r"
_NUMBER_CHARS = frozenset(b"0123456789+-.eE")


class _JsonParser:
    def __init__(self, text: bytes, config: CJson) -> None:
        self.text = text
        self.pos = 0
        self.config = config

    def skip_space(self) -> None:
        text, pos = self.text, self.pos
        while pos < len(text) and text[pos] in _JSON_SPACE:
            pos += 1
        self.pos = pos

    def found(self, at: int) -> str:
        if at >= len(self.text):
            return "T_END"
        c = self.text[at:at + 1]
        names = {b"{": "T_OBJ_BEGIN", b"}": "T_OBJ_END", b"[": "T_ARR_BEGIN",
                 b"]": "T_ARR_END", b",": "T_COMMA", b":": "T_COLON"}
        if c in names:
            return names[c]
        if c == b'"':
            return "T_STRING"
        if c in b"-0123456789":
            return "T_NUMBER"
        rest = self.text[at:at + 5]
        if rest.startswith((b"true", b"false")):
            return "T_BOOLEAN"
        if rest.startswith(b"null"):
            return "T_NULL"
        return "invalid token"

    def fail(self, expected: str, at: int) -> None:
        raise LibError(f"Expected {expected} but found {self.found(at)} at character {at + 1}")

    def value(self, depth: int) -> Any:
        self.skip_space()
        text, pos = self.text, self.pos
        if pos >= len(text):
            self.fail("value", pos)
        c = text[pos]
        if c == 123:  # {
            return self.object(depth + 1)
        if c == 91:  # [
            return self.array(depth + 1)
        if c == 34:  # "
            return self.string()
        for word, result in ((b"true", True), (b"false", False), (b"null", self.config.null)):
            if text.startswith(word, pos):
                self.pos = pos + len(word)
                return result
        end = pos
        while end < len(text) and text[end] in _NUMBER_CHARS:
            end += 1
        token = text[pos:end]
        lowered = text[pos:pos + 8].lower()
        if self.config.decode_invalid_numbers and (
                lowered.startswith(b"nan") or lowered.startswith(b"inf")
                or lowered.startswith(b"-inf")):
            word = b"-inf" if lowered.startswith(b"-inf") else lowered[:3]
            self.pos = pos + len(word) + (5 if text[pos:].lower().startswith(word + b"inity")
                                          else 0)
            return float(word)
        try:
            if not token or token[:1] == b"+" or token.lower().startswith((b"0x", b"-0x")):
                raise ValueError
            number = float(token)
        except ValueError:
            self.fail("value", pos)
        self.pos = end
        return int(number) if number.is_integer() and abs(number) < 2**53 else number

    def check_depth(self, depth: int) -> None:
        if depth > self.config.decode_max_depth:
            raise LibError(f"Found too many nested data structures ({depth}) at "
                           f"character {self.pos + 1}")

    def object(self, depth: int) -> Any:
        self.check_depth(depth)
        self.pos += 1
        items: dict[Any, Any] = {}
        self.skip_space()
        if self.text[self.pos:self.pos + 1] == b"}":
            self.pos += 1
            return self.config.lua.table_from(items)
        while True:
            self.skip_space()
            if self.text[self.pos:self.pos + 1] != b'"':
                self.fail("object key string", self.pos)
            key = self.string()
            self.skip_space()
            if self.text[self.pos:self.pos + 1] != b":":
                self.fail("colon", self.pos)
            self.pos += 1
            items[key] = self.value(depth)
            self.skip_space()
            c = self.text[self.pos:self.pos + 1]
            if c == b"}":
                self.pos += 1
                return self.config.lua.table_from(items)
            if c != b",":
                self.fail("comma or object end", self.pos)
            self.pos += 1

    def array(self, depth: int) -> Any:
        self.check_depth(depth)
        self.pos += 1
        items: list[Any] = []
        self.skip_space()
        if self.text[self.pos:self.pos + 1] == b"]":
            self.pos += 1
            return self.config.lua.table_from(items)
        while True:
            items.append(self.value(depth))
            self.skip_space()
            c = self.text[self.pos:self.pos + 1]
            if c == b"]":
                self.pos += 1
                # (a JSON null inside an array is cjson.null, never a hole)
                return self.config.lua.table_from(items)
            if c != b",":
                self.fail("comma or array end", self.pos)
            self.pos += 1

    def string(self) -> bytes:
        text = self.text
        start = pos = self.pos + 1
        out = bytearray()
        while True:
            if pos >= len(text):
                raise LibError(f"Expected value but found invalid token at character "
                               f"{start}")
            c = text[pos]
            if c == 34:
                self.pos = pos + 1
                return bytes(out)
            if c == 92:
                esc = text[pos + 1:pos + 2]
                simple = {b'"': b'"', b"\\": b"\\", b"/": b"/", b"b": b"\b",
                          b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t"}
                if esc in simple:
                    out += simple[esc]
                    pos += 2
                    continue
                if esc == b"u":
                    try:
                        code = int(text[pos + 2:pos + 6], 16)
                        pos += 6
                        if 0xD800 <= code < 0xDC00 and text[pos:pos + 2] == b"\\u":
                            low = int(text[pos + 2:pos + 6], 16)
                            if 0xDC00 <= low < 0xE000:
                                code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)
                                pos += 6
                        out += chr(code).encode("utf-8", "surrogatepass")
                        continue
                    except ValueError:
                        pass
                raise LibError(f"Expected value but found invalid escape code at "
                               f"character {start}")
            out.append(c)
            pos += 1


# -------------------------------------------------------------- cmsgpack

MAX_NESTING = 16  # LUACMSGPACK_MAX_NESTING: deeper tables are packed as nil


def _pack_int(n: int, out: list[bytes]) -> None:
    if n >= 0:
        if n <= 127:
            out.append(bytes((n,)))
        elif n <= 0xFF:
            out.append(b"\xcc" + bytes((n,)))
        elif n <= 0xFFFF:
            out.append(b"\xcd" + struct.pack(">H", n))
        elif n <= 0xFFFFFFFF:
            out.append(b"\xce" + struct.pack(">I", n))
        else:
            out.append(b"\xcf" + struct.pack(">Q", n))
    elif n >= -32:
        out.append(struct.pack(">b", n))
    elif n >= -128:
        out.append(b"\xd0" + struct.pack(">b", n))
    elif n >= -32768:
        out.append(b"\xd1" + struct.pack(">h", n))
    elif n >= -2147483648:
        out.append(b"\xd2" + struct.pack(">i", n))
    else:
        out.append(b"\xd3" + struct.pack(">q", n))


def _pack_length(n: int, small: int, small_max: int, codes: bytes, out: list[bytes]) -> None:
    if n <= small_max:
        out.append(bytes((small | n,)))
    elif n <= 0xFFFF:
        out.append(codes[:1] + struct.pack(">H", n))
    else:
        out.append(codes[1:2] + struct.pack(">I", n))


def _pack(value: Any, level: int, out: list[bytes]) -> None:
    kind = value.__class__
    if kind is bytes:
        n = len(value)
        if n < 32:
            out.append(bytes((0xA0 | n,)))
        elif n <= 0xFF:
            out.append(b"\xd9" + bytes((n,)))
        elif n <= 0xFFFF:
            out.append(b"\xda" + struct.pack(">H", n))
        else:
            out.append(b"\xdb" + struct.pack(">I", n))
        out.append(value)
    elif kind is bool:
        out.append(b"\xc3" if value else b"\xc2")
    elif kind is int or kind is float:
        if (not math.isinf(value) and value == int(value)
                and -(1 << 63) <= int(value) < (1 << 63)):
            _pack_int(int(value), out)
        else:
            # a float if the double survives the trip (C: d == (double)(float)d)
            try:
                single = struct.unpack(">f", struct.pack(">f", value))[0]
            except OverflowError:
                single = None
            if single == value:
                out.append(b"\xca" + struct.pack(">f", value))
            else:
                out.append(b"\xcb" + struct.pack(">d", value))
    elif value is not None and lua_type(value) == "table" and level < MAX_NESTING:
        if _is_array(value):
            n = len(value)
            _pack_length(n, 0x90, 15, b"\xdc\xdd", out)
            for i in range(1, n + 1):
                _pack(value[i], level + 1, out)
        else:
            pairs = list(value.items())
            _pack_length(len(pairs), 0x80, 15, b"\xde\xdf", out)
            for key, item in pairs:
                _pack(key, level + 1, out)
                _pack(item, level + 1, out)
    else:
        out.append(b"\xc0")


def _is_array(table: Any) -> bool:
    count = largest = 0
    for key in table.keys():
        if key.__class__ not in (int, float) or key <= 0 or key != int(key):
            return False
        largest = max(largest, int(key))
        count += 1
    return largest == count


class _Unpacker:
    def __init__(self, lua: Any, data: bytes, pos: int) -> None:
        self.lua = lua
        self.data = data
        self.pos = pos

    def take(self, n: int) -> bytes:
        if self.pos + n > len(self.data):
            raise LibError("Missing bytes in input.")
        chunk = self.data[self.pos:self.pos + n]
        self.pos += n
        return chunk

    def value(self) -> Any:
        c = self.take(1)[0]
        if c <= 0x7F:
            return c
        if c >= 0xE0:
            return c - 256
        if 0xA0 <= c <= 0xBF:
            return self.take(c & 0x1F)
        if 0x90 <= c <= 0x9F:
            return self.array(c & 0x0F)
        if 0x80 <= c <= 0x8F:
            return self.map(c & 0x0F)
        fixed = {0xCC: ">B", 0xCD: ">H", 0xCE: ">I", 0xCF: ">Q", 0xD0: ">b", 0xD1: ">h",
                 0xD2: ">i", 0xD3: ">q", 0xCA: ">f", 0xCB: ">d"}
        if c in fixed:
            fmt = fixed[c]
            number = struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0]
            return number
        if c == 0xC0:
            return None
        if c in (0xC2, 0xC3):
            return c == 0xC3
        sized = {0xD9: ">B", 0xDA: ">H", 0xDB: ">I", 0xC4: ">B", 0xC5: ">H", 0xC6: ">I"}
        if c in sized:
            fmt = sized[c]
            return self.take(struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0])
        if c in (0xDC, 0xDD):
            fmt = ">H" if c == 0xDC else ">I"
            return self.array(struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0])
        if c in (0xDE, 0xDF):
            fmt = ">H" if c == 0xDE else ">I"
            return self.map(struct.unpack(fmt, self.take(struct.calcsize(fmt)))[0])
        raise LibError("Bad data format in input.")

    def array(self, n: int) -> Any:
        return self.lua.table_from([self.value() for _ in range(n)])

    def map(self, n: int) -> Any:
        items = {}
        for _ in range(n):
            key = self.value()
            item = self.value()
            if key is not None:
                items[key] = item
        return self.lua.table_from(items)


class CMsgpack:
    def __init__(self, lua: Any) -> None:
        self.lua = lua

    def functions(self) -> dict[bytes, Callable[..., Any]]:
        return {b"pack": self.pack, b"unpack": self.unpack, b"unpack_one": self.unpack_one,
                b"unpack_limit": self.unpack_limit}

    def pack(self, *args: Any) -> bytes:
        if not args:
            raise LibError("bad argument #0 to 'pack' (MessagePack pack needs input.)")
        out: list[bytes] = []
        for value in args:
            _pack(value, 0, out)
        return b"".join(out)

    def _unpack(self, data: Any, limit: int, offset: int, name: str) -> tuple[Any, ...]:
        if data.__class__ in (int, float):
            data = _number_text(data, 14)
        if data.__class__ is not bytes:
            raise LibError(f"bad argument #1 to '{name}' (string expected, got "
                           f"{lua_type(data) or 'nil'})")
        if offset < 0 or limit < 0:
            raise LibError(f"Invalid request to unpack with offset of {offset} and "
                           f"limit of {len(data)}.")
        if offset > len(data):
            raise LibError(f"Start offset {offset} greater than input length {len(data)}.")
        decode_all = not limit and not offset
        unpacker = _Unpacker(self.lua, data, offset)
        values: list[Any] = []
        while unpacker.pos < len(data) and (decode_all or len(values) < limit):
            values.append(unpacker.value())
        if decode_all:
            return tuple(values)
        return (-1 if unpacker.pos >= len(data) else unpacker.pos, *values)

    def unpack(self, data: Any = None, *_: Any) -> tuple[Any, ...]:
        return self._unpack(data, 0, 0, "unpack")

    def unpack_one(self, data: Any = None, offset: Any = 0, *_: Any) -> tuple[Any, ...]:
        return self._unpack(data, 1, int(offset or 0), "unpack_one")

    def unpack_limit(self, data: Any = None, limit: Any = None, offset: Any = 0,
                     *_: Any) -> tuple[Any, ...]:
        if limit.__class__ not in (int, float):
            raise LibError("bad argument #2 to 'unpack_limit' (number expected, got "
                           f"{lua_type(limit) or 'nil'})")
        return self._unpack(data, int(limit), int(offset or 0), "unpack_limit")
