"""Every event against the ``@ag-ui/core`` 1.0.0 zod schemas: what ``validate_event``
reports and what the decoders refuse (``first_fault``: an ``InvalidEvent``'s path and
words).

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

Where the facts come from: every shape is built from ``agui_wire.schema``, the
one home of the rules the encoders and decoders apply too: the fields of each
wire message (JSON type from the kind, ``required``, ``nullable``) and what
each field allows beyond its type (``Field.choices``, ``pointer``, ``minimum``,
``json_object``, ``min_items``), the unions (messages by role, content parts
and their sources, patch operations, outcomes: ``ROLE_KEYS``/``ROLE_REQUIRED``/
``ROLE_CONTENT``, ``PART_ARMS``, ``SOURCE_ARMS``, ``PATCH_OPS``/``OP_REQUIRED``,
``*_OUTCOME_*``). Keys come in wire order, so problems are reported in it.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from . import schema
from ._jsonnames import a_json_type, json_type, not_a_pointer, pointer_join
from ._problem import Problem, short

__all__ = ["EVENT_SHAPES", "first_fault", "validate_event"]


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
        elif not schema.JSON_POINTER.fullmatch(value):
            out.error(path, not_a_pointer(short(value)), "schema.pointer")


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


# -- the 1.0 shapes, from agui_wire.schema -----------------------------------------

STR, BOOL, ANY, NOT_NULL, OBJECT, POINTER = (
    _Str(),
    _Bool(),
    _Any(),
    _NotNull(),
    _Object(),
    _Pointer(),
)

# What zod calls the objects whose wire message has another name.
_ZOD_NAMES: Final = {"Usage": "TokenUsage", "ToolCall_Function": "FunctionCall"}


def _shape(name: str, literal: tuple[str, str] | None = None, /, **fields: _F) -> _Loose:
    if literal is not None:
        fields = {literal[0]: _F(_Literal(literal[1])), **fields}
    return _Loose(name, fields)


def _text(field: schema.Field) -> _Schema:
    if len(field.choices) == 1:
        return _Literal(field.choices[0])
    if field.choices:
        return _Enum(field.choices, field.name)
    return POINTER if field.pointer else STR


def _value(field: schema.Field) -> _Schema:
    if field.json_object:
        return OBJECT
    return ANY if field.nullable or field.null_is_absent else NOT_NULL


def _wire(field: schema.Field) -> _Schema:
    """The zod type of a wire field: its kind's JSON type, held to the field's
    rules (``schema.Field``: choices, pointer, minimum, object, items)."""
    kind = field.kind
    item: _Schema
    if field.message is not None:
        item = _nested(field.message)
    elif kind is schema.Kind.STRING:
        item = _text(field)
    elif kind is schema.Kind.BOOL:
        item = BOOL
    elif kind is schema.Kind.INT64:
        item = _Int(field.minimum, schema.MAX_SAFE_INTEGER)
    elif kind is schema.Kind.STRUCT:
        item = OBJECT
    elif kind is schema.Kind.VALUE:
        item = _value(field)
    else:
        raise AssertionError(f"no zod type for {field}")
    return _Array(item, field.min_items) if field.repeated else item


def _fields(fields: Sequence[schema.Field], **special: _F) -> dict[str, _F]:
    """The keys of an object: its 1:1 fields in wire order, then ``special`` keys."""
    return {f.name: _F(_wire(f), f.required) for f in fields} | special


# Content parts: a union on `type` (schema.PART_ARMS), sources too (SOURCE_ARMS).
_PART_SOURCE = _Tagged(
    "PartSource",
    "type",
    {
        tag: _shape(
            f"{tag.capitalize()}Source", ("type", tag), **_fields(schema.MESSAGES[m].fields)
        )
        for tag, (_, m) in schema.SOURCE_ARMS.items()
    },
)

# What `content` may be, by the carriers schema.ROLE_CONTENT names.
_CARRIERS: Final[dict[str, _Schema]] = {"str": STR, "dict": OBJECT}


def _content(carriers: Sequence[str]) -> _Schema:
    if len(carriers) == 1:
        return _CARRIERS[carriers[0]]
    return _Union(*(_CARRIERS[c] for c in carriers))


# JSON Patch: a union on `op` (schema.PATCH_OPS), each op's members OP_REQUIRED.
def _patch_op() -> _Tagged:
    wire = {f.name: f for f in schema.MESSAGES["JsonPatchOperation"].fields}
    return _Tagged(
        "JsonPatchOperation",
        "op",
        {
            op: _shape(
                f"{op.capitalize()}Operation",
                ("op", op),
                path=_F(_wire(wire["path"])),
                **{k: _F(_wire(wire[k])) for k in schema.OP_REQUIRED[op]},
            )
            for op in schema.PATCH_OPS
        },
    )


def _message(role: str) -> _Loose:
    """A message of one role: the keys schema.ROLE_KEYS declares for it, required
    as ROLE_REQUIRED says, ``content`` of the carriers ROLE_CONTENT allows."""
    wire = {f.name: f for f in schema.MESSAGES["Message"].fields}
    fields = {k: _F(_wire(wire[k]), wire[k].required) for k in (*schema.MESSAGE_COMMON, "id")}
    for key in schema.ROLE_KEYS[role]:
        of = _content(schema.ROLE_CONTENT[role]) if key == "content" else _wire(wire[key])
        fields[key] = _F(of, required=key in schema.ROLE_REQUIRED[role])
    return _shape(f"{role.capitalize()}Message", ("role", role), **fields)


def _outcome(
    name: str,
    payload: Mapping[str, tuple[str, int] | None],
    required: Mapping[str, tuple[str, ...]],
) -> _Tagged:
    """Outcomes: a union on `type` (schema.*_OUTCOME_PAYLOAD); a variant carries at
    most one list (schema.OUTCOME_FIELDS), required as *_OUTCOME_REQUIRED says."""
    variants = {}
    for tag, carried in payload.items():
        fields = {}
        if carried is not None:
            key, number = carried
            item = _wire(schema.OUTCOME_FIELDS[number, key])
            fields[key] = _F(item, required=key in required.get(tag, ()))
        variants[tag] = _shape(f"{name}{tag.capitalize()}Outcome", ("type", tag), **fields)
    return _Tagged(f"{name}Outcome", "type", variants)


# The shapes of the wire messages, by spec name; the unions are built here.
_NESTED: Final[dict[str, _Schema]] = {}


def _nested(name: str) -> _Schema:
    if name not in _NESTED:
        if name == "Message":
            shape: _Schema = _Tagged(
                "Message", "role", {role: _message(role) for role in schema.ROLE_KEYS}
            )
        elif name == "InputContent":
            shape = _Tagged(
                "ContentPart",
                "type",
                {
                    tag: _shape(
                        f"{tag.capitalize()}Part",
                        ("type", tag),
                        **_fields(schema.MESSAGES[m].fields),
                    )
                    for tag, (_, m) in schema.PART_ARMS.items()
                },
            )
        elif name == "InputContentSource":
            shape = _PART_SOURCE
        elif name == "JsonPatchOperation":
            shape = _patch_op()
        else:
            shape = _shape(_ZOD_NAMES.get(name, name), **_fields(schema.MESSAGES[name].fields))
        _NESTED[name] = shape
    return _NESTED[name]


_CARRIERS["list"] = _Array(_nested("InputContent"))

# Event keys a special rule carries (schema's module doc): their shapes.
_SPECIAL: Final[Mapping[str, Mapping[str, _F]]] = {
    "TOOL_CALL_RESULT": {"content": _F(_content(schema.ROLE_CONTENT["tool"]))},
    "RUN_FINISHED": {
        "outcome": _opt(
            _outcome("RunFinished", schema.RUN_OUTCOME_PAYLOAD, schema.RUN_OUTCOME_REQUIRED)
        )
    },
    "SUBAGENT_FINISHED": {
        "outcome": _opt(_outcome("SubagentFinished", schema.SUBAGENT_OUTCOME_PAYLOAD, {}))
    },
}


def _event(spec: schema.EventSpec) -> _Loose:
    name = "".join(p.capitalize() for p in spec.type.split("_")) + "Event"
    fields = _fields((*schema.BASE_FIELDS, *spec.message.fields), **_SPECIAL.get(spec.type, {}))
    return _shape(name, ("type", spec.type), **fields)


#: Every event schema, by ``type``.
EVENT_SHAPES: Final[Mapping[str, _Loose]] = {t: _event(s) for t, s in schema.EVENTS.items()}


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


def first_fault(event: dict[str, Any]) -> Problem | None:
    """The first error ``validate_event`` finds in a decoded event of a known type:
    what the decoders refuse (``InvalidEvent``: its path and words), ``None`` when
    ``EventSchemas`` accepts it. The decoders' C twins find the same events at fault
    with the protobuf writer's tables and ask this for the words."""
    return next((p for p in validate_event(event) if p.severity == "error"), None)
