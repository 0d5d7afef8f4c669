"""HyperLogLog commands: PFADD, PFCOUNT, PFMERGE, PFDEBUG and PFSELFTEST,
with Redis 7.0's replies and errors (hyperloglog.c).  The values are
strings in Redis's HYLL format (hyperloglog.py), bytearrays changed in
place, so GET/SETRANGE see and change what redis-server would hold.

AOF records, each replaying to the same bytes:
- PFADD and PFMERGE are logged as they came (hashing is deterministic);
  when one turns a sparse HLL dense, ``PFDEBUG TODENSE key`` follows, so a
  replay under another hll-sparse-max-bytes ends in the same encoding;
- a PFADD into a sparse body that is corrupted (Redis's byte-level rules
  apply, see hyperloglog.sparse_set_bytes) logs the resulting value
  (``SET key value KEEPTTL``);
- PFCOUNT of one key writes the cardinality it computed into the header's
  cache, as Redis does: logged as ``SETRANGE key 8 <8 bytes>``;
- PFDEBUG GETREG and TODENSE, when they convert: ``PFDEBUG TODENSE key``.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import CommandError
from ..command import Commands
from . import hyperloglog as hll
from .types import WRONGTYPE

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node
    from .db import Db

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: group generic, the key at argv[1]
key_command = COMMANDS.command

SELF_TEST_REGISTER_ROUNDS = 3  # Redis: 1000 (pure Python: the same checks, fewer rounds)
SELF_TEST_MAX_CARDINALITY = 100000  # Redis: 10,000,000


def _hll_or_none(node: Node, client: Client, key: bytes) -> bytes | bytearray | None:
    """The HLL at ``key`` (None if there is none), checked as
    isHLLObjectOrReply does."""
    ks = node.keyspace
    value = ks.lookup(ks.dbs[client.db], key)
    if value is None:
        return None
    if type(value) is not bytes and type(value) is not bytearray:
        raise CommandError(WRONGTYPE)
    if not hll.is_hll(value):
        raise CommandError(hll.NOT_HLL)
    return value


def _unshared(db: Db, key: bytes, value: bytes | bytearray) -> bytearray:
    """dbUnshareStringValue: the value as a bytearray to change in place."""
    if type(value) is bytearray:
        return value
    mutable = bytearray(value)
    db.keys[key] = mutable  # same key, same TTL, same size
    return mutable


def _changed(node: Node, db: Db, key: bytes, before: int, value: bytearray) -> None:
    ks = node.keyspace
    if len(value) != before:
        ks.grow(db, len(value) - before)
    if db.watched:
        ks.touched(db, key)


@key_command("PFADD", -2, "write denyoom fast")
def pfadd(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """PFADD key [element ...]"""
    key = argv[1]
    ks = node.keyspace
    db = ks.dbs[client.db]
    found = _hll_or_none(node, client, key)
    created = found is None
    if found is None:
        value = hll.new_hll()
        ks.store(db, key, value)
    else:
        value = _unshared(db, key, found)
    before = len(value)
    was_sparse = value[4] == hll.SPARSE
    updated, unclean = hll.add(value, argv[2:], node.config.hll_sparse_max_bytes)
    if updated == -1:
        _changed(node, db, key, before, value)
        ks.log(db, b"SET", key, bytes(value), b"KEEPTTL")
        raise CommandError(hll.CORRUPTED)
    if created:
        updated += 1
    if updated:
        hll.invalidate(value)
        _changed(node, db, key, before, value)
        if unclean:
            ks.log(db, b"SET", key, bytes(value), b"KEEPTTL")
        else:
            ks.log(db, *argv)
            if was_sparse and value[4] == hll.DENSE:
                ks.log(db, b"PFDEBUG", b"TODENSE", key)
    return resp.ONE if updated else resp.ZERO


@key_command("PFCOUNT", -2, "readonly may_replicate", keys=(1, -1, 1))
def pfcount(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """PFCOUNT key [key ...]: one key's estimate (cached in its header),
    or the estimate of the union of several."""
    if len(argv) > 2:
        merged = bytearray(hll.REGISTERS)
        for key in argv[1:]:
            value = _hll_or_none(node, client, key)
            if value is None:
                continue
            registers = hll.registers_of(value)
            if registers is None:
                raise CommandError(hll.CORRUPTED)
            merged = hll.merge_into(merged, registers)
        return b":%d\r\n" % hll.estimate(hll.histogram(merged))
    key = argv[1]
    found = _hll_or_none(node, client, key)
    if found is None:
        return resp.ZERO
    ks = node.keyspace
    db = ks.dbs[client.db]
    value = _unshared(db, key, found)
    card = hll.cached_count(value)
    if card is None:
        card = hll.count(value)
        if card is None:
            raise CommandError(hll.CORRUPTED)
        cache = card.to_bytes(8, "little")
        value[8:16] = cache
        if db.watched:
            ks.touched(db, key)
        ks.log(db, b"SETRANGE", key, b"8", cache)
    return b":%d\r\n" % card


@key_command("PFMERGE", -2, "write denyoom", keys=(1, -1, 1))
def pfmerge(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """PFMERGE destkey [sourcekey ...]: the destination (a source too)
    gets the register-wise max of all."""
    merged = bytearray(hll.REGISTERS)
    use_dense = False
    for key in argv[1:]:
        value = _hll_or_none(node, client, key)
        if value is None:
            continue
        use_dense = use_dense or value[4] == hll.DENSE
        registers = hll.registers_of(value)
        if registers is None:
            raise CommandError(hll.CORRUPTED)
        merged = hll.merge_into(merged, registers)
    key = argv[1]
    ks = node.keyspace
    db = ks.dbs[client.db]
    found = ks.lookup(db, key)
    if found is None:
        dest = hll.new_hll()
        ks.store(db, key, dest)
    else:
        assert type(found) is bytes or type(found) is bytearray
        dest = _unshared(db, key, found)
    before = len(dest)
    was_sparse = dest[4] == hll.SPARSE
    if use_dense:
        hll.to_dense(dest)  # (valid: it was merged as a source)
    hll.set_registers(dest, merged, node.config.hll_sparse_max_bytes)
    hll.remember(dest, merged, None)
    hll.invalidate(dest)
    _changed(node, db, key, before, dest)
    ks.log(db, *argv)
    if was_sparse and dest[4] == hll.DENSE:
        ks.log(db, b"PFDEBUG", b"TODENSE", key)
    return resp.OK


@key_command("PFDEBUG", 3, "write denyoom admin", keys=(2, 2, 1))
def pfdebug(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """PFDEBUG GETREG|DECODE|ENCODING|TODENSE key"""
    key = argv[2]
    found = _hll_or_none(node, client, key)
    if found is None:
        raise CommandError("ERR The specified key does not exist")
    ks = node.keyspace
    db = ks.dbs[client.db]
    value = _unshared(db, key, found)
    sub = argv[1].upper()
    if sub == b"GETREG" or sub == b"TODENSE":
        converted = value[4] == hll.SPARSE
        if converted:
            before = len(value)
            if not hll.to_dense(value):
                raise CommandError(hll.CORRUPTED)
            _changed(node, db, key, before, value)
            ks.log(db, b"PFDEBUG", b"TODENSE", key)
        if sub == b"TODENSE":
            return resp.ONE if converted else resp.ZERO
        registers = hll.dense_registers(value)
        return b"*%d\r\n" % hll.REGISTERS + b"".join(
            [b":%d\r\n" % registers[i] for i in range(hll.REGISTERS)])
    if sub == b"DECODE":
        if value[4] != hll.SPARSE:
            raise CommandError("ERR HLL encoding is not sparse")
        return resp.bulk(hll.decode_sparse(value))
    if sub == b"ENCODING":
        return b"+dense\r\n" if value[4] == hll.DENSE else b"+sparse\r\n"
    raise CommandError("ERR Unknown PFDEBUG subcommand '%s'"
                       % argv[1].decode("utf-8", "replace"))


@key_command("PFSELFTEST", 1, "admin", keys=(0, 0, 0))
def pfselftest(node: Node, client: Client, argv: list[bytes]) -> bytes:
    """Redis's self test of the registers and of the estimate, scaled to
    pure Python: dense registers keep what is written, sparse and dense
    agree, the error stays within six standard errors."""
    rng = random.Random()
    dense = bytearray(hll.MAGIC + bytes(12)) + bytearray(hll.DENSE_BYTES)
    for _ in range(SELF_TEST_REGISTER_ROUNDS):
        expected = bytes(rng.getrandbits(6) for _ in range(hll.REGISTERS))
        dense[hll.HEADER:] = hll.dense_body(expected)
        got = hll.dense_registers(dense)
        if got != expected:
            i = next(i for i in range(hll.REGISTERS) if got[i] != expected[i])
            raise CommandError(f"TESTFAILED Register {i} should be {expected[i]} but is {got[i]}")
    dense[hll.HEADER:] = bytes(hll.DENSE_BYTES)
    sparse = hll.new_hll()
    max_bytes = node.config.hll_sparse_max_bytes
    seed = rng.getrandbits(64)
    checkpoint = 1
    pending: list[bytes] = []
    for j in range(1, SELF_TEST_MAX_CARDINALITY + 1):
        pending.append(((j ^ seed) & hll.U64).to_bytes(8, "little"))
        if j != checkpoint:
            continue
        for element in pending:
            hll.dense_add(dense, element)
        hll.add(sparse, pending, max_bytes)
        pending = []
        if j < max_bytes // 2 and sparse[4] != hll.SPARSE:
            raise CommandError("TESTFAILED sparse encoding not used")
        card = hll.count(dense)
        if card != hll.count(sparse):
            raise CommandError("TESTFAILED dense/sparse disagree")
        assert card is not None
        max_error = 1 if j == 10 else -(-hll.SELF_TEST_ERROR * 6 * checkpoint // 1)
        if abs(checkpoint - card) > max_error:
            raise CommandError(f"TESTFAILED Too big error. card:{checkpoint} "
                               f"abserr:{abs(checkpoint - card)}")
        checkpoint *= 10
    return resp.OK
