"""Fuzz target: the length-prefix framer, pure Python and Cython.

Strategy: the input is a binary stream. Every framer implementation reads it
whole, a byte at a time, and in pseudo-random chunks (some fed as ``bytearray``s
that are scribbled over right after ``feed()``, to catch payloads that alias the
caller's buffer), under a ``max_frame_size`` derived from the input. A ten-line
non-incremental framer written from the spec is the oracle.

Contract checked: the same payloads (bytes-equal) and the same error (class,
message, index, offsets) for every implementation and every chunking; the error
after all good frames; counters consistent with what was handed out; nothing
escapes but ``DecodeError``. Run: ``python -m tests.fuzz.fuzz_framer [libFuzzer
flags] [corpus dirs]``, or through tests/fuzz/run.py.
"""

from __future__ import annotations

import contextlib
import sys
from typing import Any

if __name__ == "__main__":
    import atheris

    _instrumented: Any = atheris.instrument_imports(include=["agui_wire", "fuzzlib"])
else:
    _instrumented = contextlib.nullcontext()

with _instrumented:
    from agui_wire import DecodeError, FrameTooLarge, TruncatedStream
    from agui_wire.schema import DEFAULT_MAX_FRAME_SIZE
    from tests.fuzz.fuzzlib import chunkings, framer_modules, pick

SEEDS = "streams"
LIMITS = (DEFAULT_MAX_FRAME_SIZE, DEFAULT_MAX_FRAME_SIZE, 0, 1, 4, 16, 255, 4096)
IMPLS = framer_modules()


def reference(data: bytes, limit: int) -> tuple[list[bytes], tuple[type[DecodeError], int, int]]:
    """(payloads, (error class, frame index, frame offset)) straight from the spec."""
    out: list[bytes] = []
    pos = 0
    while len(data) - pos >= 4:
        n = int.from_bytes(data[pos : pos + 4], "big")
        if n > limit:
            return out, (FrameTooLarge, len(out), pos)
        if pos + 4 + n > len(data):
            return out, (TruncatedStream, len(out), pos)
        out.append(data[pos + 4 : pos + 4 + n])
        pos += 4 + n
    if pos < len(data):
        return out, (TruncatedStream, len(out), pos)
    return out, (type(None), len(out), pos)  # type: ignore[return-value]


def raised(call: Any) -> DecodeError | None:
    try:
        call()
    except DecodeError as exc:
        return exc
    return None


def run(impl: Any, chunks: list[bytes], limit: int, mutable: bool) -> tuple[list[bytes], Any]:
    reader = impl.FrameReader(limit)
    got: list[bytes] = []
    error: DecodeError | None = None
    for chunk in chunks:
        buf: Any = bytearray(chunk) if mutable else chunk
        try:
            payloads = reader.feed(buf)
        except DecodeError as exc:
            error = exc
            break
        for p in payloads:
            assert type(p) in (bytes, memoryview), type(p)
            if type(p) is memoryview:  # zero copy: only of an immutable bytes chunk
                assert p.readonly
                assert not mutable
        got += [bytes(p) for p in payloads]
        if mutable:
            buf[:] = b"\xaa" * len(buf)  # the caller reuses its buffer
        if reader.pending_error is not None:
            # the next call must raise exactly the pending error
            error = reader.pending_error
            assert raised(lambda: reader.feed(b"")) is error, "the pending error was not raised"
            break
    if error is None:
        consumed = sum(4 + len(p) for p in got)
        assert reader.frames_read == len(got)
        assert reader.offset == consumed
        assert reader.bytes_fed == sum(len(c) for c in chunks)
        assert reader.buffered == reader.bytes_fed - consumed
        try:
            reader.close()
        except DecodeError as exc:
            error = exc
    if error is not None:
        # a failed reader stays failed
        for again in (lambda: reader.feed(b"x"), reader.close):
            assert raised(again) is error, "a failed reader did not stay failed"
    return got, error


def test_one_input(data: bytes) -> None:
    limit = pick(data, LIMITS)
    want, (want_cls, want_index, want_offset) = reference(data, limit)
    first_error: DecodeError | None = None
    for chunk_name, chunks in chunkings(data):
        for impl_name, impl in IMPLS:
            for mutable in (False, True) if chunk_name.startswith("random") else (False,):
                got, error = run(impl, chunks, limit, mutable)
                where = f"{impl_name}/{chunk_name}/{'bytearray' if mutable else 'bytes'}"
                assert got == want, f"{where}: payloads differ from the reference framer"
                assert type(error) is want_cls, f"{where}: {error!r}, expected {want_cls}"
                if error is None:
                    continue
                assert (error.index, error.frame_offset) == (want_index, want_offset), where
                if first_error is None:
                    first_error = error
                else:
                    assert (type(error), str(error), error.index, error.offset) == (
                        type(first_error),
                        str(first_error),
                        first_error.index,
                        first_error.offset,
                    ), f"{where}: {error!r} != {first_error!r}"
    for impl_name, impl in IMPLS:
        for p in want:
            assert impl.frame(p) == len(p).to_bytes(4, "big") + p, impl_name


def main() -> None:
    atheris.Setup(sys.argv, test_one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
