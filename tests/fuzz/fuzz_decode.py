"""Fuzz target: ``decode()`` with format sniffing, and the streaming API over it.

Strategy: the input is a capture of either transport (or neither). ``decode``
sniffs it; the result must equal ``decode`` with the sniffed content type given,
``iter_decode`` over pseudo-random chunkings, and a hand-driven ``EventDecoder``
(feed/close); options derived from the input (``max_events``,
``unknown_events``, ``max_frame_size``) are applied to all of them alike.

Contract checked: events or a ``DecodeError``, nothing else; the same events and
the same error whatever the chunking; ``err.events`` holds exactly the events
delivered before the error; ``max_events`` is never exceeded.
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
    from agui_wire import decode, iter_decode, sniff
    from tests.fuzz.fuzzlib import (
        Err,
        Ok,
        check_event,
        chunkings,
        describe,
        outcome,
        pick,
        same_outcome,
    )

SEEDS = "captures"
OPTIONS: tuple[dict[str, Any], ...] = (
    {},
    {},
    {"max_events": 0},
    {"max_events": 2},
    {"unknown_events": "raw"},
    {"unknown_events": "raise"},
    {"max_frame_size": 16},
    {"invalid_utf8": "replace"},
)


def streamed(chunks: list[bytes], options: dict[str, Any]) -> tuple[list[dict[str, Any]], Any]:
    got: list[dict[str, Any]] = []

    def drain() -> None:
        for event in iter_decode(iter(chunks), **options):
            got.append(event)

    return got, outcome(drain)


def test_one_input(data: bytes) -> None:
    options = pick(data, OPTIONS, 6)
    kind = outcome(sniff, data[:1])
    whole = outcome(decode, data, **options)
    if isinstance(whole, Ok):
        events, end = whole.value, whole
    else:
        assert isinstance(whole, Err)
        events, end = whole.error.events, whole
    for event in events:
        check_event(event)
    limit = options.get("max_events")
    assert limit is None or len(events) <= limit
    if isinstance(kind, Ok) and kind.value is not None:
        typed = outcome(decode, data, kind.value, **options)
        assert same_outcome(typed, whole), f"sniffed != typed: {describe(typed)}"
    elif isinstance(kind, Err):
        assert isinstance(whole, Err)
        assert type(whole.error) is type(kind.error)
    for name, chunks in chunkings(data, max_random=1):
        got, result = streamed(chunks, options)
        assert same_outcome(Ok(got), Ok(events)), f"{name}: events differ from decode()"
        if isinstance(end, Err):
            assert same_outcome(result, end), f"{name}: {describe(result)} != {describe(end)}"
        else:
            assert isinstance(result, Ok), f"{name}: {describe(result)}"


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
