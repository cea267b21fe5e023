"""What the fuzzers found, checked against the reference decoder (``@ag-ui/proto`` 1.0.0).

Strategy: the inputs of tests/fuzz/test_regressions.py where our decoders had
to choose between upb's behaviour and another, decoded by the pinned package
through the node harness: the choice docs/errors.md states must be the
reference's. A field straddling two occurrences of a merged message is refused
(as by upb and proto_reader); a ``Struct`` map entry with a field besides key and
value is kept (as by proto_reader and Cython; upb drops it: a documented
exception of the upb path).
"""

from __future__ import annotations

from typing import Any

import pytest

from agui_wire import DecodeError
from agui_wire._codec import proto_reader
from tests.support.wire import base, ld, string, v_null, v_struct, vi

pytestmark = pytest.mark.interop


def test_straddling_field_is_refused_by_the_reference(node_harness: Any) -> None:
    cases = [
        ld(2, ld(1, b"\x08"), ld(1, b"\x01"), string(2, "m")),
        ld(2, base(1), b"\x12") + ld(2, b"\x01m"),
    ]
    results = node_harness.decode_proto(b"".join(len(c).to_bytes(4, "big") + c for c in cases))
    for payload, result in zip(cases, results, strict=True):
        assert result.event is None
        assert result.error is not None
        with pytest.raises(DecodeError):
            proto_reader.decode_payload(payload)


def test_map_entries_with_foreign_fields_are_kept_by_the_reference(node_harness: Any) -> None:
    values = [
        v_struct(ld(1, string(1, "a"), ld(2, v_null()), string(6, "z"))),
        v_struct(ld(1, vi(6, 1), string(1, "a"), ld(2, v_null()))),
        v_struct(ld(1, vi(1, 1), ld(2, v_null()))),
    ]
    payloads = [ld(7, base(6), ld(2, v)) for v in values]
    stream = b"".join(len(p).to_bytes(4, "big") + p for p in payloads)
    results = node_harness.decode_proto(stream)
    for payload, result in zip(payloads, results, strict=True):
        assert result.error is None
        assert result.event["snapshot"] == proto_reader.decode_payload(payload)["snapshot"]


def test_varint_bits_past_64_are_dropped_by_the_reference(node_harness: Any) -> None:
    # STEP_STARTED with timestamp 1000 written as a 10-byte varint whose last byte
    # carries bits past 64: the reference's reader drops them and decodes 1000; our
    # decoders refuse the frame (docs/errors.md, "Where the reference is lenient")
    timestamp = b"\x10\xe8\x87\x80\x80\x80\x80\x80\x80\x80\x7e"
    payload = ld(15, ld(1, vi(1, 14), timestamp), string(2, "s"))
    (result,) = node_harness.decode_proto(len(payload).to_bytes(4, "big") + payload)
    assert result.error is None
    assert result.event == {"type": "STEP_STARTED", "timestamp": 1000, "stepName": "s"}
    with pytest.raises(DecodeError, match="overflows 64 bits"):
        proto_reader.decode_payload(payload)
