"""A field-by-field dump of one binary frame: ``protoc --decode`` with offsets and hex.

Strategy: walk the wire bytes guided by the generated descriptors (the schema in
``proto/ag_ui``, plus ``google.protobuf.Struct``/``Value``/``ListValue``), never
by a parsed message, so every byte of the frame is shown exactly once, in
order, including bytes a parser would drop: unknown fields, repeated scalars,
a field with the wrong wire type. Each line is one field: its stream offset,
its bytes in hex (tag, length, value; long values continue on the next lines),
the field number and schema name, the type and wire type, and the value.
Length-delimited fields of a message type are descended into; unknown ones are
tried as a nested message and otherwise shown as bytes. A walk that hits broken
bytes prints what it could and then ``!!`` with the offset and the reason.

Contract: ``dump_frame(payload, offset)`` returns the lines for the frame whose
4-byte length prefix starts at stream byte ``offset``; pure, no I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from typing import Final

from google.protobuf.descriptor import Descriptor, FieldDescriptor

from .._pb import events_pb2
from ..schema import EVENT_BY_ARM

__all__ = ["dump_frame", "hexdump"]

EVENT: Final = events_pb2.DESCRIPTOR.message_types_by_name["Event"]
HEX_BYTES: Final = 12  # bytes per line in the hex column
_HEX_WIDTH: Final = HEX_BYTES * 3 - 1
_WIRE: Final = {0: "VARINT", 1: "I64", 2: "LEN", 3: "SGROUP", 4: "EGROUP", 5: "I32"}
_TYPE_NAMES: Final = {
    FieldDescriptor.TYPE_DOUBLE: "double",
    FieldDescriptor.TYPE_FLOAT: "float",
    FieldDescriptor.TYPE_INT64: "int64",
    FieldDescriptor.TYPE_UINT64: "uint64",
    FieldDescriptor.TYPE_INT32: "int32",
    FieldDescriptor.TYPE_FIXED64: "fixed64",
    FieldDescriptor.TYPE_FIXED32: "fixed32",
    FieldDescriptor.TYPE_BOOL: "bool",
    FieldDescriptor.TYPE_STRING: "string",
    FieldDescriptor.TYPE_BYTES: "bytes",
    FieldDescriptor.TYPE_UINT32: "uint32",
    FieldDescriptor.TYPE_SFIXED32: "sfixed32",
    FieldDescriptor.TYPE_SFIXED64: "sfixed64",
    FieldDescriptor.TYPE_SINT32: "sint32",
    FieldDescriptor.TYPE_SINT64: "sint64",
}
_LEN_TYPES: Final = frozenset(
    {FieldDescriptor.TYPE_STRING, FieldDescriptor.TYPE_BYTES, FieldDescriptor.TYPE_MESSAGE}
)


class _Broken(Exception):
    def __init__(self, offset: int, reason: str) -> None:
        super().__init__(reason)
        self.offset = offset
        self.reason = reason


def _hex(data: bytes) -> str:
    return " ".join(f"{b:02x}" for b in data)


@dataclass
class _Dump:
    buf: bytes
    base: int  # stream offset of buf[0]
    lines: list[str]

    def emit(self, at: int, data: bytes, depth: int, text: str) -> None:
        """A line for ``data`` at buf position ``at`` (continued 12 bytes a line)."""
        first = data[:HEX_BYTES]
        self.lines.append(f"{self.base + at:>8}  {_hex(first):<{_HEX_WIDTH}}  {'  ' * depth}{text}")
        for i in range(HEX_BYTES, len(data), HEX_BYTES):
            self.lines.append(f"{self.base + at + i:>8}  {_hex(data[i : i + HEX_BYTES])}")

    def varint(self, pos: int, end: int) -> tuple[int, int]:
        result = shift = 0
        start = pos
        while True:
            if pos >= end:
                raise _Broken(start, "truncated varint")
            b = self.buf[pos]
            pos += 1
            result |= (b & 0x7F) << shift
            if b < 0x80:
                return result, pos
            shift += 7
            if shift > 63:
                raise _Broken(start, "varint longer than 10 bytes")

    def message(self, desc: Descriptor | None, start: int, end: int, depth: int) -> None:
        pos = start
        while pos < end:
            at = pos
            tag, pos = self.varint(pos, end)
            number, wt = tag >> 3, tag & 7
            if number == 0:
                raise _Broken(at, "field number 0 is not valid")
            fd = desc.fields_by_number.get(number) if desc is not None else None
            name = self._name(desc, fd, number)
            if wt == 0:
                value, pos = self.varint(pos, end)
                self.emit(at, self.buf[at:pos], depth, f"{name}  {self._varint(fd, value)}")
            elif wt == 1 or wt == 5:
                size = 8 if wt == 1 else 4
                if end - pos < size:
                    raise _Broken(at, f"field {number}: truncated {_WIRE[wt]}")
                raw = self.buf[pos : pos + size]
                pos += size
                self.emit(at, self.buf[at:pos], depth, f"{name}  {self._fixed(fd, raw, wt)}")
            elif wt == 2:
                length, body = self.varint(pos, end)
                if length > end - body:
                    raise _Broken(
                        at, f"field {number} declares {length} bytes, {end - body} remain"
                    )
                pos = body + length
                self._length_delimited(fd, name, at, body, pos, depth)
            elif wt in (3, 4):
                self.emit(at, self.buf[at:pos], depth, f"{name}  {_WIRE[wt]} (legacy group)")
            else:
                raise _Broken(at, f"wire type {wt} of field {number} is not valid")

    def _name(self, desc: Descriptor | None, fd: FieldDescriptor | None, number: int) -> str:
        if fd is None:
            return f"{number} ?"
        name = f"{number} {fd.name}"
        if desc is EVENT and number in EVENT_BY_ARM:
            name += f" [{EVENT_BY_ARM[number].type}]"
        return name

    def _varint(self, fd: FieldDescriptor | None, value: int) -> str:
        if fd is None:
            return f"VARINT = {value}"
        kind = fd.type
        if kind == FieldDescriptor.TYPE_ENUM:
            enum = fd.enum_type
            assert enum is not None
            label = enum.values_by_number.get(value)
            shown = label.name if label is not None else "? (not in the enum)"
            return f"{enum.name} VARINT = {value} ({shown})"
        if kind == FieldDescriptor.TYPE_BOOL:
            return f"bool VARINT = {'true' if value else 'false'}" + (
                f" ({value})" if value > 1 else ""
            )
        if kind in (FieldDescriptor.TYPE_INT64, FieldDescriptor.TYPE_INT32):
            signed = value - (1 << 64) if value >= 1 << 63 else value
            return f"{_TYPE_NAMES[kind]} VARINT = {signed}"
        if kind in (FieldDescriptor.TYPE_SINT32, FieldDescriptor.TYPE_SINT64):
            return f"{_TYPE_NAMES[kind]} VARINT = {(value >> 1) ^ -(value & 1)}"
        type_name = _TYPE_NAMES.get(kind, "?")
        if kind in _LEN_TYPES:
            return f"VARINT = {value}  !! wrong wire type for a {type_name} field (ignored)"
        return f"{type_name} VARINT = {value}"

    def _fixed(self, fd: FieldDescriptor | None, raw: bytes, wt: int) -> str:
        kind = fd.type if fd is not None else None
        if kind == FieldDescriptor.TYPE_DOUBLE and wt == 1:
            return f"double I64 = {struct.unpack('<d', raw)[0]!r}"
        if kind == FieldDescriptor.TYPE_FLOAT and wt == 5:
            return f"float I32 = {struct.unpack('<f', raw)[0]!r}"
        value = int.from_bytes(raw, "little")
        note = "" if fd is None else "  !! wrong wire type for this field (ignored)"
        return f"{_WIRE[wt]} = {value} (0x{value:0{len(raw) * 2}x}){note}"

    def _length_delimited(
        self,
        fd: FieldDescriptor | None,
        name: str,
        at: int,
        body: int,
        end: int,
        depth: int,
    ) -> None:
        length = end - body
        kind = fd.type if fd is not None else None
        if kind == FieldDescriptor.TYPE_MESSAGE:
            assert fd is not None
            assert fd.message_type is not None
            self.emit(at, self.buf[at:body], depth, f"{name}  {fd.message_type.name} LEN {length}")
            self.message(fd.message_type, body, end, depth + 1)
            return
        if kind == FieldDescriptor.TYPE_STRING:
            raw = self.buf[body:end]
            try:
                text = repr(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                text = f"{raw!r}  !! invalid UTF-8 at byte {self.base + body + exc.start}"
            shown = text if len(text) <= 80 else text[:77] + "…" + text[-1]
            self.emit(at, self.buf[at:end], depth, f"{name}  string LEN {length} = {shown}")
            return
        if fd is None and length and self._walks(body, end):
            self.emit(at, self.buf[at:body], depth, f"{name}  LEN {length} (unknown; as a message)")
            self.message(None, body, end, depth + 1)
            return
        type_name = "bytes" if kind == FieldDescriptor.TYPE_BYTES else "unknown"
        note = (
            "  !! wrong wire type for this field (ignored)"
            if fd is not None and kind not in _LEN_TYPES
            else ""
        )
        self.emit(at, self.buf[at:end], depth, f"{name}  {type_name} LEN {length}{note}")

    def _walks(self, start: int, end: int) -> bool:
        probe = _Dump(self.buf, self.base, [])
        try:
            probe.message(None, start, end, 0)
        except _Broken:
            return False
        return True


def dump_frame(payload: bytes, offset: int) -> list[str]:
    """The annotated dump of one frame (see the module doc)."""
    prefix = struct.pack(">I", len(payload))
    buf = prefix + bytes(payload)
    dump = _Dump(buf, offset, [])
    dump.lines.append(f"{'offset':>8}  {'bytes':<{_HEX_WIDTH}}  field")
    dump.emit(0, prefix, 0, f"length prefix: {len(payload)} bytes (big-endian uint32)")
    if not payload:
        dump.lines.append(f"{offset + 4:>8}  {'':<{_HEX_WIDTH}}  !! empty payload: no event")
        return dump.lines
    try:
        dump.message(EVENT, 4, len(buf), 0)
    except _Broken as exc:
        dump.lines.append(
            f"{offset + exc.offset:>8}  {'':<{_HEX_WIDTH}}  !! at byte {offset + exc.offset}: "
            f"{exc.reason}"
        )
        rest = buf[exc.offset :]
        if rest:
            dump.emit(exc.offset, rest, 0, f"({len(rest)} bytes not walked)")
    return dump.lines


def hexdump(data: bytes, offset: int) -> list[str]:
    """``hexdump -C``-style lines for ``data`` starting at stream byte ``offset``."""
    lines = []
    for i in range(0, len(data), 16):
        row = data[i : i + 16]
        left, right = _hex(row[:8]), _hex(row[8:])
        text = "".join(chr(b) if 0x20 <= b < 0x7F else "." for b in row)
        lines.append(f"{offset + i:>8}  {left:<23}  {right:<23}  |{text}|")
    return lines
