from google.protobuf import struct_pb2 as _struct_pb2
from . import patch_pb2 as _patch_pb2
from . import types_pb2 as _types_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class EventType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    TEXT_MESSAGE_START: _ClassVar[EventType]
    TEXT_MESSAGE_CONTENT: _ClassVar[EventType]
    TEXT_MESSAGE_END: _ClassVar[EventType]
    TOOL_CALL_START: _ClassVar[EventType]
    TOOL_CALL_ARGS: _ClassVar[EventType]
    TOOL_CALL_END: _ClassVar[EventType]
    STATE_SNAPSHOT: _ClassVar[EventType]
    STATE_DELTA: _ClassVar[EventType]
    MESSAGES_SNAPSHOT: _ClassVar[EventType]
    RAW: _ClassVar[EventType]
    CUSTOM: _ClassVar[EventType]
    RUN_STARTED: _ClassVar[EventType]
    RUN_FINISHED: _ClassVar[EventType]
    RUN_ERROR: _ClassVar[EventType]
    STEP_STARTED: _ClassVar[EventType]
    STEP_FINISHED: _ClassVar[EventType]
    SUBAGENT_STARTED: _ClassVar[EventType]
    SUBAGENT_FINISHED: _ClassVar[EventType]
    SUBAGENT_ERROR: _ClassVar[EventType]
    TEXT_MESSAGE_CHUNK: _ClassVar[EventType]
    TOOL_CALL_CHUNK: _ClassVar[EventType]
    TOOL_CALL_RESULT: _ClassVar[EventType]
    ACTIVITY_SNAPSHOT: _ClassVar[EventType]
    ACTIVITY_DELTA: _ClassVar[EventType]
    REASONING_START: _ClassVar[EventType]
    REASONING_MESSAGE_START: _ClassVar[EventType]
    REASONING_MESSAGE_CONTENT: _ClassVar[EventType]
    REASONING_MESSAGE_END: _ClassVar[EventType]
    REASONING_MESSAGE_CHUNK: _ClassVar[EventType]
    REASONING_END: _ClassVar[EventType]
    REASONING_ENCRYPTED_VALUE: _ClassVar[EventType]
TEXT_MESSAGE_START: EventType
TEXT_MESSAGE_CONTENT: EventType
TEXT_MESSAGE_END: EventType
TOOL_CALL_START: EventType
TOOL_CALL_ARGS: EventType
TOOL_CALL_END: EventType
STATE_SNAPSHOT: EventType
STATE_DELTA: EventType
MESSAGES_SNAPSHOT: EventType
RAW: EventType
CUSTOM: EventType
RUN_STARTED: EventType
RUN_FINISHED: EventType
RUN_ERROR: EventType
STEP_STARTED: EventType
STEP_FINISHED: EventType
SUBAGENT_STARTED: EventType
SUBAGENT_FINISHED: EventType
SUBAGENT_ERROR: EventType
TEXT_MESSAGE_CHUNK: EventType
TOOL_CALL_CHUNK: EventType
TOOL_CALL_RESULT: EventType
ACTIVITY_SNAPSHOT: EventType
ACTIVITY_DELTA: EventType
REASONING_START: EventType
REASONING_MESSAGE_START: EventType
REASONING_MESSAGE_CONTENT: EventType
REASONING_MESSAGE_END: EventType
REASONING_MESSAGE_CHUNK: EventType
REASONING_END: EventType
REASONING_ENCRYPTED_VALUE: EventType

class BaseEvent(_message.Message):
    __slots__ = ("type", "timestamp", "raw_event", "metadata")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TIMESTAMP_FIELD_NUMBER: _ClassVar[int]
    RAW_EVENT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    type: EventType
    timestamp: int
    raw_event: _struct_pb2.Value
    metadata: _struct_pb2.Struct
    def __init__(self, type: _Optional[_Union[EventType, str]] = ..., timestamp: _Optional[int] = ..., raw_event: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class TextMessageStartEvent(_message.Message):
    __slots__ = ("base_event", "message_id", "role", "name", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    message_id: str
    role: str
    name: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., message_id: _Optional[str] = ..., role: _Optional[str] = ..., name: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class TextMessageContentEvent(_message.Message):
    __slots__ = ("base_event", "message_id", "delta", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    message_id: str
    delta: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., message_id: _Optional[str] = ..., delta: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class TextMessageEndEvent(_message.Message):
    __slots__ = ("base_event", "message_id", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    message_id: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., message_id: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class TextMessageChunkEvent(_message.Message):
    __slots__ = ("base_event", "message_id", "role", "delta", "name", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    message_id: str
    role: str
    delta: str
    name: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., message_id: _Optional[str] = ..., role: _Optional[str] = ..., delta: _Optional[str] = ..., name: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class ToolCallStartEvent(_message.Message):
    __slots__ = ("base_event", "tool_call_id", "tool_call_name", "parent_message_id", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_NAME_FIELD_NUMBER: _ClassVar[int]
    PARENT_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., tool_call_id: _Optional[str] = ..., tool_call_name: _Optional[str] = ..., parent_message_id: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class ToolCallArgsEvent(_message.Message):
    __slots__ = ("base_event", "tool_call_id", "delta", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    tool_call_id: str
    delta: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., tool_call_id: _Optional[str] = ..., delta: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class ToolCallEndEvent(_message.Message):
    __slots__ = ("base_event", "tool_call_id", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    tool_call_id: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., tool_call_id: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class ToolCallChunkEvent(_message.Message):
    __slots__ = ("base_event", "tool_call_id", "tool_call_name", "parent_message_id", "delta", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_NAME_FIELD_NUMBER: _ClassVar[int]
    PARENT_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    tool_call_id: str
    tool_call_name: str
    parent_message_id: str
    delta: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., tool_call_id: _Optional[str] = ..., tool_call_name: _Optional[str] = ..., parent_message_id: _Optional[str] = ..., delta: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class ToolCallResultEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message_id", "tool_call_id", "content", "role", "content_parts")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_PARTS_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message_id: str
    tool_call_id: str
    content: str
    role: str
    content_parts: _containers.RepeatedCompositeFieldContainer[_types_pb2.InputContent]
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message_id: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., content: _Optional[str] = ..., role: _Optional[str] = ..., content_parts: _Optional[_Iterable[_Union[_types_pb2.InputContent, _Mapping]]] = ...) -> None: ...

class StateSnapshotEvent(_message.Message):
    __slots__ = ("base_event", "snapshot", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    snapshot: _struct_pb2.Value
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., snapshot: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class StateDeltaEvent(_message.Message):
    __slots__ = ("base_event", "delta", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    delta: _containers.RepeatedCompositeFieldContainer[_patch_pb2.JsonPatchOperation]
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., delta: _Optional[_Iterable[_Union[_patch_pb2.JsonPatchOperation, _Mapping]]] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class MessagesSnapshotEvent(_message.Message):
    __slots__ = ("base_event", "messages")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    messages: _containers.RepeatedCompositeFieldContainer[_types_pb2.Message]
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[_types_pb2.Message, _Mapping]]] = ...) -> None: ...

class ActivitySnapshotEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message_id", "activity_type", "content", "replace")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message_id: str
    activity_type: str
    content: _struct_pb2.Struct
    replace: bool
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., content: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., replace: _Optional[bool] = ...) -> None: ...

class ActivityDeltaEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message_id", "activity_type", "patch")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    PATCH_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message_id: str
    activity_type: str
    patch: _containers.RepeatedCompositeFieldContainer[_patch_pb2.JsonPatchOperation]
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message_id: _Optional[str] = ..., activity_type: _Optional[str] = ..., patch: _Optional[_Iterable[_Union[_patch_pb2.JsonPatchOperation, _Mapping]]] = ...) -> None: ...

class RawEvent(_message.Message):
    __slots__ = ("base_event", "event", "source", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    EVENT_FIELD_NUMBER: _ClassVar[int]
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    event: _struct_pb2.Value
    source: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., event: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., source: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class CustomEvent(_message.Message):
    __slots__ = ("base_event", "name", "value", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    name: str
    value: _struct_pb2.Value
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., name: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class RunStartedEvent(_message.Message):
    __slots__ = ("base_event", "thread_id", "run_id", "parent_run_id", "input", "protocol_version")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    thread_id: str
    run_id: str
    parent_run_id: str
    input: _types_pb2.RunAgentInput
    protocol_version: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., thread_id: _Optional[str] = ..., run_id: _Optional[str] = ..., parent_run_id: _Optional[str] = ..., input: _Optional[_Union[_types_pb2.RunAgentInput, _Mapping]] = ..., protocol_version: _Optional[str] = ...) -> None: ...

class RunFinishedEvent(_message.Message):
    __slots__ = ("base_event", "thread_id", "run_id", "result", "outcome", "interrupts", "usage", "pending_tool_call_ids")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    INTERRUPTS_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    PENDING_TOOL_CALL_IDS_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    thread_id: str
    run_id: str
    result: _struct_pb2.Value
    outcome: str
    interrupts: _containers.RepeatedCompositeFieldContainer[_types_pb2.Interrupt]
    usage: _containers.RepeatedCompositeFieldContainer[Usage]
    pending_tool_call_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., thread_id: _Optional[str] = ..., run_id: _Optional[str] = ..., result: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., outcome: _Optional[str] = ..., interrupts: _Optional[_Iterable[_Union[_types_pb2.Interrupt, _Mapping]]] = ..., usage: _Optional[_Iterable[_Union[Usage, _Mapping]]] = ..., pending_tool_call_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class RunErrorEvent(_message.Message):
    __slots__ = ("base_event", "code", "message", "usage")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    code: str
    message: str
    usage: _containers.RepeatedCompositeFieldContainer[Usage]
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., code: _Optional[str] = ..., message: _Optional[str] = ..., usage: _Optional[_Iterable[_Union[Usage, _Mapping]]] = ...) -> None: ...

class StepStartedEvent(_message.Message):
    __slots__ = ("base_event", "step_name", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    STEP_NAME_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    step_name: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., step_name: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class StepFinishedEvent(_message.Message):
    __slots__ = ("base_event", "step_name", "subagent_run_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    STEP_NAME_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    step_name: str
    subagent_run_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., step_name: _Optional[str] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...

class ReasoningStartEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message_id: _Optional[str] = ...) -> None: ...

class ReasoningMessageStartEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message_id", "role")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message_id: str
    role: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message_id: _Optional[str] = ..., role: _Optional[str] = ...) -> None: ...

class ReasoningMessageContentEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message_id", "delta")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message_id: str
    delta: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message_id: _Optional[str] = ..., delta: _Optional[str] = ...) -> None: ...

class ReasoningMessageEndEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message_id: _Optional[str] = ...) -> None: ...

class ReasoningMessageChunkEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message_id", "delta")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message_id: str
    delta: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message_id: _Optional[str] = ..., delta: _Optional[str] = ...) -> None: ...

class ReasoningEndEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message_id: _Optional[str] = ...) -> None: ...

class ReasoningEncryptedValueEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "subtype", "entity_id", "encrypted_value")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    SUBTYPE_FIELD_NUMBER: _ClassVar[int]
    ENTITY_ID_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_VALUE_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    subtype: str
    entity_id: str
    encrypted_value: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., subtype: _Optional[str] = ..., entity_id: _Optional[str] = ..., encrypted_value: _Optional[str] = ...) -> None: ...

class SubagentStartedEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "name", "description", "parent_subagent_run_id", "parent_tool_call_id", "parent_message_id")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARENT_SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_MESSAGE_ID_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    name: str
    description: str
    parent_subagent_run_id: str
    parent_tool_call_id: str
    parent_message_id: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., name: _Optional[str] = ..., description: _Optional[str] = ..., parent_subagent_run_id: _Optional[str] = ..., parent_tool_call_id: _Optional[str] = ..., parent_message_id: _Optional[str] = ...) -> None: ...

class SubagentFinishedEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "result", "outcome", "interrupt_ids")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    RESULT_FIELD_NUMBER: _ClassVar[int]
    OUTCOME_FIELD_NUMBER: _ClassVar[int]
    INTERRUPT_IDS_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    result: _struct_pb2.Value
    outcome: str
    interrupt_ids: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., result: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., outcome: _Optional[str] = ..., interrupt_ids: _Optional[_Iterable[str]] = ...) -> None: ...

class SubagentErrorEvent(_message.Message):
    __slots__ = ("base_event", "subagent_run_id", "message", "code")
    BASE_EVENT_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    base_event: BaseEvent
    subagent_run_id: str
    message: str
    code: str
    def __init__(self, base_event: _Optional[_Union[BaseEvent, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., message: _Optional[str] = ..., code: _Optional[str] = ...) -> None: ...

class Event(_message.Message):
    __slots__ = ("text_message_start", "text_message_content", "text_message_end", "tool_call_start", "tool_call_args", "tool_call_end", "state_snapshot", "state_delta", "messages_snapshot", "raw", "custom", "run_started", "run_finished", "run_error", "step_started", "step_finished", "text_message_chunk", "tool_call_chunk", "subagent_started", "subagent_finished", "subagent_error", "tool_call_result", "activity_snapshot", "activity_delta", "reasoning_start", "reasoning_message_start", "reasoning_message_content", "reasoning_message_end", "reasoning_message_chunk", "reasoning_end", "reasoning_encrypted_value")
    TEXT_MESSAGE_START_FIELD_NUMBER: _ClassVar[int]
    TEXT_MESSAGE_CONTENT_FIELD_NUMBER: _ClassVar[int]
    TEXT_MESSAGE_END_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_START_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ARGS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_END_FIELD_NUMBER: _ClassVar[int]
    STATE_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    STATE_DELTA_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    RAW_FIELD_NUMBER: _ClassVar[int]
    CUSTOM_FIELD_NUMBER: _ClassVar[int]
    RUN_STARTED_FIELD_NUMBER: _ClassVar[int]
    RUN_FINISHED_FIELD_NUMBER: _ClassVar[int]
    RUN_ERROR_FIELD_NUMBER: _ClassVar[int]
    STEP_STARTED_FIELD_NUMBER: _ClassVar[int]
    STEP_FINISHED_FIELD_NUMBER: _ClassVar[int]
    TEXT_MESSAGE_CHUNK_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_CHUNK_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_STARTED_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_FINISHED_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_ERROR_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_RESULT_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_DELTA_FIELD_NUMBER: _ClassVar[int]
    REASONING_START_FIELD_NUMBER: _ClassVar[int]
    REASONING_MESSAGE_START_FIELD_NUMBER: _ClassVar[int]
    REASONING_MESSAGE_CONTENT_FIELD_NUMBER: _ClassVar[int]
    REASONING_MESSAGE_END_FIELD_NUMBER: _ClassVar[int]
    REASONING_MESSAGE_CHUNK_FIELD_NUMBER: _ClassVar[int]
    REASONING_END_FIELD_NUMBER: _ClassVar[int]
    REASONING_ENCRYPTED_VALUE_FIELD_NUMBER: _ClassVar[int]
    text_message_start: TextMessageStartEvent
    text_message_content: TextMessageContentEvent
    text_message_end: TextMessageEndEvent
    tool_call_start: ToolCallStartEvent
    tool_call_args: ToolCallArgsEvent
    tool_call_end: ToolCallEndEvent
    state_snapshot: StateSnapshotEvent
    state_delta: StateDeltaEvent
    messages_snapshot: MessagesSnapshotEvent
    raw: RawEvent
    custom: CustomEvent
    run_started: RunStartedEvent
    run_finished: RunFinishedEvent
    run_error: RunErrorEvent
    step_started: StepStartedEvent
    step_finished: StepFinishedEvent
    text_message_chunk: TextMessageChunkEvent
    tool_call_chunk: ToolCallChunkEvent
    subagent_started: SubagentStartedEvent
    subagent_finished: SubagentFinishedEvent
    subagent_error: SubagentErrorEvent
    tool_call_result: ToolCallResultEvent
    activity_snapshot: ActivitySnapshotEvent
    activity_delta: ActivityDeltaEvent
    reasoning_start: ReasoningStartEvent
    reasoning_message_start: ReasoningMessageStartEvent
    reasoning_message_content: ReasoningMessageContentEvent
    reasoning_message_end: ReasoningMessageEndEvent
    reasoning_message_chunk: ReasoningMessageChunkEvent
    reasoning_end: ReasoningEndEvent
    reasoning_encrypted_value: ReasoningEncryptedValueEvent
    def __init__(self, text_message_start: _Optional[_Union[TextMessageStartEvent, _Mapping]] = ..., text_message_content: _Optional[_Union[TextMessageContentEvent, _Mapping]] = ..., text_message_end: _Optional[_Union[TextMessageEndEvent, _Mapping]] = ..., tool_call_start: _Optional[_Union[ToolCallStartEvent, _Mapping]] = ..., tool_call_args: _Optional[_Union[ToolCallArgsEvent, _Mapping]] = ..., tool_call_end: _Optional[_Union[ToolCallEndEvent, _Mapping]] = ..., state_snapshot: _Optional[_Union[StateSnapshotEvent, _Mapping]] = ..., state_delta: _Optional[_Union[StateDeltaEvent, _Mapping]] = ..., messages_snapshot: _Optional[_Union[MessagesSnapshotEvent, _Mapping]] = ..., raw: _Optional[_Union[RawEvent, _Mapping]] = ..., custom: _Optional[_Union[CustomEvent, _Mapping]] = ..., run_started: _Optional[_Union[RunStartedEvent, _Mapping]] = ..., run_finished: _Optional[_Union[RunFinishedEvent, _Mapping]] = ..., run_error: _Optional[_Union[RunErrorEvent, _Mapping]] = ..., step_started: _Optional[_Union[StepStartedEvent, _Mapping]] = ..., step_finished: _Optional[_Union[StepFinishedEvent, _Mapping]] = ..., text_message_chunk: _Optional[_Union[TextMessageChunkEvent, _Mapping]] = ..., tool_call_chunk: _Optional[_Union[ToolCallChunkEvent, _Mapping]] = ..., subagent_started: _Optional[_Union[SubagentStartedEvent, _Mapping]] = ..., subagent_finished: _Optional[_Union[SubagentFinishedEvent, _Mapping]] = ..., subagent_error: _Optional[_Union[SubagentErrorEvent, _Mapping]] = ..., tool_call_result: _Optional[_Union[ToolCallResultEvent, _Mapping]] = ..., activity_snapshot: _Optional[_Union[ActivitySnapshotEvent, _Mapping]] = ..., activity_delta: _Optional[_Union[ActivityDeltaEvent, _Mapping]] = ..., reasoning_start: _Optional[_Union[ReasoningStartEvent, _Mapping]] = ..., reasoning_message_start: _Optional[_Union[ReasoningMessageStartEvent, _Mapping]] = ..., reasoning_message_content: _Optional[_Union[ReasoningMessageContentEvent, _Mapping]] = ..., reasoning_message_end: _Optional[_Union[ReasoningMessageEndEvent, _Mapping]] = ..., reasoning_message_chunk: _Optional[_Union[ReasoningMessageChunkEvent, _Mapping]] = ..., reasoning_end: _Optional[_Union[ReasoningEndEvent, _Mapping]] = ..., reasoning_encrypted_value: _Optional[_Union[ReasoningEncryptedValueEvent, _Mapping]] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("provider", "model", "input_tokens", "output_tokens", "total_tokens", "reasoning_tokens", "cached_input_tokens", "cache_write_input_tokens")
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    REASONING_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHED_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    CACHE_WRITE_INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    provider: str
    model: str
    input_tokens: int
    output_tokens: int
    total_tokens: int
    reasoning_tokens: int
    cached_input_tokens: int
    cache_write_input_tokens: int
    def __init__(self, provider: _Optional[str] = ..., model: _Optional[str] = ..., input_tokens: _Optional[int] = ..., output_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ..., reasoning_tokens: _Optional[int] = ..., cached_input_tokens: _Optional[int] = ..., cache_write_input_tokens: _Optional[int] = ...) -> None: ...
