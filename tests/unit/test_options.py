"""agui_wire._codec.options: every decoder takes the same options and refuses a bad
one with the same ``ValueError``, in the same order, before it reads a byte.

``check_options`` is driven directly, then through each public reader (``EventDecoder``,
the one-shots, ``iter_decode``, ``RecordReader``/``read_records``, which hold one record
at a time and take no ``max_events``), which must say exactly what it says;
tests/differential/test_oneshot.py holds the one-shots to ``EventDecoder`` on more inputs.
"""

from __future__ import annotations

from typing import Any

import pytest

import agui_wire
from agui_wire import SSE_MEDIA_TYPE, EventDecoder, RecordReader
from agui_wire._codec.options import check_options, check_policies
from agui_wire.schema import (
    DEFAULT_MAX_DEPTH,
    DEFAULT_MAX_EVENT_SIZE,
    DEFAULT_MAX_FRAME_SIZE,
    MAX_DEPTH_LIMIT,
    MAX_FRAME_PAYLOAD,
)

DEFAULTS: dict[str, Any] = {
    "unknown_events": "skip",
    "invalid_utf8": "error",
    "max_depth": DEFAULT_MAX_DEPTH,
    "max_frame_size": DEFAULT_MAX_FRAME_SIZE,
    "max_event_size": DEFAULT_MAX_EVENT_SIZE,
    "max_events": None,
}

# option -> values refused (bool is not an int here; neither is a float equal to one)
BAD: dict[str, list[Any]] = {
    "unknown_events": ["drop", "SKIP", None, 1],
    "invalid_utf8": ["ignore", "strict", None],
    "max_events": [-1, True, 1.0, "5"],
    "max_depth": [0, MAX_DEPTH_LIMIT + 1, True, 1024.0, None],
    "max_frame_size": [-1, MAX_FRAME_PAYLOAD + 1, False, 10.0],
    "max_event_size": [0, True, 1.5, None],
}
CASES = [(name, value) for name, values in BAD.items() for value in values]


def check(**options: Any) -> None:
    o = {**DEFAULTS, **options}
    check_options(
        o["unknown_events"],
        o["invalid_utf8"],
        o["max_depth"],
        o["max_frame_size"],
        o["max_event_size"],
        o["max_events"],
    )


def test_the_defaults_and_the_edges_are_accepted() -> None:
    check()
    for name, value in [
        ("unknown_events", "raise"),
        ("unknown_events", "raw"),
        ("invalid_utf8", "replace"),
        ("max_events", 0),
        ("max_depth", 1),
        ("max_depth", MAX_DEPTH_LIMIT),
        ("max_frame_size", 0),
        ("max_frame_size", MAX_FRAME_PAYLOAD),
        ("max_event_size", 1),
    ]:
        check(**{name: value})


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}={v!r}" for n, v in CASES])
def test_a_bad_option_is_a_value_error_naming_it_and_the_value(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=rf"^{name} must be ") as got:
        check(**{name: value})
    assert str(got.value).endswith(repr(value))


def test_the_first_bad_option_in_the_documented_order_is_the_one_named() -> None:
    order = list(BAD)  # unknown_events, invalid_utf8, max_events, max_depth, frame, event
    for i, name in enumerate(order):
        bad = {later: BAD[later][0] for later in order[i:]}
        with pytest.raises(ValueError, match=rf"^{name} must be "):
            check(**bad)
    with pytest.raises(ValueError, match=r"^unknown_events"):
        check_policies("drop", "ignore")


@pytest.mark.parametrize(("name", "value"), CASES, ids=[f"{n}={v!r}" for n, v in CASES])
def test_every_reader_refuses_it_alike_before_reading(name: str, value: Any) -> None:
    with pytest.raises(ValueError, match=name) as want:
        check(**{name: value})
    readers = {
        "EventDecoder": lambda: EventDecoder(**{name: value}),
        "EventDecoder(sse)": lambda: EventDecoder(SSE_MEDIA_TYPE, **{name: value}),
        "decode": lambda: agui_wire.decode(b"", **{name: value}),
        "decode_proto": lambda: agui_wire.decode_proto(b"", **{name: value}),
        "iter_decode": lambda: next(agui_wire.iter_decode(b"", **{name: value}), None),
    }
    if name != "max_events":  # a record reader holds one record at a time: no such bound
        readers["RecordReader"] = lambda: RecordReader(**{name: value})
        readers["read_records"] = lambda: next(agui_wire.read_records(b"", **{name: value}), None)
    for reader, make in readers.items():
        with pytest.raises(ValueError, match=name) as got:
            make()
        assert str(got.value) == str(want.value), reader
