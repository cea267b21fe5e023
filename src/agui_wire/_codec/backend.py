"""Which implementation of the hot path runs: the Cython extension or the pure twins.

Strategy: every name in ``_NAMES`` has a pure-Python twin with identical
behaviour. Each name comes from ``agui_wire._fast`` when that imports and provides
it, else from its pure twin; ``AGUI_WIRE_PURE=1`` forces the pure twins for all.
Every name is bound here, when this module loads (no lazy lookup): the twins never
import this module (yarl's habit: the selector imports both and picks, and a pure
function that wants a C kernel is handed it), so the pure modules and the extension
are complete before it binds them, whichever is imported first.
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
from typing import TYPE_CHECKING, Final

from ..errors import ExtensionWarning
from . import framing, proto_reader, proto_writer, sse_reader, sse_writer, stream_decoder

__all__ = [
    "IMPLEMENTATIONS",
    "NAME",
    "EventDecoder",
    "FrameDecoder",
    "FrameEncoder",
    "FrameReader",
    "SSEDecoder",
    "SSEEncoder",
    "decode",
    "decode_payload",
    "decode_proto",
    "decode_sse",
    "encode_frames",
    "encode_payload",
    "encode_proto",
    "encode_sse",
    "frame",
    "plain_sse_blocks",
]

# public name -> the module holding its pure-Python twin
_NAMES: Final[dict[str, ModuleType]] = {
    "FrameReader": framing,
    "frame": framing,
    "FrameEncoder": proto_writer,
    "encode_proto": proto_writer,
    "encode_frames": proto_writer,
    "encode_payload": proto_writer,
    "decode_payload": proto_reader,
    "SSEEncoder": sse_writer,
    "encode_sse": sse_writer,
    "plain_sse_blocks": sse_reader,
    "FrameDecoder": stream_decoder,
    "SSEDecoder": stream_decoder,
    "EventDecoder": stream_decoder,
    "decode_proto": stream_decoder,
    "decode_sse": stream_decoder,
    "decode": stream_decoder,
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
    from .framing import FrameReader as FrameReader
    from .framing import frame as frame
    from .proto_reader import decode_payload as decode_payload
    from .proto_writer import FrameEncoder as FrameEncoder
    from .proto_writer import encode_frames as encode_frames
    from .proto_writer import encode_payload as encode_payload
    from .proto_writer import encode_proto as encode_proto
    from .sse_reader import plain_sse_blocks as plain_sse_blocks
    from .sse_writer import SSEEncoder as SSEEncoder
    from .sse_writer import encode_sse as encode_sse
    from .stream_decoder import EventDecoder as EventDecoder
    from .stream_decoder import FrameDecoder as FrameDecoder
    from .stream_decoder import SSEDecoder as SSEDecoder
    from .stream_decoder import decode as decode
    from .stream_decoder import decode_proto as decode_proto
    from .stream_decoder import decode_sse as decode_sse
else:
    for _name, _pure in _NAMES.items():
        globals()[_name] = getattr(_fast if IMPLEMENTATIONS[_name] == "cython" else _pure, _name)
    del _name, _pure
