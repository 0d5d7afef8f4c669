"""LCS key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN], as Redis
7.0's lcsCommand: the longest common subsequence of two strings (a
missing key is ""), by the same dynamic-programming table and the same
walk back through it, so where several subsequences are longest the one
Redis answers (and its IDX ranges, last first) is ours too.

The table holds (len1 + 1) * (len2 + 1) counts of 4 bytes, as Redis's,
and is refused above proto-max-bulk-len with Redis's error.
"""

from __future__ import annotations

from array import array
from typing import TYPE_CHECKING

from ...protocol import resp
from ...protocol.errors import SYNTAX, CommandError
from ..command import Commands
from .args import int_arg

if TYPE_CHECKING:
    from ..client import Client
    from ..node import Node

COMMANDS = Commands(keys=(1, 2, 1))  # the keyspace's: the two keys
key_command = COMMANDS.command


def _table(a: bytes, b: bytes) -> list[array[int]]:
    """LCS(i, j): the LCS length of a[:i] and b[:j], row by row."""
    rows = [array("I", bytes(4 * (len(b) + 1)))]
    for i in range(1, len(a) + 1):
        above = rows[-1]
        row = array("I", [0])
        char = a[i - 1]
        left = 0
        for j in range(1, len(b) + 1):
            if char == b[j - 1]:
                left = above[j - 1] + 1
            else:
                up = above[j]
                left = up if up > left else left
            row.append(left)
        rows.append(row)
    return rows


def _ranges(a: bytes, b: bytes, rows: list[array[int]], minmatchlen: int,
            ) -> tuple[bytes, list[tuple[int, int, int, int, int]]]:
    """The subsequence and its matching ranges (a_start, a_end, b_start,
    b_end, length), walking back from the end as Redis does."""
    i, j = len(a), len(b)
    out = bytearray()
    ranges = []
    a_start = len(a)  # (len(a): no range open)
    a_end = b_start = b_end = 0
    while i > 0 and j > 0:
        emit = False
        if a[i - 1] == b[j - 1]:
            out.append(a[i - 1])
            if a_start == len(a):
                a_start = a_end = i - 1
                b_start = b_end = j - 1
            elif a_start == i and b_start == j:
                a_start -= 1
                b_start -= 1
            else:
                emit = True
            if a_start == 0 or b_start == 0:
                emit = True
            i -= 1
            j -= 1
        else:
            if rows[i - 1][j] > rows[i][j - 1]:
                i -= 1
            else:
                j -= 1
            if a_start != len(a):
                emit = True
        if emit:
            length = a_end - a_start + 1
            if minmatchlen == 0 or length >= minmatchlen:
                ranges.append((a_start, a_end, b_start, b_end, length))
            a_start = len(a)
    out.reverse()
    return bytes(out), ranges


def _string(node: Node, client: Client, key: bytes) -> bytes:
    ks = node.keyspace
    value = ks.lookup(ks.dbs[client.db], key)
    if value is None:
        return b""
    if type(value) is bytes:
        return value
    if type(value) is bytearray:
        return bytes(value)
    raise CommandError("ERR The specified keys must contain string values")


@key_command("LCS", -3, "readonly", syntax="key1 key2 [LEN] [IDX] [MINMATCHLEN len] [WITHMATCHLEN]")
def lcs(node: Node, client: Client, argv: list[bytes]) -> bytes:
    a, b = _string(node, client, argv[1]), _string(node, client, argv[2])
    getlen = getidx = withmatchlen = False
    minmatchlen = 0
    j = 3
    while j < len(argv):
        option = argv[j].upper()
        if option == b"IDX":
            getidx = True
        elif option == b"LEN":
            getlen = True
        elif option == b"WITHMATCHLEN":
            withmatchlen = True
        elif option == b"MINMATCHLEN" and j + 1 < len(argv):
            minmatchlen = max(int_arg(argv[j + 1]), 0)
            j += 1
        else:
            raise CommandError(SYNTAX)
        j += 1
    if getlen and getidx:
        raise CommandError("ERR If you want both the length and indexes, please just use IDX.")
    if 4 * (len(a) + 1) * (len(b) + 1) > node.config.proto_max_bulk_len:
        raise CommandError("ERR Insufficient memory, transient memory for LCS exceeds "
                           "proto-max-bulk-len")
    rows = _table(a, b)
    length = rows[-1][-1]
    if getlen:
        return resp.integer(length)
    common, ranges = _ranges(a, b, rows, minmatchlen)
    if not getidx:
        return resp.bulk(common)
    matches = []
    for a_start, a_end, b_start, b_end, match_len in ranges:
        item = b"*%d\r\n*2\r\n:%d\r\n:%d\r\n*2\r\n:%d\r\n:%d\r\n" % (
            2 + withmatchlen, a_start, a_end, b_start, b_end)
        if withmatchlen:
            item += b":%d\r\n" % match_len
        matches.append(item)
    head = b"%2\r\n" if client.proto == 3 else b"*4\r\n"
    return (head + b"$7\r\nmatches\r\n*%d\r\n" % len(matches) + b"".join(matches)
            + b"$3\r\nlen\r\n:%d\r\n" % length)
