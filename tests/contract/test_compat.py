"""agui_wire.compat: the SDK-compatible encoder and install()/uninstall().

Runs on whichever line of the official SDK is installed: 1.x in the project's
venv, 0.1.x in .venv-fw/sdk-0.1 (``make frameworks`` runs this file there too), so
both lines' pydantic events go through our encoders.
"""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys
import textwrap
import types
import warnings
from typing import Any

import pytest

pytest.importorskip("ag_ui.core")
from ag_ui.core import events as sdk_events
from ag_ui.encoder import encoder as sdk_encoder_module
from pydantic import TypeAdapter, ValidationError

import agui_wire
from agui_wire import compat
from agui_wire._negotiation import CACHE_SIZE
from agui_wire.errors import EncodeError, LossyNumberWarning
from tests.support import corpus

SDK_VERSION = importlib.metadata.version("ag-ui-protocol")
SDK = compat._SDK_CLASS
PROTO = agui_wire.PROTO_MEDIA_TYPE
SSE = agui_wire.SSE_MEDIA_TYPE
_EVENT = TypeAdapter(sdk_events.Event)


def sdk_models() -> list[tuple[str, Any]]:
    """The corpus as the installed SDK's pydantic events (those its line knows)."""
    out = []
    for name, event in corpus.CASES.items():
        try:
            out.append((name, _EVENT.validate_python(event)))
        except ValidationError:
            continue  # a type or shape this SDK line does not have
    return out


MODELS = sdk_models()
OLD_LINE = SDK_VERSION.startswith("0.")


def without_nulls(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(v) for v in value]
    return value


def test_the_corpus_reaches_both_lines() -> None:
    # 0.1.19 lacks the 1.0 types (subagents, outcomes...), still most of the corpus
    assert len(MODELS) >= (150 if OLD_LINE else 300), SDK_VERSION


def sse_payloads(text: str) -> list[dict[str, Any]]:
    assert text.startswith("data: ")
    assert text.endswith("\n\n")
    return [json.loads(text[len("data: ") : -2])]


def as_js_reads(value: Any) -> Any:
    """A JSON value as a JavaScript client holds it: integers beyond 2**53 are doubles."""
    if isinstance(value, dict):
        return {k: as_js_reads(v) for k, v in value.items()}
    if isinstance(value, list):
        return [as_js_reads(v) for v in value]
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > 2**53:
        return float(value)
    return value


@pytest.mark.parametrize(("name", "model"), MODELS, ids=[n for n, _ in MODELS])
def test_sse_is_the_sdks_text_and_protobuf_carries_the_same_events(name: str, model: Any) -> None:
    sdk_text = SDK(accept=SSE).encode(model)
    sse = compat.SDKEventEncoder(accept=SSE)
    assert sse.encode(model) == sdk_text  # str, byte for byte
    assert sse.encode_binary(model) == sdk_text.encode("utf-8")
    # the strict library API writes the same events from the SDK's objects
    ours = agui_wire.decode(agui_wire.encode_sse(model), SSE)
    if OLD_LINE:
        # 0.1.x writes with exclude_none=True, which drops every null, also those
        # the event needs (STATE_SNAPSHOT.snapshot: null); ours keeps them
        assert without_nulls(ours) == without_nulls(sse_payloads(sdk_text))
    else:
        assert ours == sse_payloads(sdk_text)
    proto = compat.SDKEventEncoder(PROTO)
    frame = proto.encode(model)
    assert type(frame) is bytes
    assert proto.encode_binary(model) == frame
    assert frame == agui_wire.encode_proto(model)
    (decoded,) = agui_wire.decode(frame, PROTO)
    (from_sse,) = sse_payloads(sdk_text)
    if OLD_LINE:
        assert without_nulls(agui_wire.normalize(from_sse)) == without_nulls(decoded)
    else:
        assert agui_wire.normalize(from_sse) == decoded


def test_the_sdk_interface() -> None:
    assert compat.AGUI_MEDIA_TYPE == compat.SDKEventEncoder.AGUI_MEDIA_TYPE == PROTO
    assert compat.AGUI_MEDIA_TYPE == sdk_encoder_module.AGUI_MEDIA_TYPE
    assert compat.SDKEventEncoder().get_content_type() == SSE
    assert compat.SDKEventEncoder(None).get_content_type() == SSE
    assert compat.SDKEventEncoder(accept=PROTO).get_content_type() == PROTO
    assert compat.SDKEventEncoder(PROTO).AGUI_MEDIA_TYPE == PROTO


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        (None, SSE),
        ("", SSE),
        ("*/*", SSE),
        ("text/event-stream", SSE),
        ("application/json", SSE),  # accepts neither: SSE, never an error (as the SDK)
        (PROTO, PROTO),
        (f"{PROTO}, text/event-stream;q=0.9", PROTO),
        (f"text/event-stream, {PROTO};q=0.5", PROTO),  # named: SSE's q is not consulted
        (f"{PROTO};q=0, */*", SSE),
        ("application/x-ag-ui", PROTO),
    ],
)
def test_negotiation_follows_accept(accept: str | None, expected: str) -> None:
    assert compat.SDKEventEncoder(accept=accept).get_content_type() == expected


def test_construction_is_a_lookup_and_bounded() -> None:
    assert compat.SDKEventEncoder(PROTO) is compat.SDKEventEncoder(accept=PROTO)
    assert agui_wire.EventEncoder(PROTO) is agui_wire.EventEncoder(PROTO)
    assert agui_wire.EventEncoder(PROTO) is not agui_wire.EventEncoder(PROTO, lossy_numbers=True)
    for i in range(CACHE_SIZE * 3):
        accept = f"{PROTO}, text/x-{i}"
        assert compat.SDKEventEncoder(accept).get_content_type() == PROTO
        assert agui_wire.EventEncoder(accept).content_type == PROTO
    assert len(compat._BY_ACCEPT) <= CACHE_SIZE
    from agui_wire import _encoder as encoder
    from agui_wire import _negotiation as negotiation

    assert len(encoder._BY_ACCEPT) <= CACHE_SIZE
    assert all(len(cache) <= CACHE_SIZE for cache in negotiation._CACHES)


def test_a_subclass_gets_its_own_instances() -> None:
    class Mine(compat.SDKEventEncoder):
        __slots__ = ("count",)

    first, second = Mine(PROTO), Mine(PROTO)
    assert first is not second
    assert type(first) is Mine
    assert first.get_content_type() == PROTO


def test_strict_negotiation_is_not_bypassed_by_the_cache() -> None:
    assert agui_wire.EventEncoder("application/json").content_type == SSE
    with pytest.raises(agui_wire.NotAcceptable):
        agui_wire.EventEncoder("application/json", strict=True)


BIG = {"ns": 1_712_345_678_901_234_567, "u64": 2**64 + 1, "neg": -(2**70), "ok": 2**53 - 1}


def test_integers_beyond_doubles_round_on_protobuf_with_one_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(compat, "_warned", False)
    event = sdk_events.StateSnapshotEvent(snapshot=BIG)
    encoder = compat.SDKEventEncoder(PROTO)
    with pytest.warns(LossyNumberWarning, match="2\\*\\*53"):
        frame = encoder.encode(event)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert encoder.encode(event) == frame  # once per process
        assert encoder.encode_binary(sdk_events.StateSnapshotEvent(snapshot={"x": 2**60})) > b""
    (decoded,) = agui_wire.decode(frame, PROTO)
    assert decoded["snapshot"] == as_js_reads(BIG)
    assert frame == agui_wire.encode_proto(event, lossy_numbers=True)
    # the strict API still refuses
    with pytest.raises(EncodeError, match="does not fit a double"):
        agui_wire.encode_proto(event)
    with pytest.raises(EncodeError):
        agui_wire.EventEncoder(PROTO).encode(event)


def test_integers_beyond_any_double_are_infinity_on_protobuf(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # what JSON.parse gives a JavaScript client over SSE, and what @ag-ui/proto
    # then writes (tests/interop/test_proto_interop.py holds lossy_numbers=True to
    # the reference's bytes)
    monkeypatch.setattr(compat, "_warned", False)
    huge = {"up": 10**400, "down": -(10**400), "list": [2**1024, 1]}
    encoder = compat.SDKEventEncoder(PROTO)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frames = [
            (event, encoder.encode(event))
            for event in (
                sdk_events.StateSnapshotEvent(snapshot=huge),
                {"type": "STATE_SNAPSHOT", "snapshot": huge},
            )
        ]
    assert [w.category for w in caught] == [LossyNumberWarning]  # once per process
    for event, frame in frames:
        (decoded,) = agui_wire.decode(frame, PROTO)
        inf = float("inf")
        assert decoded["snapshot"] == {"up": inf, "down": -inf, "list": [inf, 1]}
        assert frame == agui_wire.encode_proto(event, lossy_numbers=True)
    with pytest.raises(EncodeError, match="does not fit a double"):
        agui_wire.encode_proto({"type": "STATE_SNAPSHOT", "snapshot": huge})


WIDE = {**BIG, "u128": 2**128, "nested": [{"n": -(2**64) - 1}, (1, 10**40)], "flag": True}


def test_sse_writes_every_integer_the_sdk_writes() -> None:
    event = sdk_events.StateSnapshotEvent(snapshot=BIG)
    text = compat.SDKEventEncoder(SSE).encode(event)
    assert text == SDK().encode(event)
    assert sse_payloads(text)[0]["snapshot"] == BIG  # exact, 2**64 + 1 included
    with pytest.raises(EncodeError):  # the strict API refuses beyond 64 bits
        agui_wire.encode_sse(event)
    # dicts too, which the SDK does not take: the same text as for its model
    as_dict = {"type": "STATE_SNAPSHOT", "snapshot": WIDE}
    text = compat.SDKEventEncoder(SSE).encode(as_dict)
    assert text == SDK().encode(sdk_events.StateSnapshotEvent(snapshot=WIDE))
    assert compat.SDKEventEncoder(SSE).encode_binary(as_dict) == text.encode()
    assert sse_payloads(text)[0]["snapshot"] == {
        **WIDE,
        "nested": [{"n": -(2**64) - 1}, [1, 10**40]],
    }
    assert WIDE["u128"] == 2**128  # input untouched
    with pytest.raises(EncodeError):
        agui_wire.encode_sse(as_dict)
    # whatever else the writer refuses is still refused
    with pytest.raises(EncodeError, match="not a string"):
        compat.SDKEventEncoder(SSE).encode({"type": "CUSTOM", "name": "n", "value": {1: 2**64}})


def test_other_encode_errors_still_raise(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(compat, "_warned", False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(EncodeError, match="TOOL_CALL_ARGS"):
            compat.SDKEventEncoder(PROTO).encode({"type": "TOOL_CALL_ARGS", "toolCallId": 5})
    assert compat._warned is False


def test_dicts_are_accepted_too() -> None:
    event = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "é"}
    assert compat.SDKEventEncoder().encode(event) == agui_wire.encode_sse(event).decode()
    assert compat.SDKEventEncoder().encode_binary(event) == agui_wire.encode_sse(event)
    assert compat.SDKEventEncoder(PROTO).encode(event) == agui_wire.encode_proto(event)


# -- install / uninstall ---------------------------------------------------------

FRAMEWORK = textwrap.dedent(
    """
    from ag_ui.encoder import EventEncoder
    from ag_ui.encoder import EventEncoder as Aliased
    import ag_ui.encoder

    def serve(accept):
        return EventEncoder(accept=accept).get_content_type()

    def serve_late(accept):
        return ag_ui.encoder.EventEncoder(accept).get_content_type()
    """
)


def load_framework(name: str) -> types.ModuleType:
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(FRAMEWORK, module.__dict__)
    return module


@pytest.fixture
def restore() -> Any:
    yield
    compat.uninstall()
    for name in [n for n in sys.modules if n.startswith("fake_framework")]:
        del sys.modules[name]


@pytest.mark.usefixtures("restore")
def test_install_after_and_before_the_framework_import() -> None:
    import ag_ui.encoder

    before = load_framework("fake_framework_before")
    assert before.serve(PROTO) == SSE  # the SDK ignores Accept
    rebound = compat.install()
    assert {
        "ag_ui.encoder.EventEncoder",
        "ag_ui.encoder.encoder.EventEncoder",
        "fake_framework_before.EventEncoder",
        "fake_framework_before.Aliased",
    } <= set(rebound)
    assert compat.installed()
    assert ag_ui.encoder.EventEncoder is compat.SDKEventEncoder
    assert sdk_encoder_module.EventEncoder is compat.SDKEventEncoder
    after = load_framework("fake_framework_after")
    for module in (before, after):
        assert module.serve(PROTO) == PROTO
        assert module.serve_late(PROTO) == PROTO
        assert module.serve("text/event-stream") == SSE
        assert module.Aliased is compat.SDKEventEncoder
    assert compat.install() == []  # idempotent
    assert compat.installed()
    undone = set(compat.uninstall())
    assert {"ag_ui.encoder.EventEncoder", "fake_framework_after.Aliased"} <= undone
    assert not compat.installed()
    assert ag_ui.encoder.EventEncoder is SDK
    for module in (before, after):
        assert module.EventEncoder is SDK
        assert module.serve(PROTO) == SSE
    assert compat.uninstall() == []
    assert compat.SDKEventEncoder(PROTO).get_content_type() == PROTO  # compat itself untouched


@pytest.mark.usefixtures("restore")
def test_install_with_wildcard_proto_applies_the_binding_in_full() -> None:
    """``install(wildcard_proto=True)``: ``*/*`` admits protobuf (as the AG-UI 1.0
    binding and ``@ag-ui/encoder`` have it); each install sets the rule, and
    ``uninstall()`` puts the default back, cached instances included."""
    framework = load_framework("fake_framework_rule")
    browser = "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
    compat.install()
    assert [framework.serve(a) for a in ("*/*", browser, None, PROTO)] == [SSE, SSE, SSE, PROTO]
    compat.install(wildcard_proto=True)
    assert [framework.serve(a) for a in ("*/*", browser, None, PROTO)] == [PROTO, PROTO, SSE, PROTO]
    assert framework.serve(f"{PROTO};q=0, */*") == SSE  # not admitted: SSE, as the binding MUSTs
    assert framework.serve("application/json") == SSE  # never refused
    compat.install()
    assert framework.serve("*/*") == SSE
    compat.install(wildcard_proto=True)
    compat.uninstall()
    assert compat.SDKEventEncoder("*/*").get_content_type() == SSE


def test_top_level_names() -> None:
    assert agui_wire.install is compat.install
    assert agui_wire.uninstall is compat.uninstall


def test_install_is_one_line_in_a_fresh_process() -> None:
    code = textwrap.dedent(
        f"""
        import agui_wire
        agui_wire.install()
        from ag_ui.encoder import EventEncoder
        from ag_ui.core import TextMessageContentEvent
        e = EventEncoder(accept={PROTO!r})
        assert e.get_content_type() == {PROTO!r}
        assert isinstance(e.encode(TextMessageContentEvent(message_id="m", delta="x")), bytes)
        print("ok")
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.stdout.strip() == "ok", result.stderr


def test_sse_wide_integers_shared_cyclic_and_past_str_limit() -> None:
    encoder = compat.SDKEventEncoder(SSE)
    shared = [2**70]
    text = encoder.encode({"type": "STATE_SNAPSHOT", "snapshot": {"a": shared, "b": shared}})
    assert sse_payloads(text)[0]["snapshot"] == {"a": [2**70], "b": [2**70]}
    loop: list[object] = [2**70]
    loop.append(loop)  # a cycle behind a wide integer: the writer's refusal, no hang
    with pytest.raises(EncodeError, match="cycle"):
        encoder.encode({"type": "STATE_SNAPSHOT", "snapshot": loop})
    with pytest.raises(EncodeError, match="does not fit 64 bits"):  # beyond int's str limit
        encoder.encode({"type": "STATE_SNAPSHOT", "snapshot": [10**5000]})
