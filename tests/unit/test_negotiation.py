"""Content negotiation: Accept header -> SSE or protobuf."""

from __future__ import annotations

import pytest

import agui_wire
from agui_wire._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from agui_wire._negotiation import (
    MAX_RANGES,
    negotiate,
    parse_accept,
)
from agui_wire.errors import NotAcceptable

SSE = SSE_MEDIA_TYPE
PB = PROTO_MEDIA_TYPE
P = "application/vnd.ag-ui.event+proto"
NONE = "406"  # nothing acceptable: SSE by default, NotAcceptable when strict

# (Accept, agui_wire by default, with wildcard_proto=True, what @ag-ui/encoder 1.0.0
# picks when it differs from the option: only where its Accept parser differs)
TABLE = [
    (None, SSE, SSE, None),
    ("", SSE, SSE, None),
    ("   ", SSE, SSE, None),
    # */* alone keeps SSE by default (httpx, requests, curl and browsers send it and read
    # SSE); the binding's rule in full (the option, the reference): protobuf
    ("*/*", SSE, PB, None),
    ("*/*;q=0.8", SSE, PB, None),
    ("text/event-stream, */*", SSE, PB, None),
    ("text/event-stream, */*;q=0.1", SSE, PB, None),
    ("*/*, text/event-stream", SSE, PB, None),  # text/event-stream more specific than */*
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", SSE, PB, None),  # browser
    ("application/*", PB, PB, None),
    ("text/*", SSE, SSE, None),
    ("*/vnd.ag-ui.event+proto", SSE, SSE, PB),  # not a valid range: ignored
    # named with q > 0: protobuf, whatever SSE's weight or the order (the binding)
    (P, PB, PB, None),
    (P.upper(), PB, PB, None),
    (f"  {P}  ", PB, PB, None),
    (f"{P}, text/event-stream", PB, PB, None),
    (f"text/event-stream, {P}", PB, PB, None),
    ("text/event-stream", SSE, SSE, None),
    ("TEXT/EVENT-STREAM", SSE, SSE, None),
    # q values
    (f"{P};q=0", NONE, NONE, None),
    (f"{P}; q=0.0", NONE, NONE, None),
    (f"{P};Q=0", NONE, NONE, None),
    (f"{P} ;q=0", NONE, NONE, None),
    (f"{P};q=abc", SSE, SSE, None),  # malformed q: range ignored, header treated as absent
    (f"{P};q=-1", SSE, SSE, None),
    (f"{P};q=0.001", PB, PB, None),
    (f"{P};q=2", PB, PB, None),  # clamped to 1
    (f"{P};q=.5", PB, PB, None),
    (f"text/event-stream;q=1, {P};q=0.5", PB, PB, None),  # SSE's higher q: not consulted
    (f"text/event-stream;q=0.5, {P}", PB, PB, None),
    (f"text/event-stream;q=0.5, {P};q=0.5", PB, PB, None),
    ("*/*;q=0", NONE, NONE, None),
    (f"{P};q=0, */*", SSE, SSE, None),  # the specific q=0 excludes protobuf only
    (f"*/*;q=0, {P}", PB, PB, None),
    (f"{P}, {P};q=0", PB, PB, None),  # equally specific duplicates: the higher q
    (f"{P};q=0, {P}", PB, PB, None),
    ("text/event-stream;q=0", NONE, NONE, None),
    ("text/event-stream;q=0, */*", PB, PB, None),  # */* admits it, SSE is refused
    ("text/event-stream;q=0.3, application/*;q=0.2", PB, PB, None),
    ("application/*;q=0.9, */*;q=0.1", PB, PB, None),
    # parameters before q must be satisfied by our (parameterless) offers
    (f"{P};charset=utf-8", NONE, NONE, None),
    (f"{P}; version=1", NONE, NONE, None),
    (f'{P};a="x,y"', NONE, NONE, None),
    (f"{P};q=0.5;foo=bar", PB, PB, None),  # after q: accept-extension, ignored
    (f"{P};foo=*", NONE, NONE, PB),  # no wildcard parameter values here
    ("text/event-stream;charset=utf-8", SSE, SSE, None),  # SSE is always UTF-8
    ("text/event-stream; charset=UTF-8, */*;q=0.5", SSE, PB, None),
    ("text/event-stream;charset=latin-1", NONE, NONE, None),
    ("text/event-stream;charset=utf-8;q=0, text/event-stream", NONE, NONE, None),  # more specific
    (f'{P};q="0.5", text/event-stream;q=0.4', PB, PB, None),  # quoted q
    # the protocol spec's name for the protobuf type
    ("application/x-ag-ui", PB, PB, SSE),
    ("application/x-ag-ui, text/event-stream", PB, PB, SSE),
    ("text/event-stream;q=0.5, application/x-ag-ui", PB, PB, SSE),
    (f"application/x-ag-ui;q=0, {P}", PB, PB, None),
    # nothing we offer
    ("application/json", NONE, NONE, None),
    ("application/x-protobuf", NONE, NONE, None),
    ("application/vnd.ag-ui.event+json", NONE, NONE, None),
    # unparseable: ignored; a header of only garbage counts as absent
    ("*", SSE, SSE, None),
    ("application", SSE, SSE, None),
    ("garbage;;;", SSE, SSE, None),
    (f",,, ,{P},,", PB, PB, None),
    (f'text/plain;a="unterminated, {P}', SSE, SSE, None),  # the quote swallows the rest
    (f'text/plain;a="x\\"y,z", {P}', PB, PB, SSE),  # escaped quote inside a quoted string
    (f"text/event-stream;;q=0.5, {P};q=0.4", PB, PB, None),  # empty parameter skipped
]


@pytest.mark.parametrize(("accept", "want", "option", "reference"), TABLE)
def test_table(accept, want, option, reference):
    for wildcard_proto, expected in ((False, want), (True, option)):
        if expected == NONE:
            assert negotiate(accept, wildcard_proto=wildcard_proto) == SSE
            with pytest.raises(NotAcceptable) as info:
                negotiate(accept, strict=True, wildcard_proto=wildcard_proto)
            assert info.value.accept == accept
        else:
            assert negotiate(accept, wildcard_proto=wildcard_proto) == expected
            assert negotiate(accept, strict=True, wildcard_proto=wildcard_proto) == expected


def test_the_option_differs_only_where_a_wildcard_admits_protobuf():
    for accept, want, option, _ in TABLE:
        if want != option:
            assert (want, option) == (SSE, PB)
            assert "*/*" in accept


def test_table_is_big_enough():
    assert len(TABLE) >= 30
    assert sum(1 for _, want, option, _ in TABLE if want != option) >= 6  # the deviation


def test_returned_types_are_exact():
    assert PB == agui_wire.PROTO_MEDIA_TYPE == "application/vnd.ag-ui.event+proto"
    assert SSE == agui_wire.SSE_MEDIA_TYPE == "text/event-stream"
    assert negotiate("application/x-ag-ui") is PB  # never the alias, never parameters


def test_parse_accept():
    ranges = parse_accept('Text/HTML;Level=1;q=0.5;ext=x, */*, bad, a/b;c="d;e"')
    assert [(r.type, r.subtype, r.params, r.q, r.position) for r in ranges] == [
        ("text", "html", (("level", "1"),), 0.5, 0),
        ("*", "*", (), 1.0, 1),
        ("a", "b", (("c", "d;e"),), 1.0, 2),
    ]


def test_pathological_headers_are_bounded():
    many = ", ".join(f"x/y{i}" for i in range(100_000)) + f", {P}"
    assert negotiate(many) == SSE  # only the first ranges are looked at: no match
    assert len(parse_accept(many)) <= MAX_RANGES
    quotes = 'a/b;p="' + '\\"' * 200_000
    assert negotiate(quotes) == SSE
    commas = "," * 1_000_000
    assert negotiate(commas) == SSE
    long_q = f"{P};q=0." + "0" * 100_000 + "1"
    assert negotiate(long_q) == SSE  # cut at MAX_ACCEPT_LENGTH: nothing left


def test_not_acceptable_message():
    with pytest.raises(NotAcceptable, match="application/json"):
        negotiate("application/json", strict=True)
