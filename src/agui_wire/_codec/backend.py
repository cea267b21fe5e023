"""Which implementation of the hot path runs: the Cython extension or the pure twins.

Strategy: every name in ``_NAMES`` has a pure-Python twin with identical
behaviour. Each name comes from ``agui_wire._fast`` when that imports and provides
it, else from its pure twin; ``AGUI_WIRE_PURE=1`` forces the pure twins for all.
``NAME`` is ``"cython"`` when the extension is in use, ``"python"`` when it is
not (missing, or forced off); ``IMPLEMENTATIONS`` says, per name, which one runs
(a name can lag behind while the extension is built from older sources).

The fallback is never silent by accident: an extension that is there (a
``_fast*.so``/``.pyd`` next to the package) but does not import -- built for
another Python, a missing symbol, a schema its C tables cannot hold (it raises
ImportError with the reason) -- gives one ``ExtensionWarning`` naming the cause.
No extension at all (a pure install) and ``AGUI_WIRE_PURE=1`` stay quiet.

To add a name: put it in ``_NAMES`` with its pure module, in the ``TYPE_CHECKING``
block below, and in ``__all__``.
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Any, Final

from ..errors import ExtensionWarning

__all__ = [
    "IMPLEMENTATIONS",
    "NAME",
    "FrameDecoder",
    "FrameEncoder",
    "FrameReader",
    "SSEDecoder",
    "SSEEncoder",
    "decode",
    "decode_payload",
    "decode_proto",
    "decode_sse",
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
    "FrameDecoder": "frame_decoder",
    "SSEDecoder": "frame_decoder",
    "decode_proto": "frame_decoder",
    "decode_sse": "frame_decoder",
    "decode": "frame_decoder",
}


def _forced_pure() -> bool:
    return os.environ.get("AGUI_WIRE_PURE", "").strip() not in ("", "0")


_PACKAGE: Final = Path(__file__).resolve().parent.parent  # where _fast*.so is built


def _load_fast() -> ModuleType | None:
    if _forced_pure():
        return None
    try:
        return importlib.import_module("agui_wire._fast")
    except ImportError as exc:
        cause = _broken_extension(exc, _PACKAGE)
        if cause is not None:
            warnings.warn(
                f"{cause}; agui_wire runs on its pure-Python twins (same API, many times "
                "slower). Rebuild the extension, or set AGUI_WIRE_PURE=1 to choose this quietly",
                ExtensionWarning,
                stacklevel=2,
            )
        return None


def _broken_extension(exc: ImportError, package: Path) -> str | None:
    """Why an extension that exists did not import; None when there is none."""
    if isinstance(exc, ModuleNotFoundError) and exc.name == "agui_wire._fast":
        built = sorted(p.name for p in package.glob("_fast*") if p.suffix in (".so", ".pyd"))
        if not built:
            return None  # a pure install: nothing was meant to load
        return f"agui_wire._fast is built ({', '.join(built)}) but not for this Python ({exc})"
    return f"agui_wire._fast cannot be loaded: {exc}"


_fast = _load_fast()
NAME: Final[str] = "cython" if _fast is not None else "python"
IMPLEMENTATIONS: Final[Mapping[str, str]] = MappingProxyType(
    {name: "cython" if hasattr(_fast, name) else "python" for name in _NAMES}
)

if TYPE_CHECKING:
    from .frame_decoder import FrameDecoder as FrameDecoder
    from .frame_decoder import SSEDecoder as SSEDecoder
    from .frame_decoder import decode as decode
    from .frame_decoder import decode_proto as decode_proto
    from .frame_decoder import decode_sse as decode_sse
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
    for _name in _NAMES:
        if IMPLEMENTATIONS[_name] == "cython":
            globals()[_name] = getattr(_fast, _name)
    del _name

    def __getattr__(name: str) -> Any:
        # A pure twin is bound on first use, not here: the pure modules import this
        # one (directly or through _reader), so binding them while it loads is a
        # cycle -- e.g. with AGUI_WIRE_PURE=1, importing agui_wire._fast first loads
        # frame_decoder.py, which reaches this module before it defines FrameDecoder.
        module = _NAMES.get(name)
        if module is None or IMPLEMENTATIONS[name] == "cython":
            raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(f"agui_wire._codec.{module}"), name)
        globals()[name] = value
        return value
