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
written as given.

What reaches orjson.dumps: only exact dicts, lists, str, int, bool, None and finite
floats, nested at most 254 deep, which ``_scan`` checks first (one pass over the
values, no copy). orjson does not count tuples against its depth limit and
crashes the process on a deep or cyclic nest of them, so it never sees one.
Everything else goes through ``_normalize`` first, which reads every value by
what it holds, the same on both backends and on both transports: any Mapping is
an object and any list or tuple (subclasses included) an array, read by their
contents, not their methods; a subclass of str, int or float (an enum such as
the SDK's ``EventType`` included) is its plain value, whatever its ``__str__``,
``encode``, ``__float__`` say. What JSON cannot hold is an ``EncodeError`` naming
the event type and the JSON pointer: a value of any other type, NaN and the
infinities (orjson and ``JSON.stringify`` write ``null``, which the reference
client refuses in a number field and which changes data elsewhere; the protobuf
encoder refuses them too), a key that is not a string, a lone surrogate, an
integer beyond 64 bits, a container inside itself (a cycle), and nesting deeper
than our SSE readers read (``SSE_MAX_NESTING`` containers with the event
object). Events deeper than orjson.dumps goes are written by ``_write``, with
orjson's bytes.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from itertools import islice
from typing import Any, Final, NamedTuple

import orjson

from .. import schema
from .._jsonnames import cycle_reason, json_pointer, json_repr, json_type, pointer_join
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

_dumps = orjson.dumps
_JSONEncodeError = orjson.JSONEncodeError

# Containers the JSON of an SSE event may nest, the event object included: what our
# SSE readers (orjson.loads) read back, so that every event we write can be read.
SSE_MAX_NESTING: Final = schema.JSON_MAX_NESTING  # = sse_reader.ORJSON_MAX_DEPTH
# orjson.dumps writes up to this many nested containers (dicts and lists; it does
# not count tuples, which is why no tuple ever reaches it). The scan hands deeper
# events to _normalize and _write.
_DUMPS_MAX_NESTING: Final = 254
# The scan keeps the containers this deep or deeper by identity and hands a cycle to
# _normalize at once, instead of going round it until _DUMPS_MAX_NESTING: at most
# _SCAN_DEEP / its length + 2 laps over whatever sits beside it (a wide list beside
# a cycle cost 254 laps, seconds); shallow events pay nothing for it.
_SCAN_DEEP: Final = 8
_INT_RANGE: Final = range(-(2**63), 2**64)  # the integers orjson writes

_SCALARS: Final = frozenset({str, int, bool, type(None)})
_SURROGATE: Final = re.compile("[\ud800-\udfff]")


def _refusal(value: Any, is_key: bool, path: str, event_type: str | None) -> EncodeError:
    """The ``EncodeError`` for a value (or an object key) JSON cannot hold, found at
    ``path``. Every refusal of both twins is worded here (the Cython scan finds
    values and calls this)."""
    if is_key:
        if isinstance(value, str):
            reason = "object key holds a lone surrogate"
            path = pointer_join(path, value)
        else:
            reason = f"object key {json_repr(value)} is not a string"
            path = pointer_join(path, json_repr(value))
    elif isinstance(value, str):
        # the first code point UTF-8 has no bytes for (what str.encode's error
        # names), found without raising one
        found = _SURROGATE.search(str.__str__(value))
        if found is None:
            reason = "string is not valid Unicode"  # not reached: only lone surrogates fail
        else:
            reason = f"string holds a lone surrogate at index {found.start()}"
    elif isinstance(value, float):
        reason = f"{float.__repr__(value)} is not a JSON number (JSON has no NaN or Infinity)"
    elif isinstance(value, int) and not isinstance(value, bool):
        reason = "integer does not fit 64 bits"
    else:
        reason = f"{json_type(value)} is not a JSON value"
    return EncodeError(reason, event_type=event_type, path=path)


def _path(containers: list[Any], target: Any) -> str:
    """The pointer of ``target`` inside the last of ``containers`` (each one inside
    the one before it). The scan walks depth first, in order, so the first item
    that *is* the next one is the one it went through."""
    keys: list[str | int] = []
    for parent, child in zip(containers, [*containers[1:], target], strict=True):
        items = parent.items() if type(parent) is dict else enumerate(parent)
        keys.append(next(k for k, v in items if v is child))
    return json_pointer(keys)


def _scan(event: dict[str, Any], event_type: str) -> bool:
    """Whether orjson.dumps may write ``event`` as it is: True when it holds only
    exact dicts, lists, str, int, bool, None and finite floats, nested at most
    ``_DUMPS_MAX_NESTING`` deep; False when something must be normalized first
    (tuples, subclasses, other mappings, more depth). A value JSON cannot hold
    (NaN and infinities included) raises ``EncodeError``. A key that is not an exact
    str hands the event to ``_normalize``, which meets it before its value, so the
    first fault is the same whatever the containers' types; the content of keys,
    strings and integers is orjson's to check (``_locate``)."""
    containers: list[Any] = [event]
    iters: list[Iterator[Any]] = [iter(event.items())]
    deep: set[int] = set()  # ids of the open containers _SCAN_DEEP or more down
    while iters:
        for x in iters[-1]:
            if type(containers[-1]) is dict:
                if type(x[0]) is not str:
                    return False  # _normalize: a bad key is met before its value
                x = x[1]
            t = type(x)
            if t is dict or t is list:
                if len(iters) >= _DUMPS_MAX_NESTING:
                    return False
                if len(iters) >= _SCAN_DEEP:
                    if id(x) in deep:
                        return False  # a cycle: _normalize words it
                    deep.add(id(x))
                containers.append(x)
                iters.append(iter(x.items()) if t is dict else iter(x))
                break
            if t in _SCALARS:
                continue
            if t is float:
                if x - x == 0.0:  # NaN and infinities are not
                    continue
            elif isinstance(x, (str, int, float, dict, list, tuple, Mapping)):
                return False  # written as its plain value (_normalize)
            raise _refusal(x, False, _path(containers, x), event_type)
        else:
            iters.pop()
            done = containers.pop()
            if len(iters) >= _SCAN_DEEP:
                deep.discard(id(done))
    return True


def _locate(event: dict[str, Any], event_type: str) -> None:
    """For an event ``_scan`` passed and orjson.dumps refused: raise the
    ``EncodeError`` of the first key or value orjson refuses (a key that is not a
    str, a lone surrogate, an integer beyond 64 bits), entry by entry (key, then
    value), depth first. Returns when there is none: a str subclass key, which
    ``_normalize`` writes as its str value."""
    keys: list[str | int] = []
    iters: list[Iterator[tuple[Any, Any]]] = [iter(event.items())]
    objects = [True]
    while iters:
        is_object = objects[-1]
        for k, x in iters[-1]:
            if is_object and (type(k) is not str or not (k.isascii() or _encodes(k))):
                if type(k) is not str and isinstance(k, str):
                    return
                raise _refusal(k, True, json_pointer(keys), event_type)
            t = type(x)
            if t is dict or t is list:
                keys.append(k)
                iters.append(iter(x.items()) if t is dict else enumerate(x))
                objects.append(t is dict)
                break
            if (t is str and not (x.isascii() or _encodes(x))) or (
                t is int and x not in _INT_RANGE
            ):
                raise _refusal(x, False, json_pointer([*keys, k]), event_type)
        else:
            iters.pop()
            objects.pop()
            if keys:
                keys.pop()


def _encodes(s: str) -> bool:
    try:
        s.encode()
    except UnicodeEncodeError:
        return False
    return True


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
    """The JSON scalar ``value`` stands for, or ``_NOT_JSON``. A subclass of str, int
    or float stands for its value as the base type holds it: the same bytes
    whatever its methods say (``__str__``, ``encode``, ``__float__``, ``__index__``...)."""
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bool):
        return bool(value)  # bool cannot be subclassed; here for completeness
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return _NOT_JSON


_NOT_JSON: Final = object()


def _normalize(event: Mapping[str, Any], event_type: str) -> dict[str, Any]:
    """``event`` as exact JSON types: dicts with str keys, lists, str, int, float,
    bool, None. Mappings become dicts, tuples and list subclasses lists, subclasses
    of str/int/float their plain values; exact dicts and lists are copied only
    when something inside them changes. ``EncodeError`` (with the pointer) for a
    value JSON cannot hold, a key that is not a str, NaN or an infinity, a
    container inside itself (a cycle), or nesting deeper than the SSE readers
    read (``SSE_MAX_NESTING``). Iterative: no depth costs Python stack."""
    root = _open(event, "")
    assert root is not None
    stack = [root]
    ancestors = {id(event): 0}  # the containers open on the way down, by identity

    def where(key: str | int) -> str:
        return json_pointer([*(f.key for f in stack[1:]), key])

    while True:
        frame = stack[-1]
        for key, value in frame.items:
            if frame.is_object and type(key) is not str:
                if not isinstance(key, str):
                    raise _refusal(key, True, json_pointer([f.key for f in stack[1:]]), event_type)
                key = str.__str__(key)
                frame.changed()
            t = type(value)
            if t in _SCALARS:
                new = value
            elif t is float:
                if value - value != 0.0:
                    raise _refusal(value, False, where(key), event_type)
                new = value
            else:
                child = _open(value, key)
                if child is not None:
                    seen = ancestors.get(id(value))
                    if seen is not None:
                        raise EncodeError(
                            cycle_reason(json_pointer([f.key for f in stack[1 : seen + 1]])),
                            event_type=event_type,
                            path=where(key),
                        )
                    if len(stack) >= SSE_MAX_NESTING:
                        raise EncodeError(
                            f"nested deeper than {SSE_MAX_NESTING - 1} levels below the event"
                            " object (SSE readers refuse it)",
                            event_type=event_type,
                            path=where(key),
                        )
                    ancestors[id(value)] = len(stack)
                    stack.append(child)
                    break
                new = _plain_scalar(value)
                if new is _NOT_JSON or (type(new) is float and new - new != 0.0):
                    raise _refusal(value, False, where(key), event_type)
            frame.add(key, new, value)
        else:
            stack.pop()
            del ancestors[id(frame.source)]
            result = frame.source if frame.copy is None else frame.copy
            if not stack:
                return result  # type: ignore[no-any-return]
            stack[-1].add(frame.key, result, frame.source)


# -- writing ----------------------------------------------------------------------------


def _json(event: dict[str, Any], event_type: str, normalized: bool) -> bytes:
    """The JSON of an event of exact JSON types (``_scan`` passed it, or it is
    ``_normalize``'s copy), optional nulls omitted."""
    shape = _EVENTS.get(event_type)  # None: an event of a later protocol, written as given
    try:
        if shape is None:
            return _dumps(event)
        walk, nested = shape
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
        pass
    if normalized:
        # deeper than orjson.dumps goes, or a lone surrogate or an integer beyond 64
        # bits (located on the way)
        return _write(event if shape is None else shape[0](event), event_type)
    _locate(event, event_type)
    return _general(event)  # a key of a str subclass


def _event_type(event: Any) -> str:
    """The ``type`` of any event, as ``_normalize`` will read it (keys by their
    str value, the last one wins); ``EncodeError`` unless it is a non-empty str."""
    if not isinstance(event, Mapping):
        raise EncodeError(f"an event must be a mapping, not {type(event).__name__}")
    found: Any = None
    for k, v in dict.items(event) if isinstance(event, dict) else event.items():
        if isinstance(k, str) and str.__str__(k) == "type":
            found = v
    etype = str.__str__(found) if isinstance(found, str) else None
    if not etype:
        raise EncodeError(
            "an event needs a non-empty string 'type'", event_type=etype, path="/type"
        )
    return etype


def _general(event: Any) -> bytes:
    """Any event: normalized to exact JSON types first (refusals located there)."""
    event_type = _event_type(event)
    return _json(_normalize(event, event_type), event_type, True)


def _encode(event: Any) -> bytes:
    """The JSON of one event, optional nulls omitted."""
    if type(event) is dict:
        etype = event.get("type")
        if type(etype) is str and etype and _scan(event, etype):
            return _json(event, etype, False)
    return _general(event)


class _Key(NamedTuple):
    """An object key on ``_write``'s stack, with the pointer of its object."""

    key: str
    path: str


def _write(value: Any, event_type: str) -> bytes:
    """``value`` (exact JSON types, as ``_normalize`` leaves them) as orjson would
    write it, for what orjson.dumps refuses: nesting deeper than it goes, up to
    ``SSE_MAX_NESTING`` (which ``_normalize`` checked); a lone surrogate or an
    integer beyond 64 bits raises ``EncodeError`` with its JSON pointer.

    Containers are written here, iteratively (no recursion, whatever the depth),
    and every scalar and key by orjson itself, so the bytes are orjson's: compact,
    the same escapes, the same numbers."""
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
            try:
                out += _dumps(item.key) + b":"
            except _JSONEncodeError:
                raise _refusal(item.key, True, item.path, event_type) from None
            continue
        v, path = item
        t = type(v)
        if t is dict:
            out += b"{"
            push(b"}")
            # each key is written (so checked) just before its value: a bad key in
            # a later entry must not be named before a bad value in an earlier one
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
        else:
            try:
                out += _dumps(v)
            except _JSONEncodeError:
                raise _refusal(v, False, path, event_type) from None
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
    The Cython twin (``_fast.SSEEncoder``) scans and writes the common event (exact
    JSON types) itself and hands every other one to this."""

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
