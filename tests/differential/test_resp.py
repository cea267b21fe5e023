"""The RESP packer (``_codec/resp.py`` and its C twin ``_codec/_resp.pxi``) against the
packers it stands for: hiredis' ``pack_command`` and redis-py's own (an asyncio
``Connection``'s ``pack_command``, through hiredis, and its pure-Python packer).

Differential: for the same commands, the two twins give the same bytes or raise the
same exception (class and words), and those are redis-py's bytes, or its refusal:
redis-py's ``DataError`` is our ``TypeError`` with the same words (the run store's
pipeline raises it as ``DataError``: tests/redis/test_pipeline.py). hiredis gives
the same bytes for every argument it takes. The C twin packs the shapes a run
store sends itself (``_resp_fallbacks`` stays put) and hands the rest over whole.
"""

from __future__ import annotations

import enum
import string
import sys
from collections.abc import Callable
from typing import Any

import hiredis
import pytest
from hypothesis import given
from hypothesis import strategies as st
from redis.asyncio.connection import Connection
from redis.exceptions import DataError

from agui_wire._codec import resp
from tests.support.twins import fast_or_skip

fast = fast_or_skip("pack_commands")

PACKERS = [
    pytest.param(resp.pack_commands, id="python"),
    pytest.param(fast.pack_commands, id="cython"),
]

_CONNECTION = Connection()  # never connected: it packs, with redis-py's default encoder


def redis_py(commands: list[tuple[Any, ...]]) -> bytes:
    """redis-py's bytes for ``commands`` (hiredis' packer behind its encoder)."""
    return b"".join(b"".join(_CONNECTION.pack_command(*c)) for c in commands)


def redis_py_pure(commands: list[tuple[Any, ...]]) -> bytes:
    """redis-py's bytes for ``commands`` without hiredis (its own packer)."""
    return b"".join(b"".join(_CONNECTION._pack_command_python(*c)) for c in commands)


def with_hiredis(commands: list[tuple[Any, ...]]) -> bytes:
    return b"".join(hiredis.pack_command(tuple(c)) for c in commands)


def outcome(pack: Callable[[Any], bytes], commands: Any) -> Any:
    """The bytes, or the error as (class, words): redis-py's ``DataError`` as the
    ``TypeError`` the twins raise with its words."""
    try:
        return pack(commands)
    except DataError as exc:
        return (TypeError, str(exc))
    except Exception as exc:
        return (type(exc), str(exc))


class Color(enum.IntEnum):
    RED = 1


class Text(str):
    pass


class Number(int):
    pass


# What a run store sends: exact bytes (\r\n and NUL inside too), str (any
# code point but a lone surrogate), int of 64 bits; in a list or tuple of tuples.
COMMON = st.one_of(
    st.binary(max_size=40),
    st.sampled_from([b"", b"\r\n", b"$3\r\nabc\r\n", b"*1\r\n", b"\x00\xff"]),
    st.text(max_size=20),
    st.sampled_from(["", "é", "\u2603 snow", "\U0001f600", "\x00", "a\r\nb"]),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.sampled_from([0, -1, 9, 10, 99, 100, -10, 2**63 - 1, -(2**63), 10**18, -(10**18)]),
)
# Everything else redis-py takes or refuses.
OTHER = st.one_of(
    st.integers(),
    st.sampled_from([2**63, -(2**63) - 1, 2**64, 10**40, -(10**40)]),
    st.floats(),
    st.sampled_from([0.0, -0.0, 1e16, 1e-7, 0.1, float("nan"), float("inf"), float("-inf")]),
    st.binary(max_size=20).map(bytearray),
    st.binary(max_size=20).map(memoryview),
    st.text(max_size=10).map(Text),
    st.integers().map(Number),
    st.sampled_from([Color.RED, True, False, None, 1j, [b"x"], {"k": 1}, object()]),
    st.sampled_from(["\ud800", "a\udfffb", Text("\udc80")]),
)
# A command's name: one word (redis-py splits a name with spaces into words).
NAMES = st.one_of(
    st.sampled_from(["EVALSHA", "SET", b"XREAD", "WAIT", b"PING"]),
    st.text(alphabet=string.ascii_letters, min_size=1, max_size=8),
)


def commands_of(args: st.SearchStrategy[Any]) -> st.SearchStrategy[list[tuple[Any, ...]]]:
    command = st.tuples(NAMES, st.lists(args, max_size=12)).map(lambda t: (t[0], *t[1]))
    return st.lists(command, max_size=5)


@given(commands=commands_of(COMMON), as_lists=st.booleans())
def test_what_a_store_sends_is_packed_in_c_as_redis_py_and_hiredis_pack_it(
    commands: list[tuple[Any, ...]], as_lists: bool
) -> None:
    expected = redis_py(commands)
    assert redis_py_pure(commands) == expected
    assert with_hiredis(commands) == expected
    shaped: Any = [list(c) if as_lists else c for c in commands]
    if as_lists:
        shaped = tuple(shaped)
    before = fast._resp_fallbacks()
    assert fast.pack_commands(shaped) == expected
    assert fast._resp_fallbacks() == before, "a store's command left the C path"
    assert resp.pack_commands(shaped) == expected


@given(commands=commands_of(st.one_of(COMMON, OTHER)))
def test_any_argument_packs_or_is_refused_as_redis_py_does(
    commands: list[tuple[Any, ...]],
) -> None:
    expected = outcome(redis_py, commands)
    assert outcome(redis_py_pure, commands) == expected
    assert outcome(fast.pack_commands, commands) == expected
    assert outcome(resp.pack_commands, commands) == expected


@given(commands=commands_of(st.one_of(COMMON, OTHER)))
def test_what_hiredis_takes_it_packs_alike(commands: list[tuple[Any, ...]]) -> None:
    """hiredis refuses a bytearray, an int subclass, a bool, None; of what it takes,
    the bytes are the same."""
    expected = outcome(with_hiredis, commands)
    if isinstance(expected, bytes):
        assert fast.pack_commands(commands) == expected
        assert resp.pack_commands(commands) == expected


@pytest.mark.parametrize("pack", PACKERS)
@pytest.mark.parametrize(
    ("commands", "expected"),
    [
        ([], b""),
        ((), b""),
        ([("PING",)], b"*1\r\n$4\r\nPING\r\n"),
        ([["GET", "k"]], b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"),
        ([("ECHO", b"")], b"*2\r\n$4\r\nECHO\r\n$0\r\n\r\n"),
        ([("X", -(2**63))], b"*2\r\n$1\r\nX\r\n$20\r\n-9223372036854775808\r\n"),
        ([("X", 2**64)], b"*2\r\n$1\r\nX\r\n$20\r\n18446744073709551616\r\n"),
        ([("X", 1.5, float("nan"))], b"*3\r\n$1\r\nX\r\n$3\r\n1.5\r\n$3\r\nnan\r\n"),
        ([("X", Number(7))], b"*2\r\n$1\r\nX\r\n$1\r\n7\r\n"),
        ([("CONFIG GET", "x")], b"*2\r\n$10\r\nCONFIG GET\r\n$1\r\nx\r\n"),  # one argument
        ([(7, "x")], b"*2\r\n$1\r\n7\r\n$1\r\nx\r\n"),
    ],
)
def test_shapes(pack: Callable[[Any], bytes], commands: Any, expected: bytes) -> None:
    out = pack(commands)
    assert out == expected
    assert type(out) is bytes
    assert pack(iter(commands)) == pack(c for c in commands) == expected  # read once


@pytest.mark.parametrize("pack", PACKERS)
def test_a_memoryview_is_its_bytes_whatever_its_format_and_strides(
    pack: Callable[[Any], bytes],
) -> None:
    """redis-py announces a memoryview's length in items (and hiredis ignores its
    strides): the bytes it stands for are what is sent, with their length."""
    view = memoryview(b"abcdef")[::2]
    assert pack([("X", view)]) == b"*2\r\n$1\r\nX\r\n$3\r\nace\r\n"
    words = memoryview(bytearray(8)).cast("I")
    assert pack([("X", words)]) == b"*2\r\n$1\r\nX\r\n$8\r\n" + bytes(8) + b"\r\n"


@pytest.mark.parametrize("pack", PACKERS)
@pytest.mark.parametrize(
    ("commands", "error", "words"),
    [
        ([("SET", "k", True)], TypeError, "Invalid input of type: 'bool'. Convert to a bytes"),
        ([("SET", "k", None)], TypeError, "Invalid input of type: 'NoneType'. Convert to"),
        ([("SET", "k", [1])], TypeError, "Invalid input of type: 'list'."),
        ([("SET", "k", "\ud800")], UnicodeEncodeError, "surrogates not allowed"),
        ([()], ValueError, "needs at least one argument, its name"),
        ([[]], ValueError, "Redis answers nothing to an empty one"),
        (["PING"], TypeError, "a sequence of arguments, not str"),
        ([b"PING"], TypeError, "a sequence of arguments, not bytes"),
        ([7], TypeError, "a sequence of arguments, not int"),
        (7, TypeError, "not iterable"),
    ],
)
def test_refusals(
    pack: Callable[[Any], bytes], commands: Any, error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words.replace("(", r"\(").replace(".", r"\.")) as info:
        pack(commands)
    assert type(info.value) is error


def test_an_int_too_long_to_write_is_refused_as_repr_refuses_it() -> None:
    if not hasattr(sys, "get_int_max_str_digits"):
        pytest.skip("no limit on int digits before 3.11")
    big = 10 ** (sys.get_int_max_str_digits() + 1)
    with pytest.raises(ValueError, match="integer string conversion") as expected:
        repr(big)
    for pack in (resp.pack_commands, fast.pack_commands):
        with pytest.raises(ValueError, match="integer string conversion") as info:
            pack([("X", big)])
        assert str(info.value) == str(expected.value)


def test_the_c_twin_hands_over_whole_what_it_does_not_pack() -> None:
    """A float (or any other argument but exact bytes, str, int of 64 bits), an
    iterator: packed by resp.py, once per call."""
    for commands in (
        [("SET", "k", 1.5)],
        [("SET", "k", Text("v"))],
        [("SET", "k", bytearray(b"v"))],
        [("SET", "k", 2**63)],
        iter([("PING",)]),
        [("PING",), ["SET", "k", True]],
    ):
        before = fast._resp_fallbacks()
        outcome(fast.pack_commands, commands)
        assert fast._resp_fallbacks() == before + 1


def test_a_str_with_no_utf8_cached_is_packed_in_c() -> None:
    """A non-ASCII str's UTF-8 is made once (the str caches it), then read in place."""
    text = "".join(["\u00e9", "\u2603" * 100, "x"])  # built: nothing cached yet
    before = fast._resp_fallbacks()
    out = fast.pack_commands([("SET", text, text)])
    data = text.encode()
    assert out == b"*3\r\n$3\r\nSET\r\n" + (b"$%d\r\n%b\r\n" % (len(data), data)) * 2
    assert fast._resp_fallbacks() == before


def test_a_large_command_is_packed_whole() -> None:
    payload = bytes(range(256)) * 4096  # 1 MiB
    commands = [("EVALSHA", "0" * 40, 1, "k", *[payload, 12345, "é"] * 8)] * 4
    assert fast.pack_commands(commands) == resp.pack_commands(commands) == redis_py(commands)
