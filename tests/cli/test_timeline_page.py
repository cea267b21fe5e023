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

import itertools
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


# -- the page as a person sees it: two widths, screenshots, boxes from the DOM -------------

WIDTHS = (1280, 700)

# every box a reader must see whole, from the DOM (viewport CSS pixels)
LAYOUT = """(() => {
  const box = e => { const r = e.getBoundingClientRect();
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; };
  return {
    axis: box(document.getElementById('axis')),
    range: document.getElementById('range').textContent,
    ticks: Array.from(document.querySelectorAll('.tick'), t => ({text: t.textContent, ...box(t)})),
    lanes: Array.from(document.querySelectorAll('.lane'), l => ({
      lane: l.dataset.lane,
      track: box(l.querySelector('.track')),
      items: Array.from(l.querySelectorAll('.span, .span-label'))
        .filter(e => !e.hidden)
        .map(e => ({kind: e.className.split(' ')[0], text: e.textContent,
                    cut: e.scrollWidth > e.clientWidth, ...box(e)}))
        .filter(e => e.right > l.querySelector('.track').getBoundingClientRect().left
                  && e.left < l.querySelector('.track').getBoundingClientRect().right),
    })),
  };
})()"""


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return min(a["right"], b["right"]) - max(a["left"], b["left"]) > 0.5 and (
        min(a["bottom"], b["bottom"]) - max(a["top"], b["top"]) > 0.5
    )


def _center(browser: Chromium, selector: str) -> tuple[float, float]:
    box = browser.evaluate(
        f"(() => {{ const e = document.querySelector({selector!r}); e.scrollIntoView("
        "{block: 'center'}); const r = e.getBoundingClientRect(); "
        "return [r.left + r.width / 2, r.top + r.height / 2]; })()"
    )
    return box[0], box[1]


def check_layout(browser: Chromium, labels: list[str], ticks_at_least: int = 3) -> None:
    """Tick labels whole and apart, the axis from 0 up; every bar's label whole, inside
    its track, over no other bar or label; ``labels`` among them, in full."""
    page = browser.evaluate(LAYOUT)
    axis, ticks = page["axis"], page["ticks"]
    assert len(ticks) >= ticks_at_least, ticks
    assert "-" not in page["range"], page["range"]
    first = ticks[0]["text"].lstrip("#").split()[0]
    assert float(first) >= 0, ticks[0]
    for tick in ticks:
        assert tick["left"] >= axis["left"] - 0.5, (tick, axis)
        assert tick["right"] <= axis["right"] + 0.5, (tick, axis)
    for a, b in itertools.pairwise(ticks):
        assert a["right"] <= b["left"] + 0.5, (a, b)
    shown = set()
    for lane in page["lanes"]:
        items, track = lane["items"], lane["track"]
        for item in items:
            if item["kind"] == "span-label":
                shown.add(item["text"])
                assert not item["cut"], (lane["lane"], item)
                assert item["left"] >= track["left"] - 0.5, (lane["lane"], item, track)
                assert item["right"] <= track["right"] + 0.5, (lane["lane"], item, track)
        # a label may sit on its own bar; nothing else overlaps
        for i, a in enumerate(items):
            for j, b in enumerate(items[i + 1 :], i + 1):
                own = a["kind"] != b["kind"] and j == i + 1 and a["kind"] == "span"
                assert own or not _overlap(a, b), (lane["lane"], a, b)
    assert set(labels) <= shown, set(labels) - shown


def check_tip(browser: Chromium, selector: str) -> None:
    """Pointing at ``selector`` shows a tip that does not cover the details panel;
    clicking it fills the panel, and the tip still covers none of it."""
    detail = "(() => { const r = document.getElementById('detail').getBoundingClientRect();"
    detail += " return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })()"
    tip = (
        "(() => { const t = document.getElementById('tip'); if (t.hidden) return null; "
        "const r = t.getBoundingClientRect(); "
        "return {left: r.left, right: r.right, top: r.top, bottom: r.bottom}; })()"
    )
    x, y = _center(browser, selector)
    browser.mouse("move", x, y)
    shown = browser.evaluate(tip)
    assert shown is not None, f"no tip over {selector}"
    assert not _overlap(shown, browser.evaluate(detail)), (shown, browser.evaluate(detail))
    browser.mouse("click", x, y)
    assert browser.evaluate("document.getElementById('detail').textContent.startsWith('#')") or (
        "took" in browser.evaluate("document.getElementById('detail').textContent")
    )
    after = browser.evaluate(tip)
    assert after is None or not _overlap(after, browser.evaluate(detail))


def test_the_page_as_a_person_sees_it_at_two_widths(
    browser: Chromium, tmp_path: Path, run_events: list[dict[str, Any]]
) -> None:
    from tests.cli.test_cli_timeline import write_recording

    body = b"".join(encode_sse(e) for e in run_events)
    recorded = tmp_path / "run.sse"
    step = len(body) // 40 + 1
    starts = range(0, len(body), step)
    write_recording(
        recorded, body, [(min(step, len(body) - a), 0.05 * (a // step + 1)) for a in starts]
    )
    untimed = tmp_path / "five.bin"
    five = [
        {"type": "RUN_STARTED", "threadId": "t1", "runId": "r1"},
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m1", "delta": "Hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        {"type": "RUN_FINISHED", "threadId": "t1", "runId": "r1"},
    ]
    untimed.write_bytes(b"".join(encode_proto(e) for e in five))
    message = next(e["messageId"] for e in run_events if e["type"] == "TEXT_MESSAGE_START")
    call = next(e for e in run_events if e["type"] == "TOOL_CALL_START")
    pages = {
        recorded: [
            f"assistant message {message}",
            f"{call['toolCallName']} ({call['toolCallId']})",
        ],
        untimed: ["run r1", "assistant message m1"],
    }
    for capture, labels in pages.items():
        html = tmp_path / f"{capture.name}.html"
        page_of(capture, html)
        browser.open_page(html)
        for width in WIDTHS:
            browser.set_width(width)
            browser.mouse("move", 0, 0)  # the pointer off the chart: no tip in the picture
            shot = browser.screenshot(tmp_path / f"{capture.name}-{width}.png")
            print(f"timeline screenshot: {shot}")
            check_layout(browser, labels)
            # the lowest lane's marks: a tip there must not hang over the details
            check_tip(browser, ".lane:last-child .mark")
            check_tip(browser, ".lane:last-child .mark:last-of-type")
            shot = browser.screenshot(tmp_path / f"{capture.name}-{width}-clicked.png")
            print(f"timeline screenshot: {shot}")
            browser.evaluate("document.getElementById('zoom-in').click()")
            check_layout(browser, [], 2)  # zoomed in: still whole, still from 0 up
            browser.evaluate("document.getElementById('fit').click()")
        assert browser.errors() == []
