"""The official SDK's encoder, with both transports: ``SDKEventEncoder``, ``install()``.

Frameworks that serve AG-UI (pydantic-ai, ag-ui-langgraph, ag-ui-strands,
ag-ui-adk, agent-framework-ag-ui, ag-ui-crewai, ...) build
``ag_ui.encoder.EventEncoder(accept=...)`` and write what ``encode`` returns.
``install()`` puts this module's ``SDKEventEncoder`` in that name's place, so those
servers negotiate from ``Accept`` and serve ``application/vnd.ag-ui.event+proto``
to the clients that ask for it, and SSE to everyone else, unchanged.

Contract of ``SDKEventEncoder`` (what callers of the SDK class rely on). It is not
``agui_wire.EventEncoder``, the library's own API (``encode`` always ``bytes``, numbers
refused unless asked, options), whose name it does not share for that reason:

* Same constructor (``accept`` positional or keyword) and methods as the SDK's
  (``encode``, ``get_content_type``), plus ``encode_binary`` and
  ``AGUI_MEDIA_TYPE`` as the TypeScript ``@ag-ui/encoder`` has them (ag-ui-strands
  serves protobuf only through ``encode_binary``).
* Negotiation is ``agui_wire.negotiate`` (protobuf when ``Accept`` names it
  with q > 0, as the AG-UI 1.0 binding says; ``*/*`` alone keeps SSE, so the
  generic clients that send it still get what the SDK gave them), never
  refusing: an ``Accept`` that allows neither gets SSE, as from the SDK.
  ``install(wildcard_proto=True)`` applies the binding's rule in full (``*/*``
  admits protobuf too) to every instance made afterwards.
* SSE: ``encode`` returns the ``str`` the installed SDK's own encoder returns for
  the event, byte for byte (agent-framework calls ``.encode("utf-8")`` on it);
  the SDK writes every integer, 2**64 and beyond included. Dicts, which the SDK
  does not take, go through ``agui_wire.encode_sse``, except that integers
  beyond 64 bits, which it refuses, are written as their digits too.
  ``encode_binary`` returns the same text as UTF-8 bytes, as the TypeScript
  encoder does.
* Protobuf: ``encode`` and ``encode_binary`` return one frame (``bytes``). An
  integer the wire cannot hold exactly (beyond 2**53 in a JSON value) is
  written as the double a JavaScript client reads over SSE for it (the nearest
  one; ±Infinity past the largest), as ``@ag-ui/proto`` writes it, with one
  ``LossyNumberWarning`` per process; a stream is never cut for it. The strict
  library API (``agui_wire.EventEncoder``) still refuses such integers unless
  asked (``lossy_numbers=True``).
* Construction costs a dictionary lookup: encoders hold no per-stream state, so
  ``SDKEventEncoder(accept)`` returns one shared instance per ``Accept`` string
  (bounded), like the negotiation cache behind it, made again when telemetry
  starts or stops recording (``_RECHECK`` below).
* Telemetry (docs/telemetry.md): while an OpenTelemetry SDK records, each
  ``encode``/``encode_binary`` call counts one event (``agui.server.events``) and
  the bytes it returns (``agui.server.bytes``, a ``str`` as UTF-8): what the
  framework writes. Otherwise the methods are the plain functions.

``install()`` / ``uninstall()``: see their docstrings; docs/integrations.md has
the line per framework.
"""

from __future__ import annotations

import secrets
import sys
import threading
import warnings
from collections.abc import Callable, Mapping
from types import ModuleType
from typing import Any, ClassVar, Final

from . import _telemetry
from ._codec import selected
from ._encoder import as_event_dict
from ._mediatypes import PROTO_MEDIA_TYPE
from ._negotiation import CACHE_MAX_KEY, negotiate, remember
from ._observe import counting_encoder
from .errors import EncodeError, LossyNumberWarning, MissingDependency

__all__ = ["AGUI_MEDIA_TYPE", "SDKEventEncoder", "install", "installed", "uninstall"]

AGUI_MEDIA_TYPE: Final = PROTO_MEDIA_TYPE

# The SDK's modules that define the name, and its class as shipped (captured
# before install() can replace it). SSE text comes from an instance of that class,
# so it is the installed SDK's, whichever line (0.1.x writes with
# exclude_none=True, 1.x omits optional fields in the model itself).
_SDK_MODULES: Final = ("ag_ui.encoder.encoder", "ag_ui.encoder")
try:
    from ag_ui.encoder import encoder as _sdk_encoder_module
except ImportError:  # no SDK: dicts only, through agui_wire's SSE writer
    _SDK_CLASS: type | None = None
    _sdk_sse: Callable[[Any], str] | None = None
else:
    _SDK_CLASS = _sdk_encoder_module.EventEncoder
    _sdk_sse = _SDK_CLASS().encode

_dict_sse: Final = selected.SSEEncoder(convert=as_event_dict).encode
_frames: Final = selected.FrameEncoder(convert=as_event_dict).encode
_rounded_frames: Final = selected.FrameEncoder(lossy_numbers=True, convert=as_event_dict).encode
_warned = False
_INT64_MIN: Final = -(2**63)  # orjson writes integers in [-2**63, 2**64)
_UINT64_END: Final = 2**64


def _encode_sse(event: Any) -> str:
    if _sdk_sse is not None and type(event) is not dict:
        return _sdk_sse(event)
    return _encode_dict_sse(event).decode("utf-8")


def _encode_sse_bytes(event: Any) -> bytes:
    if _sdk_sse is not None and type(event) is not dict:
        return _sdk_sse(event).encode("utf-8")
    return _encode_dict_sse(event)


def _encode_dict_sse(event: Any) -> bytes:
    try:
        return _dict_sse(event)
    except EncodeError:
        # agui_wire's SSE writer refuses integers beyond 64 bits (its reader would
        # read them back as doubles); the SDK writes their digits, and so do we:
        # the writer writes a marker string in their place (so every other value
        # is still checked, and optional nulls omitted, by the writer itself) and
        # each quoted marker, unguessable and found exactly once, becomes digits.
        wide: dict[bytes, bytes] = {}
        try:
            masked = _wide_integers_masked(event, wide)
        except ValueError:  # more digits than int's str limit: the strict refusal
            masked = None
        if masked is None:
            raise
    data = _dict_sse(masked)
    for marker, digits in wide.items():
        quoted = b'"' + marker + b'"'
        found = data.count(quoted)
        if found == 0 or data.count(marker) != found:  # only if the input guessed it
            raise EncodeError("integer marker collided with the event's own text")
        data = data.replace(quoted, digits)
    return data


def _wide_integers_masked(event: Any, wide: dict[bytes, bytes]) -> Any:
    """A copy of ``event`` with every integer beyond 64 bits replaced by a fresh
    marker string (``wide`` maps marker to digits), or None if it holds none.
    Iterative: events nest deeper than Python's recursion limit. Each container
    is copied once (``copies``), so a shared one stays shared and a cycle stays a
    cycle, for the writer to refuse, instead of unrolling here without end."""
    token = secrets.token_hex(16)
    root: list[Any] = [event]
    stack: list[tuple[Any, Any, Any]] = [(root, 0, event)]  # (parent copy, key, value)
    copies: dict[int, Any] = {}
    while stack:
        parent, key, value = stack.pop()
        if isinstance(value, (Mapping, list, tuple)) and id(value) in copies:
            copy: Any = copies[id(value)]
        elif isinstance(value, Mapping):
            copy = copies[id(value)] = dict(value)
            stack.extend((copy, k, v) for k, v in copy.items())
        elif isinstance(value, (list, tuple)):
            copy = copies[id(value)] = list(value)
            stack.extend((copy, i, v) for i, v in enumerate(copy))
        elif (
            isinstance(value, int)
            and not isinstance(value, bool)
            and not _INT64_MIN <= value < _UINT64_END
        ):
            copy = f"agui-wire-wide-{token}-{len(wide)}"
            wide[copy.encode("ascii")] = int.__repr__(value).encode("ascii")
        else:
            continue
        parent[key] = copy
    return root[0] if wide else None


def _encode_proto(event: Any) -> bytes:
    try:
        return _frames(event)
    except EncodeError:
        # Lossy mode differs only in rounding integers beyond 2**53 to doubles; if
        # the event fails for another reason this raises that error again.
        frame = _rounded_frames(event)
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(
            "an integer beyond 2**53 was rounded to the nearest double (±Infinity "
            "past the largest) on the protobuf transport, as a JavaScript client "
            "reads it over SSE too; agui_wire.compat reports this once per process",
            LossyNumberWarning,
            stacklevel=2,
        )
    return frame


class SDKEventEncoder:
    """``ag_ui.encoder.EventEncoder`` that serves protobuf when the client prefers it.

    ``encode(event)`` returns ``str`` (SSE, byte-identical to the SDK) or
    ``bytes`` (a protobuf frame), matching ``get_content_type()``;
    ``encode_binary(event)`` always returns ``bytes``. See the module doc.
    """

    AGUI_MEDIA_TYPE: ClassVar[str] = PROTO_MEDIA_TYPE

    __slots__ = ("_content_type", "_instruments", "encode", "encode_binary")
    _content_type: str
    _instruments: _telemetry.Instruments | None  # what its encode counts to
    encode: Callable[[Any], str | bytes]
    encode_binary: Callable[[Any], bytes]

    def __new__(cls, accept: str | bytes | None = None) -> SDKEventEncoder:
        if cls is SDKEventEncoder:  # a subclass may keep state: its own instance
            try:
                shared = _BY_ACCEPT.get(accept)
            except TypeError:  # unhashable: negotiate says what accept must be
                shared = None
            if shared is not None:
                left = _recheck[0] = _recheck[0] - 1
                if left > 0:
                    return shared
                _recheck[0] = _RECHECK
                if shared._instruments is _telemetry.current():
                    return shared
        instruments = _telemetry.current()
        self = super().__new__(cls)
        self._instruments = instruments
        self._content_type = content_type = negotiate(accept, wildcard_proto=_rule[0])
        if content_type == PROTO_MEDIA_TYPE:
            self.encode = self.encode_binary = counting_encoder(instruments, _encode_proto, True)
        else:
            self.encode = counting_encoder(instruments, _encode_sse, False)
            self.encode_binary = counting_encoder(instruments, _encode_sse_bytes, False)
        if cls is SDKEventEncoder and (accept is None or len(accept) <= CACHE_MAX_KEY):
            remember(_BY_ACCEPT, accept, self)
        return self

    def get_content_type(self) -> str:
        """``text/event-stream`` or ``application/vnd.ag-ui.event+proto``."""
        return self._content_type

    def __repr__(self) -> str:
        return f"agui_wire.compat.SDKEventEncoder(content_type={self._content_type!r})"


_BY_ACCEPT: Final[dict[str | bytes | None, SDKEventEncoder]] = {}
# Telemetry: the shared instances are made again when the instruments change, seen
# by whoever asks ``_telemetry.current()`` (a response, ``_telemetry.use()``) and by
# a look every _RECHECK constructions (a process serving only install()'d frameworks
# that configures its SDK after its first requests: counted within that many).
_RECHECK: Final = 256
_recheck: Final = [_RECHECK]
_telemetry.watch(_BY_ACCEPT.clear)
_rule: Final = [False]  # wildcard_proto, as install() last set it


# -- install / uninstall ------------------------------------------------------

_lock: Final = threading.Lock()


def _rebind(old: object, new: object) -> list[str]:
    """Every module attribute bound to ``old`` (outside agui_wire) bound to ``new``."""
    rebound = []
    for name, module in list(sys.modules.items()):
        if not isinstance(module, ModuleType) or name.partition(".")[0] == "agui_wire":
            continue
        namespace = module.__dict__
        for attr, value in list(namespace.items()):
            if value is old:
                namespace[attr] = new
                rebound.append(f"{name}.{attr}")
    return rebound


def install(*, wildcard_proto: bool = False) -> list[str]:
    """Serve both transports from every AG-UI server in this process.

    Replaces ``ag_ui.encoder.EventEncoder`` (and ``ag_ui.encoder.encoder.EventEncoder``)
    with ``agui_wire.compat.SDKEventEncoder`` and rebinds the name in every module
    that already imported the SDK's class (the frameworks' endpoint modules), so
    it works before or after the framework is imported. Idempotent. Returns the
    ``module.attribute`` names rebound by this call. Raises ``MissingDependency``
    (an ``ImportError`` naming the ``pydantic`` extra) when the official SDK
    (``ag-ui-protocol``) is not installed.
    ``wildcard_proto=True``: ``Accept: */*`` gets protobuf too, as the AG-UI 1.0
    binding says (off by default: httpx, requests and curl send ``*/*`` and
    read SSE); each call sets it, ``uninstall()`` turns it off.
    """
    if _SDK_CLASS is None:
        raise MissingDependency(
            "agui_wire.install() (it replaces the official SDK's encoder)",
            "ag-ui-protocol",
            "pydantic",
        )
    with _lock:
        _set_rule(bool(wildcard_proto))
        for name in _SDK_MODULES:  # import both, so their names are rebound below
            __import__(name)
        return _rebind(_SDK_CLASS, SDKEventEncoder)


def uninstall() -> list[str]:
    """Undo ``install()``: the SDK's class is back wherever this module's class
    is bound outside agui_wire (a module of yours that imported
    ``agui_wire.compat.SDKEventEncoder`` itself is included; refer to it as
    ``compat.SDKEventEncoder`` to keep it). Returns the names rebound; idempotent."""
    if _SDK_CLASS is None:
        return []
    with _lock:
        _set_rule(False)
        return _rebind(SDKEventEncoder, _SDK_CLASS)


def _set_rule(wildcard_proto: bool) -> None:
    if _rule[0] is not wildcard_proto:
        _rule[0] = wildcard_proto
        _BY_ACCEPT.clear()  # instances negotiated by the other rule


def installed() -> bool:
    """Whether ``ag_ui.encoder.EventEncoder`` is this module's class now."""
    module = sys.modules.get("ag_ui.encoder")
    return module is not None and getattr(module, "EventEncoder", None) is SDKEventEncoder
