"""DUMP and RESTORE: a key's value as a payload, and back.

The payload is trisque's own, not Redis's RDB encoding: a magic line,
the records an AOF rewrite would write for the value (its type's
``records``, with an empty key), and an 8-byte BLAKE2b checksum.  It
moves a value between trisque nodes (or back into the same one), not to
or from a redis-server.  RESTORE checks the magic and the checksum
(``DUMP payload version or checksum are wrong``), then rebuilds the value
by running the records, each a single-key keyspace write, on a scratch
key of the same db, so a payload that does not rebuild (``Bad data
format``) leaves the keyspace as it was, nothing logged.  The encoding is
the one the records make under the current bounds (as Redis converts at
RESTORE).  RESTORE is logged with its TTL made absolute (ABSTTL), as
Redis propagates it; IDLETIME and FREQ are checked and otherwise ignored
(access times are not kept).
"""

from __future__ import annotations

import hashlib
import os
from typing import TYPE_CHECKING

from ...protocol import aof, resp
from ...protocol.errors import SYNTAX, CommandError
from ..command import Commands
from ..command_keys import key_positions
from .args import int_arg
from .types import type_of

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 1, 1))  # the keyspace's: the key at argv[1]
key_command = COMMANDS.command

MAGIC = b"TRISQUE-DUMP 1\r\n"
CHECKSUM_BYTES = 8
BAD_PAYLOAD = "ERR DUMP payload version or checksum are wrong"
BAD_FORMAT = "ERR Bad data format"
NOT_FROM_PAYLOAD = frozenset((b"MOVE", b"RESTORE"))  # (single-key writes that touch another)


def _checksum(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=CHECKSUM_BYTES).digest()


def payload_of(value: object) -> bytes:
    value_type = type_of(value)
    body = b"".join(aof.command(*argv) for argv in value_type.records(b"", value_type.freeze(value)))
    data = MAGIC + body
    return data + _checksum(data)


def records_of(node: Node, payload: bytes) -> list[list[bytes]]:
    """The payload's records, checked: each a keyspace write of the
    placeholder key alone."""
    data, checksum = payload[:-CHECKSUM_BYTES], payload[-CHECKSUM_BYTES:]
    if len(payload) < len(MAGIC) + CHECKSUM_BYTES or not data.startswith(MAGIC) or (
            _checksum(data) != checksum):
        raise CommandError(BAD_PAYLOAD)
    records = []
    pos = len(MAGIC)
    while pos < len(data):
        try:
            argv, pos = aof.parse(data, pos, len(data))
        except (aof.Truncated, aof.FormatError):
            raise CommandError(BAD_FORMAT) from None
        args = [arg for arg in argv if isinstance(arg, bytes)]
        if len(args) != len(argv) or len(args) < 2:
            raise CommandError(BAD_FORMAT)  # (a LOADJOB, or no key)
        command = node.table.get(args[0].upper())
        if (command is None or "write" not in command.flags
                or args[0].upper() in NOT_FROM_PAYLOAD
                or (command.arity > 0 and len(args) != command.arity)
                or len(args) < -command.arity or len(key_positions(command, args) or ()) != 1
                or args[(key_positions(command, args) or [0])[0]] != b""):
            raise CommandError(BAD_FORMAT)  # (the key: argv[1], or XGROUP's argv[2])
        records.append(args)
    if not records:
        raise CommandError(BAD_FORMAT)
    return records


@key_command("DUMP", 2, "readonly", syntax="key")
def dump(node: Node, client: Client, argv: list[bytes]) -> bytes:
    ks = node.keyspace
    value = ks.lookup(ks.dbs[client.db], argv[1])
    if value is None:
        return resp.null(client.proto)
    return resp.bulk(payload_of(value))


@key_command("RESTORE", -4, "write denyoom",
             syntax="key ttl serialized-value [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency]")
def restore(node: Node, client: Client, argv: list[bytes]) -> bytes:
    replace = absttl = False
    idle = freq = -1
    j = 4
    while j < len(argv):
        option = argv[j].upper()
        more = j + 1 < len(argv)
        if option == b"REPLACE":
            replace = True
        elif option == b"ABSTTL":
            absttl = True
        elif option == b"IDLETIME" and more and freq == -1:
            idle = int_arg(argv[j + 1])
            if idle < 0:
                raise CommandError("ERR Invalid IDLETIME value, must be >= 0")
            j += 1
        elif option == b"FREQ" and more and idle == -1:
            freq = int_arg(argv[j + 1])
            if not 0 <= freq <= 255:
                raise CommandError("ERR Invalid FREQ value, must be >= 0 and <= 255")
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    ks = node.keyspace
    db = ks.dbs[client.db]
    key = argv[1]
    if not replace and ks.lookup(db, key) is not None:
        raise CommandError("BUSYKEY Target key name already exists.")
    ttl = int_arg(argv[2])
    if ttl < 0:
        raise CommandError("ERR Invalid TTL value, must be >= 0")
    records = records_of(node, argv[3])
    value = _rebuild(node, client, records)
    deleted = replace and ks.lookup(db, key) is not None and ks.delete(db, key)
    when = ttl if absttl or not ttl else ttl + node.now_ms()
    if when and when <= node.now_ms() and not ks.replaying:
        if deleted:
            ks.log(db, b"DEL", key)
        return resp.OK
    ks.store(db, key, value)
    if when:
        ks.set_expire(db, key, when)
    ks.log(db, b"RESTORE", key, b"%d" % when, argv[3], b"REPLACE", b"ABSTTL")
    return resp.OK


def _rebuild(node: Node, client: Client, records: list[list[bytes]]) -> object:
    """Run the records on a scratch key of the client's db (nothing
    logged) and take the value they made out of it."""
    ks = node.keyspace
    db = ks.dbs[client.db]
    scratch = b"\x00trisque-restore\x00" + os.urandom(8)
    replaying = ks.replaying
    try:
        for record in records:
            ks.replaying = True  # (Keyspace.replay's mode: no log, no expiry)
            command = node.table[record[0].upper()]
            argv = list(record)
            argv[(key_positions(command, argv) or [1])[0]] = scratch
            try:
                command.handler(node, client, argv)
            except CommandError:
                raise CommandError(BAD_FORMAT) from None
            finally:
                ks.replaying = replaying
        value = db.keys.get(scratch)
        if value is None:
            raise CommandError(BAD_FORMAT)
        return value
    finally:
        if scratch in db.keys:
            ks.delete(db, scratch)
