"""Pub/Sub against a real node: SUBSCRIBE, PSUBSCRIBE, SSUBSCRIBE, their
UNSUBSCRIBEs, PUBLISH, SPUBLISH, PUBSUB; RESP2's subscribed mode and RESP3's
pushes; RESET, CLIENT KILL, a disconnect, INFO and CLIENT LIST; PUBLISH in
MULTI and from Lua; a slow subscriber cut by its output limit; redis-py
with and without hiredis.  The byte-for-byte comparison with redis-server
is test_pubsub_vs_redis.py.
"""

import socket

import pytest
import redis

from tests.client_libs import run_python, without_hiredis
from tests.harness import wait_for
from tests.server.util import Raw


def _sub(kind, name, count, proto=2):
    head = b">3\r\n" if proto == 3 else b"*3\r\n"
    name_part = b"$-1\r\n" if name is None and proto == 2 else (
        b"_\r\n" if name is None else b"$%d\r\n%s\r\n" % (len(name), name))
    return head + b"$%d\r\n%s\r\n" % (len(kind), kind) + name_part + b":%d\r\n" % count


def _msg(channel, data, proto=2):
    head = b">3\r\n" if proto == 3 else b"*3\r\n"
    return (head + b"$7\r\nmessage\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n"
            % (len(channel), channel, len(data), data))


@pytest.fixture
def raw(shared):
    conns = []

    def make():
        conn = Raw(shared.port)
        conns.append(conn)
        return conn
    yield make
    for conn in conns:
        conn.close()


# ------------------------------------------------------------ the basics

@pytest.mark.parametrize("proto", [2, 3])
def test_subscribe_publish_unsubscribe(shared, raw, proto):
    sub = raw()
    if proto == 3:
        sub.send_command("HELLO", 3)
        sub.read_until(b"modules")
        sub.read_until(b"*0\r\n")
    pub = shared.client()
    sub.send_command("SUBSCRIBE", "chan1", "chan2", "chan1")
    assert sub.read_until(b":2\r\n", 5) + sub.read_until(b":2\r\n") == (
        _sub(b"subscribe", b"chan1", 1, proto) + _sub(b"subscribe", b"chan2", 2, proto)
        + _sub(b"subscribe", b"chan1", 2, proto))
    assert pub.publish("chan1", "hello") == 1
    assert pub.publish("chan2", "world") == 1
    assert pub.publish("other", "x") == 0
    assert sub.read_until(b"world\r\n") == _msg(b"chan1", b"hello", proto) + _msg(
        b"chan2", b"world", proto)
    sub.send_command("UNSUBSCRIBE", "chan1", "nope")
    assert sub.read_until(b"nope\r\n:1\r\n") == (
        _sub(b"unsubscribe", b"chan1", 1, proto) + _sub(b"unsubscribe", b"nope", 1, proto))
    assert pub.publish("chan1", "hello") == 0
    sub.send_command("UNSUBSCRIBE")
    assert sub.read_until(b":0\r\n") == _sub(b"unsubscribe", b"chan2", 0, proto)
    sub.send_command("UNSUBSCRIBE")  # subscribed to nothing: still one confirmation
    assert sub.read_until(b":0\r\n") == _sub(b"unsubscribe", None, 0, proto)
    sub.send_command("PING")
    assert sub.read_until(b"\r\n") == b"+PONG\r\n"  # out of subscribed mode


def test_patterns_and_mixed(shared, raw):
    sub = raw()
    pub = shared.client()
    sub.send_command("SUBSCRIBE", "foo.bar")
    sub.send_command("PSUBSCRIBE", "foo.*", "f?o.b[a]r")
    sub.read_until(b"f?o.b[a]r\r\n:3\r\n")
    assert pub.publish("foo.bar", "hello") == 3
    assert pub.publish("foo1", "no") == 0
    assert sub.read_until(b"hello\r\n") == _msg(b"foo.bar", b"hello")
    assert sub.read_until(b"hello\r\n") == (
        b"*4\r\n$8\r\npmessage\r\n$5\r\nfoo.*\r\n$7\r\nfoo.bar\r\n$5\r\nhello\r\n")
    assert sub.read_until(b"hello\r\n") == (
        b"*4\r\n$8\r\npmessage\r\n$9\r\nf?o.b[a]r\r\n$7\r\nfoo.bar\r\n$5\r\nhello\r\n")
    assert pub.pubsub_numpat() == 2
    sub.send_command("PUNSUBSCRIBE")  # every pattern, in the order subscribed
    assert sub.read_until(b"f?o.b[a]r\r\n:1\r\n") == (
        _sub(b"punsubscribe", b"foo.*", 2) + _sub(b"punsubscribe", b"f?o.b[a]r", 1))
    assert pub.pubsub_numpat() == 0
    assert pub.publish("foo.bar", "again") == 1


def test_shard_channels(shared, raw):
    sub = raw()
    pub = shared.client()
    sub.send_command("SSUBSCRIBE", "s1")
    sub.send_command("SUBSCRIBE", "s1")
    assert sub.read_until(b"$9\r\nsubscribe\r\n$2\r\ns1\r\n:1\r\n") == (
        _sub(b"ssubscribe", b"s1", 1) + _sub(b"subscribe", b"s1", 1))
    assert pub.execute_command("SPUBLISH", "s1", "x") == 1
    assert sub.read_until(b"x\r\n") == b"*3\r\n$8\r\nsmessage\r\n$2\r\ns1\r\n$1\r\nx\r\n"
    assert pub.execute_command("PUBSUB", "SHARDCHANNELS") == [b"s1"]
    assert pub.execute_command("PUBSUB", "SHARDNUMSUB", "s1", "s2") == [b"s1", 1, b"s2", 0]
    sub.send_command("SUNSUBSCRIBE")
    assert sub.read_until(b":0\r\n") == _sub(b"sunsubscribe", b"s1", 0)
    sub.send_command("GET", "k")  # still subscribed to s1 (a plain channel)
    assert sub.read_until(b"\r\n").startswith(b"-ERR Can't execute 'get'")


def test_pubsub_introspection(c, raw):
    a, b = raw(), raw()
    a.send_command("SUBSCRIBE", "news.1", "news.2")
    a.read_until(b":2\r\n")
    b.send_command("SUBSCRIBE", "news.1")
    b.send_command("PSUBSCRIBE", "n*", "n*")
    b.read_until(b"n*\r\n:2\r\n")
    a.send_command("PSUBSCRIBE", "n*")
    a.read_until(b":3\r\n")
    assert sorted(c.pubsub_channels()) == [b"news.1", b"news.2"]
    assert c.pubsub_channels("*.2") == [b"news.2"]
    assert c.pubsub_numsub("news.1", "news.2", "x") == [(b"news.1", 2), (b"news.2", 1),
                                                        (b"x", 0)]
    assert c.pubsub_numpat() == 1  # unique patterns
    assert c.execute_command("PUBSUB", "NUMSUB") == []
    stats = c.info("stats")
    assert (stats["pubsub_channels"], stats["pubsub_patterns"]) == (2, 1)
    lines = {line["id"]: line for line in c.client_list()}
    subscribed = [line for line in lines.values() if line["flags"] == "P"]
    assert sorted((line["sub"], line["psub"]) for line in subscribed) == [
        ("1", "1"), ("2", "1")]
    help_lines = c.execute_command("PUBSUB", "HELP")
    assert help_lines[0] == b"PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:"
    assert help_lines[-2:] == [b"HELP", b"    Prints this help."]
    for args, error in [
            (("PUBSUB", "NOPE"), "unknown subcommand 'NOPE'. Try PUBSUB HELP."),
            (("PUBSUB", "NUMPAT", "x"), "wrong number of arguments for 'pubsub|numpat' command"),
            (("PUBSUB", "CHANNELS", "a", "b"), "unknown subcommand or wrong number of "
             "arguments for 'CHANNELS'. Try PUBSUB HELP."),
            (("PUBSUB",), "wrong number of arguments for 'pubsub' command"),
            (("PUBLISH", "x"), "wrong number of arguments for 'publish' command"),
            (("SUBSCRIBE",), "wrong number of arguments for 'subscribe' command")]:
        with pytest.raises(redis.ResponseError) as err:
            c.execute_command(*args)
        assert str(err.value) == error


# --------------------------------------------------------- subscribed mode

def test_resp2_subscribed_mode(shared, raw):
    sub = raw()
    sub.send_command("SUBSCRIBE", "ch")
    sub.read_until(b":1\r\n")
    sub.send_command("PING")
    sub.send_command("PING", "hi")
    assert sub.read_until(b"hi\r\n") == (b"*2\r\n$4\r\npong\r\n$0\r\n\r\n"
                                         b"*2\r\n$4\r\npong\r\n$2\r\nhi\r\n")
    for args, name in [(("SET", "k", "v"), "set"), (("CLIENT", "LIST"), "client|list"),
                       (("PUBLISH", "ch", "x"), "publish"), (("MULTI",), "multi")]:
        sub.send_command(*args)
        assert sub.read_until(b"\r\n") == (
            b"-ERR Can't execute '%s': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / "
            b"QUIT / RESET are allowed in this context\r\n" % name.encode())
    # an unknown command and a wrong arity are answered as ever
    sub.send_command("NOSUCH")
    assert sub.read_until(b"\r\n").startswith(b"-ERR unknown command 'NOSUCH'")
    sub.send_command("SUBSCRIBE")
    assert sub.read_until(b"\r\n") == (
        b"-ERR wrong number of arguments for 'subscribe' command\r\n")
    # still subscribed, still served
    assert shared.client().publish("ch", "after") == 1
    assert sub.read_until(b"after\r\n") == _msg(b"ch", b"after")
    sub.send_command("QUIT")
    assert sub.read_until(b"+OK\r\n") == b"+OK\r\n"


def test_malformed_input_in_subscribed_mode_leaves_node_working(shared, raw):
    sub = raw()
    sub.send_command("SUBSCRIBE", "ch")
    sub.read_until(b":1\r\n")
    sub.sock.sendall(b"*2\r\n$3\r\nGET\r\n$abc\r\n")  # a bad bulk length
    data = sub.read_until(b"\r\n")
    assert data.startswith(b"-ERR Protocol error"), data
    wait_for(lambda: shared.client().pubsub_numsub("ch") == [(b"ch", 0)],
             message="the closed subscriber forgotten")
    other = raw()
    other.send_command("SUBSCRIBE", "ch")
    other.read_until(b":1\r\n")
    assert shared.client().publish("ch", "still") == 1
    assert other.read_until(b"still\r\n") == _msg(b"ch", b"still")


def test_resp3_runs_any_command_while_subscribed(shared):
    r3 = shared.client(protocol=3)
    p = r3.pubsub()
    p.subscribe("ch")
    assert p.get_message(timeout=5)["type"] == "subscribe"
    conn = p.connection
    conn.send_command("SET", "rk", "v")
    assert conn.read_response() == b"OK"
    conn.send_command("GET", "rk")
    assert conn.read_response() == b"v"
    conn.send_command("PING")
    assert conn.read_response() == b"PONG"  # RESP3: the plain PONG
    assert shared.client().publish("ch", "m") == 1
    assert p.get_message(timeout=5)["data"] == b"m"
    p.close()


def test_reset_leaves_subscribed_mode(shared, raw):
    sub = raw()
    sub.send_command("HELLO", 3)
    sub.read_until(b"modules")
    sub.read_until(b"*0\r\n")
    sub.send_command("SUBSCRIBE", "a")
    sub.send_command("PSUBSCRIBE", "b*")
    sub.read_until(b"b*\r\n:2\r\n")
    sub.send_command("RESET")
    assert sub.read_until(b"\r\n") == b"+RESET\r\n"
    pub = shared.client()
    assert pub.publish("a", "x") == 0 and pub.publish("bb", "x") == 0
    sub.send_command("PING")  # RESP2 again, not subscribed
    assert sub.read_until(b"\r\n") == b"+PONG\r\n"


def test_client_reply_off_does_not_silence_pushes(shared, raw):
    sub = raw()
    sub.send_command("CLIENT", "REPLY", "OFF")
    sub.send_command("SUBSCRIBE", "ch")
    assert sub.read_until(b":1\r\n") == _sub(b"subscribe", b"ch", 1)
    assert shared.client().publish("ch", "m") == 1
    assert sub.read_until(b"m\r\n") == _msg(b"ch", b"m")


# ------------------------------------------------------ the client's life

def test_disconnect_and_client_kill_forget_subscriptions(c, raw):
    a, b = raw(), raw()
    a.send_command("SUBSCRIBE", "x")
    a.read_until(b":1\r\n")
    b.send_command("PSUBSCRIBE", "x*")
    b.read_until(b":1\r\n")
    assert c.publish("x", "1") == 2
    a.close()
    wait_for(lambda: c.pubsub_numsub("x") == [(b"x", 0)], message="a's channel dropped")
    assert c.client_kill_filter(_type="normal") == 0  # (c itself is skipped)
    assert c.client_kill_filter(_type="pubsub") == 1
    wait_for(lambda: c.pubsub_numpat() == 0, message="b's pattern dropped")
    assert c.publish("x", "2") == 0


def test_publish_in_multi_and_from_lua(c, raw):
    sub = raw()
    sub.send_command("SUBSCRIBE", "ch")
    sub.read_until(b":1\r\n")
    pipe = c.pipeline(transaction=True)
    pipe.publish("ch", "in-multi").set("k", "v")
    assert pipe.execute() == [1, True]
    assert c.eval("return redis.call('publish', 'ch', ARGV[1])", 0, "from-lua") == 1
    assert sub.read_until(b"from-lua\r\n") == _msg(b"ch", b"in-multi") + _msg(
        b"ch", b"from-lua")
    with pytest.raises(redis.ResponseError, match="not allowed from script"):
        c.eval("return redis.call('subscribe', 'ch')", 0)


def test_subscribe_in_multi_replies_inside_exec(shared, raw):
    conn = raw()
    conn.send_command("MULTI")
    conn.send_command("SUBSCRIBE", "t")
    conn.send_command("EXEC")
    assert conn.read_until(b":1\r\n") == (b"+OK\r\n+QUEUED\r\n*1\r\n" + _sub(b"subscribe", b"t", 1))
    assert shared.client().pubsub_numsub("t") == [(b"t", 1)]


def test_slow_subscriber_cut_by_pubsub_output_limit(make_server):
    srv = make_server(config="client-output-buffer-limit pubsub 256kb 0 0\n")
    sub = socket.create_connection(("127.0.0.1", srv.port))
    sub.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sub.sendall(b"*2\r\n$9\r\nSUBSCRIBE\r\n$4\r\nslow\r\n")
    pub = srv.client()
    wait_for(lambda: pub.pubsub_numsub("slow") == [(b"slow", 1)], message="subscribed")
    payload = b"x" * 16384
    sent = 0
    while pub.pubsub_numsub("slow") == [(b"slow", 1)]:
        pub.publish("slow", payload)  # the subscriber reads nothing
        sent += 1
        assert sent < 2000, "never cut"
    assert pub.info("stats")["client_output_buffer_limit_disconnections"] == 1
    assert "client-output-buffer-limit pubsub" in srv.log()
    # an ordinary client with as much output is within the normal limit
    assert pub.get("nothing") is None
    sub.close()


# ------------------------------------------------------ redis-py parsers

CLIENT_CHECK = r"""
import sys, time, redis, redis.utils
port, parser = int(sys.argv[1]), sys.argv[2]
assert redis.utils.HIREDIS_AVAILABLE == (parser == "hiredis"), parser
for proto in (2, 3):
    r = redis.Redis(port=port, protocol=proto, socket_timeout=5)
    p = r.pubsub()
    p.subscribe("c1")
    p.psubscribe("c*")
    got = [p.get_message(timeout=5) for _ in range(2)]
    assert [m["type"] for m in got] == ["subscribe", "psubscribe"], got
    assert r.publish("c1", "hi") == 2
    m1, m2 = p.get_message(timeout=5), p.get_message(timeout=5)
    assert (m1["type"], m1["channel"], m1["data"]) == ("message", b"c1", b"hi"), m1
    assert (m2["type"], m2["pattern"], m2["data"]) == ("pmessage", b"c*", b"hi"), m2
    p.ping("x")
    pong = p.get_message(timeout=5)
    assert pong["type"] == "pong", pong
    p.unsubscribe(); p.punsubscribe()
    got = [p.get_message(timeout=5) for _ in range(2)]
    assert sorted(m["type"] for m in got) == ["punsubscribe", "unsubscribe"], got
    p.close()
print("ok")
"""


@pytest.mark.parametrize("parser", ["hiredis", "pure"])
def test_redis_py_pubsub_with_and_without_hiredis(shared, parser):
    paths = [without_hiredis()] if parser == "pure" else []
    proc = run_python(paths, ["-c", CLIENT_CHECK, str(shared.port), parser])
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok"
