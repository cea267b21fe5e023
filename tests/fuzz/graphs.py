"""Python object graphs for the encoder fuzz target, built from fuzzer bytes.

Strategy: ``Builder`` reads the input as a program over a corpus event (the first
two bytes pick it): one byte per node, in pre-order, says what to do with that
node; ``0`` (and running out of input) keeps it, so ``b"\\x00\\x07"`` is corpus
event 7 unchanged. Other bytes turn the node into an odd container or scalar that
holds the same value (subclasses whose methods lie, other mappings, tuples, enums
including the SDK's ``EventType``), replace it with a generated value (big ints,
NaN, lone surrogates, bytes, sets, objects, non-str keys...), add an entry, nest
it near or beyond 1,024 levels, repeat it thousands of times, share a node
already built (a DAG, legal) or put an ancestor inside it (a cycle through
whatever containers lie between).

Every node is built twice at once: the graph handed to the encoders, and its
*twin* in exact JSON types (dict, list, str, int, float, bool, None), with the
same sharing and the same cycles; values JSON has no type for (sets, bytes,
objects, plain enums) and keys that are not strings are the same object in both.
The encoders read a value by what it holds, never through its methods, so the
graph and its twin must encode to the same bytes or the same ``EncodeError``.
Where that cannot hold (two keys of one object equal only as plain strings, since
a ``Str`` hashes and compares as it likes) ``Builder.ambiguous`` is set.
No recursion deeper than ``GEN_DEPTH`` generated levels; nests are built in loops.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import enum
import math
import struct
import uuid
from collections import OrderedDict, UserDict, namedtuple
from collections.abc import Callable, Iterator, Mapping
from types import MappingProxyType
from typing import Any

__all__ = [
    "Builder",
    "Dict",
    "Float",
    "Int",
    "List",
    "Str",
    "Tuple",
]

# -- odd values: subclasses whose methods lie ----------------------------------------


class Dict(dict):  # type: ignore[type-arg]
    """A dict subclass whose methods lie: the encoders read its contents."""

    def items(self) -> Any:
        return [("lie", 1)]

    def keys(self) -> Any:
        return ["lie"]

    def values(self) -> Any:
        return [1]

    def __iter__(self) -> Any:
        return iter(["lie"])

    def __getitem__(self, key: Any) -> Any:
        return 1

    def get(self, key: Any, default: Any = None) -> Any:
        return 1

    def __len__(self) -> int:
        return 1


class List(list):  # type: ignore[type-arg]
    """A list subclass whose methods lie."""

    def __iter__(self) -> Any:
        return iter([1])

    def __getitem__(self, i: Any) -> Any:
        return 1

    def __len__(self) -> int:
        return 1


class Tuple(tuple):  # type: ignore[type-arg]
    def __iter__(self) -> Any:
        return iter([1])

    def __getitem__(self, i: Any) -> Any:
        return 1

    def __len__(self) -> int:
        return 1


class Str(str):
    """A str whose methods lie: the encoders write the characters it holds."""

    def __str__(self) -> str:
        return "lie"

    def __repr__(self) -> str:
        return "'lie'"

    def encode(self, *args: Any, **kwargs: Any) -> bytes:
        return b"lie"

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 1

    def __len__(self) -> int:
        return 0

    def isascii(self) -> bool:
        return False


class Int(int):
    def __int__(self) -> int:
        return 7

    def __index__(self) -> int:
        return 7

    def __float__(self) -> float:
        return 7.0

    def __repr__(self) -> str:
        return "7"

    def __str__(self) -> str:
        return "7"

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 1

    def __lt__(self, other: object) -> bool:
        return True

    def __le__(self, other: object) -> bool:
        return True

    def __gt__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True


class Float(float):
    def __float__(self) -> float:
        return 7.0

    def __repr__(self) -> str:
        return "7.0"

    def __str__(self) -> str:
        return "7.0"

    def is_integer(self) -> bool:
        return not float.is_integer(self)

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 1


class Frozen(Mapping[Any, Any]):
    """A Mapping that is no dict (any Mapping is an object to the encoders)."""

    def __init__(self) -> None:
        self.data: dict[Any, Any] = {}

    def __getitem__(self, key: Any) -> Any:
        return self.data[key]

    def __iter__(self) -> Iterator[Any]:
        return iter(self.data)

    def __len__(self) -> int:
        return len(self.data)


class Color(str, enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Plain(enum.Enum):
    A = "a"


class Flag(enum.IntFlag):
    X = 1


Pair = namedtuple("Pair", "a b")


def _sdk_event_type() -> type[enum.Enum] | None:
    try:
        from ag_ui.core import EventType
    except ImportError:
        return None
    return EventType  # type: ignore[no-any-return]


EVENT_TYPE = _sdk_event_type()

# -- tables ---------------------------------------------------------------------------

INTS = (
    0, -1, 1, 2**31, 2**32, 2**53 - 1, 2**53, 2**53 + 1, -(2**53), -(2**53) - 1, 2**60,
    2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, -(2**64), 10**400, -(10**400),
    10**5000,
    10**19, 2**32 - 2, 2**32 - 1,
)  # fmt: skip
FLOATS = (
    0.0, -0.0, 1.5, 3.0, 2.0**53, 2.0**53 + 2, 2.0**63, 2.0**64, 1e308, -1e308, 5e-324, 1e-7,
    1e21, 0.1, math.nan, math.inf, -math.inf, float.fromhex("0x1.fffffffffffffp+1023"),
)  # fmt: skip
# what strings are made of: JSON escapes, line ends SSE must not let through, lone
# surrogates (paired ones make a valid astral character), the ends of the planes
CHARS = (
    "a", "é", "\x00", "\n", "\r", '"', "\\", "/", "~", "\x7f", "\u2028", "\ufeff", "\uffff",
    "\ud800", "\udbff", "\udc00", "\udfff", "😀", "\U0010ffff", "0", "1", " ", "type", ":null",
)  # fmt: skip
DEPTHS = (2, 253, 254, 255, 256, 1021, 1022, 1023, 1024, 1025, 2000, 10_001)
SIZES = (0, 1, 300, 4096, 20_000)
GEN_DEPTH = 6  # generated containers inside each other (nests are loops, not this)
BUDGET = 10_000  # nodes per input: bounds the time one execution takes (60,000 took 16 s
# instrumented, past libFuzzer's 10 s: every node is walked by ~14 encoder passes)

Put = Callable[[Any, Any], None]


def _dict_like(cls: Callable[[], Any]) -> Callable[[], tuple[Any, Put]]:
    def make() -> tuple[Any, Put]:
        d = cls()
        return d, lambda k, v: dict.__setitem__(d, k, v)

    return make


def _item_set(cls: Callable[[], Any]) -> Callable[[], tuple[Any, Put]]:
    def make() -> tuple[Any, Put]:
        d = cls()
        return d, d.__setitem__

    return make


def _proxy() -> tuple[Any, Put]:
    behind: dict[Any, Any] = {}
    return MappingProxyType(behind), behind.__setitem__


def _frozen() -> tuple[Any, Put]:
    m = Frozen()
    return m, m.data.__setitem__


def _list_like(cls: Callable[[], Any]) -> Callable[[], tuple[Any, Put]]:
    def make() -> tuple[Any, Put]:
        seq = cls()
        return seq, lambda k, v: list.append(seq, v)

    return make


# container kinds filled after they exist, so they can sit on a cycle:
# name -> make() -> (empty container, put(key, value))
MAPPINGS: dict[str, Callable[[], tuple[Any, Put]]] = {
    "dict": _dict_like(dict),
    "Dict": _dict_like(Dict),
    "defaultdict": _dict_like(lambda: collections.defaultdict(list)),
    "OrderedDict": _item_set(OrderedDict),
    "UserDict": _item_set(UserDict),
    "mappingproxy": _proxy,
    "Frozen": _frozen,
}
SEQUENCES: dict[str, Callable[[], tuple[Any, Put]]] = {
    "list": _list_like(list),
    "List": _list_like(List),
}
# built from their items once those exist: on a cycle only between mutable ones
TUPLES: dict[str, Callable[[list[Any]], Any]] = {
    "tuple": tuple,
    "Tuple": Tuple,
    "namedtuple": lambda items: Pair(*items) if len(items) == 2 else Pair(items, None),
}
ARRAYS = (*SEQUENCES, *TUPLES)

# values JSON has no type for: refused on both transports, the same object in the twin
FOREIGN: tuple[Callable[[], Any], ...] = (
    lambda: {1, 2},
    frozenset,
    lambda: b"bytes",
    lambda: bytearray(b"x"),
    lambda: memoryview(b"m"),
    object,
    lambda: Plain.A,
    lambda: datetime.datetime(2025, 1, 1),
    lambda: uuid.UUID(int=1),
    lambda: decimal.Decimal("1.5"),
    lambda: 1j,
    lambda: collections.deque([1]),
    lambda: range(3),
    lambda: iter([1]),
)
ODD_SCALARS: tuple[Any, ...] = (
    Color.RED, Level.HIGH, Flag.X | 2, Str(""), Int(2**64), Float(math.nan), Float(-0.0)
)  # fmt: skip

Pair2 = tuple[Any, Any]  # (graph, twin)


class Builder:
    """One input's graph and twin (see the module doc): ``build(value)`` turns a
    corpus value into ``(graph, twin)``; ``ambiguous`` is set when the two may
    rightly encode differently."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0
        self.budget = BUDGET
        self.ambiguous = False
        self.open: list[Pair2] = []  # mutable containers being filled, outermost first
        self.done: list[Pair2] = []  # containers built, for sharing
        # nodes a container expands to (shared ones counted each time): the budget
        # bounds the expansion, so a DAG cannot blow up exponentially
        self.sizes: dict[int, int] = {}
        self.deep = False  # a nest was built (the SDK's pydantic recurses on those)

    # -- reading the input --

    def byte(self) -> int:
        if self.pos >= len(self.data):
            return 0
        self.pos += 1
        return self.data[self.pos - 1]

    def u16(self) -> int:
        return self.byte() << 8 | self.byte()

    def pick(self, items: tuple[Any, ...] | list[Any]) -> Any:
        return items[self.byte() % len(items)]

    def weight(self, graph: Any) -> int:
        if isinstance(graph, str):  # corpus strings run to tens of kilobytes
            return 1 + len(graph) // 16
        return self.sizes.get(id(graph), 1)

    def share(self) -> Pair2 | None:
        """A container built before, if the budget allows another copy of it."""
        if not self.done:
            return None
        graph, twin = self.pick(self.done)
        if self.weight(graph) > self.budget:
            return None
        self.budget -= self.weight(graph)
        return graph, twin

    def done_with(self, graph: Any, twin: Any, size: int) -> Pair2:
        self.sizes[id(graph)] = size
        self.done.append((graph, twin))
        return graph, twin

    # -- corpus values, rebuilt --

    def build(self, value: Any) -> Pair2:
        """``value`` rebuilt, one decision byte per node (0x00-0x8f: keep it)."""
        op = self.byte()
        self.budget -= 1
        if op < 0x90 or self.budget <= 0:
            return self.copy(value, odd=False)
        action = (op - 0x90) % 8
        if action == 0:
            return self.copy(value, odd=True)
        if action == 1:
            return self.generate(0)
        if action == 2:
            return self.copy(value, odd=self.byte() & 1 == 1, extra=True)
        if action == 3 and self.open:
            return self.pick(self.open)  # type: ignore[no-any-return]  # a cycle
        if action == 4 and (shared := self.share()) is not None:
            return shared
        if action == 5:
            return self.nest(self.copy(value, odd=False))
        if action == 6:
            return self.repeat(self.copy(value, odd=False))
        return self.copy(value, odd=False)

    def copy(self, value: Any, *, odd: bool, extra: bool = False) -> Pair2:
        """``value`` with its children through ``build``: as itself, or (``odd``)
        as another kind holding the same value; ``extra``: one generated entry more."""
        if isinstance(value, dict):
            kind = self.pick(list(MAPPINGS)) if odd else "dict"
            entries: list[Any] = [(k, k, v) for k, v in value.items()]
            if extra:
                entries.insert(self.byte() % (len(entries) + 1), None)
            return self.mapping(kind, entries)
        if isinstance(value, list):
            kind = self.pick(ARRAYS) if odd else "list"
            items: list[Any] = [(v,) for v in value]
            if extra:
                items.insert(self.byte() % (len(items) + 1), None)
            return self.array(kind, items)
        if odd:
            return self.odd_scalar(value)
        return value, value

    def odd_scalar(self, value: Any) -> Pair2:
        """A str, int or float as a subclass or enum member with the same value."""
        choice = self.byte()
        if isinstance(value, bool) or value is None:
            return value, value
        if isinstance(value, str):
            if EVENT_TYPE is not None and choice & 1 and value in _EVENT_TYPES:
                return EVENT_TYPE(value), value
            return Str(value), value
        if isinstance(value, int):
            return (Level.HIGH, 3) if value == 3 and choice & 1 else (Int(value), value)
        if isinstance(value, float):
            return Float(value), value
        return value, value

    def mapping(self, kind: str, entries: list[Any]) -> Pair2:
        """A mapping of ``kind``; entries are (graph key, twin key, corpus value) or
        ``None`` for a generated key and value."""
        graph, put = MAPPINGS[kind]()
        twin: dict[Any, Any] = {}
        size = 1
        self.open.append((graph, twin))
        for entry in entries:
            if entry is None:
                key_g, key_t = self.key()
                g, t = self.generate(1)
            else:
                key_g, key_t, v = entry
                g, t = self.build(v)
            put(key_g, g)
            size += self.weight(g)
            if key_t in twin:  # equal only as plain values: Str("a") and "a"
                self.ambiguous = True
            twin[key_t] = t
        self.open.pop()
        return self.done_with(graph, twin, size)

    def array(self, kind: str, items: list[Any]) -> Pair2:
        """An array of ``kind``; items are (corpus value,) or ``None`` (generated)."""
        twin: list[Any] = []
        size = 1
        if kind in SEQUENCES:
            graph, put = SEQUENCES[kind]()
            self.open.append((graph, twin))
        else:
            parts: list[Any] = []
            put = lambda k, v: parts.append(v)  # noqa: E731
        for item in items:
            g, t = self.generate(1) if item is None else self.build(item[0])
            put(None, g)
            size += self.weight(g)
            twin.append(t)
        if kind in SEQUENCES:
            self.open.pop()
        else:
            graph = TUPLES[kind](parts)
            if kind == "namedtuple" and len(parts) != 2:
                twin = [twin, None]
        return self.done_with(graph, twin, size)

    # -- values made from the input alone --

    def key(self) -> Pair2:
        """An object key: mostly a string, else a Str, an enum or a non-string."""
        choice = self.byte() % 12
        if choice < 6:
            text = self.text()
            return text, text
        if choice == 6:
            text = self.text()
            return Str(text), text
        if choice == 7 and EVENT_TYPE is not None:
            member = self.pick(list(EVENT_TYPE))
            return member, member.value
        # not strings: the same object in the twin (refused, named by repr)
        other = self.pick((1, None, True, 2.5, ("t",), Int(4), Level.HIGH, Color.RED))
        return other, other.value if isinstance(other, Color) else other

    def text(self) -> str:
        return "".join(self.pick(CHARS) for _ in range(self.byte() % 9))

    def generate(self, depth: int) -> Pair2:
        self.budget -= 1
        choice = self.byte()
        kind = choice % 16
        if kind == 0:
            v: Any = self.pick((None, True, False))
        elif kind == 1:
            v = self.pick(INTS)
        elif kind == 2:
            v = self.pick(FLOATS)
        elif kind == 3:
            raw = bytes(self.byte() for _ in range(8))
            v = (
                struct.unpack("<d", raw)[0]
                if choice & 0x10
                else int.from_bytes(raw, "big", signed=True)
            )
        elif kind == 4:
            v = self.text()
        elif kind == 5:
            v = self.pick(FOREIGN)()
        elif kind == 6:
            g, t = self.generate(GEN_DEPTH)
            return self.odd_scalar(t) if g is t else (g, t)
        elif kind in (7, 8) and depth < GEN_DEPTH:
            n = self.byte() % 5
            if kind == 7:
                return self.mapping(self.pick(list(MAPPINGS)), [None] * n)
            return self.array(self.pick(ARRAYS), [None] * n)
        elif kind == 9 and self.open:
            return self.pick(self.open)  # type: ignore[no-any-return]
        elif kind == 10 and (shared := self.share()) is not None:
            return shared
        elif kind == 11:
            return self.nest(self.generate(GEN_DEPTH))
        elif kind == 12:
            return self.repeat(self.generate(GEN_DEPTH))
        elif kind == 13 and EVENT_TYPE is not None:
            member = self.pick(list(EVENT_TYPE))
            return member, member.value
        else:
            odd = self.pick(ODD_SCALARS)
            return odd, _plain(odd)
        return v, v

    def nest(self, inner: Pair2) -> Pair2:
        """``inner`` inside hundreds or thousands of containers of one kind (or two
        alternating), built in a loop."""
        levels = self.pick(DEPTHS)
        kinds = [
            self.pick(["list", "tuple", "dict", "Dict", "List", "Tuple", "UserDict", "Frozen"])
        ]
        if self.byte() & 1:
            kinds.append(self.pick(["list", "tuple", "dict", "mappingproxy"]))
        graph, twin = inner
        size = self.weight(graph) + levels
        self.budget -= levels
        self.deep = True
        for i in range(levels):
            kind = kinds[i % len(kinds)]
            if kind in MAPPINGS:
                g, put = MAPPINGS[kind]()
                put("k", graph)
                graph, twin = g, {"k": twin}
            elif kind in SEQUENCES:
                g, put = SEQUENCES[kind]()
                put(None, graph)
                graph, twin = g, [twin]
            else:
                graph, twin = TUPLES[kind]([graph]), [twin]
        self.sizes[id(graph)] = size
        return graph, twin

    def repeat(self, inner: Pair2) -> Pair2:
        """A big array: ``inner`` many times (shared), or many distinct ints."""
        g, t = inner
        n = max(0, min(self.pick(SIZES), self.budget // self.weight(g)))
        self.budget -= n * self.weight(g)
        if self.byte() & 1:
            items = list(range(n))
            graph: Any = tuple(items) if n & 1 else items
            twin = items
        else:
            graph, twin = [g] * n, [t] * n
        self.sizes[id(graph)] = 1 + n * self.weight(g)
        return graph, twin


_EVENT_TYPES = frozenset(m.value for m in EVENT_TYPE) if EVENT_TYPE is not None else frozenset()


def _plain(value: Any) -> Any:
    """The plain JSON value of an odd scalar."""
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, int):
        return int.__int__(value)
    if isinstance(value, float):
        return float.__float__(value)
    return value
