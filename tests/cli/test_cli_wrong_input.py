"""A wrong file is not a valid empty capture.

Every command that reads a capture, given a text file, an empty file, a stream of
SSE comments only, or JSON Lines objects without ``type``: it says what it found
and exits non-zero; ``--allow-empty`` accepts a stream that is merely empty
(never a text file). The commands run in this process (``run_in_process``).
"""

from __future__ import annotations

import pytest

from tests.support.cli_support import run_in_process

TEXT = b"hello world, this is not a capture\n"
READERS = {
    "decode": ("decode",),
    "inspect": ("inspect",),
    "convert": ("convert", "--to", "sse"),
    "validate": ("validate",),
    "cost": ("cost", "--repeats", "1"),
}


@pytest.mark.parametrize("reader", list(READERS))
def test_a_text_file_says_what_it_is(tmp_path, reader) -> None:
    path = tmp_path / "notes.txt"
    path.write_bytes(TEXT)
    for extra in ((), ("--allow-empty",)):
        r = run_in_process(*READERS[reader], path, *extra)
        assert r.returncode == 1, r.stderr
        assert (
            f"agui-wire: {path}: no AG-UI events: {len(TEXT)} bytes, no SSE `data:` line and "
            "no frame header; it starts 'hello world, this is not a captu'…; "
            "not an AG-UI capture?"
        ).encode() in r.stderr


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize(
    ("data", "found"),
    [
        (b"", "the input is empty (0 bytes)"),
        (b": ping\n\n: ping\n\n", "16 bytes of SSE: 2 comment line(s), no `data:` line"),
        (b"retry: 1000\n\n", "13 bytes of SSE: 1 field line(s), no `data:` line"),
    ],
    ids=["empty", "keep-alives", "retry"],
)
def test_an_empty_stream_is_a_problem_unless_allowed(tmp_path, reader, data, found) -> None:
    path = tmp_path / "stream.sse"
    path.write_bytes(data)
    r = run_in_process(*READERS[reader], path)
    assert r.returncode == 1
    assert (
        f"agui-wire: {path}: no AG-UI events: {found} (--allow-empty accepts an empty stream)"
    ).encode() in r.stderr
    r = run_in_process(*READERS[reader], path, "--allow-empty")
    if reader == "cost":  # nothing to measure is still nothing to measure
        assert r.returncode == 1
        assert b"no events to measure: the captures hold none" in r.stderr
        return
    assert r.returncode == 0, r.stderr
    assert b"no AG-UI events" not in r.stderr
    if reader == "validate":
        assert b"valid: 0 events" in r.stdout


def test_encode_of_nothing() -> None:
    r = run_in_process("encode", "-", "--to", "sse", input=b"\n\n")
    assert r.returncode == 1
    assert b"stdin: no AG-UI events: 2 bytes: an empty JSON array or only whitespace" in r.stderr
    r = run_in_process("encode", "-", "--to", "sse", "--allow-empty", input=b"[]")
    assert (r.returncode, r.stdout) == (0, b"")


def test_a_json_line_without_type_is_refused_as_on_sse() -> None:
    data = b'{"type": "RUN_STARTED", "threadId": "t", "runId": "r"}\n{"delta": "hi"}\n'
    r = run_in_process("decode", "-", input=data)
    assert r.returncode == 1
    second = data.index(b"\n") + 1
    assert (
        f"event 1, byte {second}: line 2: the event has no type (a non-empty string 'type' is "
        "required; its keys: delta)"
    ).encode() in r.stderr
    sse = run_in_process("decode", "-", input=b'data: {"delta": "hi"}\n\n')
    assert sse.returncode == 1
    assert b"the event has no type (a non-empty string 'type' is required" in sse.stderr
    r = run_in_process("validate", "-", input=data)
    assert r.returncode == 1
    assert b"error [decode]" in r.stdout
