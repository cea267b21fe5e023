"""The two AG-UI media types, and the Content-Type header value of a stream.

Strategy: one import-free leaf (h11's habit), so every layer can name the types and
none spells them again: ``errors``, the codec, negotiation, the HTTP layers and the
CLI import them from here. ``application/x-ag-ui``, the name in the protocol's spec
document, is an alias of ``PROTO_MEDIA_TYPE`` wherever a type is read (``Accept``,
``Content-Type``); what agui_wire writes is always ``PROTO_MEDIA_TYPE`` exactly (the
reference client compares the response ``content-type`` to it with ``===``).

Contract: ``media_type(content_type)`` is ``PROTO_MEDIA_TYPE`` or ``SSE_MEDIA_TYPE``
for a header value of either (parameters and case ignored), ``ValueError`` for
anything else.
"""

from __future__ import annotations

from typing import Final

__all__ = ["PROTO_ALIASES", "PROTO_MEDIA_TYPE", "SSE_MEDIA_TYPE", "media_type"]

SSE_MEDIA_TYPE: Final = "text/event-stream"
PROTO_MEDIA_TYPE: Final = "application/vnd.ag-ui.event+proto"
# the names a protobuf stream answers to, the one written first
PROTO_ALIASES: Final = (PROTO_MEDIA_TYPE, "application/x-ag-ui")

_MEDIA_TYPES: Final = {
    **dict.fromkeys(PROTO_ALIASES, PROTO_MEDIA_TYPE),
    SSE_MEDIA_TYPE: SSE_MEDIA_TYPE,
}


def media_type(content_type: str) -> str:
    """``PROTO_MEDIA_TYPE`` or ``SSE_MEDIA_TYPE`` for a Content-Type header value
    (parameters and case ignored); ``ValueError`` for anything else."""
    known = _MEDIA_TYPES.get(content_type) if type(content_type) is str else None
    if known is not None:  # the usual spelling: no parsing
        return known
    essence = content_type.split(";", 1)[0].strip().lower()
    known = _MEDIA_TYPES.get(essence)
    if known is not None:
        return known
    raise ValueError(
        f"not an AG-UI stream content type: {content_type!r} "
        f"(expected {SSE_MEDIA_TYPE} or {PROTO_MEDIA_TYPE})"
    )
