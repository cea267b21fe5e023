from google.protobuf import struct_pb2 as _struct_pb2
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class JsonPatchOperationType(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = ()
    ADD: _ClassVar[JsonPatchOperationType]
    REMOVE: _ClassVar[JsonPatchOperationType]
    REPLACE: _ClassVar[JsonPatchOperationType]
    MOVE: _ClassVar[JsonPatchOperationType]
    COPY: _ClassVar[JsonPatchOperationType]
    TEST: _ClassVar[JsonPatchOperationType]
ADD: JsonPatchOperationType
REMOVE: JsonPatchOperationType
REPLACE: JsonPatchOperationType
MOVE: JsonPatchOperationType
COPY: JsonPatchOperationType
TEST: JsonPatchOperationType

class JsonPatchOperation(_message.Message):
    __slots__ = ("op", "path", "value")
    OP_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    FROM_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    op: JsonPatchOperationType
    path: str
    value: _struct_pb2.Value
    def __init__(self, op: _Optional[_Union[JsonPatchOperationType, str]] = ..., path: _Optional[str] = ..., value: _Optional[_Union[_struct_pb2.Value, _Mapping]] = ..., **kwargs) -> None: ...
