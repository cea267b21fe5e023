"""What an event looks like after a trip through the binary transport.

Strategy: a direct statement of the rules in docs/wire-format.md ("What binary
keeps and what it changes"), walking the known shapes with ``agui_wire.schema``.
It never calls a codec, so the property tests can hold the codecs to it:
``decode_proto(encode_proto(e)) == normalize(e)`` for every valid event ``e``.

Contract: ``normalize`` takes a valid event (as ``encode_proto`` accepts it) and
returns a new dict; the input is not modified. Rules, all forced by protobuf
having no way to say the thing dropped:

1. ``None`` in a field means absent (except the four JSON values that may be null).
2. Keys the schema has no field for are dropped (``extra_keys="drop"``); on a
   message of a known role, so are the keys of other roles (``ROLE_KEYS``).
3. Empty arrays the reference decoder leaves out are left out: ``toolCalls: []``,
   ``usage: []``, an outcome's ``pendingToolCallIds: []`` / ``interruptIds: []``,
   and the ``content: []`` of a message whose role this version does not know.
4. ``RUN_STARTED.input`` always has ``messages``, ``tools``, ``context``, ``resume``.
5. An outcome keeps only the payload of its own type.
6. Numbers: JSON integers stay integers; an integral float up to 2**53 becomes an
   ``int`` (``5.0`` -> ``5``; ``-0.0`` stays); tuples become lists.
"""

from __future__ import annotations

from typing import Any

from .schema import (
    BASE_FIELDS,
    EVENTS,
    MAX_EXACT_INT,
    MESSAGE_HEAD,
    MESSAGES,
    PART_ARMS,
    ROLE_CONTENT,
    ROLE_FIELDS,
    RUN_OUTCOME_PAYLOAD,
    SOURCE_ARMS,
    SUBAGENT_OUTCOME_PAYLOAD,
    Kind,
    MessageSpec,
    number_from_double,
)

__all__ = ["normalize"]

_ROLE_SPECS = {
    role: MessageSpec("Message", (*MESSAGE_HEAD, *fields)) for role, fields in ROLE_FIELDS.items()
}


def normalize(event: dict[str, Any]) -> dict[str, Any]:
    """The dict ``decode_proto(encode_proto(event))`` returns for a valid event."""
    spec = EVENTS[event["type"]]
    out: dict[str, Any] = {"type": spec.type}
    _fields(MessageSpec("BaseEvent", BASE_FIELDS), event, out)
    _fields(spec.message, event, out)
    if spec.type == "RUN_FINISHED":
        _outcome(event, out, RUN_OUTCOME_PAYLOAD)
    elif spec.type == "SUBAGENT_FINISHED":
        _outcome(event, out, SUBAGENT_OUTCOME_PAYLOAD)
    elif spec.type == "TOOL_CALL_RESULT":
        content = event["content"]
        out["content"] = content if isinstance(content, str) else [_part(p) for p in content]
    elif spec.type == "RUN_STARTED" and "input" in out:
        for key in ("messages", "tools", "context", "resume"):
            out["input"].setdefault(key, [])
    return out


def _present(obj: dict[str, Any], name: str, nullable: bool) -> bool:
    return name in obj and (obj[name] is not None or nullable)


def _fields(spec: MessageSpec, obj: dict[str, Any], out: dict[str, Any]) -> None:
    for f in spec.fields:
        if not _present(obj, f.name, f.nullable):
            continue
        value = obj[f.name]
        if f.repeated:
            if f.kind == Kind.MESSAGE:
                assert f.message is not None
                value = [_message(f.message, v) for v in value]
            else:
                value = list(value)
            if f.omit_empty and not value:
                continue
        elif f.kind in (Kind.VALUE, Kind.STRUCT):
            value = json_value(value)
        elif f.kind == Kind.INT64:
            value = int(value)
        elif f.kind == Kind.MESSAGE:
            assert f.message is not None
            value = _message(f.message, value)
        out[f.name] = value


def _message(name: str, obj: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if name == "InputContentSource":
        out["type"] = obj["type"]
        _fields(MESSAGES[SOURCE_ARMS[obj["type"]][1]], obj, out)
        return out
    if name == "Message" and obj["role"] in _ROLE_SPECS:
        # a key of another role is an extra key of this message (rule 2): the
        # union Message has a field for it, the role's shape does not
        _fields(_ROLE_SPECS[obj["role"]], obj, out)
    else:
        _fields(MESSAGES[name], obj, out)
    if name == "Message" and obj.get("content") is not None:
        content = obj["content"]
        if isinstance(content, str):
            out["content"] = content
        elif isinstance(content, dict):
            out["content"] = json_value(content)
        elif content or obj["role"] in ROLE_CONTENT:
            out["content"] = [_part(p) for p in content]
    return out


def _part(part: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {"type": part["type"]}
    _fields(MESSAGES[PART_ARMS[part["type"]][1]], part, out)
    return out


def _outcome(event: dict[str, Any], out: dict[str, Any], payloads: Any) -> None:
    outcome = event.get("outcome")
    if outcome is None:
        return
    result: dict[str, Any] = {"type": outcome["type"]}
    payload = payloads.get(outcome["type"])
    if payload is not None:
        key = payload[0]
        items = outcome.get(key)
        if key == "interrupts":
            result[key] = [_message("Interrupt", i) for i in items or ()]
        elif items:
            result[key] = list(items)
    out["outcome"] = result


def json_value(value: Any) -> Any:
    """A JSON value as it decodes from ``google.protobuf.Value`` (iterative: any depth)."""
    holder: list[Any] = [None]
    work: list[tuple[Any, Any, Any]] = [(value, holder, 0)]
    while work:
        item, parent, key = work.pop()
        if isinstance(item, bool) or item is None or isinstance(item, str):
            parent[key] = item
        elif isinstance(item, int):
            parent[key] = item if abs(item) <= MAX_EXACT_INT else number_from_double(float(item))
        elif isinstance(item, float):
            parent[key] = number_from_double(item)
        elif isinstance(item, dict):
            obj: dict[str, Any] = dict.fromkeys(item)
            parent[key] = obj
            work.extend((v, obj, k) for k, v in item.items())
        else:
            lst: list[Any] = [None] * len(item)
            parent[key] = lst
            work.extend((v, lst, i) for i, v in enumerate(item))
    return holder[0]
