"""Options every capture-reading command shares, and where output goes.

Contract of the ``CAPTURE`` argument (``add_capture_argument``): a file, ``-``
for stdin, or nothing: then stdin when it is not a terminal (``cat x | agui-wire
decode``), else a usage error; waiting on a keyboard for a binary capture would
look like a hang.

Contract of ``open_output``: ``-o FILE`` (or none / ``-`` for stdout); a name
ending ``.gz`` is written gzip-compressed. Binary output (protobuf frames) to a
terminal is refused (exit 2) unless ``--force``: it would only garble the
screen. Errors opening the file are I/O errors (exit 3); so are those of
``write_page`` (an ``--html FILE`` page, written whole).
"""

from __future__ import annotations

import argparse
import gzip
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from typing import IO, Any, cast

from ..errors import EncodeError
from ..schema import DEFAULT_MAX_FRAME_SIZE
from ._capture import CaptureFrame, CaptureStream
from ._common import InputError, UsageError, is_terminal, say
from ._inputs import DEFAULT_MAX_HAR_SIZE, FORMATS, Input, describe_entries, open_sources
from ._leftout import LATER, LeftOut
from ._progress import Progress, progress_enabled

__all__ = [
    "add_allow_empty",
    "add_capture_argument",
    "add_input_options",
    "add_keep_going",
    "add_output_options",
    "byte_size",
    "left_out",
    "no_events",
    "open_output",
    "read_capture",
    "skip_frame",
    "skip_unencodable",
    "sources",
    "write_page",
]


def byte_size(text: str) -> int:
    """``10485760``, ``10MiB``, ``512k``... as bytes (argparse type)."""
    units = {"": 1, "b": 1, "k": 1 << 10, "kb": 1 << 10, "kib": 1 << 10, "m": 1 << 20}
    units |= {"mb": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gb": 1 << 30, "gib": 1 << 30}
    t = text.strip().lower().replace("_", "")
    num = t.rstrip("bgikm")
    try:
        value = int(num) * units[t[len(num) :]]
    except (ValueError, KeyError):
        raise argparse.ArgumentTypeError(
            f"not a size: {text!r} (e.g. 1048576, 64KiB, 10MiB)"
        ) from None
    if value < 0:
        raise argparse.ArgumentTypeError("a size cannot be negative")
    return value


def add_capture_argument(
    parser: argparse.ArgumentParser, dest: str = "capture", what: str = "capture file"
) -> None:
    parser.add_argument(
        dest,
        nargs="?",
        metavar=dest.upper(),
        help=f"{what}, or - for stdin (the default when stdin is not a terminal)",
    )


def _stdin_unless_terminal() -> str:
    if is_terminal(sys.stdin) or sys.stdin is None:
        raise UsageError(
            "no input: name a file, or pipe one in (stdin is a terminal; - reads it anyway)"
        )
    return "-"


def add_input_options(parser: argparse.ArgumentParser, *, keep_going: bool = True) -> None:
    group = parser.add_argument_group("input")
    group.add_argument(
        "--format",
        choices=FORMATS,
        default="auto",
        help="input format (default: detected; gzip is always detected by its magic bytes)",
    )
    group.add_argument(
        "--entry",
        type=int,
        metavar="N",
        help="HAR input: decode only log.entries[N] (listed when several qualify)",
    )
    if keep_going:
        add_keep_going(group)
    add_allow_empty(group)
    group.add_argument(
        "--unknown-events",
        choices=("skip", "raw", "error"),
        default="skip",
        help="binary frames of a later protocol: skip with a note (default, as the "
        "reference client), keep as RAW events, or treat as errors",
    )
    group.add_argument(
        "--invalid-utf8",
        choices=("error", "replace"),
        default="error",
        help="invalid UTF-8 in strings: an error (default) or U+FFFD (as the reference)",
    )
    group.add_argument(
        "--max-frame-size",
        type=byte_size,
        default=DEFAULT_MAX_FRAME_SIZE,
        metavar="SIZE",
        help="largest binary frame payload accepted (default: the reference client's, "
        f"{DEFAULT_MAX_FRAME_SIZE:,} bytes)",
    )
    group.add_argument(
        "--max-har-size",
        type=byte_size,
        default=DEFAULT_MAX_HAR_SIZE,
        metavar="SIZE",
        help="largest HAR file read (HAR is JSON and is loaded whole; default 512MiB)",
    )


def add_keep_going(group: Any) -> None:
    group.add_argument(
        "--keep-going",
        "-k",
        action="store_true",
        help="go past a frame that does not decode or an event that cannot be encoded, "
        "listing it (the exit status stays 1)",
    )


def add_allow_empty(group: Any) -> None:
    group.add_argument(
        "--allow-empty",
        action="store_true",
        help="an input with no events is fine (exit 0); by default it is a problem (exit 1), "
        "since a wrong file reads as no events",
    )


def add_output_options(parser: argparse.ArgumentParser, *, binary: bool) -> None:
    parser.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write to FILE instead of stdout (FILE.gz: gzip-compressed)",
    )
    if binary:
        parser.add_argument(
            "--force",
            "-f",
            action="store_true",
            help="write binary output even when stdout is a terminal",
        )


def sources(args: argparse.Namespace, path: str | None, *, allow_many: bool) -> list[Input]:
    """The sources of ``path`` (``None``: see the module doc); with several HAR
    entries and ``allow_many`` False, a usage error listing them."""
    if path is None:
        path = _stdin_unless_terminal()
    found = open_sources(path, format=args.format, entry=args.entry, max_har_size=args.max_har_size)
    if len(found) > 1 and not allow_many:
        entries = [s.har for s in found if s.har is not None]
        raise UsageError(
            f"{path} has {len(found)} AG-UI responses; pick one with --entry N:\n"
            + describe_entries(entries)
        )
    if len(found) > 1:
        say(
            f"{path}: {len(found)} AG-UI responses, each reported with its entry number "
            "(--entry N picks one):\n" + describe_entries([s.har for s in found if s.har])
        )
    return found


def read_capture(
    args: argparse.Namespace,
    source: Input,
    *,
    keep_going: bool | None = None,
    progress: Progress | None = None,
    **extra: Any,
) -> CaptureStream:
    """A ``CaptureStream`` over ``source`` with the command's input options."""
    return CaptureStream(
        source,
        keep_going=getattr(args, "keep_going", False) if keep_going is None else keep_going,
        unknown_events=args.unknown_events,
        invalid_utf8=args.invalid_utf8,
        max_frame_size=args.max_frame_size,
        progress=None if progress is None else progress.update,
        **extra,
    )


def left_out(args: argparse.Namespace, action: str = "skipped", *, keep: bool = False) -> LeftOut:
    """The log of what this command leaves out (``-v`` lists every entry; ``keep``
    holds them all in ``items``)."""
    return LeftOut(verbose=getattr(args, "verbose", False), action=action, keep=keep)


def skip_frame(log: LeftOut, source: Input, frame: CaptureFrame) -> None:
    """A bad frame gone past (``--keep-going``) or a note (a later protocol's event)."""
    if frame.error is not None:
        err = frame.error
        log.add(
            source.label,
            frame.index,
            err.offset if err.offset is not None else frame.offset,
            err.event_type,
            err.reason,
            frame.length,
            unit=err._unit,
        )
    elif frame.note is not None:
        unit = "frame" if source.format == "proto" else "event"
        log.add(source.label, frame.index, frame.offset, LATER, frame.note, frame.length, unit)


def skip_unencodable(
    log: LeftOut, label: str, frame: CaptureFrame, exc: EncodeError, what: str
) -> None:
    """An event ``frame`` held that cannot be encoded (``what``: "cannot encode")."""
    log.add(
        label,
        frame.index,
        frame.offset,
        exc.event_type,
        f"{what}: {exc.reason}",
        frame.length,
        path=exc.path,
    )


def no_events(args: argparse.Namespace, stream: CaptureStream) -> bool:
    """After reading ``stream``: True (and one line saying what was found) when it held
    no event, nothing went wrong in it, and ``--allow-empty`` does not accept that."""
    if stream.events or stream.errors or stream.notes:
        return False
    merely_empty, found = stream.describe_empty()
    if merely_empty and getattr(args, "allow_empty", False):
        return False
    label = stream.source.label
    if merely_empty:
        say(f"{label}: no AG-UI events: {found} (--allow-empty accepts an empty stream)")
    else:
        say(f"{label}: no AG-UI events: {found}; not an AG-UI capture?")
    return True


def new_progress(args: argparse.Namespace, label: str, source: Input) -> Progress:
    return Progress(
        label,
        source.size,
        enabled=progress_enabled(getattr(args, "no_progress", False)),
    )


@contextmanager
def open_output(path: str | None, *, binary: bool, force: bool = False) -> Iterator[IO[bytes]]:
    """Where a command writes its output (see the module doc)."""
    if path is None or path == "-":
        out = sys.stdout.buffer
        if binary and not force and is_terminal(sys.stdout):
            raise UsageError(
                "refusing to write binary protobuf to a terminal: use -o FILE, pipe it, "
                "or pass --force"
            )
        try:
            yield out
        finally:
            with suppress(BrokenPipeError):
                out.flush()
        return
    try:
        fh = cast(
            "IO[bytes]",
            gzip.open(path, "wb") if path.endswith(".gz") else open(path, "wb"),  # noqa: SIM115
        )
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        yield fh
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
    finally:
        fh.close()


def write_page(path: str, html: str) -> None:
    """``--html FILE``: the page written to ``path`` (UTF-8), or an ``InputError``."""
    try:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(html)
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
