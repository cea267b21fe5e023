"""The HTML timeline (``inspect --timeline --html``), and the cost report (``cost
--html``), in a real headless Chromium.

One browser for the module (tests/support/chromium.py, Debian's chromium, which
``make chromium`` installs). Each page must load with no uncaught exception and
no console or browser error, and draw one mark per event, checked from the DOM;
the screenshot of the recorded run's page is kept in the test's tmp directory
and its path printed (``pytest -s`` or ``-rP`` shows it). The harness itself is
held to failing on a page that throws or logs an error.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agui_wire import encode_proto, encode_sse
from agui_wire._sample import realistic_run
from tests.support.chromium import Chromium
from tests.support.cli_support import run_in_process

# the event index of every mark, in index order (the DOM groups them by lane)
MARKS = (
    "Array.from(document.querySelectorAll('.mark'), m => Number(m.dataset.index))"
    ".sort((a, b) => a - b)"
)


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Chromium]:
    with Chromium(tmp_path_factory.mktemp("chromium")) as chromium:
        yield chromium


def page_of(capture: Path, html: Path, *extra: Any) -> str:
    """Write the page of ``capture``; the text output."""
    r = run_in_process("inspect", capture, "--timeline", "--html", html, *extra)
    assert r.returncode == 0, r.stderr.decode()
    text = html.read_text(encoding="utf-8")
    # self-contained: no file, font or script from anywhere else
    assert not re.search(r"""\b(src|href)\s*=""", text)
    assert "url(" not in text
    assert "@import" not in text
    assert not re.search(r"https?://", text)
    return str(r.stdout.decode())


def test_a_recorded_run_draws_every_event(
    browser: Chromium, tmp_path: Path, run_events: list[dict[str, Any]]
) -> None:
    from tests.cli.test_cli_timeline import write_recording

    body = b"".join(encode_sse(e) for e in run_events)
    capture = tmp_path / "run.sse"
    step = len(body) // 40 + 1
    starts = range(0, len(body), step)
    write_recording(
        capture, body, [(min(step, len(body) - a), 0.05 * (a // step + 1)) for a in starts]
    )
    html = tmp_path / "timeline.html"
    page_of(capture, html)
    browser.open_page(html)
    assert browser.errors() == []
    assert browser.evaluate(MARKS) == list(range(len(run_events)))
    lanes = browser.evaluate("Array.from(document.querySelectorAll('.lane'), l => l.dataset.lane)")
    assert lanes == ["run", "messages", "tool calls", "reasoning", "state"]
    by_lane = browser.evaluate(
        "Object.fromEntries(Array.from(document.querySelectorAll('.lane'), "
        "l => [l.dataset.lane, l.querySelectorAll('.mark').length]))"
    )
    assert by_lane["messages"] == sum(e["type"].startswith("TEXT_MESSAGE") for e in run_events)
    assert by_lane["tool calls"] == sum(e["type"].startswith("TOOL_CALL") for e in run_events)
    assert browser.evaluate("document.querySelectorAll('.span').length") > 0
    # marks sit where their times say: left to right in time order, inside the track
    lefts = browser.evaluate(
        "Array.from(document.querySelectorAll('.mark'))"
        ".sort((a, b) => a.dataset.index - b.dataset.index)"
        ".map(m => parseFloat(m.style.left))"
    )
    assert lefts == sorted(lefts)
    assert lefts[0] >= 0
    assert lefts[-1] <= 100
    # interactive: zooming changes the visible range, clicking a mark shows its event
    before = browser.evaluate("document.getElementById('range').textContent")
    browser.evaluate("document.getElementById('zoom-in').click()")
    assert browser.evaluate("document.getElementById('range').textContent") != before
    browser.evaluate("document.querySelector('.mark[data-index=\"3\"]').click()")
    detail = browser.evaluate("document.getElementById('detail').textContent")
    assert detail.startswith(f"#3  {run_events[3]['type']}")
    # a tool call's bar: how long it took, its arguments streaming drawn along it
    browser.evaluate("document.querySelector('.lane[data-lane=\"tool calls\"] .span').click()")
    detail = browser.evaluate("document.getElementById('detail').textContent")
    assert "took " in detail
    assert "arguments streamed" in detail
    assert "after the call" in detail
    assert browser.evaluate("document.querySelectorAll('.span-part').length") >= 1
    browser.evaluate("document.getElementById('fit').click()")
    shot = browser.screenshot(tmp_path / "timeline.png")
    assert shot.stat().st_size > 10_000
    print(f"timeline screenshot: {shot}")
    assert browser.errors() == []


def test_hostile_text_and_no_times(browser: Chromium, tmp_path: Path) -> None:
    # event text that would end the data block or inject markup, in a capture with no times
    events = [
        {"type": "RUN_STARTED", "threadId": "</script><script>throw 1</script>", "runId": "r"},
        {"type": "TEXT_MESSAGE_START", "messageId": "<!--", "role": "assistant"},
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "<!--",
            "delta": "<img src=x onerror=alert(1)>",
        },
        {"type": "TEXT_MESSAGE_END", "messageId": "<!--"},
        {"type": "RAW", "event": {"x": "\u2028</SCRIPT>"}},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    capture = tmp_path / "hostile.bin"
    capture.write_bytes(b"".join(encode_proto(e) for e in events))
    html = tmp_path / "hostile.html"
    r = run_in_process("inspect", capture, "--timeline", "--html", html)
    assert r.returncode == 0, r.stderr.decode()
    browser.open_page(html)
    assert browser.errors() == []
    assert browser.evaluate(MARKS) == list(range(len(events)))
    assert browser.evaluate("document.querySelectorAll('img').length") == 0
    note = browser.evaluate("document.querySelector('.note').textContent")
    assert "the axis is the event order" in note


def test_ten_thousand_events(browser: Chromium, tmp_path: Path) -> None:
    events = realistic_run(10_000, 9)
    capture = tmp_path / "big.bin"
    capture.write_bytes(b"".join(encode_proto(e) for e in events))
    html = tmp_path / "big.html"
    text = page_of(capture, html)
    rows = re.findall(r"^ *(\d+) +\d+\.\d{3} ", text, re.MULTILINE)  # the text: a row each
    assert [int(i) for i in rows] == list(range(10_000))
    assert html.stat().st_size < 300 * 10_000  # bounded per event
    browser.open_page(html)
    assert browser.errors() == []
    assert browser.evaluate("document.querySelectorAll('.mark').length") == 10_000


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("throw new Error('drawn wrong')", "uncaught: Error: drawn wrong"),
        ("console.error('bad mark')", "console.error: ['bad mark']"),
        ("console.assert(false, 'no marks')", "console.assert"),
        ("setTimeout(function () { null.x; }, 0)", "uncaught: TypeError"),
    ],
)
def test_the_harness_fails_on_a_page_that_throws(
    browser: Chromium, tmp_path: Path, script: str, expected: str
) -> None:
    page = tmp_path / "broken.html"
    page.write_text(f"<!doctype html><body><script>{script}</script></body>")
    browser.open_page(page)
    browser.evaluate("new Promise(r => setTimeout(r, 50))")
    errors = browser.errors()
    assert errors, "the harness missed it"
    assert errors[0].startswith(expected), errors


def test_the_cost_report_renders_too(browser: Chromium, tmp_path: Path) -> None:
    # agui-wire cost --html, the other self-contained page: no error, every chart drawn
    html = tmp_path / "cost.html"
    r = run_in_process("cost", "--events", 200, "--repeats", 1, "--html", html)
    assert r.returncode == 0, r.stderr.decode()
    browser.open_page(html)
    assert browser.errors() == []
    sizes = browser.evaluate(
        "Array.from(document.querySelectorAll('svg'), s => s.getBoundingClientRect())"
        ".map(b => [b.width, b.height])"
    )
    assert len(sizes) >= 3
    assert all(w > 300 and h > 40 for w, h in sizes), sizes
