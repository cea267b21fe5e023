"""The decoders' options and how each is checked.

Strategy: every decoder (``EventDecoder``, the one-shots, ``RecordReader``) takes
the same keyword options with the same defaults (the limits are ``schema``'s) and
refuses a bad one with the same ``ValueError``, in the same order, before it reads
a byte: the checks live here once, each limit's own check beside the code it
bounds (``framing``, ``proto_reader``, ``sse_reader``).

Contract: ``unknown_events`` is ``"skip"``, ``"raise"`` or ``"raw"``;
``invalid_utf8`` is ``"error"`` or ``"replace"``; ``invalid_events`` is ``"raise"``
or ``"keep"``; ``max_events`` is ``None`` or
an int >= 0; ``max_depth``, ``max_frame_size`` and ``max_event_size`` are ints in
their ranges (bool is not an int here).
"""

from __future__ import annotations

from typing import Literal

from .framing import check_max_frame_size
from .proto_reader import check_max_depth
from .sse_reader import check_max_event_size

__all__ = ["InvalidPolicy", "UnknownPolicy", "Utf8Policy", "check_options", "check_policies"]

UnknownPolicy = Literal["skip", "raise", "raw"]
Utf8Policy = Literal["error", "replace"]
InvalidPolicy = Literal["raise", "keep"]


def check_policies(unknown_events: str, invalid_utf8: str, invalid_events: str = "raise") -> None:
    """``ValueError`` unless the decode policies are known values."""
    if unknown_events not in ("skip", "raise", "raw"):
        raise ValueError(f"unknown_events must be 'skip', 'raise' or 'raw', not {unknown_events!r}")
    if invalid_utf8 not in ("error", "replace"):
        raise ValueError(f"invalid_utf8 must be 'error' or 'replace', not {invalid_utf8!r}")
    if invalid_events not in ("raise", "keep"):
        raise ValueError(f"invalid_events must be 'raise' or 'keep', not {invalid_events!r}")


def check_options(
    unknown_events: str,
    invalid_utf8: str,
    max_depth: int,
    max_frame_size: int,
    max_event_size: int,
    max_events: int | None,
    invalid_events: str = "raise",
) -> None:
    """``ValueError`` for the first invalid option of ``EventDecoder`` (and the
    one-shot decoders), in this order."""
    check_policies(unknown_events, invalid_utf8, invalid_events)
    if max_events is not None and (type(max_events) is not int or max_events < 0):
        raise ValueError(f"max_events must be None or an int >= 0, not {max_events!r}")
    check_max_depth(max_depth)
    check_max_frame_size(max_frame_size)
    check_max_event_size(max_event_size)
