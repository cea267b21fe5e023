"""``agui_wire._runstore.ids``: run ids and owners checked, the owner's namespace,
generations, event ids and resume positions (the store-independent part; the
behaviours are in test_generations.py and test_owners.py)."""

from __future__ import annotations

import copy
import pickle

import pytest

from agui_wire._runstore.ids import (
    MAX_GENERATION,
    MAX_INDEX,
    EventId,
    check_owner,
    check_run_id,
    generation_of,
    new_generation,
    of_run,
    parse_position,
    run_digest,
)


@pytest.mark.parametrize("good", ["x" * 256, "é" * 128, "a{b}c", "1", " ", "\x00"])
def test_run_ids_of_1_to_256_utf8_bytes(good: str) -> None:
    assert check_run_id(good) is good


@pytest.mark.parametrize(
    ("bad", "says"),
    [
        (123, "not int 123"),
        (None, "not NoneType None"),
        (b"run", "not bytes b'run'"),
        ("", "not 0 bytes"),
        ("x" * 257, "not 257 bytes"),
        ("é" * 129, "not 258 bytes"),
        ("a\ud800b", "lone surrogate at 1"),
    ],
)
def test_a_run_id_that_is_not_one_says_why(bad: object, says: str) -> None:
    with pytest.raises(ValueError, match="a run id is a string of 1 to 256 UTF-8 bytes") as info:
        check_run_id(bad)
    assert says in str(info.value)
    assert len(str(info.value)) < 200  # a long id is shown shortened


def test_owners_are_strings_or_none() -> None:
    assert check_owner(None) is None
    assert check_owner("") == ""
    with pytest.raises(ValueError, match="owner must be a string or None, not int"):
        check_owner(1)


def test_the_digest_keeps_owners_apart() -> None:
    names = {
        run_digest(None, "r"),
        run_digest("", "r"),
        run_digest("a", "r"),
        run_digest("a", "r2"),
        run_digest("ar", ""),  # owner and id are never run together
        run_digest("\ud800", "r"),  # a lone surrogate is an owner like any other
    }
    assert len(names) == 6
    assert all(len(name) == 16 for name in names)
    assert run_digest("a", "r") == run_digest("a", "r")  # the same on every replica


def test_generations_are_even_random_and_exact_in_lua() -> None:
    drawn = {new_generation("run") for _ in range(1000)}
    assert len(drawn) == 1000
    assert all(g % 2 == 0 and 2 <= g < MAX_GENERATION for g in drawn)
    assert all(of_run("run", g) for g in drawn)
    # a generation checks against its run id: another run's, or a made-up one,
    # is told apart 999 times in 1,000
    assert sum(of_run("other", g) for g in drawn) < 10
    assert not of_run("run", 42)
    assert of_run("run", 0)  # a run stored before generations: any run's
    assert MAX_GENERATION < 2**53  # Lua's numbers are doubles
    assert generation_of(42) == generation_of(43) == 42  # an event's, its end's


def test_an_event_id_is_an_int_that_carries_its_generation() -> None:
    n = EventId(7, 42)
    assert n == 7
    assert n + 1 == 8
    assert str(n) == "7-42"
    assert repr(n) == "EventId(7, generation=42)"
    assert str(EventId(7)) == "7"
    for copied in (pickle.loads(pickle.dumps(n)), copy.copy(n), copy.deepcopy(n)):
        assert (copied, copied.generation) == (7, 42)
        assert type(copied) is EventId


@pytest.mark.parametrize(
    ("raw", "index", "generation"),
    [
        (0, 0, None),
        (7, 7, None),
        ("7", 7, None),
        (" 7 ", 7, None),
        ("7-42", 7, 42),
        ("0-2", 0, 2),
        (MAX_INDEX, MAX_INDEX, None),
        (EventId(3, 4), 3, 4),
    ],
)
def test_positions(raw: object, index: int, generation: int | None) -> None:
    position = parse_position(raw)
    assert (int(position), position.generation) == (index, generation)


@pytest.mark.parametrize(
    ("raw", "says"),
    [
        (-1, "not an event index: -1"),
        ("-1", "not an event index (n) or id"),
        ("1e3", "not an event index (n) or id"),
        ("٣", "not an event index (n) or id"),  # a digit, not an ASCII one
        ("7-3", "no such generation"),
        (f"7-{MAX_GENERATION}", "its generation has 14 digits, '7-10000000000000' (at most 13"),
        ("9" * 10_000, "10,000 digits, '9999999999"),
        (MAX_INDEX + 1, "not an event index"),
        (True, "an event index is an int or a string, not bool"),
        (1.0, "an event index is an int or a string, not float"),
        (None, "not NoneType"),
    ],
)
def test_a_position_that_is_not_one_says_why(raw: object, says: str) -> None:
    with pytest.raises(ValueError, match="event") as info:
        parse_position(raw)
    assert says in str(info.value)
