"""Redis commands as RESP, sans I/O (pure Python): what a pipeline writes to Redis.

Strategy: each command, a sequence of arguments, becomes a RESP array of bulk
strings (``*<n>\\r\\n`` then ``$<len>\\r\\n<bytes>\\r\\n`` per argument); the commands
of a round trip are packed into one ``bytes`` to write at once. Each argument is
encoded as redis-py's ``Encoder.encode`` encodes it (``redis/_parsers/encoders.py``,
with its defaults: UTF-8, strict), so a command packed here is the one redis-py's
own pipeline would send, byte for byte: ``bytes`` as it is, a ``bytearray`` as its
bytes, ``str`` (a subclass too, through its ``encode``) as UTF-8, ``int`` and
``float`` (subclasses too) as their ``repr``. Two differences, where redis-py's
bytes would not be one command: a ``memoryview`` is sent as the bytes it stands for
(``bytes(view)``; redis-py announces its length in items, and hiredis ignores its
strides), and a command's first argument is an argument like the others, not split
at spaces into words as redis-py splits ``"CONFIG GET"`` (nor does hiredis'
``pack_command``).
``agui_wire._fast`` has a Cython twin for the exact types a run store sends
(``bytes``, ``str``, an ``int`` of 64 bits, in a list or tuple of tuples or lists),
byte for byte the same; it hands any other call to this module whole;
``agui_wire._codec.selected`` picks one.

Contract of ``pack_commands``: all or nothing, one bad argument refuses the call.

* ``TypeError`` with redis-py's words (``Invalid input of type: 'bool'. Convert to
  a bytes, string, int or float first.``) for an argument redis-py refuses: a
  ``bool`` (``1`` or ``True``? redis-py does not guess), ``None``, any other type.
  redis-py raises its ``DataError`` with these words; the run store's pipeline
  raises that class (this layer knows nothing of redis).
* ``UnicodeEncodeError`` for a ``str`` UTF-8 cannot encode (a lone surrogate), as
  ``str.encode`` raises it in redis-py; ``ValueError`` for an ``int`` too long for
  ``repr`` (``sys.set_int_max_str_digits``, 3.11), as there.
* ``ValueError`` for a command without arguments: Redis answers nothing to an empty
  array, so a pipeline counting one reply per command would wait forever
  (redis-py fails on it with an ``IndexError``).
* ``TypeError`` for a command that is not a sequence of arguments (a ``str`` or a
  bytes-like object is not: it would be packed as its characters).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

__all__ = ["pack_commands"]

_BYTES_LIKE: Final = (bytes, bytearray, memoryview)


def pack_commands(commands: Iterable[Sequence[object]]) -> bytes:
    """Every command of ``commands`` as a RESP array of bulk strings, concatenated
    (see the module doc)."""
    parts: list[bytes] = []
    put = parts.append
    for command in commands:
        if type(command) is not tuple and type(command) is not list:
            _check_command(command)
        if not command:
            raise ValueError(
                "a Redis command needs at least one argument, its name "
                "(Redis answers nothing to an empty one)"
            )
        put(b"*%d\r\n" % len(command))
        for arg in command:  # the exact types a run store sends, then the rules
            if type(arg) is bytes:
                data = arg
            elif type(arg) is str:
                data = arg.encode()
            elif type(arg) is int:
                data = b"%d" % arg
            else:
                data = _encode(arg)
            put(b"$%d\r\n%b\r\n" % (len(data), data))
    return b"".join(parts)


def _check_command(command: object) -> None:
    if isinstance(command, (str, *_BYTES_LIKE)) or not isinstance(command, Sequence):
        raise TypeError(
            f"a Redis command must be a sequence of arguments, not {type(command).__name__}"
        )


def _encode(arg: object) -> bytes:
    """One argument's bytes, by redis-py's ``Encoder.encode`` rules."""
    if isinstance(arg, bytes):
        return arg
    if isinstance(arg, (bytearray, memoryview)):
        return bytes(arg)  # a memoryview's bytes, whatever its format and strides
    if isinstance(arg, bool):  # (before int: bool is one)
        raise TypeError(_refused("bool"))
    if isinstance(arg, (int, float)):
        return repr(arg).encode()
    if isinstance(arg, str):
        return arg.encode("utf-8", "strict")
    raise TypeError(_refused(type(arg).__name__))


def _refused(typename: str) -> str:
    return f"Invalid input of type: '{typename}'. Convert to a bytes, string, int or float first."
