"""Every error and warning agui_wire raises, in one leaf module sectioned by who
raises them (the codec, JSON Patch, the HTTP client, run stores): it stands below
every layer, so each imports it and none reaches up for an error class, and one
base class pickles them all.

Contract: encoding never writes something the caller did not mean, and decoding
never hands back something the bytes did not say. When either cannot be done the
caller gets one of these, carrying where it happened: the event type and JSON path
on encode; the frame or event index and the byte offset on decode. docs/errors.md
says when each is raised and how to continue past it.
"""

from __future__ import annotations

import copy
import io
import os
from typing import Any

from ._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE

__all__ = [
    "AgentHTTPError",
    "AguiWireError",
    "CompressionUnavailable",
    "DecodeError",
    "EncodeError",
    "EventTooLarge",
    "ExtensionWarning",
    "FrameTooLarge",
    "HistoryTrimmed",
    "IncompleteRun",
    "JsonLineError",
    "LeaseLost",
    "LimitExceeded",
    "LossyNumberWarning",
    "MissingDependency",
    "NotAcceptable",
    "PatchError",
    "PointerError",
    "ResumePastEnd",
    "RunAbandoned",
    "RunInProgress",
    "RunLost",
    "RunNotFound",
    "RunReplaced",
    "SSEError",
    "SSELimitExceeded",
    "SchemaError",
    "SequenceError",
    "StoreCorrupted",
    "StoreDraining",
    "StoreError",
    "StoreFull",
    "StoreUnavailable",
    "StoreUnsupported",
    "StreamClosed",
    "TruncatedStream",
    "UnexpectedContentType",
    "UnknownEventError",
    "UnknownEventWarning",
    "UnknownGeneration",
    "UnknownPartWarning",
]


class AguiWireError(Exception):
    """Base class of every error raised by agui_wire."""

    # A process pool or a task queue pickles an error on its way back, and copy does
    # the same: by default that calls the class again with ``args``, which most of
    # these classes do not take (they build their message from keywords). So an error
    # comes back as raised instead: its ``args``, then its attributes.
    def __reduce__(self) -> tuple[Any, ...]:
        return (_restore, (type(self), self.args, self.__dict__))


def _restore(cls: type[AguiWireError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    err = cls.__new__(cls, *args)  # BaseException.__new__ sets ``args``; no __init__
    err.__dict__.update(state)
    return err


class EncodeError(AguiWireError, ValueError):
    """An event cannot be encoded as given.

    ``event_type`` is the event's ``type`` (``None`` when missing or not a string);
    ``path`` is a JSON pointer to the offending value inside the event (``""`` for
    the event itself); ``reason`` says what is wrong with it.
    """

    # The message is put together when it is shown, not when the error is raised (a
    # refusal is mostly the cost of raising this; see benchmarks/refusals.py). ``args`` is
    # ``(reason,)`` (as BaseException.__new__ sets it), so a pickled error comes back
    # whole: the class called with it, then the attributes.
    def __init__(self, reason: str, *, event_type: str | None = None, path: str = "") -> None:
        self.reason = reason
        self.event_type = event_type
        self.path = path

    def __str__(self) -> str:
        where = "event" if self.event_type is None else self.event_type
        return f"{where} at {self.path}: {self.reason}" if self.path else f"{where}: {self.reason}"

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.reason!r}, event_type={self.event_type!r}, "
            f"path={self.path!r})"
        )


class EventTooLarge(EncodeError):
    """An event a run store refuses to store: encoded, it is bigger than what its
    readers accept (``schema.DEFAULT_MAX_FRAME_SIZE`` as a binary frame's payload,
    ``schema.DEFAULT_MAX_EVENT_SIZE`` as an SSE event). ``index`` is its 1-based
    place in the run (the id it would have had), ``size`` its encoded bytes and
    ``limit`` the limit it is above. Nothing of it is stored; the run ends with
    ``RUN_ERROR`` after the events before it."""

    def __init__(
        self,
        reason: str,
        *,
        event_type: str | None = None,
        path: str = "",
        index: int = 0,
        size: int = 0,
        limit: int = 0,
    ) -> None:
        super().__init__(reason, event_type=event_type, path=path)
        self.index = index
        self.size = size
        self.limit = limit


class DecodeError(AguiWireError, ValueError):
    """Bytes that do not decode to an AG-UI event.

    ``index`` is the 0-based frame (protobuf) or event (SSE) index in the stream,
    ``offset`` the absolute byte offset in the stream where the problem was found,
    ``frame_offset`` the offset where that frame or event starts. Any of them is
    ``None`` when unknown (a single payload decoded on its own has no stream
    position beyond its own bytes). The events before ``index`` were good: the
    stream-level decoders hand them out before raising.
    """

    def __init__(
        self,
        reason: str,
        *,
        index: int | None = None,
        offset: int | None = None,
        frame_offset: int | None = None,
        event_type: str | None = None,
    ) -> None:
        self.reason = reason
        self.index = index
        self.offset = offset
        self.frame_offset = frame_offset
        self.event_type = event_type
        #: The events decoded before the error, when a whole-buffer decoder
        #: (``decode``, ``decode_proto``) raised it; empty otherwise.
        self.events: list[dict[str, object]] = []
        super().__init__(self._render())

    def _render(self) -> str:
        parts = []
        if self.index is not None:
            parts.append(f"{self._unit} {self.index}")
        if self.offset is not None:
            parts.append(f"byte {self.offset}")
        if self.event_type is not None:
            parts.append(self.event_type)
        head = ", ".join(parts)
        return f"{head}: {self.reason}" if head else self.reason

    _unit = "frame"

    def located(self, *, index: int, frame_offset: int, base: int) -> DecodeError:
        """This error placed in a stream: frame ``index`` starts at byte
        ``frame_offset`` and the bytes this error's ``offset`` counts from start at
        ``base``. Payload decoders report offsets relative to the payload; the
        stream decoders move them to stream offsets with this."""
        err = copy.copy(self)
        err.index = index
        err.frame_offset = frame_offset
        err.offset = base + (self.offset or 0)
        err.args = (err._render(),)
        return err

    def with_hint(self, hint: str) -> DecodeError:
        """This error with ``hint`` added to its reason (what the input looks like)."""
        err = copy.copy(self)
        err.reason = f"{self.reason}; {hint}"
        err.args = (err._render(),)
        return err


# What the decoders say when given a path or text where bytes go.
def not_bytes(value: object, what: str = "source") -> TypeError:
    """The ``TypeError`` for text (a path, a str, a text-mode file) where a decoder reads
    bytes, saying what to pass instead."""
    kind = type(value).__name__
    if isinstance(value, (str, os.PathLike)) and _looks_like_path(value):
        hint = (
            f"to decode the file {os.fspath(value)!r}, pass its bytes "
            f"(open({os.fspath(value)!r}, 'rb').read()) or the file opened with 'rb'"
        )
    elif isinstance(value, io.TextIOBase) or (hasattr(value, "read") and what == "source"):
        hint = "this file was opened in text mode: open it with 'rb' (binary)"
    else:
        hint = (
            "pass bytes (text.encode('utf-8')); a file opened in text mode yields str: "
            "open it with 'rb'"
        )
    wanted = "a bytes-like object" if what == "chunk" else "bytes, a binary file or chunks"
    return TypeError(f"{what} must be {wanted}, not {kind}: {hint}")


def _looks_like_path(value: str | os.PathLike[str]) -> bool:
    text = os.fspath(value)
    return not isinstance(value, str) or (
        0 < len(text) < 4096
        and "\n" not in text
        and not text.lstrip().startswith(("data:", "{", ":"))
    )


class TruncatedStream(DecodeError):
    """The stream ended inside a frame (or inside an SSE event that is cut short)."""


class FrameTooLarge(DecodeError):
    """A frame declares a length above the configured ``max_frame_size``."""


class LimitExceeded(DecodeError):
    """A configured resource limit: JSON nesting (``max_depth``), events per decoder
    (``max_events``), SSE event size (``max_event_size``). Only raised for input
    that would decode with a higher limit; input with another fault raises that.
    Except on SSE for ``max_event_size`` and orjson's 1023-level cap, which bound
    the work: decided on the bytes up to the limit, what follows is not read."""


class UnknownEventError(DecodeError):
    """A frame carries only event arms this protocol version does not know: an
    event from a later protocol. ``fields`` holds the unknown top-level fields as
    ``(field_number, payload_bytes)``. The stream decoders apply the caller's
    ``unknown_events`` policy to it (skip with a warning, raise, or a RAW event)."""

    def __init__(
        self,
        reason: str,
        *,
        fields: tuple[tuple[int, bytes], ...] = (),
        index: int | None = None,
        offset: int | None = None,
        frame_offset: int | None = None,
    ) -> None:
        super().__init__(reason, index=index, offset=offset, frame_offset=frame_offset)
        self.fields = fields


class SSEError(DecodeError):
    """An SSE event whose data is not a JSON object with a string ``type``."""

    _unit = "event"


class SSELimitExceeded(LimitExceeded):
    """``LimitExceeded`` in an SSE stream (its position is an event index)."""

    _unit = "event"


class JsonLineError(DecodeError):
    """A line of a JSON Lines input that is not a JSON object."""

    _unit = "event"


class StreamClosed(AguiWireError, RuntimeError):
    """``feed()`` after ``close()``: the stream has ended. A caller's mistake, not a
    property of the bytes (so not a ``DecodeError``); a ``RuntimeError`` as well."""


class NotAcceptable(AguiWireError):
    """Strict negotiation found no transport the ``Accept`` header allows (HTTP 406)."""

    def __init__(self, accept: str | None) -> None:
        self.accept = accept
        super().__init__(
            f"no acceptable AG-UI transport in Accept: {accept!r}; "
            f"offered {SSE_MEDIA_TYPE} and {PROTO_MEDIA_TYPE}"
        )


class MissingDependency(AguiWireError, ImportError):
    """A part of agui_wire needs a package that is not installed; the message names
    the extra that installs it (``pip install 'agui-wire[redis]'``)."""

    def __init__(self, feature: str, package: str, extra: str) -> None:
        self.feature = feature
        self.package = package
        self.extra = extra
        super().__init__(
            f"{feature} needs the {package!r} package, which is not installed: "
            f"pip install 'agui-wire[{extra}]'",
            name=package,
        )


class CompressionUnavailable(AguiWireError, ImportError):
    """A content coding (``br``, ``zstd``) was asked for by name but its library is
    not installed."""

    def __init__(self, coding: str, package: str) -> None:
        self.coding = coding
        self.package = package
        super().__init__(
            f"Content-Encoding {coding!r} needs the {package!r} package: "
            f"pip install 'agui-wire[{'brotli' if coding == 'br' else 'zstd'}]'"
        )


class SchemaError(AguiWireError, ImportError):
    """The generated schema (``proto/``, after ``proto/generate.py``) has a shape no
    codec has code for: ``import agui_wire.schema`` (so the first encode or decode)
    raises it rather than any codec writing or reading that field wrong.

    ``where`` is ``Message.field`` (proto names) or the table at fault; ``reason``
    says what it is and why it cannot be carried.
    """

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = reason
        super().__init__(f"agui_wire.schema: {where}: {reason}")


# -- JSON Patch (STATE_DELTA) and JSON Pointer (RFC 6902 / 6901)


class PointerError(AguiWireError, ValueError):
    """A string that is not a JSON pointer (RFC 6901 §3)."""


class PatchError(AguiWireError, ValueError):
    """A JSON Patch that does not apply. ``index`` is the failing operation's
    position in the patch (``None`` when the patch itself is malformed)."""

    def __init__(self, reason: str, index: int | None = None, op: Any = None) -> None:
        self.reason = reason
        self.index = index
        self.op = op
        where = "" if index is None else f"operation {index}"
        if isinstance(op, dict) and isinstance(op.get("op"), str):
            where += f" ({op['op']} {op.get('path')!r})"
        super().__init__(f"{where}: {reason}" if where else reason)


# -- the HTTP client (agui_wire.client)


class AgentHTTPError(AguiWireError):
    """The agent endpoint answered with a non-2xx status."""

    def __init__(self, url: str, status_code: int, body: bytes) -> None:
        self.url = url
        self.status_code = status_code
        #: The start of the response body (at most ``BODY_EXCERPT`` bytes).
        self.body = body
        text = body.decode("utf-8", "replace").strip()
        super().__init__(f"POST {url}: HTTP {status_code}" + (f": {text}" if text else ""))


class UnexpectedContentType(AguiWireError):
    """The response is not an AG-UI event stream."""

    def __init__(self, url: str, content_type: str | None) -> None:
        self.url = url
        self.content_type = content_type
        super().__init__(
            f"POST {url}: the response is not an AG-UI event stream: content-type "
            f"{content_type!r} (expected {SSE_MEDIA_TYPE} or {PROTO_MEDIA_TYPE})"
        )


class IncompleteRun(AguiWireError):
    """The stream ended (or broke) before the run ended with RUN_FINISHED or RUN_ERROR."""

    def __init__(self, reason: str, *, events_read: int, last_event_id: str) -> None:
        self.reason = reason
        #: Events yielded before the stream ended.
        self.events_read = events_read
        #: The last SSE ``id:`` received ("" if none), for ``last_event_id=``.
        self.last_event_id = last_event_id
        super().__init__(f"incomplete run: {reason} (after {events_read} events)")


class SequenceError(AguiWireError):
    """The events do not form a run (``check_sequence``)."""

    def __init__(self, reason: str, *, index: int, event_type: Any) -> None:
        self.reason = reason
        self.index = index
        self.event_type = event_type
        super().__init__(f"event {index} ({event_type}): {reason}")


# -- run stores (agui_wire.redis): the store's contract, not Redis's, so here: a caller
# catches them without importing redis-py, and every backend of the store raises these


class StoreError(AguiWireError):
    """A run store (``agui_wire.redis.RunStore``) cannot do what was asked.
    ``run_id`` names the run. docs/scaling.md says what subscribers see for each."""

    def __init__(self, run_id: str, reason: str) -> None:
        self.run_id = run_id
        self.reason = reason
        super().__init__(f"run {run_id!r}: {reason}")


class StoreUnavailable(StoreError):
    """Redis could not be reached (or kept failing, or stayed silent) for longer than
    the store waits: ``reconnect`` seconds to claim or find a run, ``lease + 1`` s
    once it is live (as long as its lease may be valid). Nothing was lost: what was
    acknowledged is stored, and a retry (the producer's ``publish``, the
    subscriber's resume) continues from it."""


class StoreDraining(StoreUnavailable):
    """This store is draining (``RunStore.drain``: its process is shutting down):
    ``publish``/``start`` of a new run are refused, a run it was still producing at
    the end of the drain's grace was handed over (its lease released, the run not
    ended: a producer elsewhere continues it with ``replay=True``), and its
    readers were ended so they resume elsewhere. A ``StoreUnavailable``: what
    retries elsewhere (a job queue, HTTP 503 with ``Retry-After``) handles both."""


class StoreUnsupported(StoreError):
    """The Redis behind the store cannot run the store's scripts: it is older than 7.0
    (the script that ends a failed run carries flags, ``#!lua flags=allow-oom``, new
    in 7.0). ``publish`` and ``start`` raise it before anything of the run is
    stored, not when a producer first fails; ``reason`` quotes Redis's refusal."""


class RunNotFound(StoreError):
    """The store holds no such run: never started, or expired after its ``ttl``."""


class RunLost(StoreError):
    """Events the store had acknowledged are gone: Redis restarted without
    persistence, a failover promoted a replica that lacked them (``replica_acks``
    prevents it), or the run's key was deleted. The run cannot continue; its
    subscribers get a ``RUN_ERROR`` (code ``RUN_LOST``)."""


class RunReplaced(RunLost):
    """The run a reader (or a resume position) belongs to is gone and the run id
    names a newer run now: another *generation* (Redis lost the run and it was
    produced again). Its events are never read as a continuation; HTTP readers get
    a ``RUN_ERROR`` (code ``RUN_REPLACED``)."""


class RunAbandoned(StoreError):
    """``publish``/``start`` found the run's producer gone without ending it (its
    lease expired and nobody noticed yet): the run was ended for it (``RUN_ERROR``,
    code ``LEASE_EXPIRED``) and is not produced again. A producer that replays the
    run deterministically (a retried job) passes ``replay=True`` to continue it."""


class StoreFull(StoreError):
    """Redis refused a write for lack of memory (``maxmemory`` with the
    ``noeviction`` policy). The run was ended as failed where Redis allowed it
    (``RUN_ERROR``, code ``STORE_FULL``)."""


class StoreCorrupted(StoreError):
    """A run's key holds what the store never writes: the wrong type, an entry
    with missing or unknown fields, a payload that does not decode, an entry id out
    of place. ``key`` and ``entry_id`` (``None`` for the key as a whole) name it."""

    def __init__(self, run_id: str, key: str, entry_id: str | None, reason: str) -> None:
        self.key = key
        self.entry_id = entry_id
        where = f"key {key!r}" if entry_id is None else f"key {key!r}, entry {entry_id}"
        super().__init__(run_id, f"{where}: {reason}")


class ResumePastEnd(StoreError, ValueError):
    """A resume position after the last event the run has stored (HTTP: 400): a
    run that has ended never had that event; a live run has not stored it (the
    position is not one this run gave, or the store lost events it had
    acknowledged). ``after`` is the position, ``last`` the run's last stored
    event, ``live`` whether the run goes on."""

    def __init__(self, run_id: str, after: int, last: int, *, live: bool = False) -> None:
        self.after = after
        self.last = last
        self.live = live
        if live:
            reason = (
                f"resuming after event {after}, but the run is live with {last} events "
                f"stored so far: event {after} is not one it gave (or the store lost "
                "events it had acknowledged)"
            )
        else:
            reason = f"resuming after event {after}, but the run ended after event {last}"
        super().__init__(run_id, reason)


class UnknownGeneration(StoreError, ValueError):
    """A resume position (``n-<generation>``) naming a generation the run never had:
    made up, or an id of another run (HTTP: 400). ``generation`` is the one named,
    ``stored`` the run's."""

    def __init__(self, run_id: str, position: str, generation: int, stored: int) -> None:
        self.position = position
        self.generation = generation
        self.stored = stored
        super().__init__(
            run_id,
            f"the position {position} names generation {generation}, which is not a "
            f"generation of this run (its events carry generation {stored})",
        )


class RunInProgress(StoreError):
    """Another producer holds the run's lease (it is alive and heartbeating)."""


class LeaseLost(StoreError):
    """This producer no longer holds the run: its lease expired (it stalled longer
    than ``lease``, or Redis was unreachable that long) and the run was ended with
    ``RUN_ERROR`` (code ``LEASE_EXPIRED``), or another producer took it over."""


class HistoryTrimmed(StoreError):
    """The events a subscriber asked for were trimmed (``maxlen``): resuming after
    ``after`` would leave a gap. ``first`` is the oldest event still stored."""

    def __init__(self, run_id: str, after: int, first: int) -> None:
        self.after = after
        self.first = first
        super().__init__(
            run_id,
            f"events {after + 1}..{first - 1} were trimmed (maxlen); the oldest stored is {first}",
        )


# -- warnings


class UnknownEventWarning(UserWarning):
    """A frame carried an event arm from a later protocol and was skipped."""


class UnknownPartWarning(UserWarning):
    """A content part (or its source) of a kind this protocol version does not know
    was dropped from its message, as the reference decoder does."""


class LossyNumberWarning(UserWarning):
    """An integer beyond 2**53 was rounded to the nearest double on the protobuf
    transport (``agui_wire.compat``, once per process; the strict API refuses)."""


class ExtensionWarning(RuntimeWarning):
    """The compiled extension (``agui_wire._fast``) is there but cannot be loaded:
    agui_wire runs on its pure-Python twins (same API, many times slower). The
    message names the cause; ``AGUI_WIRE_PURE=1`` chooses the twins quietly."""
