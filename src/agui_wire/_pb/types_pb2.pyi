from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class TextInputPart(_message.Message):
    __slots__ = ("text", "id", "metadata")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    text: str
    id: str
    metadata: _struct_pb2.Value
    def __init__(self, text: _Optional[str] = ..., id: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ...) -> None: ...

class ImageInputPart(_message.Message):
    __slots__ = ("source", "metadata", "id")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    source: InputContentSource
    metadata: _struct_pb2.Value
    id: str
    def __init__(self, source: _Optional[_Union[InputContentSource, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., id: _Optional[str] = ...) -> None: ...

class InputContentDataSource(_message.Message):
    __slots__ = ("value", "mime_type")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    value: str
    mime_type: str
    def __init__(self, value: _Optional[str] = ..., mime_type: _Optional[str] = ...) -> None: ...

class InputContentUrlSource(_message.Message):
    __slots__ = ("value", "mime_type")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    value: str
    mime_type: str
    def __init__(self, value: _Optional[str] = ..., mime_type: _Optional[str] = ...) -> None: ...

class InputContentFileSource(_message.Message):
    __slots__ = ("value", "provider", "mime_type")
    VALUE_FIELD_NUMBER: _ClassVar[int]
    PROVIDER_FIELD_NUMBER: _ClassVar[int]
    MIME_TYPE_FIELD_NUMBER: _ClassVar[int]
    value: str
    provider: str
    mime_type: str
    def __init__(self, value: _Optional[str] = ..., provider: _Optional[str] = ..., mime_type: _Optional[str] = ...) -> None: ...

class InputContentSource(_message.Message):
    __slots__ = ("data", "url", "file")
    DATA_FIELD_NUMBER: _ClassVar[int]
    URL_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    data: InputContentDataSource
    url: InputContentUrlSource
    file: InputContentFileSource
    def __init__(self, data: _Optional[_Union[InputContentDataSource, _Mapping]] = ..., url: _Optional[_Union[InputContentUrlSource, _Mapping]] = ..., file: _Optional[_Union[InputContentFileSource, _Mapping]] = ...) -> None: ...

class AudioInputPart(_message.Message):
    __slots__ = ("source", "metadata", "id")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    source: InputContentSource
    metadata: _struct_pb2.Value
    id: str
    def __init__(self, source: _Optional[_Union[InputContentSource, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., id: _Optional[str] = ...) -> None: ...

class VideoInputPart(_message.Message):
    __slots__ = ("source", "metadata", "id")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    source: InputContentSource
    metadata: _struct_pb2.Value
    id: str
    def __init__(self, source: _Optional[_Union[InputContentSource, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., id: _Optional[str] = ...) -> None: ...

class DocumentInputPart(_message.Message):
    __slots__ = ("source", "metadata", "id")
    SOURCE_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    source: InputContentSource
    metadata: _struct_pb2.Value
    id: str
    def __init__(self, source: _Optional[_Union[InputContentSource, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., id: _Optional[str] = ...) -> None: ...

class InputContent(_message.Message):
    __slots__ = ("text", "image", "audio", "video", "document")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    VIDEO_FIELD_NUMBER: _ClassVar[int]
    DOCUMENT_FIELD_NUMBER: _ClassVar[int]
    text: TextInputPart
    image: ImageInputPart
    audio: AudioInputPart
    video: VideoInputPart
    document: DocumentInputPart
    def __init__(self, text: _Optional[_Union[TextInputPart, _Mapping]] = ..., image: _Optional[_Union[ImageInputPart, _Mapping]] = ..., audio: _Optional[_Union[AudioInputPart, _Mapping]] = ..., video: _Optional[_Union[VideoInputPart, _Mapping]] = ..., document: _Optional[_Union[DocumentInputPart, _Mapping]] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("id", "type", "function", "metadata", "encrypted_value")
    class Function(_message.Message):
        __slots__ = ("name", "arguments")
        NAME_FIELD_NUMBER: _ClassVar[int]
        ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
        name: str
        arguments: str
        def __init__(self, name: _Optional[str] = ..., arguments: _Optional[str] = ...) -> None: ...
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_VALUE_FIELD_NUMBER: _ClassVar[int]
    id: str
    type: str
    function: ToolCall.Function
    metadata: _struct_pb2.Struct
    encrypted_value: str
    def __init__(self, id: _Optional[str] = ..., type: _Optional[str] = ..., function: _Optional[_Union[ToolCall.Function, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., encrypted_value: _Optional[str] = ...) -> None: ...

class Message(_message.Message):
    __slots__ = ("id", "role", "content", "name", "tool_calls", "tool_call_id", "error", "content_parts", "metadata", "subagent_run_id", "encrypted_value", "activity_type", "activity_content")
    ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    CONTENT_PARTS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    ENCRYPTED_VALUE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_TYPE_FIELD_NUMBER: _ClassVar[int]
    ACTIVITY_CONTENT_FIELD_NUMBER: _ClassVar[int]
    id: str
    role: str
    content: str
    name: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    tool_call_id: str
    error: str
    content_parts: _containers.RepeatedCompositeFieldContainer[InputContent]
    metadata: _struct_pb2.Struct
    subagent_run_id: str
    encrypted_value: str
    activity_type: str
    activity_content: _struct_pb2.Struct
    def __init__(self, id: _Optional[str] = ..., role: _Optional[str] = ..., content: _Optional[str] = ..., name: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., tool_call_id: _Optional[str] = ..., error: _Optional[str] = ..., content_parts: _Optional[_Iterable[_Union[InputContent, _Mapping]]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ..., subagent_run_id: _Optional[str] = ..., encrypted_value: _Optional[str] = ..., activity_type: _Optional[str] = ..., activity_content: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Tool(_message.Message):
    __slots__ = ("name", "description", "parameters", "metadata")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters: _struct_pb2.Value
    metadata: _struct_pb2.Struct
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class Context(_message.Message):
    __slots__ = ("description", "value")
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    description: str
    value: str
    def __init__(self, description: _Optional[str] = ..., value: _Optional[str] = ...) -> None: ...

class ResumeEntry(_message.Message):
    __slots__ = ("interrupt_id", "status", "payload", "metadata")
    INTERRUPT_ID_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    PAYLOAD_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    interrupt_id: str
    status: str
    payload: _struct_pb2.Value
    metadata: _struct_pb2.Struct
    def __init__(self, interrupt_id: _Optional[str] = ..., status: _Optional[str] = ..., payload: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., metadata: _Optional[_Union[_struct_pb2.Struct, _Mapping]] = ...) -> None: ...

class RunAgentInput(_message.Message):
    __slots__ = ("thread_id", "run_id", "parent_run_id", "state", "messages", "tools", "context", "forwarded_props", "resume", "protocol_version")
    THREAD_ID_FIELD_NUMBER: _ClassVar[int]
    RUN_ID_FIELD_NUMBER: _ClassVar[int]
    PARENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    CONTEXT_FIELD_NUMBER: _ClassVar[int]
    FORWARDED_PROPS_FIELD_NUMBER: _ClassVar[int]
    RESUME_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    thread_id: str
    run_id: str
    parent_run_id: str
    state: _struct_pb2.Value
    messages: _containers.RepeatedCompositeFieldContainer[Message]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    context: _containers.RepeatedCompositeFieldContainer[Context]
    forwarded_props: _struct_pb2.Value
    resume: _containers.RepeatedCompositeFieldContainer[ResumeEntry]
    protocol_version: str
    def __init__(self, thread_id: _Optional[str] = ..., run_id: _Optional[str] = ..., parent_run_id: _Optional[str] = ..., state: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., messages: _Optional[_Iterable[_Union[Message, _Mapping]]] = ..., tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ..., context: _Optional[_Iterable[_Union[Context, _Mapping]]] = ..., forwarded_props: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., resume: _Optional[_Iterable[_Union[ResumeEntry, _Mapping]]] = ..., protocol_version: _Optional[str] = ...) -> None: ...

class Interrupt(_message.Message):
    __slots__ = ("id", "reason", "message", "tool_call_id", "response_schema", "expires_at", "metadata", "subagent_run_id")
    ID_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    EXPIRES_AT_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    SUBAGENT_RUN_ID_FIELD_NUMBER: _ClassVar[int]
    id: str
    reason: str
    message: str
    tool_call_id: str
    response_schema: _struct_pb2.Value
    expires_at: str
    metadata: _struct_pb2.Value
    subagent_run_id: str
    def __init__(self, id: _Optional[str] = ..., reason: _Optional[str] = ..., message: _Optional[str] = ..., tool_call_id: _Optional[str] = ..., response_schema: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., expires_at: _Optional[str] = ..., metadata: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., subagent_run_id: _Optional[str] = ...) -> None: ...
