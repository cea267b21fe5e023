"""Our encoders, SSE decoder and validator, judged by the reference client's schemas.

The judge is ``@ag-ui/core`` 1.0.0's ``EventSchemas`` (zod), in node (the
``reference_judge`` fixture: one process for the session). Every event gets two
zod verdicts (tests/support/verdicts.py): of the event as given, which is what a
client reading ``data: <that JSON>`` parses, and of ``omitOptionalNulls(event)``,
which is what ``@ag-ui/encoder`` writes for it. The columns:

* ``proto`` (``encode_proto``) and ``sse`` (``encode_sse``), judged by the second:
  both encoders apply the reference's null rule, so an optional key set to None is
  absent, not a null the client refuses;
* ``sse_decode`` (``decode`` of ``data: <json>\\n\\n``, default options) and
  ``validate`` (``validate_event``), judged by the first.

Each column accepts exactly what its judge accepts, except where ``INTENDED`` says
otherwise (we refuse on purpose, each with its reason; docs/errors.md "Where we are
stricter than the reference's schemas" has a row for each). Where either encoder
refuses an event both must say the same, class and text (each transport's own
nesting limit aside: ``TRANSPORT_LIMITS``).

Inputs: ``mutation_corpus()`` (every fixed mutation of every schema place of real
events: a dropped key, another JSON type, a wrong word, big integers, NaN, lone
surrogates, extra keys, deep nesting; counted and reproducible) and
``judged_events()`` (hypothesis: a valid event of one of the 31 types, then up to
two mutations with drawn values). Both run on the backend of the pass: Cython, then
the pure twins (AGUI_WIRE_PURE=1).

``make judge-campaign`` runs the file with many more hypothesis examples and prints
each column's confusion matrix against zod and every class of disagreement.
"""

from __future__ import annotations

import os
import re
import reprlib
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given

from tests.support.corpus import EVENT_TYPES
from tests.support.mutations import (
    Facts,
    facts,
    judged_events,
    mutation_corpus,
    pattern,
    walk_values,
)
from tests.support.verdicts import (
    COLUMNS,
    JUDGED_BY,
    Judgement,
    Outcome,
    ReferenceJudge,
    ReferenceShapes,
    outcomes,
)

pytestmark = pytest.mark.interop

ERRORS_DOC = Path(__file__).resolve().parents[2] / "docs" / "errors.md"
DOC_SECTION = "## Where we are stricter than the reference's schemas"
ENCODERS = frozenset({"proto", "sse"})

# docs/errors.md "Limits": a binary encoder takes a JSON value max_depth = 1024
# containers deep; SSE writers and readers 1023 levels below the event object.
MAX_DEPTH = 1024
SSE_MAX_NESTING = 1024


# -- where we refuse what zod accepts, on purpose -------------------------------------------


@dataclass(frozen=True)
class Difference:
    name: str  # the first cell of its row in docs/errors.md
    columns: frozenset[str]
    applies: Callable[[Facts], bool]  # of the event as the column sees it
    reason: str


def _past_a_double(n: int) -> bool:
    try:
        float(n)
    except OverflowError:
        return True
    return False


INTENDED: tuple[Difference, ...] = (
    Difference(
        "NaN and ±Infinity",
        ENCODERS,
        lambda f: f.nonfinite,
        "JSON has no such numbers: JSON.stringify writes null, which zod refuses in a "
        "number field and which changes the data anywhere else",
    ),
    Difference(
        "a lone surrogate",
        ENCODERS | {"sse_decode"},
        lambda f: f.lone_surrogate,
        "not Unicode: UTF-8 cannot carry it (the reference's protobuf writes U+FFFD, its "
        "JSON an escape the client reads back as a broken string)",
    ),
    Difference(
        "an integer beyond ±2^53",
        ENCODERS,
        lambda f: f.biggest_int > 2**53,
        "a JS peer reads it rounded (JSON.parse, a protobuf double): silently another "
        "number; lossy_numbers=True rounds it on purpose",
    ),
    Difference(
        "a number past the largest double",
        frozenset({"sse_decode"}),
        lambda f: _past_a_double(f.biggest_int),
        "JSON.parse makes it Infinity; a Python reader cannot hold it without loss",
    ),
    Difference(
        "JSON nested past max_depth",
        frozenset({"proto"}),
        lambda f: f.opaque_depth > MAX_DEPTH,
        "bounded work and memory for every reader; zod's z.any() has no bound",
    ),
    Difference(
        "JSON nested past 1023 levels below the event",
        frozenset({"sse", "sse_decode"}),
        lambda f: f.depth > SSE_MAX_NESTING,
        "what the SSE readers (orjson) read; zod's z.any() has no bound",
    ),
)


# -- one event, every column -------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    ok: bool
    why: str  # "zod", or an INTENDED name


def expected(column: str, event: Any, seen: Facts, judgement: Judgement) -> Expected:
    """What ``column`` must say of ``event``; ``seen``: the facts of what the column
    looks at (the whole event: the encoders hold the keys no schema names to be JSON
    values too, though protobuf drops them)."""
    for d in INTENDED:
        if column in d.columns and d.applies(seen):
            return Expected(False, d.name)
    return Expected(judgement[JUDGED_BY[column]].ok, "zod")


@dataclass(frozen=True)
class Row:
    source: str  # "<base event> <mutation kind>", or "hypothesis"
    event: Any
    judgement: Judgement
    outcomes: dict[str, Outcome | None]
    expectations: dict[str, Expected]

    def expected(self, column: str) -> Expected:
        return self.expectations[column]


@dataclass(frozen=True)
class Reference:
    judge: ReferenceJudge
    shapes: ReferenceShapes

    def rows(self, sources: list[str], events: list[Any]) -> list[Row]:
        rows = []
        for source, event, judgement in zip(sources, events, self.judge.judge(events), strict=True):
            whole = facts(event)
            expectations = {c: expected(c, event, whole, judgement) for c in COLUMNS}
            rows.append(Row(source, event, judgement, outcomes(event), expectations))
        return rows


REPORT = os.environ.get("AGUI_WIRE_JUDGE_REPORT") == "1"


@pytest.fixture(scope="module")
def reference(
    reference_judge: ReferenceJudge, node_harness: Any, request: pytest.FixtureRequest
) -> Iterator[Reference]:
    ref = Reference(
        reference_judge, ReferenceShapes(node_harness.shapes(), node_harness.zod_objects())
    )
    yield ref
    if REPORT:
        capture = request.config.pluginmanager.get_plugin("capturemanager")
        terminal = request.config.pluginmanager.get_plugin("terminalreporter")
        assert capture is not None
        assert terminal is not None
        with capture.global_and_fixture_disabled():  # the report, not the test's output
            for title, rows in CAMPAIGN.items():
                terminal.write_line(f"\n== {title}\n{report(rows)}")


# The rows each kind of input made, for the report (AGUI_WIRE_JUDGE_REPORT=1 only).
CAMPAIGN: dict[str, list[Row]] = defaultdict(list)


_REPR = reprlib.Repr()  # bounded: the corpus nests 2,000 deep
_REPR.maxlevel, _REPR.maxdict, _REPR.maxlist, _REPR.maxstring = 6, 8, 8, 80


def _short(value: Any, n: int = 200) -> str:
    text = _REPR.repr(value).encode("ascii", "backslashreplace").decode()
    return text if len(text) <= n else text[:n] + "..."


def _classes(members: Iterable[tuple[tuple[str, ...], Row, str]]) -> list[str]:
    """``(class, row, what happened)`` grouped by class, biggest first, one example each."""
    groups: dict[tuple[str, ...], list[tuple[Row, str]]] = defaultdict(list)
    for key, row, said in members:
        groups[key].append((row, said))
    lines = []
    for key, found in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        row, said = found[0]
        lines.append(f"{len(found)} x {' '.join(key)}: {said}, e.g. {_short(row.event)}")
    return lines


def disagreements(rows: Iterable[Row], column: str, want: bool) -> list[str]:
    """Where ``column`` does not say ``want`` though it must, by class (the kind of
    mutation, the path of zod's first issue or the intended difference)."""
    found = []
    for row in rows:
        out = row.outcomes[column]
        exp = row.expected(column)
        if out is None or exp.ok is not want or out.ok is want:
            continue
        issues = row.judgement[JUDGED_BY[column]].issues
        where = f"{pattern(issues[0][0])} ({issues[0][1]})" if issues else exp.why
        kind = row.source.rsplit(" ", 1)[-1].split(":")[0]
        said = "accepted" if out.ok else f"refused: {_short(out.message, 160)}"
        found.append(((kind, where), row, f"{column} {said}; by {exp.why}"))
    return _classes(found)


def _reason(words: tuple[str, str] | None) -> str:
    """An error without its particulars (path, values): what kind of refusal it is."""
    if words is None:
        return "accepted"
    text = re.sub(r"'[^']*'|\"[^\"]*\"|-?\d+", "_", words[1].split(": ", 1)[-1])
    return f"{words[0]} {text}"


# The INTENDED rows that are each transport's own limit (a binary JSON value's
# max_depth, an SSE event's nesting for its readers): where one of them decides, the
# two encoders may differ.
TRANSPORT_LIMITS = frozenset(
    {"JSON nested past max_depth", "JSON nested past 1023 levels below the event"}
)


def same_refusals(rows: Iterable[Row]) -> list[str]:
    """Events an encoder refuses where the other does not say the same, class and text
    (a transport's own nesting limit aside)."""
    found = []
    for row in rows:
        proto, sse = row.outcomes["proto"], row.outcomes["sse"]
        assert proto is not None
        assert sse is not None
        if (proto.ok and sse.ok) or proto.words == sse.words:
            continue
        if {row.expected("proto").why, row.expected("sse").why} & TRANSPORT_LIMITS:
            continue
        key = (f"proto [{_reason(proto.words)}]", f"sse [{_reason(sse.words)}]")
        found.append((key, row, f"{proto.words} != {sse.words}"))
    return _classes(found)


def report(rows: list[Row]) -> str:
    """Each column against its judge (cells: zod's verdict x the column's, and what
    explains a difference), then every class of disagreement."""
    rejected = sum(not r.judgement.wire.ok for r in rows)
    lines = [f"{len(rows)} events, zod rejects {rejected} (as written by the reference encoder)"]
    for column in COLUMNS:
        cells: Counter[str] = Counter()
        for row in rows:
            out = row.outcomes[column]
            if out is None:
                continue
            zod = row.judgement[JUDGED_BY[column]].ok
            cell = f"zod {'accepts' if zod else 'rejects'}, {'accepted' if out.ok else 'refused'}"
            if zod != out.ok:
                why = row.expected(column).why
                cell += f" [{'UNEXPLAINED' if why == 'zod' else why}]"
            cells[cell] += 1
        lines.append(f"{column} (judged by zod on the {JUDGED_BY[column]}):")
        lines += [f"  {n:6d}  {cell}" for cell, n in sorted(cells.items())]
    for column in COLUMNS:
        for want in (True, False):
            what = "false refusal" if want else "false acceptance"
            lines += [f"{column} {what}: {d}" for d in disagreements(rows, column, want)]
    lines += [f"transports: {d}" for d in same_refusals(rows)]
    return "\n".join(lines)


# -- the deterministic corpus --------------------------------------------------------------------


@pytest.fixture(scope="module")
def corpus_rows(reference: Reference) -> list[Row]:
    corpus = mutation_corpus()
    rows = reference.rows([f"{name} {m.kind}" for name, m in corpus], [m.event for _, m in corpus])
    if REPORT:
        CAMPAIGN["the mutation corpus"] = rows
    return rows


def test_corpus_is_what_it_claims(corpus_rows: list[Row]) -> None:
    assert len(corpus_rows) > 4000
    types = {
        r.event["type"]
        for r in corpus_rows
        if isinstance(r.event, dict) and isinstance(r.event.get("type"), str)
    }
    assert set(EVENT_TYPES) <= types
    kinds = Counter(r.source.rsplit(" ", 1)[-1].split(":")[0] for r in corpus_rows)
    for kind in ("drop", "retype", "word", "bigint", "nan", "surrogate", "extra", "deep"):
        assert kinds[kind] > 0, kind
    rejected = sum(not r.judgement.wire.ok for r in corpus_rows)
    assert 0.3 * len(corpus_rows) < rejected < 0.9 * len(corpus_rows), rejected
    # the two verdicts differ, and only where an optional key is null (or NaN, which
    # JSON.stringify writes as null)
    split = [r for r in corpus_rows if r.judgement.wire.ok != r.judgement.event.ok]
    assert split
    assert all(None in walk_values(r.event) or facts(r.event).nonfinite for r in split)


@pytest.mark.parametrize("column", COLUMNS)
def test_corpus_no_false_refusals(corpus_rows: list[Row], column: str) -> None:
    """What zod accepts, the column accepts (INTENDED aside)."""
    assert disagreements(corpus_rows, column, want=True) == []


@pytest.mark.parametrize("column", COLUMNS)
def test_corpus_no_false_acceptances(corpus_rows: list[Row], column: str) -> None:
    """What zod or INTENDED refuses, the column refuses."""
    assert disagreements(corpus_rows, column, want=False) == []


def test_corpus_refusals_are_the_same_on_both_transports(corpus_rows: list[Row]) -> None:
    problems = same_refusals(corpus_rows)
    assert problems == [], f"{len(problems)}: {problems[:20]}"


def test_every_list_entry_is_met(corpus_rows: list[Row]) -> None:
    """No dead entries: each explains some corpus event for each of its columns."""
    met = Counter(
        (column, row.expected(column).why)
        for row in corpus_rows
        for column in COLUMNS
        if row.outcomes[column] is not None
    )
    for d in INTENDED:
        for column in d.columns:
            assert met[(column, d.name)] > 0, (column, d.name)


def test_intended_differences_are_documented() -> None:
    text = ERRORS_DOC.read_text()
    assert DOC_SECTION in text
    section = text.split(DOC_SECTION, 1)[1].split("\n## ", 1)[0]
    rows = {line.split("|")[1].strip() for line in section.splitlines() if line.startswith("| ")}
    assert {d.name for d in INTENDED} <= rows


# -- hypothesis ----------------------------------------------------------------------------------


def _row(reference: Reference, event: Any) -> Row:
    [row] = reference.rows(["hypothesis"], [event])
    return row


@given(event=judged_events())
def test_generated_no_false_refusals(reference: Reference, event: Any) -> None:
    row = _row(reference, event)
    if REPORT:
        CAMPAIGN["hypothesis (judged_events)"].append(row)
    for column in COLUMNS:
        assert disagreements([row], column, want=True) == []


@pytest.mark.parametrize("column", COLUMNS)
@given(event=judged_events())
def test_generated_no_false_acceptances(reference: Reference, event: Any, column: str) -> None:
    assert disagreements([_row(reference, event)], column, want=False) == []


@given(event=judged_events())
def test_generated_refusals_are_the_same_on_both_transports(
    reference: Reference, event: Any
) -> None:
    assert same_refusals([_row(reference, event)]) == []
