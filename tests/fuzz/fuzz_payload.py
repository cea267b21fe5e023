"""Fuzz target: each protobuf payload decoder on its own (pure, Cython, upb).

Strategy: the input is one frame payload (a serialized ``ag_ui.Event``). Each
decoder runs on it with the default options and with options derived from the
input (``invalid_utf8="replace"`` for the direct decoders, a small
``max_depth``). Whatever comes back must be a JSON event dict; and when a decoded
event can be encoded again, decoding that must give ``normalize(event)``, the
documented round trip (a decoder may not produce something the encoder reads
differently: "silently wrong").

Contract checked: a dict or a ``DecodeError``, nothing else (no other exception,
no hang, no runaway memory: libFuzzer's -timeout and -rss_limit_mb turn those
into crashes); decode(encode(e)) == normalize(e) for
decoded events. The cross-implementation
comparison is fuzz_differential.py's job.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

if __name__ == "__main__":
    import atheris

    _instrumented: Any = atheris.instrument_imports(include=["agui_wire", "fuzzlib"])
else:
    _instrumented = contextlib.nullcontext()

with _instrumented:
    from agui_wire import EncodeError, normalize
    from agui_wire._codec import proto_reader, proto_writer
    from tests.fuzz.fuzzlib import (
        Ok,
        check_event,
        describe,
        outcome,
        payload_decoders,
        pick,
        same_json,
    )

SEEDS = "payloads"
DECODERS = payload_decoders()
DEPTHS = (1024, 1024, 1, 2, 3, 8, 33)


def round_trip(event: dict[str, Any]) -> None:
    try:
        again = proto_writer.encode_payload(event)
    except EncodeError:
        return  # the encoder refuses what the wire can carry but JS cannot (2^60, NaN, ...)
    back = outcome(proto_reader.decode_payload, again)
    assert isinstance(back, Ok), f"re-encoded event does not decode: {describe(back)}"
    assert same_json(back.value, normalize(event)), f"round trip is not normalize: {event!r}"


def test_one_input(data: bytes) -> None:
    depth = pick(data, DEPTHS, 1)
    for name, decode in DECODERS:
        for options in ({}, {"max_depth": depth}, {"invalid_utf8": "replace"}):
            if name == "upb" and "invalid_utf8" in options:
                continue  # upb always validates UTF-8
            result = outcome(decode, data, **options)
            if isinstance(result, Ok):
                check_event(result.value)
                if name == "pure" and not options:
                    round_trip(result.value)


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
