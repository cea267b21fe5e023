"""What every encoder takes before it reads an event: its options and the event itself.

Strategy: the checks the encoders share (``proto_writer``, ``sse_writer``, their
Cython twins, ``upb``), each written once, so a bad option or a bad event is
refused with the same words whichever encoder meets it: ``check_encode_options``
(the same ``ValueError``, in the same order), ``as_event_dict`` (an official SDK
pydantic event as the JSON dict its own encoder writes) and ``known_event_type``
(the refusal of an event whose ``type`` names none of the events).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._jsonnames import json_type
from ..errors import EncodeError
from ..schema import EVENTS, MAX_DEPTH_LIMIT

__all__ = ["as_event_dict", "check_encode_options", "known_event_type"]


def check_encode_options(extra_keys: str, max_depth: int, lossy_numbers: bool = False) -> None:
    """``ValueError`` for the first invalid option of an encoder, in this order."""
    if extra_keys not in ("drop", "error"):
        raise ValueError(f"extra_keys must be 'drop' or 'error', not {extra_keys!r}")
    if type(max_depth) is not int or not 1 <= max_depth <= MAX_DEPTH_LIMIT:
        raise ValueError(f"max_depth must be an int in 1..{MAX_DEPTH_LIMIT}, not {max_depth!r}")
    if type(lossy_numbers) is not bool:
        raise ValueError(f"lossy_numbers must be True or False, not {lossy_numbers!r}")


def known_event_type(event: Mapping[str, Any], etype: Any) -> str:
    """``etype`` (``event``'s ``type``) when it names an event, else the refusal
    every encoder gives for it."""
    if isinstance(etype, str) and etype in EVENTS:
        return etype
    if "type" not in event:
        raise EncodeError("required field is missing", path="/type")
    raise EncodeError(
        f"unknown event type {etype!r}"
        if isinstance(etype, str)
        else f"expected a string, got {json_type(etype)}",
        path="/type",
    )


def as_event_dict(event: Any) -> Any:
    """The JSON dict of an event: dicts as they are, pydantic models of the
    official SDK dumped the way its own encoder writes them (camelCase aliases,
    optional fields without a value left out by the SDK's serializer). A model
    pydantic cannot dump (a cycle, a value of a type it has no JSON for) is an
    ``EncodeError``, as the same value in a dict is."""
    if isinstance(event, dict):
        return event
    dump = getattr(event, "model_dump", None)
    if dump is not None:
        try:
            return dump(mode="json", by_alias=True)
        except ValueError as exc:  # pydantic_core.PydanticSerializationError
            etype = getattr(event, "type", None)
            raise EncodeError(
                f"the SDK event does not serialize: {exc}",
                event_type=str.__str__(etype) if isinstance(etype, str) else None,
            ) from None
    return event  # the encoders reject it with an EncodeError naming its type
