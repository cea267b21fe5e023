"""Broken AG-UI events, made from valid ones: the inputs of the differential test
against the reference's schemas (tests/interop/test_zod_agreement.py).

Strategy: a *site* is one place in an event (a JSON pointer as a tuple of keys and
indices) and a *mutation* replaces, removes or adds one thing there. Sites are
every object member and array item of the event's own structure (messages, tool
calls, content parts and their sources, patch operations, run input, tools,
interrupts, usage, outcomes), and the root and first level of each opaque JSON
value (state, snapshots, values, metadata, rawEvent...), which the reference takes
as any JSON: walking further into those finds nothing new. The kinds of mutation
are the ways a server author gets an event wrong: a key dropped, a value of
another JSON type (null included), a discriminator nobody knows, an integer past
2^53 or past 64 bits, NaN, a lone surrogate, an extra key, a value nested past
the readers' limit.

Two consumers: ``mutation_corpus`` (every mutation of every site of a fixed set of
real events, deterministic, so its verdicts can be counted and compared across
runs) and ``judged_events`` (hypothesis: a valid event of any of the 31 types,
then zero to two mutations at drawn sites with drawn values).
"""

from __future__ import annotations

import copy
import math
import re
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from hypothesis import strategies as st

from tests.support import strategies
from tests.support.corpus import CASES, EVENT_TYPES, realistic_run

Event = dict[str, Any]
Path = tuple[str | int, ...]

# Keys whose value the reference takes as any JSON (z.any, or z.custom object):
# the schema ends there. ``content`` is opaque only as an object (an activity's);
# as a list it holds content parts, as a string it is text.
OPAQUE_KEYS = frozenset(
    {
        "snapshot",
        "value",
        "event",
        "rawEvent",
        "metadata",
        "state",
        "forwardedProps",
        "parameters",
        "result",
        "payload",
        "responseSchema",
    }
)
# Keys that pick an object's shape (a discriminated union's tag), and the other
# strings the reference constrains (enums, JSON pointers): a wrong word there.
TAGS = frozenset({"type", "role", "op"})
WORDS = TAGS | {"subtype", "status", "path", "from"}

MAX_SAFE = 2**53 - 1
# Past the safe range (the first two: zod's integer bound, and the first integer a
# double cannot hold), past 64 bits, past a double; hypothesis draws the rest.
BIG_INTS = (2**53, 2**53 + 1, 2**64, 10**400)
MORE_BIG_INTS = (-(2**53) - 1, 2**60, 2**63, -(2**63) - 1)
# One value of each JSON type, for "a value of another type".
RETYPES: tuple[tuple[str, Any], ...] = (
    ("null", None),
    ("bool", True),
    ("int", 7),
    ("float", 1.5),
    ("string", "x"),
    ("array", []),
    ("object", {}),
)
LONE_SURROGATE = "a\ud800"
EXTRA_KEY = "zzExtra"


class Mutation(NamedTuple):
    """One broken (or, by chance, still valid) event and how it was made."""

    kind: str  # drop, retype:<json type>, word, bigint, nan, surrogate, extra, deep...
    path: Path  # where, in the event it was made from
    event: Any


def json_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def is_opaque(key: str | int | None, value: Any) -> bool:
    return key in OPAQUE_KEYS or (key == "content" and isinstance(value, dict))


def sites(event: Any) -> Iterator[tuple[Path, Any]]:
    """Every mutation site of ``event``: (path, value), the root first."""
    stack: list[tuple[Path, Any, int]] = [((), event, -1)]
    while stack:
        path, value, opaque_level = stack.pop()
        yield path, value
        if opaque_level >= 1:
            continue  # one level into opaque JSON is enough
        if isinstance(value, dict):
            items: list[tuple[str | int, Any]] = list(value.items())
        elif isinstance(value, list):
            items = list(enumerate(value))
        else:
            continue
        for key, child in reversed(items):
            level = opaque_level + 1 if opaque_level >= 0 else (0 if is_opaque(key, child) else -1)
            stack.append(((*path, key), child, level))


def get(event: Any, path: Path) -> Any:
    for key in path:
        event = event[key]
    return event


def _edit(event: Any, path: Path, edit: Callable[[Any], None]) -> Any:
    """A copy of ``event`` where ``edit`` changed (a copy of) the container at
    ``path``; only the containers on the way are copied, the rest is shared."""
    out: Any = dict(event) if isinstance(event, dict) else list(event)
    if path:
        out[path[0]] = _edit(event[path[0]], path[1:], edit)
    else:
        edit(out)
    return out


def _replace(event: Any, path: Path, value: Any) -> Any:
    if not path:
        return value

    def put(parent: Any) -> None:
        parent[path[-1]] = copy.copy(value)  # a fresh [] or {} for each event

    return _edit(event, path[:-1], put)


def _remove(event: Any, path: Path) -> Any:
    def delete(parent: Any) -> None:
        del parent[path[-1]]

    return _edit(event, path[:-1], delete)


def _add(event: Any, path: Path, key: str, value: Any) -> Any:
    def add(obj: Any) -> None:
        obj[key] = value

    return _edit(event, path, add)


def nested(depth: int, leaf: Any = 1) -> Any:
    """``depth`` containers around ``leaf``, alternately objects and arrays, the
    outermost an object."""
    value = leaf
    for i in range(depth):
        value = {"k": value} if (depth - i) % 2 else [value]
    return value


def _wrong_words(value: str) -> list[str]:
    words = ["NOPE", value.lower(), value + " ", "~2", value + "/~"]
    return [w for w in dict.fromkeys(words) if w != value]


def mutations_at(event: Any, path: Path, value: Any) -> Iterator[Mutation]:
    """The fixed mutations of one site (``mutation_corpus``)."""
    key = path[-1] if path else None
    if path:
        yield Mutation("drop", path, _remove(event, path))
    kind = json_kind(value)
    numbers = {"int", "float"}
    for name, other in RETYPES:
        # 1.5 only where an integer is (is it one?); elsewhere 7 stands for numbers
        wanted = kind == "int" if name == "float" else name != kind
        if name == "int" and kind == "float":
            wanted = False
        if wanted:
            yield Mutation(f"retype:{name}", path, _replace(event, path, other))
    if key in WORDS and isinstance(value, str):
        for word in _wrong_words(value):
            yield Mutation("word", path, _replace(event, path, word))
    if kind in numbers:
        for big in BIG_INTS:
            yield Mutation("bigint", path, _replace(event, path, big))
        yield Mutation("nan", path, _replace(event, path, float("nan")))
        yield Mutation("negative", path, _replace(event, path, -1))
        if kind == "int" and abs(value) <= MAX_SAFE:
            yield Mutation("int-as-float", path, _replace(event, path, float(value)))
    if kind == "string":
        yield Mutation("surrogate", path, _replace(event, path, LONE_SURROGATE))
    if kind == "object":
        yield Mutation("extra", path, _add(event, path, EXTRA_KEY, 1))
        yield Mutation("extra-null", path, _add(event, path, EXTRA_KEY, None))
        yield Mutation("surrogate-key", path, _add(event, path, LONE_SURROGATE, 1))
    if kind == "array" and value:
        yield Mutation("empty", path, _replace(event, path, []))


# The real events the corpus is made from: every type minimal and with every key
# (corpus.py's /minimal and /full), every message role, content part and source,
# patch operation and outcome, and the distinct types of a realistic run.
_BASE_NAMES = (
    *(f"{t}/{v}" for t in EVENT_TYPES for v in ("minimal", "full")),
    "MESSAGES_SNAPSHOT/all",
    "TOOL_CALL_RESULT/parts-all",
    "STATE_DELTA/all",
    "ACTIVITY_DELTA/all",
    "RUN_FINISHED/interrupt-full",
    "RUN_FINISHED/cancelled",
    "RUN_FINISHED/usage-several",
    "SUBAGENT_FINISHED/suspended-ids",
    "RUN_STARTED/input-state-nested",
)


def base_events() -> list[tuple[str, Event]]:
    out = [(name, CASES[name]) for name in _BASE_NAMES]
    seen: set[str] = set()
    for i, event in enumerate(realistic_run(200, 31)):
        if event["type"] not in seen:
            seen.add(event["type"])
            out.append((f"realistic/{i}", event))
    return out


def _key(event: Any) -> str:
    return repr(event)  # NaN, big ints and lone surrogates included; dicts keep order


# Events nested around each reader's limit: JSON value depth 1020..1026 under an
# opaque key (the proto encoder counts containers from the value, the SSE writer
# and readers from the event object).
DEPTHS = (1020, 1021, 1022, 1023, 1024, 1025, 1026, 2000)


def deep_events() -> Iterator[Mutation]:
    for depth in DEPTHS:
        yield Mutation("deep", ("value",), {"type": "CUSTOM", "name": "n", "value": nested(depth)})
        yield Mutation(
            "deep",
            ("metadata",),
            {"type": "STEP_STARTED", "stepName": "s", "metadata": nested(depth)},
        )
        yield Mutation(
            "deep",
            ("messages", 0, "content"),
            {
                "type": "MESSAGES_SNAPSHOT",
                "messages": [
                    {"id": "a", "role": "activity", "activityType": "t", "content": nested(depth)}
                ],
            },
        )


def _focus(event: Any, path: Path) -> tuple[Any, Path]:
    """``event`` with every array of its structure cut to one item: the one on the
    way to ``path``, else the first (the others are valid, and judged on their
    own); and the path to the site in that. Opaque JSON and the site stay whole."""

    def cut(value: Any, key: str | int | None, rest: Path | None) -> tuple[Any, Path]:
        # rest: the path from ``value`` to the site, None off the way to it
        if rest == () or is_opaque(key, value):
            return value, rest or ()
        if isinstance(value, dict):
            out, at = {}, ()
            for k, v in value.items():
                on_way = rest is not None and k == rest[0]
                out[k], below = cut(v, k, rest[1:] if on_way and rest is not None else None)
                if on_way:
                    at = (k, *below)
            return out, at
        if isinstance(value, list) and value:
            if rest is None:
                return [cut(value[0], None, None)[0]], ()
            item, below = cut(value[rest[0]], None, rest[1:])  # type: ignore[index]
            return [item], (0, *below)
        return value, ()

    return cut(event, None, path)


def pattern(path: Path) -> str:
    """A site's place in the schema: its JSON pointer with indices as ``*``."""
    return "".join("/*" if isinstance(k, int) else f"/{k}" for k in path)


def mutation_corpus() -> list[tuple[str, Mutation]]:
    """Every fixed mutation of every site of every base event, once per place in
    the schema (the first of several messages of one role stands for them all) and
    without repeated events: (base event name, mutation), in a fixed order."""
    out: list[tuple[str, Mutation]] = []
    seen: set[str] = set()
    for name, event in base_events():
        places: set[tuple[str, str]] = set()
        for path, value in sites(event):
            tag = (
                get(event, path[:-1]).get("role", "") if path and isinstance(path[-1], str) else ""
            )
            place = (pattern(path), f"{tag}:{json_kind(value)}")
            if place in places:
                continue
            places.add(place)
            focused, at = _focus(event, path)
            for m in mutations_at(focused, at, get(focused, at)):
                key = _key(m.event)
                if key not in seen:
                    seen.add(key)
                    out.append((name, m))
    out += [("deep", m) for m in deep_events()]
    return out


# -- hypothesis ---------------------------------------------------------------------

_odd_values = st.one_of(
    st.sampled_from([v for _, v in RETYPES]),
    st.sampled_from(BIG_INTS + MORE_BIG_INTS),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.sampled_from([float("nan"), float("inf"), -float("inf"), -1, 1.0, -0.0, 1e21]),
    st.sampled_from([LONE_SURROGATE, "", "NOPE", "/", "~", "tool", "x"]),
    strategies.json_values,
)


@st.composite
def _mutate(draw: st.DrawFn, event: Any) -> Any:
    path, value = draw(st.sampled_from(list(sites(event))))
    kinds = ["replace"]
    if path:
        kinds.append("drop")
    if isinstance(value, dict):
        kinds.append("add")
    if path and path[-1] in WORDS and isinstance(value, str):
        kinds.append("word")
    kind = draw(st.sampled_from(kinds))
    if kind == "drop":
        return _remove(event, path)
    if kind == "add":
        key = draw(st.one_of(st.just(EXTRA_KEY), st.sampled_from(sorted(TAGS)), strategies.keys))
        return _add(event, path, key, draw(_odd_values))
    if kind == "word":
        return _replace(event, path, draw(st.sampled_from(_wrong_words(value))))
    return _replace(event, path, draw(_odd_values))


@st.composite
def judged_events(draw: st.DrawFn) -> Any:
    """A valid event of one of the 31 types, then 0-2 mutations (0: a third of the time)."""
    event = draw(st.sampled_from(sorted(strategies.EVENT_STRATEGIES)).flatmap(_strategy_of))
    for _ in range(draw(st.sampled_from([0, 1, 1, 2]))):
        event = draw(_mutate(event))
    return event


def _strategy_of(event_type: str) -> st.SearchStrategy[Any]:
    return strategies.EVENT_STRATEGIES[event_type]


# -- facts about an event, for the lists of intended differences -------------------------

_SURROGATE = re.compile("[\ud800-\udfff]")


class Facts(NamedTuple):
    """What one walk over an event finds (object keys included)."""

    nonfinite: bool  # a float NaN or ±Infinity
    lone_surrogate: bool  # in a string or a key
    biggest_int: int  # the largest magnitude of an integer (not a bool)
    depth: int  # containers nested, the event itself included
    opaque_depth: int  # the same for the deepest opaque JSON value


def facts(event: Any) -> Facts:
    nonfinite = surrogate = False
    biggest = deepest = deepest_opaque = 0
    # (value, depth of the container holding it, depth where its opaque value began)
    stack: list[tuple[Any, int, int, bool]] = [(event, 0, -1, False)]
    while stack:
        v, d, opaque_from, opaque_key = stack.pop()
        if opaque_from < 0 and opaque_key:
            opaque_from = d
        if isinstance(v, dict):
            deepest = max(deepest, d + 1)
            if opaque_from >= 0:
                deepest_opaque = max(deepest_opaque, d + 1 - opaque_from)
            for k, child in v.items():
                if isinstance(k, str) and _SURROGATE.search(k):
                    surrogate = True
                opaque = opaque_from < 0 and is_opaque(k, child)
                stack.append((child, d + 1, opaque_from, opaque))
        elif isinstance(v, list):
            deepest = max(deepest, d + 1)
            if opaque_from >= 0:
                deepest_opaque = max(deepest_opaque, d + 1 - opaque_from)
            stack.extend((child, d + 1, opaque_from, False) for child in v)
        elif isinstance(v, str):
            surrogate = surrogate or _SURROGATE.search(v) is not None
        elif isinstance(v, float):
            nonfinite = nonfinite or not math.isfinite(v)
        elif isinstance(v, int) and not isinstance(v, bool):
            biggest = max(biggest, abs(v))
    return Facts(nonfinite, surrogate, biggest, deepest, deepest_opaque)


def walk_values(value: Any) -> Iterator[Any]:
    """Every value inside ``value``, object keys included, iteratively."""
    stack = [value]
    while stack:
        v = stack.pop()
        yield v
        if isinstance(v, dict):
            stack.extend(v.keys())
            stack.extend(v.values())
        elif isinstance(v, list):
            stack.extend(v)
