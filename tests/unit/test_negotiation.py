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

# (Accept, our result, the reference's result when it differs from ours)
TABLE = [
    # absent / empty: any type, our preference
    (None, SSE, None),
    ("", SSE, None),
    ("   ", SSE, None),
    # wildcards: both match the same range -> SSE (reference: protobuf, breaks curl)
    ("*/*", SSE, PB),
    ("*/*;q=0.8", SSE, PB),
    ("text/event-stream, */*", SSE, PB),
    ("text/event-stream, */*;q=0.1", SSE, PB),
    ("*/*, text/event-stream", SSE, PB),  # text/event-stream more specific than */*
    ("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8", SSE, PB),  # browser
    ("application/*", PB, None),
    ("text/*", SSE, None),
    ("*/vnd.ag-ui.event+proto", SSE, PB),  # not a valid range: ignored
    # exact types, order decides on equal q
    (P, PB, None),
    (P.upper(), PB, None),
    (f"  {P}  ", PB, None),
    (f"{P}, text/event-stream", PB, None),
    (f"text/event-stream, {P}", SSE, PB),
    ("text/event-stream", SSE, None),
    ("TEXT/EVENT-STREAM", SSE, None),
    # q values
    (f"{P};q=0", NONE, SSE),
    (f"{P}; q=0.0", NONE, SSE),
    (f"{P};Q=0", NONE, SSE),
    (f"{P} ;q=0", NONE, SSE),
    (f"{P};q=abc", SSE, None),  # malformed q: range ignored, header treated as absent
    (f"{P};q=-1", SSE, None),
    (f"{P};q=0.001", PB, None),
    (f"{P};q=2", PB, None),  # clamped to 1
    (f"{P};q=.5", PB, None),
    (f"text/event-stream;q=1, {P};q=0.5", SSE, PB),  # higher q wins
    (f"text/event-stream;q=0.5, {P}", PB, None),
    (f"text/event-stream;q=0.5, {P};q=0.5", SSE, PB),  # equal q, equal specificity, order
    ("*/*;q=0", NONE, SSE),
    (f"{P};q=0, */*", SSE, None),  # the specific q=0 excludes protobuf only
    (f"*/*;q=0, {P}", PB, None),
    (f"{P}, {P};q=0", PB, None),  # equally specific duplicates: the higher q
    (f"{P};q=0, {P}", PB, None),
    ("text/event-stream;q=0", NONE, SSE),
    ("text/event-stream;q=0, */*", PB, None),
    ("text/event-stream;q=0.3, application/*;q=0.2", SSE, PB),
    ("application/*;q=0.9, */*;q=0.1", PB, None),
    # parameters before q must be satisfied by our (parameterless) offers
    (f"{P};charset=utf-8", NONE, SSE),
    (f"{P}; version=1", NONE, SSE),
    (f'{P};a="x,y"', NONE, SSE),
    (f"{P};q=0.5;foo=bar", PB, None),  # after q: accept-extension, ignored
    (f"{P};foo=*", NONE, PB),  # no wildcard parameter values here
    ("text/event-stream;charset=utf-8", SSE, None),  # SSE is always UTF-8
    ("text/event-stream; charset=UTF-8, */*;q=0.5", SSE, PB),
    ("text/event-stream;charset=latin-1", NONE, None),
    ("text/event-stream;charset=utf-8;q=0, text/event-stream", NONE, SSE),  # more specific
    (f'{P};q="0.5", text/event-stream;q=0.4', PB, None),  # quoted q
    # the protocol spec's name for the protobuf type
    ("application/x-ag-ui", PB, SSE),
    ("application/x-ag-ui, text/event-stream", PB, SSE),
    ("text/event-stream;q=0.5, application/x-ag-ui", PB, SSE),
    (f"application/x-ag-ui;q=0, {P}", PB, None),
    # nothing we offer
    ("application/json", NONE, SSE),
    ("application/x-protobuf", NONE, SSE),
    ("application/vnd.ag-ui.event+json", NONE, SSE),
    # unparseable: ignored; a header of only garbage counts as absent
    ("*", SSE, None),
    ("application", SSE, None),
    ("garbage;;;", SSE, None),
    (f",,, ,{P},,", PB, None),
    (f'text/plain;a="unterminated, {P}', SSE, None),  # the quote swallows the rest
    (f'text/plain;a="x\\"y,z", {P}', PB, SSE),  # escaped quote inside a quoted string
    (f"text/event-stream;;q=0.5, {P};q=0.4", SSE, PB),  # empty parameter skipped
]


@pytest.mark.parametrize(("accept", "want", "reference"), TABLE)
def test_table(accept, want, reference):
    if want == NONE:
        assert negotiate(accept) == SSE
        with pytest.raises(NotAcceptable) as info:
            negotiate(accept, strict=True)
        assert info.value.accept == accept
    else:
        assert negotiate(accept) == want
        assert negotiate(accept, strict=True) == want


def test_table_is_big_enough():
    assert len(TABLE) >= 30
    assert sum(1 for *_, ref in TABLE if ref is not None) >= 10  # documented differences


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
