"""The schema layer: every event against the ``@ag-ui/core`` 1.0.0 zod schemas.

Strategy: a small port of zod (``_Schema`` subclasses: strings, integers in a
range, literals, enums, JSON pointers, loose objects, unions, discriminated
unions) and, built from it, the 31 event schemas of ``EventSchemas``, rule for
rule: required and typed fields, literals and enums, safe integer ranges
(timestamps, token counts), JSON pointer syntax of patch paths, ``interrupts`` of
an ``interrupt`` outcome non-empty, "any JSON" fields that reject or allow
``null``. Objects are loose in the schema, so a key it does not name is a
*note*, never an error. An event is schema-valid here exactly when
``EventSchemas.safeParse`` accepts it (tests/interop/test_cli_validate.py holds
the two together on the corpus and on broken events).

Where the facts come from: the unions (messages by role, content parts and their
sources, patch operations, outcomes) are built from ``agui_wire.schema``'s tables
(``ROLE_KEYS``/``ROLE_REQUIRED``/``ROLE_CONTENT``, ``PART_ARMS``, ``SOURCE_ARMS``,
``PATCH_OPS``/``OP_REQUIRED``, ``*_OUTCOME_*``), the one home of those facts. The
one-to-one objects (events, run input, tools, interrupts...) are written out in
zod's key order with zod's JSON types, which the wire schema cannot carry (a JSON
pointer, an enum of strings, an object rather than any value) and which decide
the order problems are reported in; tests/unit/test_validate_shapes.py holds
their keys and requiredness to ``agui_wire.schema``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from .. import schema
from .._jsonnames import a_json_type, json_type, pointer_join
from ._problem import Problem, short

__all__ = ["EVENT_SHAPES", "validate_event"]

_POINTER: Final = re.compile(r"(/([^/~]|~[01])*)*")


class _Out:
    """Problems found inside one event."""

    __slots__ = ("problems",)

    def __init__(self) -> None:
        self.problems: list[Problem] = []

    def error(self, path: str, message: str, rule: str) -> None:
        self.problems.append(Problem("error", rule, message, path=path))

    def note(self, path: str, message: str, rule: str) -> None:
        self.problems.append(Problem("note", rule, message, path=path))


class _Schema:
    """A zod-like check: ``check(value, path, out)``; ``value`` is present."""

    describe = "a value"

    def check(self, value: Any, path: str, out: _Out) -> None:
        raise NotImplementedError


class _Str(_Schema):
    describe = "a string"

    def check(self, value: Any, path: str, out: _Out) -> None:
        if not isinstance(value, str):
            out.error(path, f"expected a string, got {json_type(value)}", "schema.type")


class _Bool(_Schema):
    describe = "a boolean"

    def check(self, value: Any, path: str, out: _Out) -> None:
        if not isinstance(value, bool):
            out.error(path, f"expected a boolean, got {json_type(value)}", "schema.type")


class _Int(_Schema):
    """zod ``z.int().min(lo).max(hi)``: a safe integer in range (``1.0`` is one in JS)."""

    def __init__(self, lo: int, hi: int) -> None:
        self.lo, self.hi = lo, hi
        self.describe = f"an integer in [{lo}, {hi}]"

    def check(self, value: Any, path: str, out: _Out) -> None:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            out.error(path, f"expected an integer, got {json_type(value)}", "schema.type")
            return
        if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
            out.error(path, f"expected an integer, got {value!r}", "schema.type")
            return
        if not self.lo <= value <= self.hi:
            out.error(path, f"{value} is outside [{self.lo}, {self.hi}]", "schema.range")


class _Literal(_Schema):
    def __init__(self, value: str) -> None:
        self.value = value
        self.describe = json.dumps(value)

    def check(self, value: Any, path: str, out: _Out) -> None:
        if value != self.value or not isinstance(value, str):
            out.error(path, f"expected {self.describe}, got {short(value)}", "schema.literal")


class _Enum(_Schema):
    def __init__(self, values: Sequence[str], what: str) -> None:
        self.values = tuple(values)
        self.what = what
        self.describe = "one of " + ", ".join(json.dumps(v) for v in self.values)

    def check(self, value: Any, path: str, out: _Out) -> None:
        if not isinstance(value, str) or value not in self.values:
            out.error(
                path, f"{short(value)} is not a valid {self.what} ({self.describe})", "schema.enum"
            )


class _Pointer(_Schema):
    describe = "a JSON pointer"

    def check(self, value: Any, path: str, out: _Out) -> None:
        if not isinstance(value, str):
            out.error(
                path, f"expected a JSON pointer string, got {json_type(value)}", "schema.type"
            )
        elif not _POINTER.fullmatch(value):
            out.error(
                path,
                f"{short(value)} is not a JSON pointer (RFC 6901: '' or '/'-separated tokens, "
                "'~' only as ~0 or ~1)",
                "schema.pointer",
            )


class _Any(_Schema):
    """``z.any().refine(v => v !== undefined)``: any JSON value, ``null`` included."""

    describe = "any JSON value"

    def check(self, value: Any, path: str, out: _Out) -> None:
        pass


class _NotNull(_Schema):
    """``z.any().refine(v => v !== null)``: any JSON value but ``null``."""

    describe = "any JSON value but null"

    def check(self, value: Any, path: str, out: _Out) -> None:
        if value is None:
            out.error(path, "must not be null (leave the key out instead)", "schema.null")


class _Object(_Schema):
    """``z.custom(v => typeof v === "object" && v !== null && !Array.isArray(v))``."""

    describe = "a JSON object"

    def check(self, value: Any, path: str, out: _Out) -> None:
        if not isinstance(value, dict):
            out.error(path, f"expected an object, got {json_type(value)}", "schema.type")


class _Array(_Schema):
    def __init__(self, item: _Schema, min_items: int = 0) -> None:
        self.item = item
        self.min_items = min_items
        self.describe = f"an array of {item.describe}"

    def check(self, value: Any, path: str, out: _Out) -> None:
        if not isinstance(value, list):
            out.error(path, f"expected an array, got {json_type(value)}", "schema.type")
            return
        if len(value) < self.min_items:
            out.error(
                path, f"needs at least {self.min_items} item(s), has {len(value)}", "schema.min"
            )
        for i, item in enumerate(value):
            self.item.check(item, pointer_join(path, i), out)


@dataclass(frozen=True, slots=True)
class _F:
    """A field of a loose object: its schema and whether the key is required."""

    schema: _Schema
    required: bool = True


def _opt(schema: _Schema) -> _F:
    return _F(schema, required=False)


class _Loose(_Schema):
    """``z.looseObject({...})``: the named keys checked, any other key a note."""

    def __init__(self, name: str, fields: Mapping[str, _F]) -> None:
        self.name = name
        self.fields = dict(fields)
        self.describe = name

    def check(self, value: Any, path: str, out: _Out) -> None:
        if not isinstance(value, dict):
            out.error(
                path, f"expected {self.name} (an object), got {json_type(value)}", "schema.type"
            )
            return
        for key, f in self.fields.items():
            if key in value:
                f.schema.check(value[key], pointer_join(path, key), out)
            elif f.required:
                out.error(
                    pointer_join(path, key),
                    f"required key {key!r} ({f.schema.describe}) is missing",
                    "schema.required",
                )
        for key in value:
            if key not in self.fields:
                out.note(
                    pointer_join(path, key),
                    f"key {key!r} is not in the 1.0 schema of {self.name} "
                    "(allowed: the schema is loose)",
                    "schema.unknown-key",
                )


class _Union(_Schema):
    """``z.union([a, b])``: the first branch that accepts; else one error."""

    def __init__(self, *branches: _Schema) -> None:
        self.branches = branches
        self.describe = " or ".join(b.describe for b in branches)

    def check(self, value: Any, path: str, out: _Out) -> None:
        best: _Out | None = None
        for branch in self.branches:
            trial = _Out()
            branch.check(value, path, trial)
            if not any(p.severity == "error" for p in trial.problems):
                out.problems.extend(trial.problems)
                return
            if isinstance(value, list) and isinstance(branch, _Array):
                best = trial  # explain the array branch for arrays
        if best is not None:
            out.problems.extend(best.problems)
        else:
            out.error(path, f"expected {self.describe}, got {json_type(value)}", "schema.type")


class _Tagged(_Schema):
    """``z.discriminatedUnion(key, [...])``."""

    def __init__(self, name: str, key: str, options: Mapping[str, _Loose]) -> None:
        self.name = name
        self.key = key
        self.options = dict(options)
        self.describe = name

    def check(self, value: Any, path: str, out: _Out) -> None:
        if not isinstance(value, dict):
            out.error(
                path, f"expected {self.name} (an object), got {json_type(value)}", "schema.type"
            )
            return
        tag = value.get(self.key)
        option = self.options.get(tag) if isinstance(tag, str) else None
        if option is None:
            allowed = ", ".join(json.dumps(k) for k in self.options)
            got = "missing" if self.key not in value else short(tag)
            out.error(
                pointer_join(path, self.key),
                f"{self.name} {self.key} is {got}; expected one of {allowed}",
                "schema.enum",
            )
            return
        option.check(value, path, out)


# -- the 1.0 shapes ---------------------------------------------------------------

STR, BOOL, ANY, NOT_NULL, OBJECT, POINTER = (
    _Str(),
    _Bool(),
    _Any(),
    _NotNull(),
    _Object(),
    _Pointer(),
)
TIMESTAMP = _Int(-schema.MAX_SAFE_INTEGER, schema.MAX_SAFE_INTEGER)
COUNT = _Int(0, schema.MAX_SAFE_INTEGER)
_TEXT_ROLE = _Enum(schema.TEXT_MESSAGE_ROLES, "text message role")


def _shape(name: str, literal: tuple[str, str] | None = None, /, **fields: _F) -> _Loose:
    if literal is not None:
        fields = {literal[0]: _F(_Literal(literal[1])), **fields}
    return _Loose(name, fields)


def _wire(field: schema.Field, nested: Mapping[str, _Schema]) -> _Schema:
    """The zod type of a wire field whose kind tells its JSON type; ``nested``:
    the shapes of the messages it may hold."""
    kinds: dict[schema.Kind, _Schema] = {
        schema.Kind.STRING: STR,
        schema.Kind.BOOL: BOOL,
        schema.Kind.STRUCT: OBJECT,
        schema.Kind.VALUE: ANY if field.nullable else NOT_NULL,
    }
    if field.message is not None and field.message in nested:
        item = nested[field.message]
    elif field.kind in kinds:
        item = kinds[field.kind]
    else:
        raise AssertionError(f"no zod type for {field}")
    return _Array(item) if field.repeated else item


# Content parts: a union on `type` (schema.PART_ARMS), sources too (SOURCE_ARMS).
_PART_SOURCE = _Tagged(
    "PartSource",
    "type",
    {
        tag: _shape(
            f"{tag.capitalize()}Source",
            ("type", tag),
            **{f.name: _F(_wire(f, {}), f.required) for f in schema.MESSAGES[message].fields},
        )
        for tag, (_, message) in schema.SOURCE_ARMS.items()
    },
)


# the content part types @ag-ui/core 1.0.0's zod schemas declare (ported below)
_PORTED_PARTS: Final = ("text", "image", "audio", "video", "document")


def _part(kind: str) -> _Loose:
    if kind not in _PORTED_PARTS:
        # a part type the 1.0 port lacks (the schema grew in proto/): its shape from
        # the wire schema, as for a new event type below
        fields = schema.MESSAGES[schema.PART_ARMS[kind][1]].fields
        nested = {"InputContentSource": _PART_SOURCE}
        return _shape(
            f"{kind.capitalize()}Part",
            ("type", kind),
            **{
                f.name: _F(
                    TIMESTAMP if f.kind is schema.Kind.INT64 else _wire(f, nested), f.required
                )
                for f in fields
            },
        )
    content = {"text": _F(STR)} if kind == "text" else {"source": _F(_PART_SOURCE)}
    return _shape(
        f"{kind.capitalize()}Part",
        ("type", kind),
        id=_opt(STR),
        **content,
        metadata=_opt(NOT_NULL),
    )


_CONTENT_PART = _Tagged("ContentPart", "type", {k: _part(k) for k in schema.PART_ARMS})

# What `content` may be, by the carriers schema.ROLE_CONTENT names.
_CARRIERS: Final[Mapping[str, _Schema]] = {
    "str": STR,
    "list": _Array(_CONTENT_PART),
    "dict": OBJECT,
}


def _content(carriers: Sequence[str]) -> _Schema:
    if len(carriers) == 1:
        return _CARRIERS[carriers[0]]
    return _Union(*(_CARRIERS[c] for c in carriers))


# JSON Patch: a union on `op` (schema.PATCH_OPS), each op's members OP_REQUIRED.
_PATCH_MEMBERS: Final[Mapping[str, _Schema]] = {"value": ANY, "from": POINTER}
_PATCH_OP = _Tagged(
    "JsonPatchOperation",
    "op",
    {
        op: _shape(
            f"{op.capitalize()}Operation",
            ("op", op),
            path=_F(POINTER),
            **{k: _F(_PATCH_MEMBERS[k]) for k in schema.OP_REQUIRED[op]},
        )
        for op in schema.PATCH_OPS
    },
)
_PATCH = _Array(_PATCH_OP)

_TOOL_CALL = _shape(
    "ToolCall",
    ("type", "function"),
    id=_F(STR),
    function=_F(_shape("FunctionCall", name=_F(STR), arguments=_F(STR))),
    encryptedValue=_opt(STR),
    metadata=_opt(OBJECT),
)


def _message(role: str) -> _Loose:
    """A message of one role: the keys schema.ROLE_KEYS declares for it, required
    as ROLE_REQUIRED says, ``content`` of the carriers ROLE_CONTENT allows."""
    wire = {f.name: f for f in schema.MESSAGES["Message"].fields}
    nested = {"ToolCall": _TOOL_CALL}
    fields = {k: _F(_wire(wire[k], nested), wire[k].required) for k in ("subagentRunId", "id")}
    for key in schema.ROLE_KEYS[role]:
        of = _content(schema.ROLE_CONTENT[role]) if key == "content" else _wire(wire[key], nested)
        fields[key] = _F(of, required=key in schema.ROLE_REQUIRED[role])
    return _shape(f"{role.capitalize()}Message", ("role", role), **fields)


_MESSAGE = _Tagged("Message", "role", {role: _message(role) for role in schema.ROLE_KEYS})

_RUN_INPUT = _shape(
    "RunAgentInput",
    threadId=_F(STR),
    runId=_F(STR),
    protocolVersion=_opt(STR),
    parentRunId=_opt(STR),
    state=_opt(ANY),  # null allowed: zod turns it into "absent"
    messages=_F(_Array(_MESSAGE)),
    tools=_opt(
        _Array(
            _shape(
                "Tool",
                name=_F(STR),
                description=_F(STR),
                parameters=_opt(NOT_NULL),
                metadata=_opt(OBJECT),
            )
        )
    ),
    context=_opt(_Array(_shape("Context", description=_F(STR), value=_F(STR)))),
    forwardedProps=_opt(NOT_NULL),
    resume=_opt(
        _Array(
            _shape(
                "ResumeEntry",
                interruptId=_F(STR),
                status=_F(_Enum(("resolved", "cancelled"), "resume status")),
                payload=_opt(NOT_NULL),
                metadata=_opt(OBJECT),
            )
        )
    ),
)

_INTERRUPT = _shape(
    "Interrupt",
    subagentRunId=_opt(STR),
    id=_F(STR),
    reason=_F(STR),
    message=_opt(STR),
    toolCallId=_opt(STR),
    responseSchema=_opt(OBJECT),
    expiresAt=_opt(STR),
    metadata=_opt(OBJECT),
)

# Outcomes: a union on `type` (schema.*_OUTCOME_PAYLOAD); a variant carries at
# most one list, required as *_OUTCOME_REQUIRED says.
_OUTCOME_LISTS: Final[Mapping[str, _Schema]] = {
    "pendingToolCallIds": _Array(STR),
    "interrupts": _Array(_INTERRUPT, min_items=1),
    "interruptIds": _Array(STR),
}


def _outcome(
    name: str,
    payload: Mapping[str, tuple[str, int] | None],
    required: Mapping[str, tuple[str, ...]],
) -> _Tagged:
    variants = {}
    for tag, carried in payload.items():
        fields = {}
        if carried is not None:
            key = carried[0]
            fields[key] = _F(_OUTCOME_LISTS[key], required=key in required.get(tag, ()))
        variants[tag] = _shape(f"{name}{tag.capitalize()}Outcome", ("type", tag), **fields)
    return _Tagged(f"{name}Outcome", "type", variants)


_RUN_OUTCOME = _outcome("RunFinished", schema.RUN_OUTCOME_PAYLOAD, schema.RUN_OUTCOME_REQUIRED)
_SUBAGENT_OUTCOME = _outcome("SubagentFinished", schema.SUBAGENT_OUTCOME_PAYLOAD, {})
# Token counts: the int64 fields of Usage, non-negative in zod.
_USAGE = _Array(
    _shape(
        "TokenUsage",
        **{
            f.name: _F(COUNT if f.kind is schema.Kind.INT64 else _wire(f, {}), f.required)
            for f in schema.MESSAGES["Usage"].fields
        },
    )
)

_BASE = {"timestamp": _opt(TIMESTAMP), "rawEvent": _opt(NOT_NULL), "metadata": _opt(OBJECT)}
_ATTR = {"subagentRunId": _opt(STR)}


def _event(etype: str, /, attributable: bool = True, **fields: _F) -> _Loose:
    name = "".join(p.capitalize() for p in etype.split("_")) + "Event"
    own = {**_BASE, **(_ATTR if attributable else {}), **fields}
    return _shape(name, ("type", etype), **own)


#: The 31 event schemas of AG-UI 1.0, by ``type``.
_PORTED: Final[Mapping[str, _Loose]] = {
    s.fields["type"].schema.value: s  # type: ignore[attr-defined]
    for s in (
        _event(
            "TEXT_MESSAGE_START",
            messageId=_F(STR),
            role=_opt(_TEXT_ROLE),
            name=_opt(STR),
        ),
        _event("TEXT_MESSAGE_CONTENT", messageId=_F(STR), delta=_F(STR)),
        _event("TEXT_MESSAGE_END", messageId=_F(STR)),
        _event(
            "TEXT_MESSAGE_CHUNK",
            messageId=_opt(STR),
            role=_opt(_TEXT_ROLE),
            delta=_opt(STR),
            name=_opt(STR),
        ),
        _event(
            "TOOL_CALL_START", toolCallId=_F(STR), toolCallName=_F(STR), parentMessageId=_opt(STR)
        ),
        _event("TOOL_CALL_ARGS", toolCallId=_F(STR), delta=_F(STR)),
        _event("TOOL_CALL_END", toolCallId=_F(STR)),
        _event(
            "TOOL_CALL_CHUNK",
            toolCallId=_opt(STR),
            toolCallName=_opt(STR),
            parentMessageId=_opt(STR),
            delta=_opt(STR),
        ),
        _event(
            "TOOL_CALL_RESULT",
            messageId=_F(STR),
            toolCallId=_F(STR),
            content=_F(_content(schema.ROLE_CONTENT["tool"])),  # a tool message's
            role=_opt(_Literal("tool")),
        ),
        _event("STATE_SNAPSHOT", snapshot=_F(ANY)),
        _event("STATE_DELTA", delta=_F(_PATCH)),
        _event("MESSAGES_SNAPSHOT", attributable=False, messages=_F(_Array(_MESSAGE))),
        _event(
            "ACTIVITY_SNAPSHOT",
            messageId=_F(STR),
            activityType=_F(STR),
            content=_F(OBJECT),
            replace=_opt(BOOL),
        ),
        _event("ACTIVITY_DELTA", messageId=_F(STR), activityType=_F(STR), patch=_F(_PATCH)),
        _event("RAW", event=_F(ANY), source=_opt(STR)),
        _event("CUSTOM", name=_F(STR), value=_F(ANY)),
        _event(
            "RUN_STARTED",
            attributable=False,
            threadId=_F(STR),
            runId=_F(STR),
            protocolVersion=_opt(STR),
            parentRunId=_opt(STR),
            input=_opt(_RUN_INPUT),
        ),
        _event(
            "RUN_FINISHED",
            attributable=False,
            threadId=_F(STR),
            runId=_F(STR),
            result=_opt(NOT_NULL),
            outcome=_opt(_RUN_OUTCOME),
            usage=_opt(_USAGE),
        ),
        _event(
            "RUN_ERROR", attributable=False, message=_F(STR), code=_opt(STR), usage=_opt(_USAGE)
        ),
        _event("STEP_STARTED", stepName=_F(STR)),
        _event("STEP_FINISHED", stepName=_F(STR)),
        _event("REASONING_START", messageId=_F(STR)),
        _event("REASONING_MESSAGE_START", messageId=_F(STR), role=_F(_Literal("reasoning"))),
        _event("REASONING_MESSAGE_CONTENT", messageId=_F(STR), delta=_F(STR)),
        _event("REASONING_MESSAGE_END", messageId=_F(STR)),
        _event("REASONING_MESSAGE_CHUNK", messageId=_opt(STR), delta=_opt(STR)),
        _event("REASONING_END", messageId=_F(STR)),
        _event(
            "REASONING_ENCRYPTED_VALUE",
            subtype=_F(_Enum(("tool-call", "message"), "encrypted value subtype")),
            entityId=_F(STR),
            encryptedValue=_F(STR),
        ),
        _event(
            "SUBAGENT_STARTED",
            attributable=False,
            subagentRunId=_F(STR),
            name=_F(STR),
            description=_opt(STR),
            parentSubagentRunId=_opt(STR),
            parentToolCallId=_opt(STR),
            parentMessageId=_opt(STR),
        ),
        _event(
            "SUBAGENT_FINISHED",
            attributable=False,
            subagentRunId=_F(STR),
            result=_opt(NOT_NULL),
            outcome=_opt(_SUBAGENT_OUTCOME),
        ),
        _event(
            "SUBAGENT_ERROR",
            attributable=False,
            subagentRunId=_F(STR),
            message=_F(STR),
            code=_opt(STR),
        ),
    )
}
assert len(_PORTED) == 31

# An event type the .proto has and the 1.0 port above does not (the schema grew in
# proto/): its shape comes from the wire schema, required keys and JSON types as
# agui_wire.schema derives them; the nested shapes the port has are reused.
_NESTED: Final[dict[str, _Schema]] = {
    "Message": _MESSAGE,
    "RunAgentInput": _RUN_INPUT,
    "Interrupt": _INTERRUPT,
    "ToolCall": _TOOL_CALL,
    "JsonPatchOperation": _PATCH_OP,
    "InputContent": _CONTENT_PART,
}


def _derived(name: str) -> _Schema:
    if name not in _NESTED:
        _NESTED[name] = _shape(name, **_derived_fields(schema.MESSAGES[name].fields))
    return _NESTED[name]


def _derived_fields(fields: Sequence[schema.Field]) -> dict[str, _F]:
    out = {}
    for f in fields:
        if f.kind is schema.Kind.INT64:
            item: _Schema = _Array(TIMESTAMP) if f.repeated else TIMESTAMP
        else:
            item = _wire(f, {f.message: _derived(f.message)} if f.message else {})
        out[f.name] = _F(item, f.required)
    return out


#: Every event schema, by ``type``: the 1.0 port, then any the .proto adds.
EVENT_SHAPES: Final[Mapping[str, _Loose]] = {
    **_PORTED,
    **{
        t: _event(t, attributable=False, **_derived_fields(spec.message.fields))
        for t, spec in schema.EVENTS.items()
        if t not in _PORTED
    },
}


def validate_event(event: Any) -> list[Problem]:
    """Schema problems of one event (``EventSchemas`` of ``@ag-ui/core`` 1.0.0).

    Errors mean the reference's ``EventSchemas.safeParse`` rejects the event;
    notes are keys the (loose) schema does not name. Positions are left unset.
    """
    out = _Out()
    if not isinstance(event, dict):
        out.error("", f"an event is a JSON object, not {a_json_type(event)}", "schema.type")
        return out.problems
    etype = event.get("type")
    shape = EVENT_SHAPES.get(etype) if isinstance(etype, str) else None
    if shape is None:
        got = "missing" if "type" not in event else short(etype)
        out.error(
            "/type",
            f"event type is {got}: not one of the {len(EVENT_SHAPES)} AG-UI event types",
            "schema.enum",
        )
        return out.problems
    shape.check(event, "", out)
    et = etype if isinstance(etype, str) else None
    return [
        Problem(p.severity, p.rule, p.message, path=p.path, event_type=et) for p in out.problems
    ]
