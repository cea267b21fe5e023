"""A few protobuf wire-building helpers for hand-made (and malformed) test frames."""

from __future__ import annotations

import struct


def varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def tag(number: int, wire_type: int) -> bytes:
    return varint(number << 3 | wire_type)


def ld(number: int, *body: bytes) -> bytes:
    """A length-delimited field."""
    payload = b"".join(body)
    return tag(number, 2) + varint(len(payload)) + payload


def vi(number: int, value: int) -> bytes:
    """A varint field."""
    return tag(number, 0) + varint(value)


def string(number: int, text: str) -> bytes:
    return ld(number, text.encode())


def double(number: int, x: float) -> bytes:
    return tag(number, 1) + struct.pack("<d", x)


def base(event_type: int = 0, *more: bytes) -> bytes:
    """A BaseEvent field (field 1 of every event message)."""
    return ld(1, *((vi(1, event_type),) if event_type else ()), *more)


def frame(payload: bytes) -> bytes:
    return len(payload).to_bytes(4, "big") + payload


# google.protobuf.Value bodies
def v_null() -> bytes:
    return vi(1, 0)


def v_num(x: float) -> bytes:
    return double(2, x)


def v_str(s: str) -> bytes:
    return string(3, s)


def v_struct(*entries: bytes) -> bytes:
    return ld(5, *entries)


def v_list(*values: bytes) -> bytes:
    return ld(6, *(ld(1, v) for v in values))


def entry(key: str, value: bytes) -> bytes:
    return ld(1, string(1, key), ld(2, value))


def json_equal(a: object, b: object) -> bool:
    """``a == b`` for JSON values of any depth (``==`` on dicts recurses in C and
    stops at Python's recursion limit, about 1000 levels)."""
    work = [(a, b)]
    while work:
        x, y = work.pop()
        if isinstance(x, dict):
            if not isinstance(y, dict) or x.keys() != y.keys():
                return False
            work.extend((x[k], y[k]) for k in x)
        elif isinstance(x, list):
            if not isinstance(y, list) or len(x) != len(y):
                return False
            work.extend(zip(x, y, strict=True))
        elif isinstance(x, float) != isinstance(y, float) and _number(x) and _number(y):
            # JSON text from a JS peer spells a double beyond 2**53 as its shortest
            # integer form, which Python reads as an int that is not the double
            if float(x) != float(y):  # type: ignore[arg-type]
                return False
        elif (
            isinstance(y, (dict, list))
            or x != y
            or (type(x) is not type(y) and not (_number(x) and _number(y)))
        ):
            return False
    return True


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)
