"""What every encoder takes before it reads an event: its options and the event itself.

Strategy: the checks the encoders share (``proto_writer``, ``sse_writer``, their
Cython twins, ``upb``), each written once, so a bad option or a bad event is
refused with the same words whichever encoder meets it: ``check_encode_options``
(the same ``ValueError``, in the same order), ``as_event_dict`` (an official SDK
pydantic event as the JSON dict its own encoder writes) and ``known_event_type``
(the refusal of an event whose ``type`` names none of the events); and how an
encoder reads a value, by what it holds, never through its methods (``plain_*``:
a subclass of str, int or float, an enum such as the SDK's ``EventType`` included,
is its plain value; a dict, list or tuple subclass is its contents; any other
``Mapping`` is an object).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .._jsonnames import json_type
from ..errors import EncodeError
from ..schema import EVENTS, MAX_DEPTH_LIMIT

__all__ = [
    "as_event_dict",
    "check_encode_options",
    "known_event_type",
    "plain_array",
    "plain_number",
    "plain_object",
    "plain_str",
]


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


# -- values read by what they hold --------------------------------------------------------


def plain_str(value: Any) -> Any:
    """A str subclass as the str it holds; anything else as it is."""
    return value if type(value) is str or not isinstance(value, str) else str.__str__(value)


def plain_number(value: int | float) -> int | float:
    """An int or float (not bool) subclass as the exact int or float it holds."""
    t = type(value)
    if t is int or t is float:
        return value
    return float.__float__(value) if isinstance(value, float) else int.__int__(value)


def plain_object(obj: Any) -> Any:
    """A dict subclass or another ``Mapping`` as a dict of its entries, str
    subclass keys as their str (other keys are left for the caller to refuse);
    anything else (an exact dict included) as it is."""
    if type(obj) is dict:
        return obj
    if isinstance(obj, dict):
        items: Any = dict.items(obj)
    elif isinstance(obj, Mapping):
        items = obj.items()
    else:
        return obj
    return {plain_str(k): v for k, v in items}


def plain_array(value: Any) -> Any:
    """A list or tuple subclass as a list of its items; anything else as it is."""
    t = type(value)
    if t is list or t is tuple:
        return value
    if isinstance(value, list):
        return list(list.__iter__(value))
    if isinstance(value, tuple):
        return list(tuple.__iter__(value))
    return value
