"""Content negotiation between the two AG-UI transports: the AG-UI 1.0 HTTP +
Protobuf binding's rule, with RFC 9110 (section 12.5.1) for reading ``Accept``.

Strategy: parse the ``Accept`` header once, in one linear pass, into media ranges
``(type, subtype, parameters, q)``; give each of our two offers the weight of the
most specific range that matches it; decide by the binding's rule below. Pure
function, no I/O.

The binding (docs.ag-ui.com, spec draft, "HTTP + Protobuf", Negotiation): a client
opts in by *admitting* ``application/vnd.ag-ui.event+proto``, "a wildcard range
(``*/*``, ``application/*``) admits the media type too", and "relative quality
values between the two media types are not consulted"; a producer "SHOULD answer
with it whenever the client's Accept admits the media type with a positive
quality, and MUST answer SSE otherwise". So:

* Protobuf when the header admits it (q > 0) through a range that names it or
  ``application/*``, whatever SSE's weight: ``text/event-stream;q=1,
  application/vnd.ag-ui.event+proto;q=0.5`` gets protobuf.
* Admitted only by ``*/*``: SSE while SSE is acceptable, protobuf otherwise. This
  is the one deviation from the SHOULD, and it is deliberate: httpx, requests,
  curl and browsers send ``*/*`` (``text/html,...,*/*;q=0.8``) and expect SSE,
  so a server that turns protobuf on must not start sending them binary.
  ``wildcard_proto=True`` turns the deviation off: the binding's rule in full
  (what ``@ag-ui/encoder`` 1.0.0 does), for deployments whose clients all read
  both transports.
* Not admitted: SSE, or nothing (``None``; ``negotiate`` falls back to SSE, or
  raises ``NotAcceptable`` when ``strict``) when SSE is not acceptable either.

Offers, in server preference order: ``text/event-stream`` (SSE) and
``application/vnd.ag-ui.event+proto`` (protobuf; ``application/x-ag-ui``, the name
in the protocol's spec document, is accepted in ``Accept`` as an alias of it). The
protobuf type is returned exactly as ``PROTO_MEDIA_TYPE``, without parameters: the
reference client compares the response ``content-type`` to it with ``===``.

Rules, and the decisions where RFC 9110 leaves room:

* Ranges are split on commas and parameters on semicolons outside quoted strings
  (with backslash escapes); whitespace around them is ignored; type, subtype and
  parameter names are case-insensitive. A range that does not parse is ignored:
  no ``/``, bad token characters, a parameter without ``=``, ``*/subtype`` (not a
  valid range, although the reference accepts it), a lone ``*``.
* Weight: the first ``q`` parameter; parameters after it are accept-extensions and
  ignored. A q that is not a decimal number (``abc``, ``-1``, ``inf``) makes the
  range invalid and it is ignored; a q above 1 counts as 1. ``q=0`` means "not
  acceptable" and excludes whatever that range is the most specific match for.
* Parameters before ``q`` must all be satisfied by the offer, else the range does
  not match it. Our offers carry none, except that SSE is always UTF-8, so
  ``charset=utf-8`` is satisfied by SSE. So ``text/event-stream;charset=utf-8``
  matches SSE, while ``application/vnd.ag-ui.event+proto;charset=binary`` or
  ``...;version=2`` matches nothing (we cannot promise what they ask for). A range
  with parameters is more specific than the same range without.
* Each offer takes the weight of the most specific matching range
  (``type/subtype`` > ``type/*`` > ``*/*``, then more parameters); among equally
  specific ones the highest weight (a duplicate cannot take away what its twin
  grants).
* An offer is admitted when that weight is above 0. A header without a single
  valid range is treated as absent (SSE).
* Bounded work: only the first ``MAX_ACCEPT_LENGTH`` characters (cut back to a
  comma) and the first ``MAX_RANGES`` ranges are looked at; parsing is linear.
* Cached: a server sees a handful of distinct ``Accept`` strings, and some
  frameworks build an encoder per event, so the outcome per header string (and
  rule) is kept in a dict of at most ``CACHE_SIZE`` entries (oldest dropped first; headers
  longer than ``CACHE_MAX_KEY`` are not kept), which bounds its memory however
  many distinct headers clients send.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple, TypeVar

from ._mediatypes import PROTO_ALIASES, PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from .errors import NotAcceptable

__all__ = [
    "CACHE_MAX_KEY",
    "CACHE_SIZE",
    "MAX_ACCEPT_LENGTH",
    "MAX_RANGES",
    "MediaRange",
    "choose",
    "header_text",
    "negotiate",
    "parse_accept",
    "remember",
]

MAX_ACCEPT_LENGTH: Final = 8192
MAX_RANGES: Final = 128
CACHE_SIZE: Final = 256
CACHE_MAX_KEY: Final = 1024

_K = TypeVar("_K")
_V = TypeVar("_V")

_TOKEN: Final = re.compile(r"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_QVALUE: Final = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)")
_ESCAPE: Final = re.compile(r"\\(.)", re.DOTALL)


class MediaRange(NamedTuple):
    """One parsed media range of an ``Accept`` header (lower-cased)."""

    type: str
    subtype: str
    params: tuple[tuple[str, str], ...]  # media-type parameters before q, names lower-cased
    q: float
    position: int  # among the valid ranges of the header


def _split(text: str, sep: str) -> list[str]:
    """Split on ``sep`` outside double-quoted strings (backslash escapes inside)."""
    if '"' not in text:
        return text.split(sep)
    parts: list[str] = []
    start = 0
    quoted = False
    i = 0
    n = len(text)
    while i < n:
        c = text[i]
        if quoted:
            if c == "\\":
                i += 1
            elif c == '"':
                quoted = False
        elif c == '"':
            quoted = True
        elif c == sep:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _unquote(value: str) -> str | None:
    if len(value) >= 2 and value[0] == '"' and value[-1] == '"':
        inner = value[1:-1]
        if "\\" in inner:
            inner = _ESCAPE.sub(r"\1", inner)
        return inner
    return value if _TOKEN.fullmatch(value) else None


def _parse_range(text: str, index: int) -> MediaRange | None:
    parts = _split(text, ";")
    media = parts[0].strip()
    slash = media.find("/")
    if slash <= 0:
        return None
    mtype = media[:slash].lower()
    subtype = media[slash + 1 :].lower()
    if not _TOKEN.fullmatch(mtype) or not _TOKEN.fullmatch(subtype):
        return None
    if mtype == "*" and subtype != "*":
        return None
    params: list[tuple[str, str]] = []
    q = 1.0
    for raw in parts[1:]:
        raw = raw.strip()
        if not raw:
            continue
        eq = raw.find("=")
        if eq <= 0:
            return None
        name = raw[:eq].rstrip().lower()
        value = _unquote(raw[eq + 1 :].lstrip())
        if value is None or not _TOKEN.fullmatch(name):
            return None
        if name == "q":
            if not _QVALUE.fullmatch(value):
                return None
            q = min(float(value), 1.0)
            break  # what follows q are accept-extensions
        params.append((name, value))
    return MediaRange(mtype, subtype, tuple(params), q, index)


def parse_accept(accept: str) -> list[MediaRange]:
    """The valid media ranges of an ``Accept`` header, in header order (bounded)."""
    if len(accept) > MAX_ACCEPT_LENGTH:
        cut = accept.rfind(",", 0, MAX_ACCEPT_LENGTH + 1)
        accept = accept[: max(cut, 0)]
    out: list[MediaRange] = []
    for text in _split(accept, ","):
        if not text or text.isspace():
            continue
        parsed = _parse_range(text, len(out))
        if parsed is not None:
            out.append(parsed)
            if len(out) >= MAX_RANGES:
                break
    return out


# Our offers: the (type, subtype) pairs each answers to, and the parameters it
# satisfies (SSE is UTF-8 by definition).
def _names(*media_types: str) -> tuple[tuple[str, str], ...]:
    return tuple((t.partition("/")[0], t.partition("/")[2]) for t in media_types)


_SSE_NAMES: Final = _names(SSE_MEDIA_TYPE)
_PROTO_NAMES: Final = _names(*PROTO_ALIASES)
_UTF8: Final = frozenset({"utf-8", "utf8"})


def _params_ok(params: tuple[tuple[str, str], ...], sse: bool) -> bool:
    return all(sse and name == "charset" and value.lower() in _UTF8 for name, value in params)


def _specificity(r: MediaRange, names: tuple[tuple[str, str], ...], sse: bool) -> int:
    """-1 if ``r`` does not match the offer, else how specific the match is."""
    if r.type == "*":
        level = 0
    else:
        for mtype, subtype in names:
            if r.type == mtype and (r.subtype == "*" or r.subtype == subtype):
                level = 1 if r.subtype == "*" else 2
                break
        else:
            return -1
    if r.params and not _params_ok(r.params, sse):
        return -1
    return level * MAX_RANGES + len(r.params)


class _Match(NamedTuple):
    q: float
    specificity: int


def _best(ranges: list[MediaRange], names: tuple[tuple[str, str], ...], sse: bool) -> _Match:
    best = _Match(0.0, -1)
    for r in ranges:
        s = _specificity(r, names, sse)
        if s < 0:
            continue
        if s > best.specificity or (s == best.specificity and r.q > best.q):
            best = _Match(r.q, s)
    return best


def negotiate(
    accept: str | bytes | None, *, strict: bool = False, wildcard_proto: bool = False
) -> str:
    """The media type to answer a request with ``Accept: accept`` (see module doc).

    ``accept`` is the header's value: a ``str``, the ``bytes`` an ASGI scope holds
    (read as Latin-1, as HTTP header bytes are), or ``None`` when there is none;
    anything else is a ``TypeError`` saying so. Returns ``SSE_MEDIA_TYPE`` or
    ``PROTO_MEDIA_TYPE``. Raises ``NotAcceptable`` when ``strict`` and the header
    accepts neither. ``wildcard_proto``: ``*/*`` admits protobuf too (the binding's
    rule in full).
    """
    if type(accept) is not str and accept is not None:
        accept = header_text(accept)
    chosen = choose(accept, wildcard_proto=wildcard_proto)
    if chosen is None:
        if strict:
            raise NotAcceptable(accept)
        return SSE_MEDIA_TYPE
    return chosen


def header_text(accept: object) -> str:
    """The ``Accept`` header as text: ASGI's bytes read as Latin-1 (HTTP header
    bytes); a ``TypeError`` for what is no header value."""
    if isinstance(accept, (bytes, bytearray, memoryview)):
        return bytes(accept).decode("latin-1")
    if isinstance(accept, str):
        return accept
    raise TypeError(
        "accept must be the request's Accept header: a str, the bytes an ASGI scope "
        f"holds, or None when there is none; not {type(accept).__name__}"
    )


def choose(accept: str | None, *, wildcard_proto: bool = False) -> str | None:
    """``negotiate`` without the fallback: None when the header accepts neither."""
    if not accept:
        return SSE_MEDIA_TYPE
    cache = _CACHES[wildcard_proto]
    try:
        return cache[accept]
    except KeyError:
        chosen = _choose(accept, wildcard_proto)
    if len(accept) <= CACHE_MAX_KEY:
        remember(cache, accept, chosen)
    return chosen


def remember(cache: dict[_K, _V], key: _K, value: _V) -> None:
    """``cache[key] = value``, the oldest entry dropped first once ``cache`` holds
    ``CACHE_SIZE`` (the negotiation caches here, and the shared encoders of
    ``_encoder`` and ``compat``: bounded however many distinct headers come)."""
    if len(cache) >= CACHE_SIZE:
        # oldest first; another thread may have emptied it meanwhile
        cache.pop(next(iter(cache), key), None)
    cache[key] = value


# Accept header -> the chosen type, or None when it accepts neither; one per
# rule (index: wildcard_proto).
_CACHES: Final[tuple[dict[str, str | None], dict[str, str | None]]] = ({}, {})
_WILDCARD: Final = MAX_RANGES  # a specificity below this is a match by */* alone


def _choose(accept: str, wildcard_proto: bool) -> str | None:
    ranges = parse_accept(accept)
    if not ranges:
        return SSE_MEDIA_TYPE
    sse = _best(ranges, _SSE_NAMES, True)
    proto = _best(ranges, _PROTO_NAMES, False)
    if proto.q > 0 and (wildcard_proto or proto.specificity >= _WILDCARD or sse.q <= 0):
        return PROTO_MEDIA_TYPE
    return SSE_MEDIA_TYPE if sse.q > 0 else None
