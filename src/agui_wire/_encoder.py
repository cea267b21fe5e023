"""Writing events: ``EventEncoder`` for servers, and the one-shot encoders.

Strategy: negotiate once (``_negotiation.negotiate`` on the request's ``Accept``),
then every ``encode`` call goes straight to the transport's encoder: the Cython
frame encoder for protobuf, orjson behind the Cython SSE writer for SSE (the
pure-Python twins without the extension). What a server writes to the socket
always matches ``content_type``.

Events are dicts shaped as ``@ag-ui/core`` JSON, or the pydantic event objects of
the official Python SDK (PyPI ``ag-ui-protocol``), so a server written against
``ag_ui.encoder.EventEncoder`` switches by changing the import. Unlike that class,
``encode`` returns ``bytes`` (what the socket takes) and honours ``Accept``.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

from ._codec import selected
from ._codec.proto_writer import as_event_dict
from ._mediatypes import PROTO_MEDIA_TYPE
from ._negotiation import CACHE_MAX_KEY, negotiate, remember
from .schema import DEFAULT_MAX_DEPTH

__all__ = ["EventEncoder", "as_event_dict", "encode_proto", "encode_sse"]


# The one-shot encoders are the codec's own builtins (C when built): a Python
# wrapper here would double their cost (a frame, keyword passing), and they take
# SDK pydantic events themselves (``as_event_dict``).
encode_proto: Final = selected.encode_proto
encode_sse: Final = selected.encode_sse


class EventEncoder:
    """Encodes events in the transport the client asked for.

    ``accept`` is the request's ``Accept`` header. Protobuf is chosen when the
    header admits ``application/vnd.ag-ui.event+proto`` with q > 0, whatever
    SSE's q (the AG-UI 1.0 binding), except through ``*/*`` alone while SSE is
    acceptable (no header and ``*/*`` give SSE: generic HTTP clients send it);
    ``wildcard_proto=True`` drops that exception (``_negotiation`` has the
    rule). With ``strict=True`` an ``Accept`` that allows neither transport
    raises ``NotAcceptable`` (answer 406); otherwise SSE is the fallback. The
    protobuf options are those of ``encode_proto``; SSE ignores them.

    Construction is as cheap as the SDK's (some frameworks build an encoder per
    event): negotiation is cached per ``Accept`` string (``negotiation``), and an
    encoder holds no per-stream state, so ``EventEncoder(...)`` hands back one
    shared instance per transport and options (at most ``CACHE_SIZE`` kept).
    Treat instances as immutable; a subclass gets a new instance per call.
    """

    # ``encode`` and ``encode_many`` are bound per instance to the transport's
    # encoder (for protobuf a C method with the options bound), so encoding an
    # event is one call: no Python frame, no keyword parsing, no branch on the
    # transport. The methods below document them and serve subclasses.
    __slots__ = ("content_type", "encode", "encode_many")
    content_type: str
    encode: Callable[[Mapping[str, Any] | Any], bytes]
    encode_many: Callable[[Iterable[Mapping[str, Any] | Any]], bytes]

    if TYPE_CHECKING:

        def __new__(
            cls,
            accept: str | bytes | None = None,
            *,
            strict: bool = False,
            wildcard_proto: bool = False,
            lossy_numbers: bool = False,
            extra_keys: str = "drop",
            max_depth: int = DEFAULT_MAX_DEPTH,
        ) -> EventEncoder: ...

    else:
        # The signature above, with the common call (no options) answered before
        # any keyword handling: the SDK's constructor is an empty __init__, and
        # this must cost no more.
        def __new__(cls, accept: str | bytes | None = None, **options: Any) -> EventEncoder:
            if not options and cls is EventEncoder:
                try:
                    shared = _BY_ACCEPT.get(accept)
                except TypeError:  # unhashable: negotiate says what accept must be
                    shared = None
                if shared is not None:
                    return shared
            elif not options.keys() <= _OPTION_SET:
                raise _unexpected(cls, options)
            return cls._new(accept, **options)

    @classmethod
    def _new(
        cls,
        accept: str | bytes | None,
        *,
        strict: bool = False,
        wildcard_proto: bool = False,
        lossy_numbers: bool = False,
        extra_keys: str = "drop",
        max_depth: int = DEFAULT_MAX_DEPTH,
    ) -> EventEncoder:
        wildcard_proto = bool(wildcard_proto)
        content_type = negotiate(accept, strict=strict, wildcard_proto=wildcard_proto)
        if cls is not EventEncoder:  # a subclass may keep state: its own instance
            return cls._build(content_type, lossy_numbers, extra_keys, max_depth)
        plain = (
            not wildcard_proto
            and lossy_numbers is False
            and extra_keys == "drop"
            and max_depth == DEFAULT_MAX_DEPTH
        )
        key = (content_type, lossy_numbers, extra_keys, max_depth)
        try:
            self = _INSTANCES.get(key)
            hashable = True
        except TypeError:  # an unhashable option: let the option check name it
            self, hashable = None, False
        if self is None:
            self = cls._build(content_type, lossy_numbers, extra_keys, max_depth)
            if hashable:
                remember(_INSTANCES, key, self)
        if plain and (accept is None or len(accept) <= CACHE_MAX_KEY):
            # read by the call without options alone, which is never strict: a header
            # that accepts neither transport is SSE there too
            remember(_BY_ACCEPT, accept, self)
        return self

    @classmethod
    def _build(
        cls, content_type: str, lossy_numbers: bool, extra_keys: str, max_depth: int
    ) -> EventEncoder:
        frames = selected.FrameEncoder(
            lossy_numbers=lossy_numbers,
            extra_keys=extra_keys,
            max_depth=max_depth,
            convert=as_event_dict,
        )
        self = super().__new__(cls)
        self.content_type = content_type
        if content_type == PROTO_MEDIA_TYPE:
            self.encode = frames.encode
            self.encode_many = frames.encode_many
        else:
            sse = selected.SSEEncoder(convert=as_event_dict)
            self.encode = sse.encode
            self.encode_many = sse.encode_many
        return self

    def get_content_type(self) -> str:
        """The negotiated content type (the name ``ag_ui.encoder`` uses)."""
        return self.content_type

    @property
    def is_binary(self) -> bool:
        """Whether protobuf frames were negotiated."""
        return self.content_type == PROTO_MEDIA_TYPE

    def __repr__(self) -> str:
        return f"EventEncoder(content_type={self.content_type!r})"


# (class, content type, options) -> the shared encoder; Accept -> the shared
# encoder with default options, for the call without options
_INSTANCES: Final[dict[tuple[Any, ...], EventEncoder]] = {}
_BY_ACCEPT: Final[dict[str | bytes | None, EventEncoder]] = {}
# the keyword options of EventEncoder(), in its signature's order
_OPTIONS: Final = ("strict", "wildcard_proto", "lossy_numbers", "extra_keys", "max_depth")
_OPTION_SET: Final = frozenset(_OPTIONS)


def _unexpected(cls: type, options: dict[str, Any]) -> TypeError:
    """The ``TypeError`` for an option ``EventEncoder()`` does not take, naming the
    public class (not the constructor's helper) and the options it does take."""
    name = next(o for o in options if o not in _OPTIONS)
    close = [o for o in _OPTIONS if o.startswith(name)] or difflib.get_close_matches(
        name, _OPTIONS, n=1
    )
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return TypeError(
        f"{cls.__name__}() got an unexpected keyword argument {name!r}{hint}; "
        f"its options are {', '.join(_OPTIONS)}"
    )
