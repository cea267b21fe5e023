"""AG-UI events as Server-Sent Events: ``data: <json>\\n\\n`` (``text/event-stream``).

Strategy: one orjson call per event, after the reference's ``omitOptionalNulls``
pass, so that the output is JSON-equal to what ``@ag-ui/encoder`` 1.0.0 writes for
the same event. Pure function of the event, no I/O, never mutates its input.

The null rule is the reference's, exactly: a key whose value is ``None`` is left
out only where the event's shape declares that key optional; ``None`` stays
(``null``) in required keys (including the four nullable JSON values,
``schema.NULLABLE``), in keys the shape does not know, in any object whose
discriminator (event ``type``, message ``role``, part/source/outcome ``type``) is
unknown, and anywhere inside opaque JSON (state, snapshots, values, metadata,
rawEvent, tool parameters...). The walk is shape-aware: it recurses only into the
known sub-objects: messages, tool calls, content parts and their sources, run
input, tools, resume entries, interrupts, usage, outcomes (patch operations have
no optional keys, so they are never walked). The shapes come from
``agui_wire.schema`` (optional = not required and not nullable; the ``Message``
keys each role declares, which the protobuf schema cannot carry: ``ROLE_KEYS``).
Cost: for the 25 event types with nothing nested to walk, a look at the top-level
values, walked only if one is ``None``; the 6 with nested shapes (messages
snapshot, run started/finished/error, tool call result, subagent finished) are
serialized first and walked only when the output holds an object
member ``:null`` (and serialized again if the walk removed something). An event
without ``None`` thus costs one orjson call and a scan.

Also: the event must be a mapping with a non-empty string ``type`` (anything else
could not be read back, by us or by the reference client); an unknown ``type`` is
written as given. Where orjson.dumps refuses an event, ``_write`` takes over:
nesting deeper than orjson's 255 levels is written there (up to what our SSE
reader reads back, ``SSE_MAX_NESTING``), and what JSON cannot hold (non-string
keys, lone surrogates, integers beyond 64 bits, unsupported types) becomes
``EncodeError`` naming the event type and the JSON pointer of the offending value. Mappings that
are not dicts are written as objects, tuples as arrays.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

import orjson

from .. import schema
from .._jsonnames import pointer_join
from .._pb import events_pb2
from ..errors import EncodeError
from .proto_writer import as_event_dict

__all__ = ["SSEEncoder", "encode_sse", "encode_sse_many"]

_Walk = Callable[[Any], Any]  # returns its argument when nothing changes


def _identity(value: Any) -> Any:
    return value


# -- walkers ---------------------------------------------------------------------


def _object(optional: frozenset[str], children: Mapping[str, _Walk]) -> _Walk:
    kids = tuple((k, w) for k, w in children.items() if w is not _identity)
    if not optional and not kids:
        return _identity

    def walk(value: Any) -> Any:
        if type(value) is not dict and not isinstance(value, Mapping):
            return value
        result: Any = value
        if optional:
            for v in value.values():
                if v is None:
                    result = {k: v for k, v in value.items() if v is not None or k not in optional}
                    break
        for key, child in kids:
            sub = result.get(key)
            if sub is not None:
                new = child(sub)
                if new is not sub:
                    if result is value:
                        result = dict(value)
                    result[key] = new
        return result

    return walk


def _array(item: _Walk) -> _Walk:
    if item is _identity:
        return _identity

    def walk(value: Any) -> Any:
        if not isinstance(value, (list, tuple)):
            return value
        out: list[Any] | None = None
        for i, x in enumerate(value):
            y = item(x)
            if y is not x:
                if out is None:
                    out = list(value)
                out[i] = y
        return value if out is None else out

    return walk


def _union(discriminator: str, variants: Mapping[str, _Walk]) -> _Walk:
    table = {tag: w for tag, w in variants.items() if w is not _identity}
    if not table:
        return _identity

    def walk(value: Any) -> Any:
        if type(value) is not dict and not isinstance(value, Mapping):
            return value
        tag = value.get(discriminator)
        w = table.get(tag) if type(tag) is str else None
        return value if w is None else w(value)

    return walk


# -- the shapes, from agui_wire.schema -------------------------------------------------

_BASE: Final = frozenset(f.name for f in schema.BASE_FIELDS)


def _optional(spec: schema.MessageSpec) -> frozenset[str]:
    return frozenset(f.name for f in spec.fields if not f.required and not f.nullable)


_cache: dict[str, _Walk] = {}


def _spec_walker(name: str) -> _Walk:
    """The walker of one wire message's JSON shape."""
    if name not in _cache:
        _cache[name] = _build(name)
    return _cache[name]


def _field_walker(field: schema.Field) -> _Walk:
    if field.kind is not schema.Kind.MESSAGE or field.message is None:
        return _identity
    w = _spec_walker(field.message)
    return _array(w) if field.repeated else w


def _build(name: str) -> _Walk:
    if name == "JsonPatchOperation":
        # Every op's shape has no optional key: `from`/`value` that an op does not
        # use are unknown keys to it, and nulls in them are kept.
        return _identity
    if name == "Message":
        return _MESSAGE
    if name == "InputContentSource":
        return _SOURCE
    spec = schema.MESSAGES[name]
    return _object(_optional(spec), {f.name: _field_walker(f) for f in spec.fields})


_SOURCE: Final = _union(
    "type",
    {tag: _object(_optional(schema.MESSAGES[m]), {}) for tag, (_, m) in schema.SOURCE_ARMS.items()},
)
_CONTENT_PARTS: Final = _array(
    _union("type", {tag: _spec_walker(m) for tag, (_, m) in schema.PART_ARMS.items()})
)


def _message_walker() -> _Walk:
    fields = {f.name: f for f in schema.MESSAGES["Message"].fields}
    variants: dict[str, _Walk] = {}
    for role, keys in schema.ROLE_KEYS.items():
        declared = {"subagentRunId", *keys}
        optional = frozenset(declared - set(schema.ROLE_REQUIRED[role]))
        children: dict[str, _Walk] = {}
        if "toolCalls" in declared:
            children["toolCalls"] = _field_walker(fields["toolCalls"])
        if "list" in schema.ROLE_CONTENT[role]:
            children["content"] = _CONTENT_PARTS
        variants[role] = _object(optional, children)
    return _union("role", variants)


_MESSAGE: Final = _message_walker()


def _outcome(
    payload: Mapping[str, tuple[str, int] | None],
    required: Mapping[str, tuple[str, ...]],
    event: str,
) -> _Walk:
    wire = getattr(events_pb2, event).DESCRIPTOR.fields_by_number
    variants: dict[str, _Walk] = {}
    for tag, carried in payload.items():
        if carried is None:
            continue
        key, number = carried
        fd = wire[number]
        children: dict[str, _Walk] = {}
        if fd.message_type is not None:
            w = _spec_walker(fd.message_type.name)
            children[key] = _array(w) if fd.is_repeated else w
        optional = frozenset() if key in required.get(tag, ()) else frozenset({key})
        variants[tag] = _object(optional, children)
    return _union("type", variants)


# Event keys handled outside the 1:1 fields (see schema's module doc): whether
# each is optional, and its shape.
_EVENT_SPECIAL: Final[dict[str, dict[str, tuple[bool, _Walk]]]] = {
    "TOOL_CALL_RESULT": {"content": (False, _CONTENT_PARTS)},
    "RUN_FINISHED": {
        "outcome": (
            True,
            _outcome(schema.RUN_OUTCOME_PAYLOAD, schema.RUN_OUTCOME_REQUIRED, "RunFinishedEvent"),
        )
    },
    "SUBAGENT_FINISHED": {
        "outcome": (True, _outcome(schema.SUBAGENT_OUTCOME_PAYLOAD, {}, "SubagentFinishedEvent"))
    },
}


def _event_walker(spec: schema.EventSpec) -> tuple[_Walk, bool]:
    """The event's walker, and whether it has nested known shapes to walk."""
    special = _EVENT_SPECIAL.get(spec.type, {})
    optional = _BASE | _optional(spec.message) | {k for k, (opt, _) in special.items() if opt}
    children = {f.name: _field_walker(f) for f in spec.message.fields}
    children.update({k: w for k, (_, w) in special.items()})
    nested = any(w is not _identity for w in children.values())
    return _object(optional, children), nested


_EVENTS: Final = {t: _event_walker(spec) for t, spec in schema.EVENTS.items()}


# -- encoding --------------------------------------------------------------------------


def _default(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return dict(obj)
    raise TypeError


_dumps = orjson.dumps


def _bad_event(event: Any) -> EncodeError:
    if not isinstance(event, Mapping):
        return EncodeError(f"an event must be a mapping, not {type(event).__name__}")
    etype = event.get("type")
    return EncodeError(
        "an event needs a non-empty string 'type'",
        event_type=etype if isinstance(etype, str) else None,
        path="/type",
    )


def _encode(event: Mapping[str, Any]) -> bytes:
    """The JSON of one event, optional nulls omitted."""
    if type(event) is dict or isinstance(event, Mapping):
        etype = event.get("type")
        if type(etype) is not str or not etype:
            raise _bad_event(event)
    else:
        raise _bad_event(event)
    shape = _EVENTS.get(etype)  # None: an event of a later protocol, written as given
    try:
        if shape is None:
            return _dumps(event, _default)
        walk, nested = shape
        if not nested:
            # Only top-level keys can be omitted: look at the values, not the bytes.
            for v in event.values():
                if v is None:
                    event = walk(event)
                    break
            return _dumps(event, _default)
        data = _dumps(event, _default)
        # A None the walk could omit is an object member, serialized as ":null";
        # without one the walk would return the event unchanged. (Searching the
        # output is much cheaper than walking the messages of a snapshot.)
        if data.find(b":null") >= 0:
            walked = walk(event)
            if walked is not event:
                data = _dumps(walked, _default)
    except orjson.JSONEncodeError:
        # too deep for orjson.dumps, or not JSON: written or located by _write
        return _write(event if shape is None else shape[0](event), etype)
    return data


def _check_id(id: str) -> bytes:
    if type(id) is not str:
        raise EncodeError(f"SSE id must be a str, not {type(id).__name__}")
    if "\n" in id or "\r" in id or "\0" in id:
        raise EncodeError(f"SSE id must not contain CR, LF or NUL: {id!r}")
    try:
        return b"id: " + id.encode()
    except UnicodeEncodeError:
        raise EncodeError(f"SSE id is not valid Unicode: {id!r}") from None


def encode_sse(event: Mapping[str, Any] | Any, *, id: str | None = None) -> bytes:
    """One SSE event: ``data: <json>\\n\\n`` (with ``id: <id>`` first if given).

    ``event`` is a dict shaped as ``@ag-ui/core`` JSON, or an official SDK pydantic
    event (``proto_writer.as_event_dict``). ``id`` (for resumption with
    ``Last-Event-ID``) must not contain CR, LF or NUL.
    """
    if type(event) is not dict:
        event = as_event_dict(event)
    if id is None:
        return b"data: " + _encode(event) + b"\n\n"
    return _check_id(id) + b"\ndata: " + _encode(event) + b"\n\n"


def encode_sse_many(events: Iterable[Mapping[str, Any]]) -> bytes:
    """Several events, concatenated SSE messages (no ids)."""
    # Appending as we go: orjson's output objects are over-allocated, so holding
    # them all for one join costs a page per event.
    out = bytearray()
    for event in events:
        out += b"data: "
        out += _encode(event)
        out += b"\n\n"
    return bytes(out)


class SSEEncoder:
    """``encode_sse`` (without ids) for a caller that encodes event after event
    (``EventEncoder``). An event that is not a ``dict`` goes through ``convert``
    first (the official SDK's pydantic events); ``convert=None`` leaves it as is.
    The Cython twin (``_fast.SSEEncoder``) writes the common event (no ``None``
    to omit, nothing orjson refuses) itself and hands every other one to this."""

    def __init__(self, *, convert: Callable[[Any], Any] | None = None) -> None:
        self._convert = convert

    def encode(self, event: Any) -> bytes:
        """encode(event) -> bytes: one SSE message."""
        if type(event) is not dict and self._convert is not None:
            event = self._convert(event)
        return b"data: " + _encode(event) + b"\n\n"

    def encode_many(self, events: Iterable[Any]) -> bytes:
        """encode_many(events) -> bytes: several SSE messages, concatenated."""
        convert = self._convert
        if convert is not None:
            events = (e if type(e) is dict else convert(e) for e in events)
        return encode_sse_many(events)


# -- what orjson refuses: too deep for it, or not JSON (only on that path) ------------

# Containers the JSON of an SSE event may nest, the event object included: what
# orjson.loads (our SSE reader) reads back. orjson.dumps itself stops at 255.
SSE_MAX_NESTING: Final = 1024


class _Close:
    """A container's closing bracket on the writer's stack."""

    __slots__ = ("token",)

    def __init__(self, token: bytes) -> None:
        self.token = token


_CLOSE_OBJECT: Final = _Close(b"}")
_CLOSE_ARRAY: Final = _Close(b"]")


def _refusal(value: Any) -> str:
    """Why orjson refuses the scalar ``value``."""
    if isinstance(value, str):
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            return f"string holds a lone surrogate at index {exc.start}"
    if isinstance(value, int) and not -(2**63) <= value < 2**64:
        return "integer does not fit 64 bits"
    return f"{type(value).__name__} is not JSON serializable"


def _write(value: Any, event_type: str) -> bytes:
    """``value`` as orjson would write it, for what orjson.dumps refuses: nesting
    deeper than its 255 levels is written here, up to ``SSE_MAX_NESTING``; what JSON
    cannot hold raises ``EncodeError`` with its JSON pointer.

    Containers are written here, iteratively (no recursion, whatever the depth),
    and every scalar and key by orjson itself, so the bytes are orjson's: compact,
    the same escapes, the same numbers. Containers are what orjson takes natively
    (dict and list and their subclasses, exact tuples) plus any other Mapping,
    which its ``default`` would turn into a dict."""
    out = bytearray()
    # (value, its pointer, its nesting level), or a closing bracket
    stack: list[Any] = [(value, "", 1)]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        if type(item) is _Close:
            out += item.token
            continue
        if type(item) is bytes:  # a separator or an object key
            out += item
            continue
        v, path, level = item
        is_object = isinstance(v, Mapping)
        if is_object or isinstance(v, list) or type(v) is tuple:
            if level > SSE_MAX_NESTING:
                raise EncodeError(
                    f"nested deeper than {SSE_MAX_NESTING - 1} levels below the event object"
                    " (SSE readers refuse it)",
                    event_type=event_type,
                    path=path,
                )
            if is_object:
                out += b"{"
                push(_CLOSE_OBJECT)
                entries: list[Any] = []
                for k, sub in v.items():
                    if not isinstance(k, str):
                        raise EncodeError(
                            f"object key {k!r} is not a string",
                            event_type=event_type,
                            path=pointer_join(path, repr(k)),
                        )
                    where = pointer_join(path, k)
                    try:
                        key = _dumps(k)
                    except orjson.JSONEncodeError:
                        raise EncodeError(
                            "object key holds a lone surrogate", event_type=event_type, path=where
                        ) from None
                    entries.append((key, (sub, where, level + 1)))
                for n, (key, child) in enumerate(reversed(entries)):
                    push(child)
                    push(key + b":")
                    if n < len(entries) - 1:
                        push(b",")
            else:
                out += b"["
                push(_CLOSE_ARRAY)
                for n in range(len(v) - 1, -1, -1):
                    push((v[n], pointer_join(path, n), level + 1))
                    if n:
                        push(b",")
            continue
        try:
            out += _dumps(v, _default)
        except orjson.JSONEncodeError:
            raise EncodeError(_refusal(v), event_type=event_type, path=path) from None
    return bytes(out)
