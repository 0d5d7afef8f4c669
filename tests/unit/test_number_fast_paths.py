"""The digit loops that read integers and stream IDs without int()
(numbers.parse_ll, stream_ids._plain_id) answer what the general paths
answer: Redis's string2ll, and streamGenericParseIDOrReply."""

import random

import pytest

from trisque.core.keyspace.numbers import parse_ll
from trisque.core.keyspace.stream_ids import INVALID_ID, MAX_ID, _plain_id, parse_id
from trisque.protocol.args import decimal
from trisque.protocol.errors import CommandError


def test_parse_ll_digits_as_int() -> None:
    rng = random.Random(1)
    for _ in range(2000):
        text = str(rng.randrange(10 ** rng.randrange(1, 19))).encode()
        assert parse_ll(text) == int(text)
        assert parse_ll(bytearray(text)) == int(text)


@pytest.mark.parametrize("text, value", [
    (b"0", 0), (b"7", 7), (b"-7", -7), (b"999999999999999999", 999999999999999999),
    (b"9223372036854775807", 9223372036854775807),
    (b"-9223372036854775808", -9223372036854775808),
    (b"9223372036854775808", None), (b"00", None), (b"01", None), (b"-0", None),
    (b"+1", None), (b" 1", None), (b"1 ", None), (b"1a", None), (b"", None), (b"-", None),
    (b"1.5", None), (b"\xd9\xa1", None),
])
def test_parse_ll_refusals_and_edges(text: bytes, value: int | None) -> None:
    assert parse_ll(text) == value


@pytest.mark.parametrize("text, expected", [
    (b"0-0", 0), (b"1-1", 1 << 64 | 1), (b"1700000000000-42", 1700000000000 << 64 | 42),
    (b"123456789012345678-123456789012345678",
     123456789012345678 << 64 | 123456789012345678),
    # beyond the loop: the general path reads them the same way
    (b"1234567890123456789-5", 1234567890123456789 << 64 | 5),
    (b"18446744073709551615-18446744073709551615", MAX_ID),
    (b"01-1", 1 << 64 | 1), (b"1-01", 1 << 64 | 1), (b"5", 5 << 64),
])
def test_parse_id_plain_and_general(text: bytes, expected: int) -> None:
    assert parse_id(text, 0, True) == (expected, True)


@pytest.mark.parametrize("text", [b"0", b"5", b"01-1", b"1-01", b"-1", b"1-", b"1--1",
                                  b"1-2-3", b"+1-1", b"1-*", b"a-1", b"1234567890123456789-1",
                                  b""])
def test_plain_id_leaves_the_rest_to_the_general_path(text: bytes) -> None:
    assert _plain_id(text) == -1


@pytest.mark.parametrize("text", [b"-1", b"1-", b"1--1", b"1-2-3", b"a-1", b"1-x",
                                  b"18446744073709551616-0"])
def test_parse_id_refusals(text: bytes) -> None:
    with pytest.raises(CommandError) as exc:
        parse_id(text, 0, True)
    assert exc.value.message == INVALID_ID


def test_decimal_one_byte_and_longer() -> None:
    # one byte takes its own path: a digit's value, anything else -1
    for byte in range(256):
        one = bytes((byte,))
        assert decimal(one) == (byte - 48 if one.isdigit() else -1), one
    for text, value in [(b"10", 10), (b"09", 9), (b"999999999999999999", 999999999999999999),
                        (b"1234567890123456789", -1), (b"", -1), (b"1a", -1), (b"-1", -1)]:
        assert decimal(text) == value, text
