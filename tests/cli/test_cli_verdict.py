"""``agui-wire cost``'s verdict: the right sign on real framework traffic and on traffic
where each transport wins, uncompressed and compressed; what was left out, listed and
counted.

The real captures (tests/cli/captures) are a LangGraph run, whose RAW events and
state carry JSON values (and a nanosecond timestamp above 2^53), and a pydantic-ai
run, mostly text; the synthetic lists below are built so that one transport wins.
Every figure a headline quotes is recomputed here from the bytes in the report.
"""

from __future__ import annotations

import math
import random
import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import agui_wire
from agui_wire import encode_proto
from agui_wire._cli._confidence import ratio_interval
from agui_wire._cli.cost import table
from agui_wire._cli.cost_measure import carried, measure
from agui_wire._cli.verdict import versus
from agui_wire._sample import realistic_run
from agui_wire.errors import EncodeError

PACKAGE = Path(agui_wire.__file__).resolve().parent


def _cost(cli, *args):
    r = cli("cost", *args, "--repeats", 1, "--json")
    return r, orjson.loads(r.stdout)


def _ratios(data) -> tuple[float, float]:
    b = {t["key"]: t["bytes"] for t in data["transports"]}
    return b["proto"] / b["sse"], b["proto+gzip"] / b["sse+gzip"]


def _pct(ratio: float) -> str:
    return f"{abs(ratio - 1) * 100:.0f}%"


def _reason(verdict, start: str) -> str:
    (found,) = [r for r in verdict["reasons"] if r.startswith(start)]
    return found


def test_langgraph_protobuf_is_larger_and_the_verdict_says_so(cli, real) -> None:
    r, data = _cost(cli, real["langgraph.sse"], "--lossy-numbers")
    assert r.returncode == 0, r.stderr
    assert data["left_out"] == []
    plain, gz = _ratios(data)
    assert plain > 1
    assert gz > 1
    v = data["verdict"]
    assert v["headline"].startswith("No: protobuf is larger than SSE for this traffic: ")
    assert f"{_pct(plain)} larger uncompressed ({plain:.0%} of SSE's bytes)" in v["headline"]
    assert f"{_pct(gz)} larger with gzip ({gz:.0%})" in v["headline"]
    assert "saves" not in v["headline"]
    assert "smaller" not in v["headline"]
    assert (v["ratio_uncompressed"], v["ratio_gzip"]) == (round(plain, 4), round(gz, 4))
    assert v["saving_gzip"] < 0
    # which event types, and why
    assert v["protobuf_larger"]["uncompressed"][0] == "RAW"
    why = _reason(v, "Protobuf is larger on RAW (")
    assert "carrying event" in why
    assert "google.protobuf.Value/Struct" in why
    assert _reason(v, "With gzip, protobuf is larger on ")
    # the most frequent type (RAW) carries no text: its JSON value is what it is
    top = _reason(v, "RAW is ")
    assert "Its JSON values (event) are " in top
    assert "text" not in top
    assert "SSE with gzip is the smaller stream" in " ".join(v["reasons"])


def test_pydantic_ai_protobuf_is_smaller_and_the_verdict_says_so(cli, real) -> None:
    r, data = _cost(cli, real["pydantic-ai.sse"], "--lossy-numbers")
    assert r.returncode == 0, r.stderr
    plain, gz = _ratios(data)
    assert plain < 1
    assert gz < 1
    v = data["verdict"]
    # one short run (22 events): the figures are said, as these events' and no more
    assert v["headline"] == (
        f"Too few events to judge: 22 (at least 30 are needed, a whole run or several are "
        f"better). On these 22, protobuf is {_pct(plain)} smaller than SSE uncompressed and "
        f"{_pct(gz)} smaller with gzip."
    )
    assert (v["worth_it"], v["settled"], v["intervals"]) == ("too-few", False, {})


def _snapshot(i: int) -> dict:
    nested = {"values": [i, i + 1, 2.5, True, None, {"a": [1, 2, {"b": 3}]}], "k": i}
    return {"type": "STATE_SNAPSHOT", "snapshot": nested}


def _raw(i: int) -> dict:
    return {"type": "RAW", "event": {"x": [i % 7, {"y": 1, "z": [0, 0, 1]}]}}


def test_sse_smaller_uncompressed_protobuf_smaller_with_gzip() -> None:
    report = measure([_snapshot(i) for i in range(200)], repeats=1)
    v = report.verdict
    plain, gz = v["ratio_uncompressed"], v["ratio_gzip"]
    assert plain > 1 > gz  # small numbers: 9 bytes each as doubles, but repetitive
    assert v["headline"] == (
        f"No: for this traffic protobuf is {_pct(plain)} larger than SSE uncompressed and "
        f"{_pct(gz)} smaller with gzip."
    )
    assert v["protobuf_larger"] == {"uncompressed": ["STATE_SNAPSHOT"], "gzip": []}
    assert "carrying snapshot" in _reason(v, "Protobuf is larger on STATE_SNAPSHOT")


def test_sse_smaller_both_ways() -> None:
    v = measure([_raw(i) for i in range(200)], repeats=1).verdict
    plain, gz = v["ratio_uncompressed"], v["ratio_gzip"]
    assert plain > 1
    assert gz > 1
    assert v["headline"].startswith("No: protobuf is larger than SSE")
    assert f"{_pct(plain)} larger uncompressed" in v["headline"]


@pytest.mark.parametrize(
    ("events", "says"),
    [
        ([_raw(i) for i in range(20)], "Its JSON values (event) are "),
        (
            [{"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]}] * 20,
            "Its JSON values (delta[].value) are ",
        ),
        (
            [{"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/items/0"}]}] * 20,
            "Its JSON Patch operations name 14 bytes of op and path per event",
        ),
        (
            [{"type": "STEP_STARTED", "stepName": f"step-{i}"} for i in range(20)],
            "It carries no text, no JSON value and no JSON Patch: all of it is envelope",
        ),
        (
            [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hello"}] * 20,
            "Its text is 5 bytes per event",
        ),
    ],
    ids=["RAW", "STATE_DELTA", "STATE_DELTA-no-value", "STEP_STARTED", "TEXT_MESSAGE_CONTENT"],
)
def test_what_the_most_frequent_type_carries(events, says) -> None:
    v = measure(events, repeats=1).verdict
    line = _reason(v, f"{events[0]['type']} is 100% of the events")
    assert says in line
    if "text" not in says:
        assert "text is" not in line


def _unencodable(sse: bytes) -> list[tuple[int, str]]:
    out = []
    for i, event in enumerate(agui_wire.decode(sse, agui_wire.SSE_MEDIA_TYPE)):
        try:
            encode_proto(event)
        except EncodeError:
            out.append((i, event["type"]))
    return out


def test_left_out_events_are_listed_and_counted(cli, real, tmp_path) -> None:
    sse = real["langgraph.sse"].read_bytes()
    expected = _unencodable(sse)
    assert len(expected) > 5  # integers above 2^53 in LangGraph's state and RAW events
    html = tmp_path / "cost.html"
    r, data = _cost(cli, real["langgraph.sse"], "--html", html)
    assert r.returncode == 1  # events were left out: a problem found, as for encode
    left = data["left_out"]
    assert [(s["index"], s["type"]) for s in left] == expected
    for s in left:
        assert "--lossy-numbers" in s["reason"]
        assert "lossy_numbers" not in s["reason"]
        assert s["path"].startswith("/")
        # the size is the event's own bytes in the capture
        chunk = sse[s["offset"] : s["offset"] + s["size"]]
        (event,) = agui_wire.decode(chunk, agui_wire.SSE_MEDIA_TYPE)
        assert event["type"] == s["type"]
    share = sum(s["size"] for s in left) / len(sse)
    v = data["verdict"]
    assert f"{len(left)} event(s), {share:.0%} of the input's bytes, left out" in v["headline"]
    total = len(expected) + data["events"]
    assert _reason(v, f"Left out of every figure here: {len(left)} of {total} events (")
    # stderr: the first five, then how many more and how to see them
    err = r.stderr.decode()
    listed = re.findall(
        r"^agui-wire: .*langgraph\.sse: event (\d+), byte \d+, (\w+) at ", err, re.M
    )
    assert [(int(i), t) for i, t in listed] == expected[:5]
    assert f"{len(left)} event(s) left out (" in err
    assert f"{len(left) - 5} not listed above (-v lists every one)" in err
    r = cli("cost", real["langgraph.sse"], "--repeats", 1, "--json", "-v")
    listed = re.findall(
        r"^agui-wire: .*: event (\d+), byte \d+, (\w+) at ", r.stderr.decode(), re.M
    )
    assert [(int(i), t) for i, t in listed] == expected
    # the HTML report lists them too
    page = html.read_text(encoding="utf-8")
    assert page.count("<td>cannot be encoded in both transports: ") == len(left)


def test_lossy_numbers_means_the_same_in_cost_as_in_convert(cli, real, tmp_path) -> None:
    r = cli("convert", real["langgraph.sse"], "--to", "proto", "-o", tmp_path / "x.bin")
    assert r.returncode == 1
    assert b"(pass --lossy-numbers to round it)" in r.stderr
    assert b"lossy_numbers=True" not in r.stderr
    r = cli(
        "convert",
        real["langgraph.sse"],
        "--to",
        "proto",
        "--lossy-numbers",
        "-o",
        tmp_path / "x.bin",
    )
    assert r.returncode == 0, r.stderr
    r, data = _cost(cli, real["langgraph.sse"], "--lossy-numbers")
    assert r.returncode == 0
    assert data["lossy_numbers"] is True
    assert data["events"] == len(agui_wire.decode(real["langgraph.sse"].read_bytes()))


_PATHS = re.compile(r"[\w./-]+\.(?:py|md|txt|toml|json)\b")


def test_no_brotli_no_zstd_and_no_file_the_wheel_lacks(tmp_path) -> None:
    # as where the brotli/zstd extras are not installed (Python < 3.14: no compression.zstd)
    html = tmp_path / "cost.html"
    script = (
        "import sys\n"
        "sys.modules['brotli'] = sys.modules['brotlicffi'] = None\n"
        "sys.modules['zstandard'] = sys.modules['compression.zstd'] = None\n"
        "from agui_wire._cli import main\n"
        f"sys.exit(main(['cost', '--events', '80', '--repeats', '1', '--html', {str(html)!r}]))\n"
    )
    r = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, timeout=300, check=False
    )
    assert r.returncode == 0, r.stderr
    out = r.stdout.decode()
    header = out.split("\n\n", 1)[0]
    assert "gzip level 6, flushed per event" in header
    assert "Brotli" not in header
    assert "zstd" not in header
    lines = out.splitlines()[:-1]  # the last: "HTML report: PATH" (the test's name is in PATH)
    mentions = [line for line in lines if "Brotli" in line or "zstd" in line]
    assert mentions == [
        "  - Brotli and zstd not measured: not installed here "
        "(pip install 'agui-wire[brotli,zstd]')."
    ]
    page = html.read_text(encoding="utf-8")
    assert "Brotli quality" not in page
    assert "zstd level" not in page
    for text in (out, page):
        for path in _PATHS.findall(text):
            assert (PACKAGE / path).exists() or (PACKAGE.parent / path).exists(), path


def test_the_table_names_the_codings_measured() -> None:
    report = measure([_raw(i) for i in range(20)], repeats=1)
    header = table(report).split("\n")[1]
    keys = {t.key for t in report.transports}
    assert ("Brotli" in header) == ("sse+br" in keys)
    assert ("zstd" in header) == ("sse+zstd" in keys)


def test_protobuf_smaller_uncompressed_sse_smaller_with_gzip() -> None:
    # the sample run: mostly short text deltas, whose keys and ids gzip finds in SSE
    from agui_wire._sample import realistic_run

    v = measure(realistic_run(2000, 0), repeats=1).verdict
    plain, gz = v["ratio_uncompressed"], v["ratio_gzip"]
    assert plain < 1 < gz
    assert v["worth_it"] == "only-uncompressed"
    assert v["headline"] == (
        f"Not for size, if you compress: protobuf is {_pct(plain)} smaller than SSE "
        f"uncompressed, but with gzip on both it is {_pct(gz)} larger. Binary pays off only "
        "where the stream cannot be compressed."
    )
    assert "compression turns protobuf's lead into a deficit" in " ".join(v["reasons"])


# -- how sure the verdict is: the sample's size, the same size, what a patch carries ------


def _text(n: int, words: int, seed: int = 1) -> list[dict]:
    vocabulary = "the a of model tool call state run message token stream binary frame json"
    r = random.Random(seed)
    pick = vocabulary.split()
    return [
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "msg-1",
            "delta": " ".join(r.choice(pick) for _ in range(words)),
        }
        for _ in range(n)
    ]


def test_a_five_event_capture_is_too_few_to_judge(cli, tmp_path) -> None:
    events = [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
    ]
    capture = tmp_path / "five.sse"
    capture.write_bytes(b"".join(agui_wire.encode_sse(e) for e in events))
    r, data = _cost(cli, capture)
    assert r.returncode == 0, r.stderr
    v = data["verdict"]
    assert v["worth_it"] == "too-few"
    assert v["headline"].startswith("Too few events to judge: 5 (at least 30 are needed")
    assert not v["headline"].startswith(("Yes", "Somewhat"))
    assert "measure more of it: `agui-wire record URL -o run.sse`" in v["reasons"][0]


@pytest.mark.parametrize(("n", "too_few"), [(29, True), (30, False)])
def test_thirty_events_is_where_a_verdict_starts(n, too_few) -> None:
    v = measure(realistic_run(n, 3), repeats=1).verdict
    assert (v["worth_it"] == "too-few") is too_few
    assert bool(v["intervals"]) is not too_few
    if not too_few:  # the ratios sit inside their intervals
        (p_lo, p_hi), (g_lo, g_hi) = v["intervals"]["uncompressed"], v["intervals"]["gzip"]
        assert p_lo <= v["ratio_uncompressed"] <= p_hi
        assert g_lo <= v["ratio_gzip"] <= g_hi


def test_the_interval_is_the_ratio_estimators() -> None:
    # by hand: R = 60/120 = 0.5, residuals p - R s = (0, 5, -5) repeated; SE as documented
    pairs = [(40, 20), (40, 25), (40, 15)] * 10
    low, high = ratio_interval(pairs)
    se = math.sqrt(sum((p - 0.5 * s) ** 2 for s, p in pairs) / 29 / 30) / 40
    assert (low, high) == pytest.approx((0.5 - 1.96 * se, 0.5 + 1.96 * se))
    # four times the events: half the width (the standard error goes as 1/sqrt(n))
    low4, high4 = ratio_interval(pairs * 4)
    assert (high4 - low4) / (high - low) == pytest.approx(0.5, rel=0.03)
    assert ratio_interval(pairs[:29]) is None
    assert ratio_interval([(10, 10)] * 30) == (1.0, 1.0)  # no spread: nothing open


def test_a_short_capture_says_the_verdict_is_open_and_a_long_one_does_not() -> None:
    short = measure(realistic_run(100, 0), repeats=1).verdict
    assert short["settled"] is False
    (g_lo, g_hi) = short["intervals"]["gzip"]
    assert g_lo < 1 < g_hi  # it could go either way with gzip
    assert short["headline"].endswith(
        f"But 100 events do not settle it: on more traffic like this protobuf could be from "
        f"{_pct(g_lo)} smaller to {_pct(g_hi)} larger with gzip (95% intervals)."
    )
    long = measure(realistic_run(2000, 0), repeats=1).verdict
    assert long["settled"] is True
    assert "settle" not in long["headline"]
    assert not any("measure more" in r for r in long["reasons"])


def test_the_same_size_is_said_as_within_and_no_type_is_called_larger() -> None:
    # text-heavy: gzip brings both to within 0.1% of each other
    report = measure(_text(300, 43), repeats=1)
    gz = report.transport("proto+gzip").bytes / report.transport("sse+gzip").bytes
    assert 0 < abs(gz - 1) <= 0.001
    v = report.verdict
    assert "the same size (within 0.1%) with gzip" in v["headline"]
    assert v["protobuf_larger"]["gzip"] == []
    assert not any("larger on" in r for r in v["reasons"])


@pytest.mark.parametrize(
    ("ratio", "said"),
    [
        (1.0009, "the same size as SSE (within 0.1%)"),
        (0.9985, "the same size as SSE (within 0.2%)"),
        (1.0049, "the same size as SSE (within 0.5%)"),
        (1.0051, "1% larger than SSE"),
        (0.9949, "1% smaller than SSE"),
    ],
)
def test_how_close_to_the_same_size(ratio, said) -> None:
    assert versus(ratio) == said


def test_json_patch_op_and_path_are_what_the_event_carries() -> None:
    event = {
        "type": "STATE_DELTA",
        "delta": [
            {"op": "replace", "path": "/count", "value": 2},
            {"op": "move", "from": "/a", "path": "/b"},
        ],
    }
    got = carried(event)
    assert got.patch == len("replace/countmove/a/b")
    assert got.values == {"delta[].value": 1}
    assert got.text == 0


def test_the_page_says_how_many_events_once(cli, real, tmp_path) -> None:
    html = tmp_path / "cost.html"
    r = cli("cost", real["langgraph.sse"], "--repeats", 1, "--html", html)
    assert r.returncode == 1  # events left out
    page = html.read_text(encoding="utf-8")
    (sub,) = re.findall(r'<p class="sub">([^<]*)</p>', page)
    counted = "35 of 53 events (18 left out)"
    assert sub.startswith(f"{real['langgraph.sse']} · {counted} · measured ")
    assert sub.count("events") == 1
    lines = r.stdout.decode().splitlines()
    assert lines[:2] == [f"agui-wire cost: {real['langgraph.sse']}", lines[1]]
    assert lines[1].startswith(f"{counted}; gzip level 6")
