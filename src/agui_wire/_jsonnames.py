"""How error messages name JSON values and the places they sit.

``json_type`` names a Python value by its JSON type ("null", "boolean", "number",
"string", "array", "object"; tuples are arrays, as every encoder here writes
them), or by its Python type when JSON has none. ``json_pointer`` and
``pointer_join`` write RFC 6901 pointers, escaping ``~`` as ``~0`` and ``/`` as
``~1``. ``json_excerpt`` quotes a value as JSON, cut to a length a message can
hold. Every codec, the validator and the patcher use these, so an error names a
place the same way whichever of them raised it.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

__all__ = [
    "a_json_type",
    "cycle_reason",
    "json_excerpt",
    "json_pointer",
    "json_repr",
    "json_type",
    "not_a_pointer",
    "one_of",
    "pointer_join",
]


def json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, (list, tuple)):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__qualname__


def a_json_type(value: object) -> str:
    """``json_type`` with its article, for messages: "an array", "a string"."""
    kind = json_type(value)
    return f"{'an' if kind[:1] in ('a', 'e', 'i', 'o', 'u') else 'a'} {kind}"


def json_repr(value: object) -> str:
    """A value as a message quotes it: the ``repr`` of a str, number, bool or None
    as the base type writes it (a subclass's ``__repr__`` may say anything); an
    integer past ``int``'s string limit by its size; anything else by its JSON type
    (the repr of a container can be huge, or recurse without end)."""
    if value is None or isinstance(value, bool):
        return repr(value)
    if isinstance(value, str):
        return str.__repr__(value)
    if isinstance(value, int):
        try:
            return int.__repr__(value)
        except ValueError:  # more digits than sys.get_int_max_str_digits()
            return f"<{value.bit_length()} bits>"
    if isinstance(value, float):
        return float.__repr__(value)
    return a_json_type(value)


def json_pointer(tokens: Iterable[str | int]) -> str:
    """The pointer of a path of keys and indices (``[]`` is the root, ``""``)."""
    # a loop, escaping only what needs it: a refusal's cost is mostly its message
    out = ""
    for t in tokens:
        s = t if type(t) is str else str(t)
        if "~" in s or "/" in s:
            s = s.replace("~", "~0").replace("/", "~1")
        out += "/" + s
    return out


def pointer_join(parent: str, key: str | int) -> str:
    """The pointer of ``key`` inside the value at ``parent``."""
    return parent + "/" + str(key).replace("~", "~0").replace("/", "~1")


def cycle_reason(owner: str) -> str:
    """The refusal of a container met again inside itself, ``owner`` being the
    pointer of its first place ("" for the event): the same words from every
    encoder, SSE and protobuf."""
    where = f"the container at {owner}" if owner else "the event"
    return f"a cycle: this is {where} again, inside itself"


def one_of(choices: Iterable[str]) -> str:
    """The strings a rule allows, as a refusal lists them (``'a'``, ``one of 'a', 'b'``)."""
    names = [str.__repr__(c) for c in choices]
    return names[0] if len(names) == 1 else "one of " + ", ".join(names)


def not_a_pointer(text: str) -> str:
    """The refusal of a string that is not a JSON pointer, from every codec and the
    validator."""
    return (
        f"{text} is not a JSON pointer (RFC 6901: '' or '/'-separated tokens, '~' only as ~0 or ~1)"
    )


def json_excerpt(value: object, limit: int) -> str:
    """``value`` as JSON (``repr`` when it is not JSON), at most ``limit`` characters."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
