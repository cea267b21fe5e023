"""``agui-wire inspect --timeline [--html FILE]``: the command's options and run.

Strategy: open the capture as ``inspect`` does; for a recorded capture find its
timing sidecar (``CAPTURE.timing.jsonl``, or ``--timing FILE``) and feed the
capture to the reader cut into the recorded chunks (``_timings.rechunk``), so
``_timeline.build`` times each event by the chunk that completed it; a HAR
brings its own timings. Print the text (``_timeline_text``) or, with
``--json``, one JSON object per stream; ``--html`` also writes the page
(``timeline_html``; one stream only: a HAR with several AG-UI responses needs
``--entry``).

Contract: exit 1 when a frame was bad (it is on the timeline as a bad frame) or
the input held no event (as ``inspect``: ``--allow-empty`` accepts an empty stream),
2 for usage errors (``--frame``/``--hex`` with ``--timeline``, ``--timing``
with a HAR), 1 for a timing file that is not one or does not match its
capture, 3 when a file cannot be read or written.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable
from typing import Any

import orjson

from ._args import no_events, read_capture, write_page
from ._args import sources as open_args_sources
from ._common import EXIT_OK, EXIT_PROBLEMS, UsageError
from ._inputs import Input
from ._timeline import build
from ._timeline_text import render_text
from ._timings import SUFFIX, Timings, read_timings, rechunk, sidecar_of

__all__ = ["add_timeline_options", "run"]


def add_timeline_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("timeline")
    group.add_argument(
        "--timeline",
        action="store_true",
        help="when each event arrived: time to first token, gaps, text per second, tool call "
        "durations, run duration (times from a recording's timing file, a HAR, or the events' "
        "timestamps)",
    )
    group.add_argument(
        "--html",
        metavar="FILE",
        help="with --timeline: also write a self-contained HTML page with the events on an "
        "interactive time axis",
    )
    group.add_argument(
        "--timing",
        metavar="FILE",
        help=f"the timing file of a recorded capture (default: CAPTURE{SUFFIX} when it exists)",
    )


def _timings_for(args: argparse.Namespace, source: Input) -> Timings | None:
    if source.har is not None:
        if args.timing:
            raise UsageError("--timing is for captures made by agui-wire record; a HAR has its own")
        return None
    path = args.timing
    if path is None and args.capture not in (None, "-"):
        default = sidecar_of(args.capture)
        path = str(default) if default.exists() else None
    return None if path is None else read_timings(path)


def run(args: argparse.Namespace, describe: Callable[[dict[str, Any]], str]) -> int:
    """``inspect --timeline``: ``describe`` is inspect's ids-and-preview of an event."""
    if args.frame is not None or args.hex:
        raise UsageError("--timeline shows every event; --frame and --hex are for the table")
    found = open_args_sources(args, args.capture, allow_many=args.html is None)
    bad = False
    out = sys.stdout
    for n, source in enumerate(found):
        timings = _timings_for(args, source)
        if timings is not None:
            source.chunks = rechunk(source.chunks, timings)
        stream = read_capture(args, source, keep_going=True)
        timeline = build(source, stream, describe, timings)
        bad = bad or stream.errors > 0 or no_events(args, stream)
        if args.json:
            out.write(orjson.dumps(timeline.as_json()).decode() + "\n")
        else:
            if n:
                print(file=out)
            render_text(timeline, out)
        if args.html:
            from .timeline_html import render_html

            write_page(args.html, render_html(timeline))
            where = os.path.abspath(args.html)
            print(f"HTML timeline: {where}", file=sys.stderr if args.json else out)
    return EXIT_PROBLEMS if bad else EXIT_OK
