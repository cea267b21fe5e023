"""AG-UI events as Server-Sent Events: ``data: <json>\\n\\n`` (``text/event-stream``).

Strategy: one contract, then one JSON. An event is first held to the rules every
encoder applies (``proto_writer.check_event``: the ``@ag-ui/core`` schemas as
``agui_wire.schema`` states them, the same ``EncodeError`` with the same words
as ``encode_proto`` gives, on both backends); keys the schema does not name are
written as given, so they must be JSON values. Then one orjson call per event,
after the reference's ``omitOptionalNulls`` pass, so that the output is
JSON-equal to what ``@ag-ui/encoder`` 1.0.0 writes for the same event. Pure
function of the event, no I/O, never mutates its input.

The null rule is the reference's, exactly: a key whose value is ``None`` is left
out only where the event's shape declares that key optional; ``None`` stays
(``null``) in the four nullable JSON values (``schema.NULLABLE``), in keys the
shape does not know, and anywhere inside opaque JSON (state, snapshots, values,
metadata, rawEvent, tool parameters...). (A required key that is ``None`` is
refused by the contract.) The walk is shape-aware: it recurses only into the
known sub-objects: messages, tool calls, content parts and their sources, run
input, tools, resume entries, interrupts, usage, outcomes (patch operations have
no optional keys, so they are never walked). The shapes come from
``agui_wire.schema`` (optional = not required and not nullable; the ``Message``
keys each role declares, which the protobuf schema cannot carry: ``ROLE_KEYS``).
Cost: for the 25 event types with nothing nested to walk, a look at the top-level
values, walked only if one is ``None``; the 6 with nested shapes (messages
snapshot, run started/finished/error, tool call result, subagent finished) are
serialized first and walked only when the output holds an object member
``:null`` (and serialized again if the walk removed something).

What reaches orjson.dumps: only exact dicts, lists, str, int, bool, None and finite
floats, nested at most 254 deep, which ``_scan`` checks first (one pass over the
values, no copy). orjson does not count tuples against its depth limit and
crashes the process on a deep or cyclic nest of them, so it never sees one.
Everything else goes through ``_normalize`` first, which reads every value by
what it holds, the same on both backends and on both transports: any Mapping is
an object and any list or tuple (subclasses included) an array, read by their
contents, not their methods; a subclass of str, int or float (an enum such as
the SDK's ``EventType`` included) is its plain value, whatever its ``__str__``,
``encode``, ``__float__`` say. Beyond the contract, SSE refuses one thing: nesting
deeper than our SSE readers read (``SSE_MAX_NESTING`` containers with the event
object), an ``EncodeError`` naming the path. Events deeper than orjson.dumps goes,
and (with ``lossy_numbers``) integers beyond 64 bits, are written by ``_write``,
with orjson's bytes for every string and the digits of every integer.

The Cython twin (``_sse_writer.pxi``) writes the JSON itself, reading the
protobuf writer's shape tables, and hands every event it doubts to ``_encode``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Any, Final, NamedTuple

import orjson

from .. import schema
from .._jsonnames import json_pointer, pointer_join
from .._pb import events_pb2
from ..errors import EncodeError
from ..schema import DEFAULT_MAX_DEPTH
from .encoder_inputs import as_event_dict, check_encode_options
from .proto_writer import NativeJson, Refusal, check_event

__all__ = ["SSEEncoder", "encode_handed_over", "encode_sse", "encode_sse_many"]

_Walk = Callable[[Any], Any]  # returns its argument when nothing changes


def _identity(value: Any) -> Any:
    return value


# -- walkers ---------------------------------------------------------------------


def _object(optional: frozenset[str], children: Mapping[str, _Walk]) -> _Walk:
    kids = tuple((k, w) for k, w in children.items() if w is not _identity)
    if not optional and not kids:
        return _identity

    def walk(value: Any) -> Any:
        if type(value) is not dict:
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
        if type(value) is not list:
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
        if type(value) is not dict:
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
        declared = {*schema.MESSAGE_COMMON, *keys}
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

_dumps = orjson.dumps
_JSONEncodeError = orjson.JSONEncodeError

# Containers the JSON of an SSE event may nest, the event object included: what our
# SSE readers (orjson.loads) read back, so that every event we write can be read.
SSE_MAX_NESTING: Final = schema.JSON_MAX_NESTING  # = sse_reader.ORJSON_MAX_DEPTH
# orjson.dumps writes up to this many nested containers (dicts and lists; it does
# not count tuples, which is why no tuple ever reaches it). The scan hands deeper
# events to _normalize and _write.
_DUMPS_MAX_NESTING: Final = 254

_SCALARS: Final = frozenset({str, int, bool, type(None)})


def _scan(event: dict[str, Any]) -> bool:
    """Whether orjson.dumps may write ``event`` (which the contract has passed) as
    it is: True when it holds only exact dicts, lists, str, int, bool, None and
    floats, nested at most ``_DUMPS_MAX_NESTING`` deep; False when something must
    be normalized first (tuples, subclasses, other mappings, more depth)."""
    iters: list[Iterator[Any]] = [iter(event.values())]
    while iters:
        for x in iters[-1]:
            t = type(x)
            if t is dict or t is list:
                if len(iters) >= _DUMPS_MAX_NESTING:
                    return False
                if t is dict:
                    if any(type(k) is not str for k in x):
                        return False  # a str subclass key: its plain value
                    iters.append(iter(x.values()))
                else:
                    iters.append(iter(x))
                break
            if t not in _SCALARS and t is not float:
                return False  # written as its plain value (_normalize)
        else:
            iters.pop()
    return all(type(k) is str for k in event)


# -- everything else: normalized first ---------------------------------------------------


class _Open:
    """A container being normalized: its entries, and its copy once one is needed
    (at once for anything but an exact dict or list; for those, copy on write)."""

    __slots__ = ("copy", "is_object", "items", "key", "n", "source")

    def __init__(self, source: Any, key: str | int, items: Iterator[tuple[Any, Any]]) -> None:
        self.source = source
        self.key = key  # in the parent
        self.items = items
        self.is_object = isinstance(source, Mapping)
        self.n = 0  # entries read while the source is copied as it is
        self.copy: Any = None
        if type(source) is not dict and type(source) is not list:
            self.copy = {} if self.is_object else []

    def changed(self) -> None:
        """Start the copy: the entries so far were taken as they are."""
        if self.copy is None:
            src = self.source
            self.copy = dict(islice(src.items(), self.n)) if self.is_object else src[: self.n]

    def add(self, key: Any, new: Any, old: Any) -> None:
        if self.copy is None:
            if new is old:
                self.n += 1
                return
            self.changed()
        if self.is_object:
            self.copy[key] = new
        else:
            self.copy.append(new)


def _open(value: Any, key: str | int) -> _Open | None:
    """An ``_Open`` for a container, ``None`` for anything else. Subclasses of dict,
    list and tuple are read by their contents, not through their methods."""
    t = type(value)
    if t is dict:
        return _Open(value, key, iter(value.items()))
    if t is list:
        return _Open(value, key, enumerate(value))
    if isinstance(value, dict):
        return _Open(value, key, iter(dict.items(value)))
    if isinstance(value, list):
        return _Open(value, key, enumerate(list.__iter__(value)))
    if isinstance(value, tuple):
        return _Open(value, key, enumerate(tuple.__iter__(value)))
    if isinstance(value, Mapping) and not isinstance(value, (str, int, float)):
        return _Open(value, key, iter(value.items()))
    return None


def _plain_scalar(value: Any) -> Any:
    """The JSON scalar ``value`` stands for: a subclass of str, int or float stands
    for its value as the base type holds it, the same bytes whatever its methods
    say (``__str__``, ``encode``, ``__float__``, ``__index__``...). The contract
    has refused every other type."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int) and not isinstance(value, bool):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value


def _normalize(event: Mapping[str, Any], event_type: str) -> dict[str, Any]:
    """``event`` (which the contract has passed) as exact JSON types: dicts with
    str keys, lists, str, int, float, bool, None. Mappings become dicts, tuples and
    list subclasses lists, subclasses of str/int/float their plain values; exact
    dicts and lists are copied only when something inside them changes.
    ``EncodeError`` (with the pointer) for nesting deeper than the SSE readers read
    (``SSE_MAX_NESTING``). Iterative: no depth costs Python stack."""
    root = _open(event, "")
    assert root is not None
    stack = [root]
    while True:
        frame = stack[-1]
        for key, value in frame.items:
            if frame.is_object and type(key) is not str:
                key = str.__str__(key)
                frame.changed()
            t = type(value)
            if t in _SCALARS or t is float:
                new = value
            else:
                child = _open(value, key)
                if child is not None:
                    if len(stack) >= SSE_MAX_NESTING:
                        raise EncodeError(
                            f"nested deeper than {SSE_MAX_NESTING - 1} levels below the event"
                            " object (SSE readers refuse it)",
                            event_type=event_type,
                            path=json_pointer([*(f.key for f in stack[1:]), key]),
                        )
                    stack.append(child)
                    break
                new = _plain_scalar(value)
            frame.add(key, new, value)
        else:
            stack.pop()
            result = frame.source if frame.copy is None else frame.copy
            if not stack:
                return result  # type: ignore[no-any-return]
            stack[-1].add(frame.key, result, frame.source)


# -- writing ----------------------------------------------------------------------------


def _json(event: dict[str, Any], event_type: str) -> bytes:
    """The JSON of an event of exact JSON types (``_scan`` passed it, or it is
    ``_normalize``'s copy), optional nulls omitted."""
    walk, nested = _EVENTS[event_type]
    try:
        if not nested:
            # Only top-level keys can be omitted: look at the values, not the bytes.
            for v in event.values():
                if v is None:
                    return _dumps(walk(event))
            return _dumps(event)
        data = _dumps(event)
        # A None the walk could omit is an object member, serialized as ":null";
        # without one the walk would return the event unchanged. (Searching the
        # output is much cheaper than walking the messages of a snapshot.)
        if data.find(b":null") >= 0:
            walked = walk(event)
            if walked is not event:
                data = _dumps(walked)
        return data
    except _JSONEncodeError:
        # deeper than orjson.dumps goes, or an integer beyond 64 bits (lossy_numbers)
        return _write(walk(event), event_type)


def _encode(
    event: Any,
    lossy: bool,
    extra: str,
    max_depth: int,
    native: NativeJson | None = None,
    found: Refusal | None = None,
) -> bytes:
    """The JSON of one event (``native``, ``found``: what the Cython twin hands
    over, for the contract's walk; see ``proto_writer.encode_handed_over``)."""
    etype = check_event(event, lossy, extra, max_depth, native, found)
    if type(event) is dict and _scan(event):
        return _json(event, etype)
    return _json(_normalize(event, etype), etype)


def encode_handed_over(
    event: Any,
    found: Refusal | None,
    lossy: bool,
    extra: str,
    max_depth: int,
    native: NativeJson,
) -> bytes:
    """The JSON of an event the Cython twin handed over (invalid, or valid but
    written only here); for it alone (through ``seam``). ``found``: where the
    protobuf writer's walk refused it, or None; ``native``: its JSON kernel
    (``proto_writer.encode_handed_over``)."""
    return _encode(event, lossy, extra, max_depth, native, found)


class _Key(NamedTuple):
    """An object key on ``_write``'s stack, with the pointer of its object."""

    key: str
    path: str


def _write(value: Any, event_type: str) -> bytes:
    """``value`` (exact JSON types, as ``_normalize`` leaves them) as orjson would
    write it, for what orjson.dumps refuses: nesting deeper than it goes, up to
    ``SSE_MAX_NESTING`` (which ``_normalize`` checked), and integers beyond 64 bits
    (which the contract lets through only with ``lossy_numbers``).

    Containers are written here, iteratively (no recursion, whatever the depth),
    every integer as its digits and every other scalar and key by orjson itself,
    so the bytes are orjson's: compact, the same escapes, the same numbers."""
    out = bytearray()
    # (value, its pointer), or a closing bracket, a separator or an object key
    stack: list[Any] = [(value, "")]
    pop, push = stack.pop, stack.append
    while stack:
        item = pop()
        if type(item) is bytes:
            out += item
            continue
        if type(item) is _Key:
            out += _dumps(item.key) + b":"
            continue
        v, path = item
        t = type(v)
        if t is dict:
            out += b"{"
            push(b"}")
            last = len(v) - 1
            for n, (k, sub) in enumerate(reversed(v.items())):
                push((sub, pointer_join(path, k)))
                push(_Key(k, path))
                if n < last:
                    push(b",")
        elif t is list:
            out += b"["
            push(b"]")
            for n in range(len(v) - 1, -1, -1):
                push((v[n], pointer_join(path, n)))
                if n:
                    push(b",")
        elif t is int:
            try:
                out += int.__repr__(v).encode()
            except ValueError:  # more digits than sys.get_int_max_str_digits()
                raise EncodeError(
                    f"integer of {v.bit_length()} bits has more digits than Python writes",
                    event_type=event_type,
                    path=path,
                ) from None
        else:
            out += _dumps(v)
    return bytes(out)


def _check_id(id: str) -> bytes:
    if type(id) is not str:
        raise EncodeError(f"SSE id must be a str, not {type(id).__name__}")
    if "\n" in id or "\r" in id or "\0" in id:
        raise EncodeError(f"SSE id must not contain CR, LF or NUL: {id!r}")
    try:
        return b"id: " + id.encode()
    except UnicodeEncodeError:
        raise EncodeError(f"SSE id is not valid Unicode: {id!r}") from None


def encode_sse(
    event: Mapping[str, Any] | Any,
    *,
    id: str | None = None,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> bytes:
    """One SSE event: ``data: <json>\\n\\n`` (with ``id: <id>`` first if given).

    ``event`` is a dict shaped as ``@ag-ui/core`` JSON, or an official SDK pydantic
    event (``proto_writer.as_event_dict``). Raises the ``EncodeError`` that
    ``encode_proto`` raises for the same event and options (event type, JSON
    pointer, reason); keys the schema does not name are written as given
    (``extra_keys="error"`` refuses them, as on protobuf). ``id`` (for resumption
    with ``Last-Event-ID``) must not contain CR, LF or NUL.
    """
    check_encode_options(extra_keys, max_depth, lossy_numbers)
    if type(event) is not dict:
        event = as_event_dict(event)
    data = _encode(event, lossy_numbers, extra_keys, max_depth)
    if id is None:
        return b"data: " + data + b"\n\n"
    return _check_id(id) + b"\ndata: " + data + b"\n\n"


def encode_sse_many(
    events: Iterable[Mapping[str, Any]],
    *,
    lossy_numbers: bool = False,
    extra_keys: str = "drop",
    max_depth: int = DEFAULT_MAX_DEPTH,
) -> bytes:
    """Several events, concatenated SSE messages (no ids); all or nothing."""
    check_encode_options(extra_keys, max_depth, lossy_numbers)
    # Appending as we go: orjson's output objects are over-allocated, so holding
    # them all for one join costs a page per event.
    out = bytearray()
    for event in events:
        out += b"data: "
        out += _encode(event, lossy_numbers, extra_keys, max_depth)
        out += b"\n\n"
    return bytes(out)


class SSEEncoder:
    """``encode_sse`` (without ids) with its options bound, for a caller that
    encodes event after event (``EventEncoder``). An event that is not a ``dict``
    goes through ``convert`` first (the official SDK's pydantic events);
    ``convert=None`` leaves it as is. The Cython twin (``_fast.SSEEncoder``)
    writes the common event itself and hands every other one to ``_encode``."""

    __slots__ = ("_convert", "_extra", "_lossy", "_max_depth")

    def __init__(
        self,
        *,
        lossy_numbers: bool = False,
        extra_keys: str = "drop",
        max_depth: int = DEFAULT_MAX_DEPTH,
        convert: Callable[[Any], Any] | None = None,
    ) -> None:
        check_encode_options(extra_keys, max_depth, lossy_numbers)
        self._lossy = lossy_numbers
        self._extra = extra_keys
        self._max_depth = max_depth
        self._convert = convert

    def encode(self, event: Any) -> bytes:
        """encode(event) -> bytes: one SSE message."""
        if type(event) is not dict and self._convert is not None:
            event = self._convert(event)
        return b"data: " + _encode(event, self._lossy, self._extra, self._max_depth) + b"\n\n"

    def encode_many(self, events: Iterable[Any]) -> bytes:
        """encode_many(events) -> bytes: several SSE messages, concatenated."""
        convert = self._convert
        if convert is not None:
            events = [e if type(e) is dict else convert(e) for e in events]
        return encode_sse_many(
            events, lossy_numbers=self._lossy, extra_keys=self._extra, max_depth=self._max_depth
        )
