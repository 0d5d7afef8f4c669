"""Glob-style patterns exactly as Redis matches keys (util.c's
stringmatchlen, case-sensitive): ``*``, ``?``, ``[abc]``, ``[^a-z]``,
backslash escapes, with Redis's edge cases: ``[]`` is an empty class, an
unterminated ``[`` class runs to the end of the pattern, ranges compare
bytes as C's signed ``char``, and an empty key matches only the empty
pattern (so ``KEYS *``'s own shortcut is the only way ``*`` finds it).

The pattern is compiled once into tokens and matched without recursion
(one backtracking point, the last ``*``): the same answers as Redis's
recursive matcher, whose depth limit (1000 nested ``*``) only bounds its
own stack.
"""

from __future__ import annotations

from typing import Callable, Union

_STAR = 0
_ANY = 1
Token = Union[int, bytes, tuple[bool, list[tuple[int, int]]]]  # star/any, literal, class
_SPECIALS = frozenset(b"*?[\\")


def _signed(byte: int) -> int:
    return byte - 256 if byte >= 128 else byte


def _tokens(pattern: bytes) -> list[Token]:
    """Redis's reading of the pattern, as tokens: _STAR, _ANY, a one-byte
    literal, or a class (negated, [(low, high)] in signed-char order)."""
    out: list[Token] = []
    i, n = 0, len(pattern)
    while i < n:
        c = pattern[i]
        if c == 42:  # *
            if not out or out[-1] is not _STAR:
                out.append(_STAR)
        elif c == 63:  # ?
            out.append(_ANY)
        elif c == 91:  # [
            i += 1
            negate = i < n and pattern[i] == 94  # ^
            if negate:
                i += 1
            ranges: list[tuple[int, int]] = []
            while True:
                if i < n and pattern[i] == 92 and n - i >= 2:  # backslash
                    i += 1
                    ranges.append((_signed(pattern[i]), _signed(pattern[i])))
                elif i < n and pattern[i] == 93:  # ]
                    break
                elif i >= n:
                    i -= 1  # Redis steps back and ends the class
                    break
                elif n - i >= 3 and pattern[i + 1] == 45:  # a-z
                    low, high = _signed(pattern[i]), _signed(pattern[i + 2])
                    ranges.append((min(low, high), max(low, high)))
                    i += 2
                else:
                    ranges.append((_signed(pattern[i]), _signed(pattern[i])))
                i += 1
            out.append((negate, ranges))
        elif c == 92 and n - i >= 2:  # backslash escapes the next byte
            i += 1
            out.append(pattern[i:i + 1])
        else:
            out.append(pattern[i:i + 1])
        i += 1
    return out


def _one(token: Token, byte: int) -> bool:
    if token is _ANY:
        return True
    if token.__class__ is bytes:
        return token[0] == byte
    ranges: list[tuple[int, int]]
    negate, ranges = token  # type: ignore[misc, assignment]
    c = _signed(byte)
    found = False
    for low, high in ranges:
        if low <= c <= high:
            found = True
            break
    return found != negate


def _match_tokens(tokens: list[Token], s: bytes) -> bool:
    if not s:
        return not tokens
    ti = si = 0
    star_ti = -1
    star_si = 0
    nt, ns = len(tokens), len(s)
    while si < ns:
        if ti < nt:
            token = tokens[ti]
            if token is _STAR:
                star_ti, star_si = ti, si
                ti += 1
                continue
            if _one(token, s[si]):
                ti += 1
                si += 1
                continue
        if star_ti < 0:
            return False
        star_si += 1  # let the last star take one more byte
        ti, si = star_ti + 1, star_si
    while ti < nt and tokens[ti] is _STAR:
        ti += 1
    return ti == nt


def compile_pattern(pattern: bytes) -> Callable[[bytes], bool]:
    """A predicate ``key -> bool``; plain and prefix patterns are cheap."""
    if not _SPECIALS.intersection(pattern):
        return pattern.__eq__
    head = pattern[:-1]
    if pattern.endswith(b"*") and head and not _SPECIALS.intersection(head):
        return lambda key: key.startswith(head)  # (an empty key cannot match)
    tokens = _tokens(pattern)
    return lambda key: _match_tokens(tokens, key)


def match(pattern: bytes, key: bytes) -> bool:
    return compile_pattern(pattern)(key)
