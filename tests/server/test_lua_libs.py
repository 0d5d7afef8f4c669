"""cjson and cmsgpack inside scripts (and functions) against redis-server:
the same scripts' replies byte for byte, RESP2 and RESP3; then what a
reply cannot show (cjson.null identity, a pcall'd failure)."""

import pytest
import redis

from tests.server.conftest import REDIS_SERVER
from tests.server.test_keyspace_vs_redis import Conn

CASES = [
    "return cjson.encode({1,2,3,'x',true,false})", "return cjson.encode({a=1})",
    "return cjson.encode({})", "return cjson.encode('a/b\"c\\n\\1\\127\\200')",
    "return cjson.encode(1/3)", "return cjson.encode(1e300)", "return cjson.encode(-0.5)",
    "return cjson.encode(0/0)", "return cjson.encode(1/0)",
    "return cjson.encode({[1]=1,[20]=2})", "return cjson.encode({[1]=1,[3]=2})",
    "return cjson.encode({[false]=1})", "return cjson.encode(function() end)",
    "return cjson.encode({[1.5]=1, x={y={z={}}}})", "return cjson.encode({n=cjson.null})",
    "return cjson.encode()", "return cjson.encode(1, 2)",
    "return table.concat(cjson.decode('[0.0, -5e3, -1, 0.3e-3, 1023.2, 0e10]'), ' ')",
    "return cjson.decode('{\"keya\": \"a\", \"keyb\": \"b\"}').keyb",
    "return cjson.decode('[1,2')", "return cjson.decode('{\"a\" 1}')",
    "return cjson.decode('x')", "return cjson.decode('\"\\\\u00e9\\\\n\\\\/\"')",
    "return cjson.decode('[true, false, null, 1]')", "return cjson.decode('')",
    "return cjson.decode('[1] x')", "return cjson.decode('{\"a\":1,}')",
    "return cjson.encode(cjson.decode('{\"k\":\"v\",\"n\":[1,2,3],\"o\":{}}'))",
    "return cjson.decode(12)", "return cjson.null",
    "return cmsgpack.pack(0.1)", "return cmsgpack.pack(-1099511627776)",
    "return cmsgpack.pack({1,2,3}, 'x', {a=1}, 2^40, -3147483648, 0.5, true, nil)",
    "return cmsgpack.pack(string.rep('x', 40), string.rep('y', 300), -1, -100, -200, 300, 70000)",
    "local a = {x=nil,y=5} local b = {x=a} a['x'] = b return cmsgpack.pack(a)",
    "return cmsgpack.pack({[1]=1,[3]=3}, {}, {[0]=1}, 1/0, 0/0 ~= 0/0, 1e300)",
    "return {cmsgpack.unpack(cmsgpack.pack(1,'two',{3},{a={b=2}}))}",
    "return {cmsgpack.unpack_one(cmsgpack.pack(1,2), 0)}",
    "return {cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 2, 1)}",
    "return {cmsgpack.unpack_limit(cmsgpack.pack(1,2,3), 5)}",
    "return cmsgpack.unpack('\\193')", "return cmsgpack.unpack('\\205\\1')",
    "return cmsgpack.pack()", "return cmsgpack.unpack_one('\\1', 5)",
    "cjson.encode = 1", "cmsgpack.pack = 1",
    "return cjson.encode_max_depth(1)", "return cjson.encode({{1}})",
    "return cjson.encode_max_depth(1000)", "return cjson.decode_max_depth(1)",
    "return cjson.decode('[[1]]')", "return cjson.decode_max_depth(1000)",
    "return cjson.encode_invalid_numbers(true)", "return cjson.encode({0/0, 1/0})",
    "return cjson.encode_invalid_numbers(false)",
]


@pytest.mark.skipif(REDIS_SERVER is None, reason="redis-server not installed")
@pytest.mark.parametrize("proto", [2, 3])
def test_same_bytes_as_redis(shared, redis_port, proto):
    ours, theirs = Conn(shared.port, proto), Conn(redis_port, proto)
    try:
        differences = []
        for body in CASES:
            argv = [b"EVAL", body.encode(), b"0"]
            a, b = ours.call(argv), theirs.call(argv)
            if a != b:
                differences.append((body, a, b))
        assert not differences, "\n".join(map(repr, differences))
    finally:
        ours.close()
        theirs.close()


def test_null_and_failures_inside_scripts(c):
    assert c.eval("return cjson.decode('[null]')[1] == cjson.null", 0) == 1
    assert c.eval("local ok = pcall(cjson.encode, {[false]=1}) return ok", 0) is None
    assert c.eval("local ok, v = pcall(cjson.decode, '[1]') return {ok, v[1]}", 0) == [1, 1]
    big = c.eval("local t = {} for i = 1, 100000 do t[i] = i end "
                 "return #cmsgpack.unpack(cmsgpack.pack(t))", 0)
    assert big == 100000
    with pytest.raises(redis.ResponseError, match="Attempt to modify a readonly table"):
        c.eval("cjson.null = 1", 0)
