"""The sequence layer: ``verifyEvents`` of ``@ag-ui/client`` 1.0.0 (verify/verify.ts).

What it checks: a stream starts with ``RUN_STARTED`` (or ``RUN_ERROR``), nothing
but a new ``RUN_STARTED`` follows the end of a run (``RUN_ERROR`` may also follow
``RUN_FINISHED``); text messages, tool calls, reasoning spans and reasoning
messages are opened, continued and closed by id, never opened twice while open,
all closed before ``RUN_FINISHED``; steps pair by name per owner; subagents start
once, finish once, and nest under started parents; ``subagentRunId`` tags agree
with the owner of the entity they continue (owners seeded from
``MESSAGES_SNAPSHOT`` and the ``RUN_STARTED`` input echo); no ``null`` where the
verifier forbids it.

Strategy: ``Sequencer.feed(event)`` first applies the run boundaries, which hold
for every event (first event, events after the end of a run, a new
``RUN_STARTED``), then the rules of the event's type from the table ``RULES``
(event type -> rule functions; ``verify.ts``'s switch). A rule reads and updates
the run (``_Run``, ``resetRunState`` in verify.ts) and raises ``_SeqError`` for
what it finds. ``verifyEvents`` throws at the first error; here every rule of the
event still runs after one fails, so the run stays what the stream meant, and
the event reports the first error only.

Where this differs from the reference, deliberately: ``verifyEvents`` stops at
the first error; this reports every problem and recovers in the least surprising
way (a duplicate start keeps the entity open, a continuation of nothing is
ignored and reported once per entity, events after the end of a run are
reported once and then counted). The first sequence error is at the event where
``verifyEvents`` stops; the rest are extra information. End of stream, which
``verifyEvents`` never sees: a run still open is ``run.unterminated``, no events
at all ``stream.empty`` (``close()``). Chunk events (``*_CHUNK``) have no rules:
the client expands them (``transformChunks``) before ``verifyEvents``, with rules
of its own that are not ported.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from .._runstate import entity_key
from ._problem import ABSENT, Severity, label

__all__ = ["REFERENCE_SEQUENCE_RULES", "RULES", "Sequencer"]

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


class _SeqError(Exception):
    def __init__(self, rule: str, message: str) -> None:
        super().__init__(message)
        self.rule = rule
        self.message = message


def _who(owner: Any) -> str:
    return "the parent agent" if owner is None else f"subagent '{owner}'"


@dataclass
class _Run:
    """Per-run tracking state (``resetRunState`` in verify.ts)."""

    # what is open: id key -> the id as the stream wrote it, in opening order (as
    # verify.ts's Maps, which its messages list in that order)
    messages: dict[Any, Any] = field(default_factory=dict)
    tool_calls: dict[Any, Any] = field(default_factory=dict)
    reasoning_spans: dict[Any, Any] = field(default_factory=dict)
    reasoning_messages: dict[Any, Any] = field(default_factory=dict)
    # owners per entity kind: id -> subagentRunId (None: the parent agent)
    owners: dict[str, dict[Any, Any]] = field(
        default_factory=lambda: {"message": {}, "toolCall": {}, "activity": {}, "reasoning": {}}
    )
    steps: dict[Any, dict[Any, Any]] = field(default_factory=dict)  # owner -> {name key: name}
    subagents: dict[Any, Any] = field(default_factory=dict)  # id -> id
    closed_subagents: set[Any] = field(default_factory=set)

    def open_summary(self) -> str:
        steps = [
            f"{name}" if owner is None else f"{name} (subagent '{owner}')"
            for owner, names in self.steps.items()
            for name in names.values()
        ]
        parts = [f"steps: {', '.join(steps)}"] if steps else []
        for what, open_ in (
            ("text messages", self.messages),
            ("reasoning messages", self.reasoning_messages),
            ("reasoning spans", self.reasoning_spans),
            ("tool calls", self.tool_calls),
            ("subagents", self.subagents),
        ):
            if open_:
                parts.append(f"{what}: " + ", ".join(label(i) for i in open_.values()))
        return "; ".join(parts)


class Sequencer:
    """The sequence rules over one stream: ``feed(event)`` per event, then ``close()``."""

    def __init__(self) -> None:
        self.first = False  # firstEventReceived
        self.started = False  # runStarted
        self.finished = False  # runFinished
        self.errored = False  # runError
        self.run = _Run()
        self._after_end = 0  # events after the end of a run, past the one reported
        self._repeats: dict[tuple[str, Any], int] = {}  # (rule, entity) -> unreported repeats
        self._end_reported = False

    def feed(self, event: dict[str, Any], et: str | None) -> list[tuple[str, str]]:
        """The sequence errors of one event, as (rule, message): at most one
        (verify.ts throws once). A continuation of an entity that was never
        started is reported once per entity; ``close()`` sums up the repeats."""
        try:
            self._verify(event, et)
        except _SeqError as err:
            if err.rule in _REPEATING:
                key = (err.rule, entity_key(event.get(_REPEATING[err.rule])))
                if key in self._repeats:
                    self._repeats[key] += 1
                    return []
                self._repeats[key] = 0
            return [(err.rule, err.message)]
        return []

    def close(self, events: int) -> list[tuple[Severity, str, str]]:
        """What only the end of a stream of ``events`` events shows, as
        (severity, rule, message)."""
        found: list[tuple[Severity, str, str]] = []
        if events == 0:
            found.append(
                (
                    "error",
                    "stream.empty",
                    "the stream has no events (a run starts with RUN_STARTED)",
                )
            )
        elif self.started and not self.finished and not self.errored:
            left = self.run.open_summary()
            found.append(
                (
                    "error",
                    "run.unterminated",
                    "the stream ended inside a run: no RUN_FINISHED or RUN_ERROR"
                    + (f"; still open: {left}" if left else ""),
                )
            )
        for (rule, entity), count in self._repeats.items():
            if count:
                found.append(
                    (
                        "note",
                        f"{rule}-repeats",
                        f"{count} more event(s) continued '{label(entity)}' without a start"
                        " (reported once above)",
                    )
                )
        if self._after_end:
            found.append(
                (
                    "note",
                    "run.after-end-count",
                    f"{self._after_end} more event(s) after the end of the run were not "
                    "checked for sequence",
                )
            )
        return found

    # -- run boundaries, then the event type's rules ------------------------------------

    def _verify(self, event: dict[str, Any], et: str | None) -> None:
        name = et if et is not None else label(event.get("type", ABSENT))
        if self.errored and et != "RUN_STARTED":
            self._end_event(
                "run.after-error",
                f"'{name}' after RUN_ERROR: the run has already errored and no further "
                "events can be sent (start a new run with RUN_STARTED)",
            )
            return
        if self.finished and et not in ("RUN_ERROR", "RUN_STARTED"):
            self._end_event(
                "run.after-finished",
                f"'{name}' after RUN_FINISHED: the run has already finished "
                "(start a new run with RUN_STARTED)",
            )
            return
        self._end_reported = False
        pending: _SeqError | None = None
        if not self.first:
            self.first = True
            if et not in ("RUN_STARTED", "RUN_ERROR"):
                # Recover: treat the stream as inside a run so later checks still mean something.
                self.started = True
                pending = _SeqError(
                    "run.first", f"the first event must be RUN_STARTED, not '{name}'"
                )
        elif et == "RUN_STARTED":
            if self.started and not self.finished and not self.errored:
                raise _SeqError(
                    "run.already-active",
                    "RUN_STARTED while a run is still active: the previous run must end with "
                    "RUN_FINISHED or RUN_ERROR first",
                )
            if self.finished or self.errored:
                self.run = _Run()
                self.finished = self.errored = False
                self.started = True
        # After the null check, a null tag counts as absent (recovery).
        tag = event.get("subagentRunId", ABSENT)
        tag = ABSENT if tag is None else tag
        # verify.ts throws the first of these; the later rules still run here so
        # that the run stays what the stream meant (their errors are dropped).
        for rule in _CHECKS.get(et, _NO_RULES):  # type: ignore[arg-type]
            try:
                rule(self, event, et, tag)
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

    # -- what rules share -----------------------------------------------------------------

    def owner_error(
        self, et: str, tag: Any, owners: dict[Any, Any], entity_id: Any, kind: str
    ) -> None:
        """``subagentTagError``: a tagged continuation must agree with the entity's owner."""
        if tag is ABSENT:
            return
        key = entity_key(entity_id)
        if key in owners and owners[key] != tag:
            raise _SeqError(
                "attr.owner",
                f"'{et}': subagentRunId '{label(tag)}' does not match the {kind} "
                f"'{label(entity_id)}' opener's owner, {_who(owners[key])}",
            )

    def seed(self, messages: Any, authoritative: bool) -> None:
        """Owners of the messages (and their tool calls) a snapshot or input names."""
        if not isinstance(messages, list):
            return
        owners = self.run.owners
        for msg in messages:
            if not isinstance(msg, dict) or not isinstance(msg.get("id"), str):
                continue
            if "subagentRunId" in msg and msg["subagentRunId"] is None:
                raise _SeqError(
                    "attr.null",
                    f"a message (id '{msg['id']}') with subagentRunId: null; leave it out",
                )
            role = msg.get("role")
            bucket = owners[role if role in ("reasoning", "activity") else "message"]
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


# =============================================================================
# The rules. Each is rule(seq, event, et, tag): ``et`` the event type, ``tag`` its
# subagentRunId (ABSENT when absent or null).
# =============================================================================

Rule = Callable[[Sequencer, dict[str, Any], Any, Any], None]


def _attr_null(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    """Every event: ``subagentRunId`` is left out, never null."""
    if "subagentRunId" in event and event["subagentRunId"] is None:
        raise _SeqError(
            "attr.null",
            f"'{et or 'event'}' with subagentRunId: null; the field is optional: leave it out",
        )


# -- text messages, tool calls, reasoning --------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Streamed:
    """An entity that events open, continue and close by id."""

    rule: str  # rule prefix: "<rule>.duplicate", "<rule>.not-started"
    noun: str  # how messages name it
    open: str  # the _Run set of the open ids
    id_key: str  # the event key holding the id
    owners: str  # the _Run.owners bucket of its owners
    kind: str  # how an owner mismatch names it
    start: str  # the event type that opens it
    end: str  # the event type that closes it


_TEXT: Final = _Streamed(
    "text",
    "text message",
    "messages",
    "messageId",
    "message",
    "message",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_END",
)
_TOOL: Final = _Streamed(
    "tool",
    "tool call",
    "tool_calls",
    "toolCallId",
    "toolCall",
    "tool call",
    "TOOL_CALL_START",
    "TOOL_CALL_END",
)
_SPAN: Final = _Streamed(
    "reasoning",
    "reasoning span",
    "reasoning_spans",
    "messageId",
    "reasoning",
    "reasoning message",
    "REASONING_START",
    "REASONING_END",
)
_REASONING: Final = _Streamed(
    "reasoning",
    "reasoning message",
    "reasoning_messages",
    "messageId",
    "reasoning",
    "reasoning message",
    "REASONING_MESSAGE_START",
    "REASONING_MESSAGE_END",
)

# Rules reported once per entity (the key naming it): a missing start would
# otherwise repeat for every delta of the message.
_REPEATING: Final = {f"{e.rule}.not-started": e.id_key for e in (_TEXT, _TOOL, _SPAN, _REASONING)}


def _duplicate(entity: _Streamed, raw_id: Any) -> _SeqError:
    return _SeqError(
        f"{entity.rule}.duplicate",
        f"a {entity.noun} with id '{label(raw_id)}' is already in progress: end it with "
        f"{entity.end} first",
    )


def _text_start(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    run, owners = seq.run, seq.run.owners["message"]
    mid = entity_key(event.get("messageId"))
    if mid in run.messages:
        raise _duplicate(_TEXT, event.get("messageId"))
    run.messages[mid] = event.get("messageId")
    if mid not in owners:
        owners[mid] = None if tag is ABSENT else tag
    else:
        seq.owner_error(et, tag, owners, event.get("messageId"), "message")


def _reasoning_start(entity: _Streamed) -> Rule:
    """REASONING_START opens a span, REASONING_MESSAGE_START a message; both
    belong to the owner of the reasoning id, and a mismatch leaves it unopened."""

    def rule(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
        open_, owners = getattr(seq.run, entity.open), seq.run.owners[entity.owners]
        mid = entity_key(event.get("messageId"))
        if mid in open_:
            raise _duplicate(entity, event.get("messageId"))
        existing = mid in owners
        if existing:
            seq.owner_error(et, tag, owners, event.get("messageId"), entity.kind)
        open_[mid] = event.get("messageId")
        if not existing:
            owners[mid] = None if tag is ABSENT else tag

    return rule


def _continues(entity: _Streamed, *, closes: bool) -> Rule:
    """A continuation (``closes``: the end) of an open entity, by its owner."""

    def rule(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
        open_ = getattr(seq.run, entity.open)
        key = entity_key(event.get(entity.id_key))
        if key not in open_:
            raise _SeqError(
                f"{entity.rule}.not-started",
                f"no active {entity.noun} with id '{label(event.get(entity.id_key, ABSENT))}'"
                f": it needs a {entity.start} first",
            )
        if closes:
            open_.pop(key, None)
        seq.owner_error(
            et, tag, seq.run.owners[entity.owners], event.get(entity.id_key), entity.kind
        )

    return rule


def _tool_call_start(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    run = seq.run
    owners = run.owners
    tid_raw = event.get("toolCallId")
    tid = entity_key(tid_raw)
    if tid in run.tool_calls:
        raise _duplicate(_TOOL, tid_raw)
    parent = event.get("parentMessageId", ABSENT)
    inherited: Any = ABSENT
    error: _SeqError | None = None
    if parent is not ABSENT:
        pkey = entity_key(parent)
        if pkey in owners["message"]:
            powner = owners["message"][pkey]
            if tag is not ABSENT and tag != powner:
                error = _SeqError(
                    "tool.parent-owner",
                    f"TOOL_CALL_START: subagentRunId '{label(tag)}' does not match its "
                    f"parent message '{label(parent)}' owner, {_who(powner)}: a tool call "
                    "belongs to the message that carries it",
                )
            inherited = powner
    if error is None and tid in owners["toolCall"]:
        existing = owners["toolCall"][tid]
        if tag is not ABSENT and tag != existing:
            error = _SeqError(
                "attr.owner",
                f"'TOOL_CALL_START': subagentRunId '{label(tag)}' does not match the tool "
                f"call '{label(tid_raw)}' opener's owner, {_who(existing)}",
            )
        elif tag is ABSENT and inherited is not ABSENT and inherited != existing:
            error = _SeqError(
                "tool.parent-owner",
                f"TOOL_CALL_START: tool call '{label(tid_raw)}' is owned by {_who(existing)} "
                f"but its parent message '{label(parent)}' is owned by {_who(inherited)}",
            )
    run.tool_calls[tid] = tid_raw
    if tid not in owners["toolCall"]:
        owners["toolCall"][tid] = (
            tag if tag is not ABSENT else None if inherited is ABSENT else inherited
        )
    if error is not None:
        raise error


def _tool_call_result(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    mid = event.get("messageId")
    if isinstance(mid, str):
        seq.run.owners["message"][mid] = None if tag is ABSENT else tag


def _encrypted_value(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    owners = seq.run.owners
    entity = event.get("entityId")
    subtype = event.get("subtype")
    if subtype == "tool-call":
        bucket, kind = owners["toolCall"], "tool call"
    elif subtype == "message":
        key = entity_key(entity)
        bucket = owners["message"] if key in owners["message"] else owners["reasoning"]
        kind = "message"
    else:
        bucket, kind = owners["reasoning"], "reasoning message"
    seq.owner_error(et, tag, bucket, entity, kind)


# -- steps, activities -------------------------------------------------------------------


def _step_started(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    name = entity_key(event.get("stepName"))
    owner = None if tag is ABSENT else entity_key(tag)
    steps = seq.run.steps.setdefault(owner, {})
    if name in steps:
        where = "" if owner is None else f" in subagent '{owner}'"
        raise _SeqError(
            "step.duplicate",
            f'step "{label(event.get("stepName"))}" is already active{where}',
        )
    steps[name] = event.get("stepName")


def _step_finished(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    run = seq.run
    name = entity_key(event.get("stepName"))
    owner = None if tag is ABSENT else entity_key(tag)
    steps = run.steps.setdefault(owner, {})
    if name not in steps:
        for other, names in run.steps.items():
            if other != owner and name in names:
                raise _SeqError(
                    "step.owner",
                    f'STEP_FINISHED for step "{label(event.get("stepName"))}" attributed '
                    f"to {_who(owner)}, but that step is open under {_who(other)}: a step "
                    "must be finished by whoever started it",
                )
        raise _SeqError(
            "step.not-started",
            f'STEP_FINISHED for step "{label(event.get("stepName", ABSENT))}" that was not started',
        )
    del steps[name]


def _activity_snapshot(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    owners = seq.run.owners["activity"]
    mid = entity_key(event.get("messageId"))
    if mid not in owners or event.get("replace") is not False:
        owners[mid] = None if tag is ABSENT else tag


def _activity_delta(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    seq.owner_error(et, tag, seq.run.owners["activity"], event.get("messageId"), "activity")


# -- subagents ---------------------------------------------------------------------------

# The optional keys verify.ts refuses as null, per subagent event.
_SUBAGENT_OPTIONALS: Final = {
    "SUBAGENT_STARTED": (
        "description",
        "parentSubagentRunId",
        "parentToolCallId",
        "parentMessageId",
    ),
    "SUBAGENT_FINISHED": ("outcome",),
    "SUBAGENT_ERROR": ("code",),
}


def _subagent_nulls(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    for name in _SUBAGENT_OPTIONALS[et]:
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
                f"'{et}' with outcome type {label(otype)}: the outcome is "
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


def _subagent_started(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    run = seq.run
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
    parent = event.get("parentSubagentRunId", ABSENT)
    if (
        parent is not ABSENT
        and entity_key(parent) not in run.subagents
        and entity_key(parent) not in run.closed_subagents
    ):
        raise _SeqError(
            "subagent.parent",
            f"parentSubagentRunId '{label(parent)}' has not been started in this run",
        )
    run.subagents[sid] = sid


def _subagent_end(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    run = seq.run
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


# -- runs and snapshots ------------------------------------------------------------------


def _messages_snapshot(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    seq.seed(event.get("messages"), True)


def _run_started(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    seq.started = True
    inp = event.get("input")
    seq.seed(inp.get("messages") if isinstance(inp, dict) else None, False)


def _interrupt_nulls(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    outcome = event.get("outcome")
    if not isinstance(outcome, dict) or outcome.get("type") != "interrupt":
        return
    interrupts = outcome.get("interrupts")
    for interrupt in interrupts if isinstance(interrupts, list) else ():
        if (
            isinstance(interrupt, dict)
            and "subagentRunId" in interrupt
            and interrupt["subagentRunId"] is None
        ):
            raise _SeqError(
                "attr.null",
                "RUN_FINISHED with an interrupt (id "
                f"'{label(interrupt.get('id', ABSENT))}') carrying "
                "subagentRunId: null; leave it out",
            )


def _run_finished(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    left = seq.run.open_summary()
    seq.finished = True
    if left:
        raise _SeqError("run.finished-open", f"RUN_FINISHED while these are still open: {left}")


def _run_error(seq: Sequencer, event: dict[str, Any], et: Any, tag: Any) -> None:
    seq.errored = True


#: What each event type means for the run: its rules, in order (after the check
#: every event gets, ``subagentRunId`` not null). Types not named have no rules.
RULES: Final[Mapping[str, tuple[Rule, ...]]] = {
    "TEXT_MESSAGE_START": (_text_start,),
    "TEXT_MESSAGE_CONTENT": (_continues(_TEXT, closes=False),),
    "TEXT_MESSAGE_END": (_continues(_TEXT, closes=True),),
    "TOOL_CALL_START": (_tool_call_start,),
    "TOOL_CALL_ARGS": (_continues(_TOOL, closes=False),),
    "TOOL_CALL_END": (_continues(_TOOL, closes=True),),
    "TOOL_CALL_RESULT": (_tool_call_result,),
    "REASONING_START": (_reasoning_start(_SPAN),),
    "REASONING_MESSAGE_START": (_reasoning_start(_REASONING),),
    "REASONING_MESSAGE_CONTENT": (_continues(_REASONING, closes=False),),
    "REASONING_MESSAGE_END": (_continues(_REASONING, closes=True),),
    "REASONING_END": (_continues(_SPAN, closes=True),),
    "REASONING_ENCRYPTED_VALUE": (_encrypted_value,),
    "STEP_STARTED": (_step_started,),
    "STEP_FINISHED": (_step_finished,),
    "ACTIVITY_SNAPSHOT": (_activity_snapshot,),
    "ACTIVITY_DELTA": (_activity_delta,),
    "SUBAGENT_STARTED": (_subagent_nulls, _subagent_started),
    "SUBAGENT_FINISHED": (_subagent_nulls, _subagent_end),
    "SUBAGENT_ERROR": (_subagent_nulls, _subagent_end),
    "MESSAGES_SNAPSHOT": (_messages_snapshot,),
    "RUN_STARTED": (_run_started,),
    "RUN_FINISHED": (_interrupt_nulls, _run_finished),
    "RUN_ERROR": (_run_error,),
}
# With the check every event gets first (built once: feed runs per event).
_NO_RULES: Final = (_attr_null,)
_CHECKS: Final = {et: (_attr_null, *rules) for et, rules in RULES.items()}
