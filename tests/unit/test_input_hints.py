"""The Python API says what to pass when given the usual wrong thing (issue 25 item 7):
a path or a text-mode file where bytes go, a gzip-compressed capture, ``import
agui_wire.redis`` without redis-py. Every reader of a whole capture is tried.
"""

from __future__ import annotations

import gzip
import io
import subprocess
import sys
from pathlib import Path

import pytest

import agui_wire
from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, encode_proto, encode_sse
from agui_wire.errors import DecodeError, MissingDependency

EVENT = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
READERS = {
    "decode": agui_wire.decode,
    "decode_proto": agui_wire.decode_proto,
    "read_records": lambda s: list(agui_wire.read_records(s)),
    "iter_decode": lambda s: list(agui_wire.iter_decode(s)),
}


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("kind", ["str", "Path"])
def test_a_path_says_to_pass_the_files_bytes(tmp_path, reader, kind) -> None:
    path = tmp_path / "capture.bin"
    path.write_bytes(encode_proto(EVENT))
    given = str(path) if kind == "str" else path
    with pytest.raises(TypeError) as info:
        READERS[reader](given)
    message = str(info.value)
    assert f"to decode the file {str(path)!r}, pass its bytes" in message
    assert f"open({str(path)!r}, 'rb').read()" in message
    # and what it says works
    with open(path, "rb") as fh:
        assert agui_wire.decode(fh) == [EVENT]


@pytest.mark.parametrize("reader", list(READERS))
def test_a_text_mode_file_says_open_it_with_rb(tmp_path, reader) -> None:
    path = tmp_path / "capture.sse"
    path.write_bytes(encode_sse(EVENT))
    with open(path, encoding="utf-8") as fh, pytest.raises(TypeError) as info:
        READERS[reader](fh)
    assert "opened in text mode: open it with 'rb'" in str(info.value)
    with pytest.raises(TypeError, match="opened in text mode"):
        agui_wire.decode(io.StringIO("data: {}\n\n"))


def test_text_chunks_say_to_pass_bytes(tmp_path) -> None:
    path = tmp_path / "capture.sse"
    path.write_bytes(encode_sse(EVENT))
    with open(path, encoding="utf-8") as fh, pytest.raises(TypeError) as info:
        agui_wire.decode(line for line in fh)  # the lines of a text-mode file
    assert "not str: pass bytes (text.encode('utf-8'))" in str(info.value)
    with pytest.raises(TypeError, match=r"chunk must be a bytes-like object, not str: pass bytes"):
        agui_wire.EventDecoder().feed("data: {}\n\n")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "read",
    [
        pytest.param(lambda d: agui_wire.decode(d), id="sniffed"),
        pytest.param(lambda d: agui_wire.decode(d, PROTO_MEDIA_TYPE), id="proto"),
        pytest.param(lambda d: agui_wire.decode(d, SSE_MEDIA_TYPE), id="sse"),
        pytest.param(agui_wire.decode_proto, id="decode_proto"),
        pytest.param(lambda d: agui_wire.EventDecoder().feed(d), id="EventDecoder"),
    ],
)
@pytest.mark.parametrize("transport", ["proto", "sse"])
def test_gzip_says_gzip_and_how_to_decompress(read, transport) -> None:
    plain = encode_proto(EVENT) if transport == "proto" else encode_sse(EVENT)
    with pytest.raises(DecodeError) as info:
        read(gzip.compress(plain))
    message = str(info.value)
    assert "it is gzip-compressed, so decompress it first (gzip.decompress(data)" in message
    assert message.startswith(("frame 0, byte 0: ", "event 0, byte "))
    assert agui_wire.decode(gzip.decompress(gzip.compress(plain))) == [EVENT]


def test_read_records_of_gzip_names_it() -> None:
    (record,) = agui_wire.read_records(gzip.compress(encode_proto(EVENT)))
    assert record.fatal
    assert "gzip-compressed" in str(record.error)


def _stream_error(read: str, chunks: list[bytes]) -> str:
    """The error a streaming reader stops with, fed ``chunks`` one by one."""
    if read == "read_records":
        errors = [r.error for r in agui_wire.read_records(iter(chunks)) if r.error]
        return str(errors[-1])
    if read == "iter_decode":
        with pytest.raises(DecodeError) as info:
            list(agui_wire.iter_decode(iter(chunks)))
        return str(info.value)
    return _fed_error(chunks)


def _fed_error(chunks: list[bytes]) -> str:
    decoder = agui_wire.EventDecoder()
    try:
        for chunk in chunks:
            decoder.feed(chunk)
        decoder.close()
    except DecodeError as exc:
        return str(exc)
    raise AssertionError("EventDecoder accepted the stream")


@pytest.mark.parametrize("read", ["EventDecoder", "iter_decode", "read_records"])
@pytest.mark.parametrize("head", [b"\x1f\x8bP\r\n", b"\x1f\x00", b"\x1f"])
def test_a_stream_cut_after_its_first_byte_says_what_decode_says(read, head) -> None:
    # 0x1f alone cannot tell gzip's magic (1f 8b) from a bad first byte: a streaming
    # reader waits for the next byte, so its error is decode()'s however the stream
    # is cut (found by fuzz_decode: byte by byte, gzip went unnamed).
    with pytest.raises(DecodeError) as info:
        agui_wire.decode(head)
    whole = str(info.value)
    assert ("gzip-compressed" in whole) == head.startswith(b"\x1f\x8b")
    cuts = [[head], [head[:1], head[1:]], [bytes([b]) for b in head], [head[:1], b"", head[1:]]]
    for chunks in cuts:
        assert _stream_error(read, [c for c in chunks if c or len(chunks) == 4]) == whole


def _import_error_without(module: str, code: str) -> str:
    """What ``code`` raises (an ImportError: type, ``name``, message) in a fresh
    interpreter where ``module`` is not installed."""
    script = (
        "import sys\n"
        f"sys.modules[{module!r}] = None\n"  # as where it is not installed
        "try:\n"
        + "".join(f"    {line}\n" for line in code.splitlines())
        + "except ImportError as exc:\n"
        "    print(type(exc).__name__, exc.name, '|', exc)\n"
    )
    root = Path(agui_wire.__file__).resolve().parents[1]
    r = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
        env={"PYTHONPATH": str(root), "PATH": ""},
    )
    return r.stdout.strip()


def test_import_redis_without_redis_py_names_the_extra() -> None:
    assert _import_error_without("redis", "import agui_wire.redis") == (
        "MissingDependency redis | agui_wire.redis needs the 'redis' package, which is not "
        "installed: pip install 'agui-wire[redis]'"
    )
    assert issubclass(MissingDependency, ImportError)


def test_install_without_the_sdk_names_the_extra() -> None:
    # ag_ui: where ag-ui-protocol is not installed
    assert _import_error_without("ag_ui", "import agui_wire\nagui_wire.install()") == (
        "MissingDependency ag-ui-protocol | agui_wire.install() (it replaces the official "
        "SDK's encoder) needs the 'ag-ui-protocol' package, which is not installed: "
        "pip install 'agui-wire[pydantic]'"
    )
