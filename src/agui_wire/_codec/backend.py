"""Which implementation of the hot path runs: the Cython extension or the pure twins.

Strategy: every name in ``_NAMES`` has a pure-Python twin with identical
behaviour. Each name comes from ``agui_wire._fast`` when that imports and provides
it, else from its pure twin; ``AGUI_WIRE_PURE=1`` forces the pure twins for all.
``NAME`` is ``"cython"`` when the extension is in use, ``"python"`` when it is
not (missing, or forced off); ``IMPLEMENTATIONS`` says, per name, which one runs
(a name can lag behind while the extension is built from older sources).

To add a name: put it in ``_NAMES`` with its pure module, in the ``TYPE_CHECKING``
block below, and in ``__all__``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Final

__all__ = [
    "IMPLEMENTATIONS",
    "NAME",
    "FrameEncoder",
    "FrameReader",
    "SSEEncoder",
    "decode_payload",
    "encode_frame",
    "encode_frames",
    "encode_sse",
    "frame",
    "plain_sse_blocks",
]

# public name -> module (inside agui_wire) holding its pure-Python twin
_NAMES: Final = {
    "FrameReader": "framing",
    "frame": "framing",
    "FrameEncoder": "proto_writer",
    "encode_frame": "proto_writer",
    "encode_frames": "proto_writer",
    "decode_payload": "proto_reader",
    "SSEEncoder": "sse_writer",
    "encode_sse": "sse_writer",
    "plain_sse_blocks": "sse_reader",
}


def _forced_pure() -> bool:
    return os.environ.get("AGUI_WIRE_PURE", "").strip() not in ("", "0")


def _load_fast() -> ModuleType | None:
    if _forced_pure():
        return None
    try:
        return importlib.import_module("agui_wire._fast")
    except ImportError:
        return None


_fast = _load_fast()
NAME: Final[str] = "cython" if _fast is not None else "python"
IMPLEMENTATIONS: Final[Mapping[str, str]] = MappingProxyType(
    {name: "cython" if hasattr(_fast, name) else "python" for name in _NAMES}
)

if TYPE_CHECKING:
    from .framing import FrameReader as FrameReader
    from .framing import frame as frame
    from .proto_reader import decode_payload as decode_payload
    from .proto_writer import FrameEncoder as FrameEncoder
    from .proto_writer import encode_frame as encode_frame
    from .proto_writer import encode_frames as encode_frames
    from .sse_reader import plain_sse_blocks as plain_sse_blocks
    from .sse_writer import SSEEncoder as SSEEncoder
    from .sse_writer import encode_sse as encode_sse
else:
    for _name, _module in _NAMES.items():
        if IMPLEMENTATIONS[_name] == "cython":
            globals()[_name] = getattr(_fast, _name)
        else:
            globals()[_name] = getattr(
                importlib.import_module(f"agui_wire._codec.{_module}"), _name
            )
    del _name, _module
