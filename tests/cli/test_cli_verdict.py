"""``agui-wire cost``'s verdict: the right sign on real framework traffic and on traffic
where each transport wins, uncompressed and compressed; what was left out, listed and
counted (issue 25 items 1, 2 and 6).

The real captures (tests/cli/captures) are a LangGraph run, whose RAW events and
state carry JSON values (and a nanosecond timestamp above 2^53), and a pydantic-ai
run, mostly text; the synthetic lists below are built so that one transport wins.
Every figure a headline quotes is recomputed here from the bytes in the report.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

import agui_wire
from agui_wire import encode_proto
from agui_wire._cli.cost import table
from agui_wire._cli.cost_measure import measure
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
    assert f"protobuf is {_pct(gz)} smaller than SSE" in v["headline"]
    assert f"uncompressed, it is {_pct(plain)} smaller" in v["headline"]
    assert "larger" not in v["headline"]
    assert v["worth_it"] in ("yes", "somewhat")


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
            [{"type": "STEP_STARTED", "stepName": f"step-{i}"} for i in range(20)],
            "It carries no text and no JSON value: all of it is envelope",
        ),
        (
            [{"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hello"}] * 20,
            "Its text is 5 bytes per event",
        ),
    ],
    ids=["RAW", "STATE_DELTA", "STEP_STARTED", "TEXT_MESSAGE_CONTENT"],
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
