"""Every crash or disagreement the fuzzers (tests/fuzz/) found, as a regression test.

Strategy: each input is inline as a bytes literal (or built with tests/support/wire.py
when the shape is the point) and run through the same check the fuzz target
makes: ``fuzz_differential.compare`` for the payload decoders, the target's
``test_one_input`` for the others. The deliberate exceptions docs/errors.md
lists are pinned here too, so a change to either side is noticed; a bug in code
being written by someone else is a strict xfail until it is fixed. Finally every
target replays its seed corpus, so the targets themselves cannot rot between
fuzz runs.
"""

from __future__ import annotations

import argparse
import base64
import enum
import importlib
from collections import OrderedDict
from pathlib import Path
from typing import Any

import pytest

from agui_wire import DecodeError, EncodeError, InvalidEvent, LimitExceeded, encode_sse, normalize
from agui_wire._codec import proto_reader, proto_writer, sse_writer, upb
from agui_wire.schema import ROLE_KEYS
from tests.fuzz import fuzz_differential, run, seeds
from tests.fuzz.fuzzlib import Err, Ok, fast_module, outcome, payload_decoders, same_outcome
from tests.support.wire import base, entry, ld, string, tag, v_list, v_null, v_struct, vi

DECODERS = payload_decoders()
FAST = fast_module()
FAST_SSE = [FAST.encode_sse] if FAST is not None else []


def ids(decoders: list[tuple[str, Any]]) -> list[Any]:
    return [pytest.param(fn, id=name) for name, fn in decoders]


# -- a field straddling two occurrences of a merged message -------------------------
# Found by fuzz_differential (seeded from the malformed cases). Protobuf merges
# repeated occurrences of a singular message field as if each were parsed into the
# same message in turn: each must be well formed on its own. proto_reader and the
# Cython decoder parsed the concatenation (accepting b"\x08" + b"\x01" as
# `type: 1`); upb and @ag-ui/proto refuse it (tests/interop/test_fuzz_findings.py).

STRADDLE_BASE_EVENT = b"\x12\t\n\x01\x08\n\x01\x01\x12\x01m"
STRADDLE_ARM = b"\x12\x05\n\x02\x08\x01\x12\x12\x02\x01m"


def test_straddle_inputs_are_what_they_claim() -> None:
    assert ld(2, ld(1, b"\x08"), ld(1, b"\x01"), string(2, "m")) == STRADDLE_BASE_EVENT
    assert ld(2, base(1), b"\x12") + ld(2, b"\x01m") == STRADDLE_ARM


@pytest.mark.parametrize("decode", ids(DECODERS))
@pytest.mark.parametrize("payload", [STRADDLE_BASE_EVENT, STRADDLE_ARM], ids=["base", "arm"])
def test_field_straddling_merged_occurrences_is_refused(decode: Any, payload: bytes) -> None:
    with pytest.raises(DecodeError):
        decode(payload)


def test_error_offsets_inside_merged_occurrences_are_payload_offsets() -> None:
    # the second base_event occurrence has a rawEvent string with a bad byte: the
    # offset counts in the payload, not in a joined copy of the occurrences
    payload = ld(2, base(1), string(2, "m"), ld(1, ld(3, ld(3, b"ok\xff"))))
    with pytest.raises(DecodeError) as info:
        proto_reader.decode_payload(payload)
    assert info.value.offset == payload.index(b"\xff")


# -- a frame that is too deep and broken: the same class from every decoder ---------
# Found by fuzz_differential: with max_depth=3, proto_reader met the depth first
# (LimitExceeded), upb's guard an unclosed group first (DecodeError). Rule now:
# LimitExceeded only for a frame that would decode with a higher limit.

TOO_DEEP_AND_BROKEN = (
    b":r\n\x02\x08\x06\x12l2j\n\x02\x08\x00\n\x02 \x01\n\x02 \x00\n\t\x11\x00\x00\x00"
    b"\x00\x00\x00\x00\x00\n\t\x11\x00\x00\x00\x00\x00\x00\xf8\xbf\n\x03\x1a\x01s\n"
    b"\x022\x00\n\x02*\x00\n+2)\n\t\x11\x00\x00\x00\x00\x00\x00\xf0?\n\x1c2\x1a\n\t"
    b"\x11\x00\x00\x00\x00\x00\x00\x00@\n\r2\x0b\n\t\x11\x00\x00\x00\x00\x00\x00\x08@"
    b"\n\x0c*\n\n\x08\xf3\x01k\x12\x03\x1a\x01v"
)


def test_too_deep_and_broken_is_a_decode_error_everywhere() -> None:
    fuzz_differential.compare(TOO_DEEP_AND_BROKEN, {"max_depth": 3})
    for _, decode in DECODERS:
        result = outcome(decode, TOO_DEEP_AND_BROKEN, max_depth=3)
        assert isinstance(result, Err)
        assert type(result.error) is DecodeError
        # deep but otherwise fine with a higher limit? no: the group is unclosed
        assert isinstance(outcome(decode, TOO_DEEP_AND_BROKEN), Err)


def test_too_deep_but_valid_stays_limit_exceeded() -> None:
    value = v_null()
    for _ in range(5):
        value = v_list(value)
    payload = ld(7, base(6), ld(2, value))
    for _, decode in DECODERS:
        with pytest.raises(LimitExceeded):
            decode(payload, max_depth=4)
        assert decode(payload, max_depth=5)["type"] == "STATE_SNAPSHOT"


def test_too_deep_and_invalid_utf8_is_a_decode_error() -> None:
    value = v_list(v_list(v_list(v_null())))
    payload = ld(7, base(6), ld(2, value), ld(1, ld(3, ld(3, b"\xff"))))
    for _, decode in DECODERS:
        result = outcome(decode, payload, max_depth=2)
        assert isinstance(result, Err)
        assert type(result.error) is DecodeError


# -- unknown groups nested deeply: skipped by every decoder -------------------------
# upb counts groups against its 100-level nesting cap and refused 100 nested
# unknown groups that the direct decoders skip; the upb path now lifts the cap
# when a frame has groups.


@pytest.mark.parametrize("levels", [99, 100, 5000])
def test_deeply_nested_unknown_groups_are_skipped(levels: int) -> None:
    payload = ld(2, base(1), string(2, "m")) + tag(15, 3) * levels + tag(15, 4) * levels
    fuzz_differential.compare(payload, {})
    assert upb.decode_payload(payload)["messageId"] == "m"


def test_groups_beyond_upbs_hard_limit_are_a_documented_exception() -> None:
    levels = 65_536  # upb cannot go deeper even with its cap lifted
    payload = ld(2, base(1), string(2, "m")) + tag(15, 3) * levels + tag(15, 4) * levels
    for name, decode in DECODERS:
        if name == "upb":
            with pytest.raises(DecodeError):
                decode(payload)
        else:
            assert decode(payload)["messageId"] == "m"


# -- map entries with foreign fields: a deliberate exception of the upb path --------
# Found by fuzz_differential. The direct decoders keep the entry, as @ag-ui/proto
# (ts-proto) does (checked against the package with tests/interop/harness.cjs);
# upb moves the whole entry to the Struct's unknown fields.

MAP_ENTRY_CASES = {
    "unknown-field": (v_struct(ld(1, string(1, "a"), ld(2, v_null()), string(6, "z"))), "a"),
    "key-as-varint": (v_struct(ld(1, vi(1, 1), ld(2, v_null()))), ""),
    "no-key-unknown": (v_struct(ld(1, string(6, "z"), ld(2, v_null()))), ""),
}


@pytest.mark.parametrize("case", list(MAP_ENTRY_CASES))
def test_map_entry_with_foreign_fields(case: str) -> None:
    value, key = MAP_ENTRY_CASES[case]
    payload = ld(7, base(6), ld(2, value))
    for name, decode in DECODERS:
        snapshot = decode(payload)["snapshot"]
        assert snapshot == ({} if name == "upb" else {key: None}), name


FOUND_MAP_ENTRY = (
    b"\x1ae\n`\x08\x02\x1a\\*Z\nX\n\x02l1\x12R*P\nN2\x02l2\x12H*F\nD\n\x02l3\x12>*<\n:"
    b"\n\x02l4\x124*2\n0\n\x02l5\x12**(\n&\n\x02l6\x12 *\x1e\n\x1c\n\x02l7\x12\x16*"
    b"\x14\n\x12\n\x02l8\x12\x0c*\n\n\x08\n\x02l9\x12\x02*\x00\x12\x01m"
)


def test_found_map_entry_case_is_recognised_as_the_exception() -> None:
    from tests.fuzz.fuzzlib import foreign_map_entry

    assert foreign_map_entry(FOUND_MAP_ENTRY)
    fuzz_differential.compare(FOUND_MAP_ENTRY, {})
    pure = proto_reader.decode_payload(FOUND_MAP_ENTRY)
    assert pure["rawEvent"]["l1"][""]["l3"]["l4"]  # key field 6 is unknown: key ""


# -- found in the Cython decoder while it was being written -------------------------
# fuzz_differential stopped on these twice (both fixed in _proto_reader.pxi since): a
# map entry whose Value has no kind must remove the key, and two list_value
# occurrences of one Value merge into one list.

KINDLESS_ENTRY = (
    b":/\n\x02\x08\x06\x12)*'\n\x0e\n\x01a\x12\t\x11\x00\x00\x00\x00\x00\x00\xf0?\n"
    b"\x0e\n\x01a\x12\t\x11\x00\x00\x00\x00\x00\x00\x00@\n\x05\n\x01a\x12\x00"
)
TWO_LISTS = (
    b": \n\x02\x08\x06\x12\x1a2\x0b\n\t\x11\x00\x00\x00\x00\x00\x00\xf0?2\x0b\n\t"
    b"\x11\x00\x00\x00\x00\x00\x00\x00@"
)


@pytest.mark.parametrize(
    ("payload", "snapshot"), [(KINDLESS_ENTRY, {}), (TWO_LISTS, [1, 2])], ids=["kindless", "lists"]
)
def test_found_in_the_cython_decoder(payload: bytes, snapshot: Any) -> None:
    fuzz_differential.compare(payload, {})
    for _, decode in DECODERS:
        assert decode(payload)["snapshot"] == snapshot


# -- a 10-byte varint with bits past 64 --------------------------------------------
# Found by fuzz_differential in a CI run: STEP_STARTED whose timestamp varint has
# 0x07 as its 10th byte. upb (like @ag-ui/proto's reader, see
# tests/interop/test_fuzz_findings.py) drops the bits past 64; the direct decoders
# refuse the varint, and so does the upb path's wire guard now (docs/errors.md).

OVERLONG_TIMESTAMP = b"z\x12\n\r\x08\x0e\x10\x81\x80\x80\x80\x80\x80\x80\xf0\xbf\x07\x12\x01s"


def test_overlong_input_is_what_it_claims() -> None:
    timestamp = b"\x10\x81\x80\x80\x80\x80\x80\x80\xf0\xbf\x07"
    assert ld(15, ld(1, vi(1, 14), timestamp), string(2, "s")) == OVERLONG_TIMESTAMP


@pytest.mark.parametrize("decode", ids(DECODERS))
@pytest.mark.parametrize("last", [0x02, 0x07, 0x7F])
def test_varint_bits_past_64_are_refused(decode: Any, last: int) -> None:
    payload = OVERLONG_TIMESTAMP.replace(b"\xbf\x07", b"\xbf" + bytes([last]))
    fuzz_differential.compare(payload, {})
    with pytest.raises(DecodeError, match="overflows 64 bits") as info:
        decode(payload)
    assert info.value.offset == 7


@pytest.mark.parametrize("decode", ids(DECODERS))
def test_a_full_64_bit_varint_is_read(decode: Any) -> None:
    payload = OVERLONG_TIMESTAMP.replace(b"\xbf\x07", b"\xbf\x01")
    fuzz_differential.compare(payload, {})
    # read whole; beyond 2^53, what @ag-ui/core's schemas reject: kept on request
    assert decode(payload, invalid_events="keep")["timestamp"] == -4620693217682128895
    with pytest.raises(InvalidEvent, match="/timestamp"):
        decode(payload)


# -- a Struct that is not a dict, in an event the Cython encoder hands over --------
# Found by fuzz_encode: _fast._json_value (which writes the JSON values of an event
# handed to proto_writer) took a Struct root for an exact dict, so a
# Mapping as ACTIVITY_SNAPSHOT content was written as an empty object (the dict size
# read from a non-dict). Such a root is proto_writer's to walk.


def test_fuzz_encode_struct_that_is_a_mapping() -> None:
    from tests.fuzz import fuzz_encode

    fuzz_encode.test_one_input(b"\x00\x01\x01\xf8-\xe8L0\x01\x900\x01")


# -- the targets replay their seeds --------------------------------------------------

TARGETS = ["fuzz_framer", "fuzz_payload", "fuzz_differential", "fuzz_sse", "fuzz_decode"]


@pytest.mark.parametrize("target", TARGETS)
def test_target_replays_its_seeds(target: str) -> None:
    module = importlib.import_module(f"tests.fuzz.{target}")
    items = seeds.seeds(module.SEEDS)
    assert len(items) > 100
    step = 1 if target != "fuzz_sse" else 3  # the SSE target is the slowest
    for data in items[::step]:
        module.test_one_input(data)


@pytest.mark.parametrize("target", run.TARGETS)
def test_target_replays_the_kept_corpus(target: str) -> None:
    # The campaign's minimized corpus (docs/errors.md, "Fuzzing and sanitizers"): every
    # input it kept runs through the target's own check, so what 10 M executions
    # reached stays covered in every CI run.
    module = importlib.import_module(f"tests.fuzz.{target}")
    inputs = run.kept_corpus(target)
    assert len(inputs) > 50, f"tests/fuzz/corpus/{target} is missing or nearly empty"
    for path in inputs:
        module.test_one_input(path.read_bytes())


@pytest.mark.parametrize("fresh", [False, True])
def test_fresh_runs_leave_the_kept_corpus_out(fresh: bool, tmp_path: Path) -> None:
    # sanitize-ci replays the kept corpus, then fuzzes --fresh: libFuzzer would read it
    # whole again before its clock starts
    args = argparse.Namespace(seconds=5, timeout=10, rss_limit_mb=0, max_len=64, fresh=fresh)
    seeds, corpus = tmp_path / "seeds", tmp_path / "corpus"
    cmd = run._command("fuzz_encode", args, seeds, corpus, tmp_path / "artifacts")
    assert cmd.index(str(corpus)) < cmd.index(str(seeds))  # new inputs go to the first
    assert (str(run.KEPT / "fuzz_encode") in cmd) is not fresh


def test_fast_decoder_is_fuzzed_when_built() -> None:
    names = [name for name, _ in DECODERS]
    assert names[0] == "pure"
    assert names[-1] == "upb"
    assert ("fast" in names) == (FAST is not None)


def test_same_outcome_is_strict() -> None:
    assert same_outcome(Ok({"a": float("nan")}), Ok({"a": float("nan")}))
    assert not same_outcome(Ok({"a": 0.0}), Ok({"a": -0.0}))
    assert not same_outcome(Ok({"a": 1}), Ok({"a": 1.0}))
    assert not same_outcome(Ok({"a": True}), Ok({"a": 1}))
    deep: Any = 1
    for _ in range(5000):
        deep = [deep]
    assert same_outcome(Ok(deep), Ok(deep))


def test_entry_helper_matches_wire() -> None:
    assert entry("k", v_null()) == ld(1, string(1, "k"), ld(2, v_null()))


# -- a bad key before a bad value, SSE ------------------------------------------------
# Found by fuzz_encode in the campaign (docs/errors.md): {1: [[...[NaN]...]], ...}
# was refused for the NaN 253 levels down when the containers were exact, for the
# key 1 when the NaN was a float subclass (the scan looked at values only, and
# _normalize meets a key before its value). Now the first fault is the same.


class _Float(float):
    pass


@pytest.mark.parametrize("nan", [float("nan"), _Float("nan")], ids=["float", "subclass"])
@pytest.mark.parametrize("depth", [1, 253])
def test_sse_refuses_a_bad_key_before_its_bad_value(nan: float, depth: int) -> None:
    value: Any = nan
    for _ in range(depth):
        value = [value]
    event = {1: value, "type": "RUN_FINISHED", "threadId": "t", "runId": "r"}
    with pytest.raises(EncodeError) as info:
        encode_sse(event)
    assert info.value.path == ""  # the key's object: the event (every encoder's words)
    assert "object key 1 is not a string" in str(info.value)


# -- a cycle beside a wide list, protobuf ----------------------------------------------
# Found by fuzz_encode in the campaign (a timeout, not a crash): a RAW event whose
# `event` holds a list that leads back to the event, beside a list of ~20,000
# integers. The protobuf encoders found a cycle only by running into max_depth, so
# they walked the wide list once per lap: 1,024 laps, ~11 s in proto_writer. Both
# twins now find it by identity, with the SSE writers' refusal
# (tests/unit/test_encode_cycles.py).

CYCLE_BESIDE_A_WIDE_LIST = base64.b64decode("R8RGAAAAAAAAxEYHAGjlX//+0QCYAJs=")


def test_fuzz_encode_cycle_beside_a_wide_list(monkeypatch: pytest.MonkeyPatch) -> None:
    from tests.fuzz import fuzz_encode, graphs
    from tests.fuzz.graphs import Builder
    from tests.support.corpus import CORPUS

    monkeypatch.setattr(graphs, "BUDGET", 60_000)  # the graph as it was found
    fuzz_encode.test_one_input(CYCLE_BESIDE_A_WIDE_LIST)
    b = Builder(CYCLE_BESIDE_A_WIDE_LIST)
    b.byte()
    event, _ = b.build(CORPUS[b.u16() % len(CORPUS)])
    refusals = set()
    for _, encoders in fuzz_encode.BACKENDS:
        for encode in encoders.values():
            with pytest.raises(EncodeError) as info:
                encode(event)
            refusals.add((info.value.reason, info.value.path))
    assert refusals == {
        ("a cycle: this is the event again, inside itself", "/event/8/0/0/1/1/0")
    }, refusals


# -- a bad key after a bad value, SSE, normalized events ---------------------------------
# Found by fuzz_encode in the second campaign: {"\ra\ufeff": 2**64, "\udc00a\raa": None}
# as an OrderedDict (so normalized first) was refused for the lone surrogate in the
# second key, as a plain dict for the integer in the first value: _write checked every
# key of an object before writing its first value. It now checks each key just before
# its value, as _locate reads a plain dict (key, then value, entry by entry).

KEY_AFTER_VALUE = base64.b64decode("ABH/PUv/8cch/9r/BAA7/wQAO/8AfA==")


def test_fuzz_encode_key_after_value() -> None:
    from tests.fuzz import fuzz_encode

    fuzz_encode.test_one_input(KEY_AFTER_VALUE)


@pytest.mark.parametrize("mapping", [dict, OrderedDict], ids=["dict", "OrderedDict"])
@pytest.mark.parametrize("first", ["value", "key"])
def test_sse_names_the_first_fault_of_an_object_in_order(mapping: Any, first: str) -> None:
    from agui_wire._codec import sse_writer

    entries = [("a", 2**64), ("b\udc00", None)]
    if first == "key":
        entries.reverse()
    value = mapping(entries)
    event = {"type": "CUSTOM", "name": "n", "value": value}
    want = ("/value/a", "integer") if first == "value" else ("/value/b\udc00", "lone surrogate")
    for encode in (encode_sse, sse_writer.encode_sse):
        with pytest.raises(EncodeError) as info:
            encode(event)
        assert (info.value.path, want[1] in info.value.reason) == (want[0], True), (
            encode.__module__,
            info.value,
        )


# -- an event that is its own outcome, protobuf, Cython ----------------------------------
# Found by fuzz_encode in the second campaign, after d94c964: a SUBAGENT_FINISHED event
# whose `outcome` is the event itself. The pure protobuf writer and both SSE writers
# refused the cycle; the Cython protobuf encoder kept identities only inside JSON
# values, so it wrote the outcome from the event's own fields. It now keeps the
# message-level containers open too (tests/unit/test_encode_cycles.py holds more).

OWN_OUTCOME = base64.b64decode("AGNjY5wBAAAAqw==")


def test_fuzz_encode_own_outcome() -> None:
    from tests.fuzz import fuzz_encode

    fuzz_encode.test_one_input(OWN_OUTCOME)
    event: dict[str, Any] = {"type": "SUBAGENT_FINISHED", "subagentRunId": "s"}
    event["outcome"] = event
    for _, encoders in fuzz_encode.BACKENDS:
        for encode in encoders.values():
            with pytest.raises(EncodeError, match="a cycle: this is the event again"):
                encode(event)


# -- a key that is not a string beside a cycle, protobuf ---------------------------------
# Found by fuzz_encode in the second campaign: {EventType.X: None, "k": <cycle>, 1: None}
# was refused for the cycle, and its twin {"X": None, "k": <cycle>, 1: None} for the key
# 1: proto_writer stopped checking keys at the first str subclass it converted. The
# protobuf writers check every key of an object before its values (they order the keys
# as JavaScript does first), so both name the key now.

KEY_BESIDE_A_CYCLE = base64.b64decode("XQAR7z1L//HHxwDHxwDAAPb/6B85OTkwOTn5+Sb7Jg==")


def test_fuzz_encode_key_beside_a_cycle() -> None:
    from tests.fuzz import fuzz_encode

    fuzz_encode.test_one_input(KEY_BESIDE_A_CYCLE)


@pytest.mark.parametrize("first", ["str subclass", "str"])
def test_proto_checks_every_key_before_the_values(first: str) -> None:
    class Key(str, enum.Enum):
        X = "X"

    raw: dict[Any, Any] = {Key.X if first == "str subclass" else "X": None}
    raw["k"] = raw
    raw[1] = None
    event = {"type": "RAW", "event": raw}
    encoders = [proto_writer.encode_proto, *((FAST.encode_proto,) if FAST else ())]
    for encode in encoders:
        with pytest.raises(EncodeError) as info:
            encode(event)
        assert (info.value.reason, info.value.path) == ("object key 1 is not a string", "/event")


# -- an SDK object holding an iterator -------------------------------------------------
# Found by fuzz_encode in the fourth campaign: a CustomEvent (the SDK's pydantic model)
# whose `value` is a list iterator. pydantic dumps an iterator as a list and so uses it
# up: the first encode wrote [1], every later one []; fuzz_encode took that for two
# backends disagreeing. It is the object's nature and the SDK's own encoder does the
# same, so fuzz_encode now dumps the object once before comparing.

SDK_ITERATOR = base64.b64decode("QQD/////yeX7i4uGcGU=")


def test_fuzz_encode_sdk_object_holding_an_iterator() -> None:
    from tests.fuzz import fuzz_encode

    fuzz_encode.test_one_input(SDK_ITERATOR)


def test_an_sdk_object_holding_an_iterator_encodes_as_the_sdk_does() -> None:
    from ag_ui.core import CustomEvent
    from ag_ui.encoder import EventEncoder as SDKEncoder

    from agui_wire import decode

    theirs = SDKEncoder().encode(CustomEvent(name="n", value=iter([1, 2]))).encode()
    ours = [
        encode(CustomEvent(name="n", value=iter([1, 2])))
        for encode in (sse_writer.encode_sse, *FAST_SSE)
    ]
    for data in ours:
        assert decode(data) == decode(theirs) == [{"type": "CUSTOM", "name": "n", "value": [1, 2]}]


# -- a user message carrying a tool message's key, normalize -----------------------------
# Found by fuzz_payload in CI (run of 328b2ad): a MESSAGES_SNAPSHOT whose `user` message
# carries field 6, `toolCallId`. Decoding keeps it (the union Message has the field, as
# @ag-ui/proto's decoder has it); the writers drop it as an extra key of a user message
# (docs/wire-format.md); normalize kept it, so decode(encode(e)) != normalize(e). normalize
# now keeps only the keys of a known role's shape, as the writers do.

USER_WITH_TOOL_CALL_ID = base64.b64decode(
    "SlYKAggIElAKAm00EgR1c2VyIftuQiEKHwoHaGkg8GhpIPCfAIASAnAyGhAqDgoMCgRsYRoCZW5KFAoSCgNr"
    "Eg0yCwoJEQAAAAAAAPA/UgNzdWJaA2VuYw=="
)


def test_fuzz_payload_user_message_with_a_tool_call_id() -> None:
    from tests.fuzz import fuzz_payload

    fuzz_payload.test_one_input(USER_WITH_TOOL_CALL_ID)


OTHER_ROLES_KEYS = {
    "toolCallId": "t",
    "toolCalls": [{"id": "c", "type": "function", "function": {"name": "f", "arguments": "{}"}}],
    "error": "e",
    "activityType": "a",
    "name": "n",
    "encryptedValue": "x",
}


@pytest.mark.parametrize("role", ["developer", "system", "assistant", "user", "tool", "reasoning"])
def test_normalize_drops_the_keys_of_other_roles_as_the_writers_do(role: str) -> None:
    message = {"id": "m", "role": role, "content": "hi", "subagentRunId": "s", **OTHER_ROLES_KEYS}
    event = {"type": "MESSAGES_SNAPSHOT", "messages": [message]}
    expected = normalize(event)
    kept = set(expected["messages"][0]) - {"id", "role", "content", "subagentRunId"}
    assert kept == set(OTHER_ROLES_KEYS) & set(ROLE_KEYS[role])
    writers = [proto_writer.encode_payload, *((FAST.encode_payload,) if FAST else ())]
    for encode in writers:
        for _, decode in DECODERS:
            assert decode(encode(event)) == expected
