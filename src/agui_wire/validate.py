"""Checking AG-UI events and streams against the 1.0 rules, with positions.

Strategy: three layers, each reporting ``Problem``s instead of raising, so one
pass over a capture finds every problem, not only the first.

* **Schema** (``validate_event``): every event against the ``@ag-ui/core`` 1.0.0
  zod schemas (``EventSchemas``), ported rule for rule: required and typed
  fields, literals and enums (message roles, patch ops, outcome types...), safe
  integer ranges (timestamps, token counts), JSON pointer syntax of patch paths,
  ``interrupts`` of an ``interrupt`` outcome non-empty, "any JSON" fields that
  reject or allow ``null``. Objects are loose in the schema, so a key it does
  not name is a *note*, never an error. An event is schema-valid here exactly
  when ``EventSchemas.safeParse`` accepts it (tests/interop/test_cli_validate.py
  holds the two together on the corpus and on broken events).
* **Sequence** (``StreamValidator``): the client's ``verifyEvents`` (``@ag-ui/
  client`` 1.0.0, ``verify/verify.ts``) ported: a stream starts with
  ``RUN_STARTED`` (or ``RUN_ERROR``), nothing but a new ``RUN_STARTED`` follows
  the end of a run (``RUN_ERROR`` may also follow ``RUN_FINISHED``); text
  messages, tool calls, reasoning spans and reasoning messages are opened,
  continued and closed by id, never opened twice while open, all closed before
  ``RUN_FINISHED``; steps pair by name per owner; subagents start once, finish
  once, and nest under started parents; ``subagentRunId`` tags agree with the
  owner of the entity they continue (owners seeded from ``MESSAGES_SNAPSHOT``
  and the ``RUN_STARTED`` input echo); no ``null`` where the verifier forbids it.
* **State** (agui_wire's own, see below): every ``STATE_DELTA`` must apply
  (RFC 6902, ``agui_wire._jsonpatch``) to the state built so far from
  ``STATE_SNAPSHOT`` (or the ``RUN_STARTED`` input's ``state``), every
  ``ACTIVITY_DELTA`` to its activity's content from ``ACTIVITY_SNAPSHOT`` (or a
  snapshot/input message of role ``activity``). A patch that fails leaves the
  state as it was, as in the reference client.

Where this differs from the reference, deliberately:

* ``verifyEvents`` stops at the first error; this reports every problem and
  recovers in the least surprising way (a duplicate start keeps the entity
  open, a continuation of nothing is ignored, events after the end of a run are
  reported once and then counted). The first sequence error is at the event
  where ``verifyEvents`` stops; the rest are extra information.
* End of stream: ``verifyEvents`` never sees it. Here a stream that ends with a
  run still open (no ``RUN_FINISHED``/``RUN_ERROR``: a cut capture, a crashed
  agent) is an error listing what was left open (``run.unterminated``), and an
  empty stream is an error (``stream.empty``).
* Patches: the reference client applies deltas with ``fast-json-patch`` and only
  ``console.warn``s when one fails, dropping it. Here that is an error
  (``state.patch``, ``activity.patch``): the consumer's state has silently
  diverged from the producer's. A delta before any state is known, or for an
  activity the stream never showed, cannot be checked: a note, once.
* Chunk events (``*_CHUNK``) are checked against the schema only; the client
  expands them (``transformChunks``) before ``verifyEvents``, with rules of its
  own that are not ported.

Every problem has a ``severity`` (``"error"`` or ``"note"``), a ``rule`` (a
stable dotted code, e.g. ``schema.required``, ``text.not-started``), the event
``index`` and stream byte ``offset`` (when the caller supplies offsets), a JSON
``path`` inside the event, and a ``message`` a person can act on.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Final, Literal

from ._jsonnames import json_type, pointer_join
from ._jsonpatch import apply_patch
from .errors import PatchError

__all__ = [
    "EVENT_SHAPES",
    "REFERENCE_SEQUENCE_RULES",
    "Problem",
    "StreamValidator",
    "validate_event",
    "validate_stream",
]

Severity = Literal["error", "note"]

MAX_SAFE_INTEGER: Final = 2**53 - 1
_POINTER: Final = re.compile(r"(/([^/~]|~[01])*)*")


@dataclass(frozen=True, slots=True)
class Problem:
    """One thing wrong (``error``) or worth knowing (``note``) about a stream."""

    severity: Severity
    rule: str  # stable code: "schema.type", "text.not-started", "state.patch", ...
    message: str
    index: int | None = None  # event index in the stream; None: the stream as a whole
    offset: int | None = None  # stream byte offset of the event, when known
    path: str = ""  # JSON pointer inside the event
    event_type: str | None = None

    def located(self, index: int | None, offset: int | None) -> Problem:
        return Problem(
            self.severity, self.rule, self.message, index, offset, self.path, self.event_type
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "severity": self.severity,
            "rule": self.rule,
            "message": self.message,
            "index": self.index,
            "offset": self.offset,
            "path": self.path,
            "type": self.event_type,
        }

    def __str__(self) -> str:
        if self.index is not None:
            where = f"event {self.index}"
        else:
            where = "end of stream" if self.event_type is None else ""
        if self.offset is not None:
            where += f" (byte {self.offset})"
        if self.event_type:
            where += f" {self.event_type}"
        at = f" at {self.path}" if self.path else ""
        head = f"{where.strip()}: " if where.strip() else ""
        return f"{head}{self.severity} [{self.rule}]{at}: {self.message}"


# =============================================================================
# Schema: a small port of the zod 1.0.0 schemas
# =============================================================================


def _short(value: Any, limit: int = 40) -> str:
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


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

    def ok(self, value: Any) -> bool:
        out = _Out()
        self.check(value, "", out)
        return not any(p.severity == "error" for p in out.problems)


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
            out.error(path, f"expected {self.describe}, got {_short(value)}", "schema.literal")


class _Enum(_Schema):
    def __init__(self, values: Sequence[str], what: str) -> None:
        self.values = tuple(values)
        self.what = what
        self.describe = "one of " + ", ".join(json.dumps(v) for v in self.values)

    def check(self, value: Any, path: str, out: _Out) -> None:
        if not isinstance(value, str) or value not in self.values:
            out.error(
                path, f"{_short(value)} is not a valid {self.what} ({self.describe})", "schema.enum"
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
                f"{_short(value)} is not a JSON pointer (RFC 6901: '' or '/'-separated tokens, "
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
            got = "missing" if self.key not in value else _short(tag)
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
TIMESTAMP = _Int(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
COUNT = _Int(0, MAX_SAFE_INTEGER)
TEXT_ROLES: Final = ("developer", "system", "assistant", "user")
ROLES: Final = ("developer", "system", "assistant", "user", "tool", "activity", "reasoning")


def _shape(name: str, literal: tuple[str, str] | None = None, /, **fields: _F) -> _Loose:
    if literal is not None:
        fields = {literal[0]: _F(_Literal(literal[1])), **fields}
    return _Loose(name, fields)


_PART_SOURCE = _Tagged(
    "PartSource",
    "type",
    {
        "data": _shape("DataSource", ("type", "data"), value=_F(STR), mimeType=_F(STR)),
        "url": _shape("UrlSource", ("type", "url"), value=_F(STR), mimeType=_opt(STR)),
        "file": _shape(
            "FileSource",
            ("type", "file"),
            value=_F(STR),
            provider=_opt(STR),
            mimeType=_opt(STR),
        ),
    },
)


def _media_part(kind: str) -> _Loose:
    return _shape(
        f"{kind.capitalize()}Part",
        ("type", kind),
        id=_opt(STR),
        source=_F(_PART_SOURCE),
        metadata=_opt(NOT_NULL),
    )


_CONTENT_PART = _Tagged(
    "ContentPart",
    "type",
    {
        "text": _shape(
            "TextPart", ("type", "text"), id=_opt(STR), text=_F(STR), metadata=_opt(NOT_NULL)
        ),
        **{k: _media_part(k) for k in ("image", "audio", "video", "document")},
    },
)
_CONTENT = _Union(STR, _Array(_CONTENT_PART))


def _patch_op(op: str, /, **fields: _F) -> _Loose:
    return _shape(f"{op.capitalize()}Operation", ("op", op), path=_F(POINTER), **fields)


_PATCH_OP = _Tagged(
    "JsonPatchOperation",
    "op",
    {
        "add": _patch_op("add", value=_F(ANY)),
        "remove": _patch_op("remove"),
        "replace": _patch_op("replace", value=_F(ANY)),
        "move": _patch_op("move", **{"from": _F(POINTER)}),
        "copy": _patch_op("copy", **{"from": _F(POINTER)}),
        "test": _patch_op("test", value=_F(ANY)),
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


def _message(role: str, /, **fields: _F) -> _Loose:
    base = {"subagentRunId": _opt(STR), "id": _F(STR)}
    return _shape(f"{role.capitalize()}Message", ("role", role), **base, **fields)


_NAMED = {"name": _opt(STR), "encryptedValue": _opt(STR), "metadata": _opt(OBJECT)}
_MESSAGE = _Tagged(
    "Message",
    "role",
    {
        "developer": _message("developer", **_NAMED, content=_F(STR)),
        "system": _message("system", **_NAMED, content=_F(STR)),
        "assistant": _message(
            "assistant", **_NAMED, content=_opt(STR), toolCalls=_opt(_Array(_TOOL_CALL))
        ),
        "user": _message("user", **_NAMED, content=_F(_CONTENT)),
        "tool": _message(
            "tool",
            content=_F(_CONTENT),
            toolCallId=_F(STR),
            error=_opt(STR),
            encryptedValue=_opt(STR),
            metadata=_opt(OBJECT),
        ),
        "activity": _message(
            "activity", activityType=_F(STR), content=_F(OBJECT), metadata=_opt(OBJECT)
        ),
        "reasoning": _message(
            "reasoning", content=_F(STR), encryptedValue=_opt(STR), metadata=_opt(OBJECT)
        ),
    },
)

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
_RUN_OUTCOME = _Tagged(
    "RunFinishedOutcome",
    "type",
    {
        "success": _shape(
            "RunFinishedSuccessOutcome",
            ("type", "success"),
            pendingToolCallIds=_opt(_Array(STR)),
        ),
        "interrupt": _shape(
            "RunFinishedInterruptOutcome",
            ("type", "interrupt"),
            interrupts=_F(_Array(_INTERRUPT, min_items=1)),
        ),
        "cancelled": _shape("RunFinishedCancelledOutcome", ("type", "cancelled")),
    },
)
_SUBAGENT_OUTCOME = _Tagged(
    "SubagentFinishedOutcome",
    "type",
    {
        "success": _shape("SubagentFinishedSuccessOutcome", ("type", "success")),
        "suspended": _shape(
            "SubagentFinishedSuspendedOutcome",
            ("type", "suspended"),
            interruptIds=_opt(_Array(STR)),
        ),
    },
)
_USAGE = _Array(
    _shape(
        "TokenUsage",
        provider=_opt(STR),
        model=_opt(STR),
        **{
            k: _opt(COUNT)
            for k in (
                "inputTokens",
                "outputTokens",
                "totalTokens",
                "reasoningTokens",
                "cachedInputTokens",
                "cacheWriteInputTokens",
            )
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
EVENT_SHAPES: Final[Mapping[str, _Loose]] = {
    s.fields["type"].schema.value: s  # type: ignore[attr-defined]
    for s in (
        _event(
            "TEXT_MESSAGE_START",
            messageId=_F(STR),
            role=_opt(_Enum(TEXT_ROLES, "text message role")),
            name=_opt(STR),
        ),
        _event("TEXT_MESSAGE_CONTENT", messageId=_F(STR), delta=_F(STR)),
        _event("TEXT_MESSAGE_END", messageId=_F(STR)),
        _event(
            "TEXT_MESSAGE_CHUNK",
            messageId=_opt(STR),
            role=_opt(_Enum(TEXT_ROLES, "text message role")),
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
            content=_F(_CONTENT),
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
assert len(EVENT_SHAPES) == 31


def validate_event(event: Any) -> list[Problem]:
    """Schema problems of one event (``EventSchemas`` of ``@ag-ui/core`` 1.0.0).

    Errors mean the reference's ``EventSchemas.safeParse`` rejects the event;
    notes are keys the (loose) schema does not name. Positions are left unset.
    """
    out = _Out()
    if not isinstance(event, dict):
        out.error("", f"an event is a JSON object, not {json_type(event)}", "schema.type")
        return out.problems
    etype = event.get("type")
    shape = EVENT_SHAPES.get(etype) if isinstance(etype, str) else None
    if shape is None:
        got = "missing" if "type" not in event else _short(etype)
        out.error("/type", f"event type is {got}: not one of the 31 AG-UI 1.0 types", "schema.enum")
        return out.problems
    shape.check(event, "", out)
    et = etype if isinstance(etype, str) else None
    return [
        Problem(p.severity, p.rule, p.message, path=p.path, event_type=et) for p in out.problems
    ]


# =============================================================================
# Sequence: a port of @ag-ui/client verifyEvents, plus end of stream and state
# =============================================================================

#: Sequence rules that ``verifyEvents`` enforces (the others are agui_wire's own).
REFERENCE_SEQUENCE_RULES: Final = frozenset(
    {
        "run.first",
        "run.after-error",
        "run.after-finished",
        "run.already-active",
        "run.finished-open",
        "attr.null",
        "attr.owner",
        "subagent.null",
        "subagent.outcome",
        "subagent.required",
        "subagent.duplicate",
        "subagent.reused",
        "subagent.parent",
        "subagent.not-active",
        "text.duplicate",
        "text.not-started",
        "tool.duplicate",
        "tool.not-started",
        "tool.parent-owner",
        "step.duplicate",
        "step.not-started",
        "step.owner",
        "reasoning.duplicate",
        "reasoning.not-started",
    }
)

# Rules reported once per entity (the key naming it): a missing start would
# otherwise repeat for every delta of the message.
_REPEATING: Final = {
    "text.not-started": "messageId",
    "tool.not-started": "toolCallId",
    "reasoning.not-started": "messageId",
}

_ABSENT: Final = object()
_UNKNOWN: Final = object()  # state not known (no snapshot yet)


class _SeqError(Exception):
    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def _key(value: Any) -> Any:
    """A dict/set key for an id as JS would compare it (objects never match)."""
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return ("<object>", id(value))


def _label(value: Any) -> str:
    return (
        "undefined" if value is _ABSENT else str(value) if isinstance(value, str) else _short(value)
    )


def _who(owner: Any) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


@dataclass
class _Run:
    """Per-run tracking state (``resetRunState`` in verify.ts)."""

    messages: set[Any] = field(default_factory=set)
    tool_calls: set[Any] = field(default_factory=set)
    reasoning_spans: set[Any] = field(default_factory=set)
    reasoning_messages: set[Any] = field(default_factory=set)
    # owners per entity kind: id -> subagentRunId (None: the parent agent)
    owners: dict[str, dict[Any, Any]] = field(
        default_factory=lambda: {"message": {}, "toolCall": {}, "activity": {}, "reasoning": {}}
    )
    steps: dict[Any, dict[Any, bool]] = field(default_factory=dict)  # owner -> {name}
    subagents: dict[Any, bool] = field(default_factory=dict)
    closed_subagents: set[Any] = field(default_factory=set)

    def open_summary(self) -> str:
        parts = []
        steps = [
            f"{name}" if owner is None else f"{name} (subagent '{owner}')"
            for owner, names in self.steps.items()
            for name in names
        ]
        for what, items in (
            ("steps", steps),
            ("text messages", self.messages),
            ("reasoning messages", self.reasoning_messages),
            ("reasoning spans", self.reasoning_spans),
            ("tool calls", self.tool_calls),
            ("subagents", self.subagents),
        ):
            if items:
                parts.append(f"{what}: " + ", ".join(_label(i) for i in items))
        return "; ".join(parts)


class StreamValidator:
    """Incremental checker of one stream: ``feed(event)`` per event, then ``close()``.

    ``schema``, ``sequence`` and ``state`` switch the three layers (module doc).
    ``feed`` and ``close`` return the problems found by that call; ``problems``
    holds all of them. ``index`` defaults to the count of events fed.
    """

    def __init__(self, *, schema: bool = True, sequence: bool = True, state: bool = True) -> None:
        self.schema = schema
        self.sequence = sequence
        self.state = state
        self.problems: list[Problem] = []
        self.events = 0
        self._first = False  # firstEventReceived
        self._started = False  # runStarted
        self._finished = False  # runFinished
        self._errored = False  # runError
        self._run = _Run()
        self._after_end = 0  # events after the end of a run, past the one reported
        self._repeats: dict[tuple[str, Any], int] = {}  # (rule, entity) -> unreported repeats
        self._end_reported = False
        self._last: tuple[int, int | None] = (-1, None)
        # state layer
        self._state: Any = _UNKNOWN
        self._state_note = False
        self._activities: dict[Any, Any] = {}
        self._activity_notes: set[Any] = set()

    # -- public ---------------------------------------------------------------------

    def feed(
        self, event: Any, *, index: int | None = None, offset: int | None = None
    ) -> list[Problem]:
        if index is None:
            index = self.events
        self.events += 1
        self._last = (index, offset)
        etype = event.get("type") if isinstance(event, dict) else None
        et = etype if isinstance(etype, str) else None
        found: list[Problem] = []
        patch_ok = True  # the delta/patch itself is well-formed (else it is not applied)
        if self.schema:
            for p in validate_event(event):
                found.append(p.located(index, offset))
                if p.severity == "error" and p.path.startswith(("/delta", "/patch")):
                    patch_ok = False
        if isinstance(event, dict):
            if self.sequence:
                for rule, message in self._sequence(event, et):
                    found.append(Problem("error", rule, message, index, offset, "", et))
            if self.state:
                for sev, rule, message, path in self._apply_state(event, et, patch_ok):
                    found.append(Problem(sev, rule, message, index, offset, path, et))
        self.problems += found
        return found

    def close(self, *, end_offset: int | None = None) -> list[Problem]:
        """End of stream: the problems only the end can show."""
        found: list[Problem] = []
        if self.sequence:
            if self.events == 0:
                found.append(
                    Problem(
                        "error",
                        "stream.empty",
                        "the stream has no events (a run starts with RUN_STARTED)",
                        None,
                        end_offset,
                    )
                )
            elif self._started and not self._finished and not self._errored:
                left = self._run.open_summary()
                found.append(
                    Problem(
                        "error",
                        "run.unterminated",
                        "the stream ended inside a run: no RUN_FINISHED or RUN_ERROR"
                        + (f"; still open: {left}" if left else ""),
                        None,
                        end_offset,
                    )
                )
            for (rule, entity), count in self._repeats.items():
                if count:
                    found.append(
                        Problem(
                            "note",
                            f"{rule}-repeats",
                            f"{count} more event(s) continued '{_label(entity)}' without a start"
                            " (reported once above)",
                            None,
                            end_offset,
                        )
                    )
            if self._after_end:
                found.append(
                    Problem(
                        "note",
                        "run.after-end-count",
                        f"{self._after_end} more event(s) after the end of the run were not "
                        "checked for sequence",
                        None,
                        end_offset,
                    )
                )
        self.problems += found
        return found

    # -- sequence (verify.ts) -------------------------------------------------------------

    def _sequence(self, event: dict[str, Any], et: str | None) -> list[tuple[str, str]]:
        """The sequence errors of one event: at most one (verify.ts throws once).
        A continuation of an entity that was never started is reported once per
        entity; the repeats are counted and summed up by ``close()``."""
        try:
            self._verify(event, et)
        except _SeqError as err:
            if err.rule in _REPEATING:
                key = (err.rule, _key(event.get(_REPEATING[err.rule])))
                if key in self._repeats:
                    self._repeats[key] += 1
                    return []
                self._repeats[key] = 0
            return [(err.rule, err.message)]
        return []

    def _verify(self, event: dict[str, Any], et: str | None) -> None:
        label = et if et is not None else _label(event.get("type", _ABSENT))
        if self._errored and et != "RUN_STARTED":
            self._end_event(
                "run.after-error",
                f"'{label}' after RUN_ERROR: the run has already errored and no further "
                "events can be sent (start a new run with RUN_STARTED)",
            )
            return
        if self._finished and et not in ("RUN_ERROR", "RUN_STARTED"):
            self._end_event(
                "run.after-finished",
                f"'{label}' after RUN_FINISHED: the run has already finished "
                "(start a new run with RUN_STARTED)",
            )
            return
        self._end_reported = False
        pending: _SeqError | None = None
        if not self._first:
            self._first = True
            if et not in ("RUN_STARTED", "RUN_ERROR"):
                # Recover: treat the stream as inside a run so later checks still mean something.
                self._started = True
                pending = _SeqError(
                    "run.first", f"the first event must be RUN_STARTED, not '{label}'"
                )
        elif et == "RUN_STARTED":
            if self._started and not self._finished and not self._errored:
                raise _SeqError(
                    "run.already-active",
                    "RUN_STARTED while a run is still active: the previous run must end with "
                    "RUN_FINISHED or RUN_ERROR first",
                )
            if self._finished or self._errored:
                self._run = _Run()
                self._finished = self._errored = False
                self._started = True
        # verify.ts throws the first of these; the later checks still run here so
        # that the state stays what the stream meant (their errors are dropped).
        for check in (self._null_checks, self._switch):
            try:
                check(event, et)
            except _SeqError as err:
                pending = pending or err
        if pending is not None:
            raise pending

    def _end_event(self, rule: str, message: str) -> None:
        if self._end_reported:
            self._after_end += 1
            return
        self._end_reported = True
        raise _SeqError(rule, message)

    def _null_checks(self, event: dict[str, Any], et: str | None) -> None:
        label = et or "event"
        if "subagentRunId" in event and event["subagentRunId"] is None:
            raise _SeqError(
                "attr.null",
                f"'{label}' with subagentRunId: null; the field is optional: leave it out",
            )
        if et in ("SUBAGENT_STARTED", "SUBAGENT_FINISHED", "SUBAGENT_ERROR"):
            optionals = {
                "SUBAGENT_STARTED": (
                    "description",
                    "parentSubagentRunId",
                    "parentToolCallId",
                    "parentMessageId",
                ),
                "SUBAGENT_FINISHED": ("outcome",),
                "SUBAGENT_ERROR": ("code",),
            }[et]
            for name in optionals:
                if name in event and event[name] is None:
                    raise _SeqError(
                        "subagent.null",
                        f"'{et}' with {name}: null; the field is optional: leave it out",
                    )
            if "outcome" in event and event["outcome"] is not None:
                outcome = event["outcome"]
                otype = outcome.get("type") if isinstance(outcome, dict) else None
                if otype not in ("success", "suspended"):
                    raise _SeqError(
                        "subagent.outcome",
                        f"'{et}' with outcome type {_label(otype)}: the outcome is "
                        '{"type": "success"} or {"type": "suspended"}',
                    )
                if "interruptIds" in outcome and outcome["interruptIds"] is None:
                    raise _SeqError(
                        "subagent.null",
                        f"'{et}' with outcome.interruptIds: null; leave it out",
                    )
                ids = outcome.get("interruptIds")
                if isinstance(ids, list) and any(not isinstance(i, str) for i in ids):
                    raise _SeqError(
                        "subagent.outcome",
                        f"'{et}' with a non-string entry in outcome.interruptIds",
                    )
        if et == "RUN_FINISHED":
            outcome = event.get("outcome")
            if isinstance(outcome, dict) and outcome.get("type") == "interrupt":
                interrupts = outcome.get("interrupts")
                if isinstance(interrupts, list):
                    for interrupt in interrupts:
                        if (
                            isinstance(interrupt, dict)
                            and "subagentRunId" in interrupt
                            and interrupt["subagentRunId"] is None
                        ):
                            raise _SeqError(
                                "attr.null",
                                "RUN_FINISHED with an interrupt (id "
                                f"'{_label(interrupt.get('id', _ABSENT))}') carrying "
                                "subagentRunId: null; leave it out",
                            )

    @staticmethod
    def _tag(event: dict[str, Any]) -> Any:
        # After the null check, a null tag counts as absent (recovery).
        tag = event.get("subagentRunId", _ABSENT)
        return _ABSENT if tag is None else tag

    def _owner_error(
        self, et: str, tag: Any, owners: dict[Any, Any], entity_id: Any, kind: str
    ) -> None:
        """``subagentTagError``: a tagged continuation must agree with the entity's owner."""
        if tag is _ABSENT:
            return
        key = _key(entity_id)
        if key in owners and owners[key] != tag:
            raise _SeqError(
                "attr.owner",
                f"'{et}': subagentRunId '{_label(tag)}' does not match the {kind} "
                f"'{_label(entity_id)}' opener's owner, {_who(owners[key])}",
            )

    def _seed(self, messages: Any, authoritative: bool) -> None:
        if not isinstance(messages, list):
            return
        owners = self._run.owners
        for msg in messages:
            if not isinstance(msg, dict) or not isinstance(msg.get("id"), str):
                continue
            if "subagentRunId" in msg and msg["subagentRunId"] is None:
                raise _SeqError(
                    "attr.null",
                    f"a message (id '{msg['id']}') with subagentRunId: null; leave it out",
                )
            role = msg.get("role")
            bucket = owners[
                "reasoning"
                if role == "reasoning"
                else "activity"
                if role == "activity"
                else "message"
            ]
            owner = msg.get("subagentRunId")
            if authoritative or msg["id"] not in bucket:
                bucket[msg["id"]] = owner
            calls = msg.get("toolCalls")
            for tc in calls if isinstance(calls, list) else ():
                if (
                    isinstance(tc, dict)
                    and isinstance(tc.get("id"), str)
                    and (authoritative or tc["id"] not in owners["toolCall"])
                ):
                    owners["toolCall"][tc["id"]] = owner

    def _switch(self, event: dict[str, Any], et: str | None) -> None:
        run = self._run
        owners = run.owners
        tag = self._tag(event)
        if et == "TEXT_MESSAGE_START":
            mid = _key(event.get("messageId"))
            if mid in run.messages:
                raise _SeqError(
                    "text.duplicate",
                    f"a text message with id '{_label(event.get('messageId'))}' is already in "
                    "progress: end it with TEXT_MESSAGE_END first",
                )
            existing = mid in owners["message"]
            run.messages.add(mid)
            if not existing:
                owners["message"][mid] = None if tag is _ABSENT else tag
            else:
                self._owner_error(et, tag, owners["message"], event.get("messageId"), "message")
        elif et in ("TEXT_MESSAGE_CONTENT", "TEXT_MESSAGE_END"):
            mid = _key(event.get("messageId"))
            if mid not in run.messages:
                raise _SeqError(
                    "text.not-started",
                    f"no active text message with id '{_label(event.get('messageId', _ABSENT))}'"
                    ": it needs a TEXT_MESSAGE_START first",
                )
            if et == "TEXT_MESSAGE_END":
                run.messages.discard(mid)
            self._owner_error(et, tag, owners["message"], event.get("messageId"), "message")
        elif et == "TOOL_CALL_START":
            self._tool_call_start(event, tag)
        elif et in ("TOOL_CALL_ARGS", "TOOL_CALL_END"):
            tid = _key(event.get("toolCallId"))
            if tid not in run.tool_calls:
                raise _SeqError(
                    "tool.not-started",
                    f"no active tool call with id '{_label(event.get('toolCallId', _ABSENT))}'"
                    ": it needs a TOOL_CALL_START first",
                )
            if et == "TOOL_CALL_END":
                run.tool_calls.discard(tid)
            self._owner_error(et, tag, owners["toolCall"], event.get("toolCallId"), "tool call")
        elif et == "STEP_STARTED":
            name = _key(event.get("stepName"))
            owner = None if tag is _ABSENT else _key(tag)
            steps = run.steps.setdefault(owner, {})
            if name in steps:
                where = "" if owner is None else f" in subagent '{owner}'"
                raise _SeqError(
                    "step.duplicate",
                    f'step "{_label(event.get("stepName"))}" is already active{where}',
                )
            steps[name] = True
        elif et == "STEP_FINISHED":
            name = _key(event.get("stepName"))
            owner = None if tag is _ABSENT else _key(tag)
            steps = run.steps.setdefault(owner, {})
            if name not in steps:
                for other, names in run.steps.items():
                    if other != owner and name in names:
                        raise _SeqError(
                            "step.owner",
                            f'STEP_FINISHED for step "{_label(event.get("stepName"))}" attributed '
                            f"to {_who(owner)}, but that step is open under {_who(other)}: a step "
                            "must be finished by whoever started it",
                        )
                raise _SeqError(
                    "step.not-started",
                    f'STEP_FINISHED for step "{_label(event.get("stepName", _ABSENT))}" that was '
                    "not started",
                )
            del steps[name]
        elif et == "ACTIVITY_SNAPSHOT":
            mid = _key(event.get("messageId"))
            if mid not in owners["activity"] or event.get("replace") is not False:
                owners["activity"][mid] = None if tag is _ABSENT else tag
        elif et == "ACTIVITY_DELTA":
            self._owner_error(et, tag, owners["activity"], event.get("messageId"), "activity")
        elif et == "TOOL_CALL_RESULT":
            mid = event.get("messageId")
            if isinstance(mid, str):
                owners["message"][mid] = None if tag is _ABSENT else tag
        elif et in ("REASONING_START", "REASONING_MESSAGE_START"):
            span = et == "REASONING_START"
            open_ = run.reasoning_spans if span else run.reasoning_messages
            mid = _key(event.get("messageId"))
            if mid in open_:
                what = "reasoning span" if span else "reasoning message"
                end = "REASONING_END" if span else "REASONING_MESSAGE_END"
                raise _SeqError(
                    "reasoning.duplicate",
                    f"a {what} with id '{_label(event.get('messageId'))}' is already in "
                    f"progress: end it with {end} first",
                )
            existing = mid in owners["reasoning"]
            if existing:
                self._owner_error(
                    et, tag, owners["reasoning"], event.get("messageId"), "reasoning message"
                )
            open_.add(mid)
            if not existing:
                owners["reasoning"][mid] = None if tag is _ABSENT else tag
        elif et in ("REASONING_MESSAGE_CONTENT", "REASONING_MESSAGE_END", "REASONING_END"):
            span = et == "REASONING_END"
            open_ = run.reasoning_spans if span else run.reasoning_messages
            mid = _key(event.get("messageId"))
            if mid not in open_:
                label = _label(event.get("messageId", _ABSENT))
                raise _SeqError(
                    "reasoning.not-started",
                    f"no active reasoning span with id '{label}': it needs a REASONING_START first"
                    if span
                    else f"no active reasoning message with id '{label}': it needs a "
                    "REASONING_MESSAGE_START first",
                )
            if et != "REASONING_MESSAGE_CONTENT":
                open_.discard(mid)
            self._owner_error(
                et, tag, owners["reasoning"], event.get("messageId"), "reasoning message"
            )
        elif et == "REASONING_ENCRYPTED_VALUE":
            entity = event.get("entityId")
            subtype = event.get("subtype")
            if subtype == "tool-call":
                bucket, kind = owners["toolCall"], "tool call"
            elif subtype == "message":
                key = _key(entity)
                bucket = owners["message"] if key in owners["message"] else owners["reasoning"]
                kind = "message"
            else:
                bucket, kind = owners["reasoning"], "reasoning message"
            self._owner_error(et, tag, bucket, entity, kind)
        elif et == "SUBAGENT_STARTED":
            sid = event.get("subagentRunId")
            if not isinstance(sid, str):
                raise _SeqError("subagent.required", "SUBAGENT_STARTED without a subagentRunId")
            if not isinstance(event.get("name"), str):
                raise _SeqError("subagent.required", "SUBAGENT_STARTED without a name")
            if sid in run.subagents:
                raise _SeqError(
                    "subagent.duplicate",
                    f"subagent '{sid}' is already active: finish it with SUBAGENT_FINISHED first",
                )
            if sid in run.closed_subagents:
                raise _SeqError(
                    "subagent.reused",
                    f"subagent '{sid}' has already finished in this run: subagent ids are "
                    "per invocation and cannot be reused",
                )
            parent = event.get("parentSubagentRunId", _ABSENT)
            if (
                parent is not _ABSENT
                and _key(parent) not in run.subagents
                and _key(parent) not in run.closed_subagents
            ):
                raise _SeqError(
                    "subagent.parent",
                    f"parentSubagentRunId '{_label(parent)}' has not been started in this run",
                )
            run.subagents[sid] = True
        elif et in ("SUBAGENT_FINISHED", "SUBAGENT_ERROR"):
            sid = event.get("subagentRunId")
            if not isinstance(sid, str):
                raise _SeqError("subagent.required", f"{et} without a subagentRunId")
            if et == "SUBAGENT_ERROR" and not isinstance(event.get("message"), str):
                raise _SeqError("subagent.required", "SUBAGENT_ERROR without a message")
            if sid not in run.subagents:
                raise _SeqError(
                    "subagent.not-active",
                    f"no active subagent with id '{sid}': it needs a SUBAGENT_STARTED first",
                )
            del run.subagents[sid]
            run.closed_subagents.add(sid)
        elif et == "MESSAGES_SNAPSHOT":
            self._seed(event.get("messages"), True)
        elif et == "RUN_STARTED":
            self._started = True
            inp = event.get("input")
            self._seed(inp.get("messages") if isinstance(inp, dict) else None, False)
        elif et == "RUN_FINISHED":
            left = run.open_summary()
            self._finished = True
            if left:
                raise _SeqError(
                    "run.finished-open",
                    f"RUN_FINISHED while these are still open: {left}",
                )
        elif et == "RUN_ERROR":
            self._errored = True

    def _tool_call_start(self, event: dict[str, Any], tag: Any) -> None:
        run = self._run
        owners = run.owners
        tid_raw = event.get("toolCallId")
        tid = _key(tid_raw)
        if tid in run.tool_calls:
            raise _SeqError(
                "tool.duplicate",
                f"a tool call with id '{_label(tid_raw)}' is already in progress: end it with "
                "TOOL_CALL_END first",
            )
        parent = event.get("parentMessageId", _ABSENT)
        inherited: Any = _ABSENT
        error: _SeqError | None = None
        if parent is not _ABSENT:
            pkey = _key(parent)
            if pkey in owners["message"]:
                powner = owners["message"][pkey]
                if tag is not _ABSENT and tag != powner:
                    error = _SeqError(
                        "tool.parent-owner",
                        f"TOOL_CALL_START: subagentRunId '{_label(tag)}' does not match its "
                        f"parent message '{_label(parent)}' owner, {_who(powner)}: a tool call "
                        "belongs to the message that carries it",
                    )
                inherited = powner
        if error is None and tid in owners["toolCall"]:
            existing = owners["toolCall"][tid]
            if tag is not _ABSENT and tag != existing:
                error = _SeqError(
                    "attr.owner",
                    f"'TOOL_CALL_START': subagentRunId '{_label(tag)}' does not match the tool "
                    f"call '{_label(tid_raw)}' opener's owner, {_who(existing)}",
                )
            elif tag is _ABSENT and inherited is not _ABSENT and inherited != existing:
                error = _SeqError(
                    "tool.parent-owner",
                    f"TOOL_CALL_START: tool call '{_label(tid_raw)}' is owned by {_who(existing)} "
                    f"but its parent message '{_label(parent)}' is owned by {_who(inherited)}",
                )
        run.tool_calls.add(tid)
        if tid not in owners["toolCall"]:
            owners["toolCall"][tid] = (
                tag if tag is not _ABSENT else None if inherited is _ABSENT else inherited
            )
        if error is not None:
            raise error

    # -- state (agui_wire's own) ----------------------------------------------------------

    def _apply_state(
        self, event: dict[str, Any], et: str | None, patch_ok: bool
    ) -> Iterable[tuple[Severity, str, str, str]]:
        if et == "STATE_SNAPSHOT" and "snapshot" in event:
            self._state = event["snapshot"]
        elif et == "RUN_STARTED":
            inp = event.get("input")
            if isinstance(inp, dict) and inp.get("state") is not None and self._state is _UNKNOWN:
                self._state = inp["state"]
            self._remember_activities(inp.get("messages") if isinstance(inp, dict) else None, False)
        elif et == "MESSAGES_SNAPSHOT":
            self._remember_activities(event.get("messages"), True)
        elif et == "STATE_DELTA":
            if self._state is _UNKNOWN:
                if not self._state_note:
                    self._state_note = True
                    yield (
                        "note",
                        "state.unknown",
                        "STATE_DELTA before any STATE_SNAPSHOT (and no RUN_STARTED input state):"
                        " the state it patches is not in the stream, so deltas are not checked"
                        " until a snapshot",
                        "/delta",
                    )
            elif patch_ok:
                try:
                    self._state = apply_patch(self._state, event.get("delta"))
                except PatchError as exc:
                    yield (
                        "error",
                        "state.patch",
                        f"the delta does not apply to the state built so far: {exc}; the "
                        "reference client drops the whole delta (state diverges)",
                        "/delta" if exc.index is None else f"/delta/{exc.index}",
                    )
        elif et == "ACTIVITY_SNAPSHOT":
            mid = _key(event.get("messageId"))
            if (mid not in self._activities or event.get("replace") is not False) and isinstance(
                event.get("content"), dict
            ):
                self._activities[mid] = event["content"]
        elif et == "ACTIVITY_DELTA":
            mid = _key(event.get("messageId"))
            if mid not in self._activities:
                if mid not in self._activity_notes:
                    self._activity_notes.add(mid)
                    yield (
                        "note",
                        "activity.unknown",
                        f"ACTIVITY_DELTA for activity '{_label(event.get('messageId'))}', which "
                        "this stream never snapshotted: its patches are not checked (the "
                        "reference client ignores deltas for messages it does not have)",
                        "/messageId",
                    )
            elif patch_ok:
                try:
                    self._activities[mid] = apply_patch(self._activities[mid], event.get("patch"))
                except PatchError as exc:
                    yield (
                        "error",
                        "activity.patch",
                        f"the patch does not apply to activity '{_label(event.get('messageId'))}'"
                        f" as built so far: {exc}; the reference client drops it",
                        "/patch" if exc.index is None else f"/patch/{exc.index}",
                    )

    def _remember_activities(self, messages: Any, authoritative: bool) -> None:
        if not isinstance(messages, list):
            return
        for msg in messages:
            if (
                isinstance(msg, dict)
                and msg.get("role") == "activity"
                and isinstance(msg.get("content"), dict)
            ):
                mid = _key(msg.get("id"))
                if authoritative or mid not in self._activities:
                    self._activities[mid] = msg["content"]


def validate_stream(
    events: Iterable[Any],
    *,
    offsets: Sequence[int] | None = None,
    end_offset: int | None = None,
    schema: bool = True,
    sequence: bool = True,
    state: bool = True,
) -> list[Problem]:
    """Every problem of a whole stream of events (schema, sequence, state)."""
    validator = StreamValidator(schema=schema, sequence=sequence, state=state)
    for i, event in enumerate(events):
        validator.feed(event, index=i, offset=None if offsets is None else offsets[i])
    validator.close(end_offset=end_offset)
    return validator.problems
