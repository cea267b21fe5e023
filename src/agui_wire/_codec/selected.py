"""Which implementation of the hot path runs: the Cython extension or the pure twins.

Strategy: each name below is first bound to its pure-Python twin (what the type
checker sees, and what runs without the extension); then, when this module loads
(no lazy lookup), every name of ``__all__`` the extension ``agui_wire._fast``
provides is rebound to its compiled twin, with identical behaviour.
``AGUI_WIRE_PURE=1`` keeps the pure twins for all. The twins never import this
module (yarl's habit: the selector imports both and picks, and a pure function
that wants a C kernel is handed it), so the pure modules and the extension are
complete before it binds them, whichever is imported first.
``NAME`` is ``"cython"`` when the extension is in use, ``"python"`` when it is
not (missing, or forced off); ``IMPLEMENTATIONS`` says, per name, which one runs.

The fallback is never silent by accident: an extension that is there (a
``_fast*.so``/``.pyd`` next to the package) but does not import -- built for
another Python, a missing symbol, a schema its C tables cannot hold (it raises
ImportError with the reason) -- gives one ``ExtensionWarning`` naming the cause,
and so does an extension that imports but lacks a name of ``__all__`` (built from
older sources): the warning names what runs pure. No extension at all (a pure
install) and ``AGUI_WIRE_PURE=1`` stay quiet.

To add a name: bind it to its pure twin below and list it in ``__all__`` (its C
twin is declared in ``_fast.pyi``, which stubtest holds to the extension).
"""

from __future__ import annotations

import importlib
import os
import warnings
from collections.abc import Mapping
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import Any, Final

from ..errors import ExtensionWarning
from . import framing, proto_reader, proto_writer, resp, sse_reader, sse_writer, stream_decoder

__all__ = [
    "IMPLEMENTATIONS",
    "NAME",
    "EventDecoder",
    "FrameDecoder",
    "FrameEncoder",
    "FrameReader",
    "SSEDecoder",
    "SSEEncoder",
    "contract_holds",
    "decode",
    "decode_payload",
    "decode_proto",
    "decode_sse",
    "encode_frames",
    "encode_payload",
    "encode_proto",
    "encode_sse",
    "encode_sse_many",
    "frame",
    "pack_commands",
    "plain_sse_blocks",
]

# Every name of __all__ but NAME and IMPLEMENTATIONS, bound to its pure twin here and
# to the compiled one below when the extension has it.
FrameReader = framing.FrameReader
frame = framing.frame
FrameEncoder = proto_writer.FrameEncoder
encode_payload = proto_writer.encode_payload
encode_proto = proto_writer.encode_proto
encode_frames = proto_writer.encode_frames
decode_payload = proto_reader.decode_payload
SSEEncoder = sse_writer.SSEEncoder
encode_sse = sse_writer.encode_sse
encode_sse_many = sse_writer.encode_sse_many
plain_sse_blocks = sse_reader.plain_sse_blocks
contract_holds = sse_reader.contract_holds
FrameDecoder = stream_decoder.FrameDecoder
SSEDecoder = stream_decoder.SSEDecoder
EventDecoder = stream_decoder.EventDecoder
decode_proto = stream_decoder.decode_proto
decode_sse = stream_decoder.decode_sse
decode = stream_decoder.decode
pack_commands = resp.pack_commands

_COMPILED: Final = tuple(n for n in __all__ if n not in ("IMPLEMENTATIONS", "NAME"))


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


def _bind(fast: ModuleType | None, namespace: dict[str, Any]) -> dict[str, str]:
    """Rebind each compiled name in ``namespace`` to ``fast``'s twin; which runs, per
    name. A name ``fast`` lacks keeps its pure twin, with one ``ExtensionWarning``."""
    if fast is None:
        return dict.fromkeys(_COMPILED, "python")
    lacking = [name for name in _COMPILED if not hasattr(fast, name)]
    if lacking:
        warnings.warn(
            f"agui_wire._fast lacks {', '.join(lacking)} (built from older sources?); "
            "those run on their pure-Python twins (same API, many times slower). "
            "Rebuild the extension",
            ExtensionWarning,
            stacklevel=3,
        )
    for name in _COMPILED:
        if name not in lacking:
            namespace[name] = getattr(fast, name)
    return {name: "python" if name in lacking else "cython" for name in _COMPILED}


_fast = _load_fast()
NAME: Final[str] = "cython" if _fast is not None else "python"
IMPLEMENTATIONS: Final[Mapping[str, str]] = MappingProxyType(_bind(_fast, globals()))
