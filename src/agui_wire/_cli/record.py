"""``agui-wire record URL``: run an agent once and keep its stream with arrival times.

Strategy: POST a ``RunAgentInput`` (``--input FILE``, or a minimal valid one:
fresh thread and run ids, empty state and tools, ``--message`` as the user's
message) with httpx, asking for the transport ``--accept`` names; write the
body to the capture file chunk by chunk as it arrives (HTTP content-decoded:
the bytes an AG-UI client parses) and the arrival time of every chunk to the
``_timings`` sidecar beside it. ``agui-wire inspect CAPTURE --timeline`` reads
both.

Contract: exit 0 when the stream ended normally; 1 when the server answered
non-2xx (nothing written; the status and the start of the body on stderr) or
the stream broke (what arrived is kept, the sidecar says how it ended); 2 for
usage errors, including a missing httpx (the ``client`` extra); 3 for files
that cannot be read or written. A response that is not an AG-UI content type
is recorded with a warning.
"""

from __future__ import annotations

import argparse
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

import orjson

from .._mediatypes import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE
from ._common import EXIT_OK, EXIT_PROBLEMS, CliError, InputError, UsageError, human_bytes, say
from ._inputs import format_of
from ._parser import add_command
from ._timings import SUFFIX, TimingWriter

if TYPE_CHECKING:
    import httpx

__all__ = ["ACCEPT", "default_input", "register", "run"]

HELP = "POST a run to an agent, save its stream and when each chunk arrived"
DESCRIPTION = """\
Run an agent once over HTTP and record its response: the body as received (a
capture every other command reads) and, beside it in CAPTURE.timing.jsonl, the
arrival time of every chunk (docs/cli.md describes the format: agui-wire docs cli).
Then see the run on a time axis with agui-wire inspect CAPTURE --timeline [--html FILE].
"""
EPILOG = """\
examples:
  agui-wire record http://localhost:8000/agent -o run.sse
  agui-wire record http://localhost:8000/agent --accept proto --message "Hi" -o run.bin
  agui-wire record https://agent.example.com/run --input input.json -H "Authorization: Bearer $T"
"""

#: ``--accept`` shorthands.
ACCEPT: Final = {"sse": SSE_MEDIA_TYPE, "proto": PROTO_MEDIA_TYPE}
BODY_EXCERPT: Final = 300


def register(sub: Any, common: argparse.ArgumentParser) -> None:
    p = add_command(
        sub, common, "record", help=HELP, description=DESCRIPTION, epilog=EPILOG, run=run
    )
    p.add_argument("url", metavar="URL", help="the agent's AG-UI endpoint")
    p.add_argument(
        "--accept",
        default="sse",
        metavar="sse|proto|VALUE",
        help="the transport to ask for: sse (text/event-stream, the default), proto "
        f"({PROTO_MEDIA_TYPE}), or any Accept header value",
    )
    p.add_argument(
        "--input",
        metavar="FILE",
        help="the RunAgentInput to POST, as JSON (- for stdin); default: a minimal valid one",
    )
    p.add_argument(
        "--message",
        metavar="TEXT",
        help="the user's message in the default input (not with --input)",
    )
    p.add_argument(
        "-H",
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="an extra request header (repeatable)",
    )
    p.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="the capture file (default: record-DATE-TIME.sse or .bin in the current directory); "
        f"the timings go to FILE{SUFFIX}",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=300.0,
        metavar="SECONDS",
        help="give up when nothing arrives for this long (default 300)",
    )


def default_input(message: str | None = None) -> dict[str, Any]:
    """A minimal valid ``RunAgentInput``: fresh ids, nothing else but ``message``."""
    messages = []
    if message is not None:
        messages.append({"id": f"msg-{uuid.uuid4().hex[:12]}", "role": "user", "content": message})
    return {
        "threadId": f"thread-{uuid.uuid4().hex[:12]}",
        "runId": f"run-{uuid.uuid4().hex[:12]}",
        "state": {},
        "messages": messages,
        "tools": [],
        "context": [],
        "forwardedProps": {},
    }


def _load_input(args: argparse.Namespace) -> bytes:
    if args.input is None:
        return orjson.dumps(default_input(args.message))
    if args.message is not None:
        raise UsageError("--message fills the default input; with --input, put it in the file")
    try:
        if args.input == "-":
            import sys

            raw = sys.stdin.buffer.read()
        else:
            raw = Path(args.input).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {args.input}: {exc.strerror or exc}") from None
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise CliError(f"{args.input}: not JSON: {exc}") from None
    if not isinstance(value, dict):
        raise CliError(
            f"{args.input}: a RunAgentInput is a JSON object, not {type(value).__name__}"
        )
    return orjson.dumps(value)


def _headers(args: argparse.Namespace) -> dict[str, str]:
    accept = ACCEPT.get(args.accept, args.accept)
    headers = {"accept": accept, "content-type": "application/json"}
    for h in args.header:
        name, sep, value = h.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"-H {h!r}: write a header as 'Name: value'")
        headers[name.strip().lower()] = value.strip()
    return headers


def _httpx() -> Any:
    try:
        import httpx
    except ImportError:
        raise UsageError(
            "agui-wire record needs httpx, which the 'client' extra installs: "
            "pip install 'agui-wire[client]'"
        ) from None
    return httpx


def _output_path(args: argparse.Namespace, kind: str | None) -> str:
    if args.output:
        return str(args.output)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return f"record-{stamp}.{'bin' if kind == 'proto' else 'sse'}"


def _open(path: str) -> IO[bytes]:
    try:
        return open(path, "wb")
    except OSError as exc:
        raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None


def _refused(response: httpx.Response, url: str) -> CliError:
    excerpt = b""
    for chunk in response.iter_bytes():
        excerpt += chunk
        if len(excerpt) >= BODY_EXCERPT:
            break
    text = excerpt[:BODY_EXCERPT].decode("utf-8", "replace")
    return CliError(
        f"{url}: HTTP {response.status_code}; nothing recorded. The body begins: {text!r}"
    )


def run(args: argparse.Namespace) -> int:
    httpx = _httpx()
    if args.timeout <= 0:
        raise UsageError("--timeout must be positive")
    body = _load_input(args)
    headers = _headers(args)
    timeout = httpx.Timeout(10.0, read=args.timeout)
    with httpx.Client(timeout=timeout) as client:
        try:
            request = client.build_request("POST", args.url, content=body, headers=headers)
            started = datetime.now(timezone.utc)
            t0 = time.perf_counter()
            response = client.send(request, stream=True)
        except (httpx.InvalidURL, httpx.UnsupportedProtocol) as exc:
            raise UsageError(f"{args.url}: not a URL httpx can request ({exc})") from None
        except httpx.TransportError as exc:
            raise CliError(f"{args.url}: {type(exc).__name__}: {exc or 'no answer'}") from None
        try:
            response_at = time.perf_counter() - t0
            if not response.is_success:
                raise _refused(response, args.url)
            ctype = response.headers.get("content-type", "")
            kind = format_of(ctype)
            if kind is None:
                say(
                    f"warning: {args.url} answered {ctype or 'no content type'}, not an AG-UI "
                    "stream; recording it anyway"
                )
            path = _output_path(args, kind)
            return _record(response, args, path, kind, started, t0, response_at, headers, httpx)
        finally:
            response.close()


def _record(
    response: httpx.Response,
    args: argparse.Namespace,
    path: str,
    kind: str | None,
    started: datetime,
    t0: float,
    response_at: float,
    headers: dict[str, str],
    httpx: Any,
) -> int:
    with _open(path) as capture, _open(path + SUFFIX) as sidecar:
        timing = TimingWriter(sidecar)
        timing.header(
            url=args.url,
            method="POST",
            accept=headers["accept"],
            status=response.status_code,
            content_type=response.headers.get("content-type"),
            content_encoding=response.headers.get("content-encoding"),
            started=started.isoformat().replace("+00:00", "Z"),
            response_at=response_at,
        )
        chunks = 0
        error: str | None = None
        try:
            for chunk in response.iter_bytes():
                at = time.perf_counter() - t0
                capture.write(chunk)
                capture.flush()
                timing.chunk(len(chunk), at)
                chunks += 1
        except httpx.TransportError as exc:
            error = f"{type(exc).__name__}: {exc or 'the connection broke'}"
        except KeyboardInterrupt:
            timing.end(time.perf_counter() - t0, "interrupted")
            raise
        except OSError as exc:
            raise InputError(f"cannot write {path}: {exc.strerror or exc}") from None
        end = time.perf_counter() - t0
        timing.end(end, error)
    size = timing.offset
    what = {"sse": "SSE", "proto": "binary protobuf", None: "not an AG-UI stream"}[kind]
    print(
        f"recorded {human_bytes(size)} ({size:,} bytes, {what}) in {chunks:,} "
        f"chunk{'' if chunks == 1 else 's'} over "
        f"{end:.3f} s: {path}\narrival times: {path}{SUFFIX}\n"
        f"see it: agui-wire inspect {path} --timeline [--html timeline.html]"
    )
    if error is not None:
        say(f"{args.url}: the stream broke after {size:,} bytes: {error} (what arrived is kept)")
        return EXIT_PROBLEMS
    return EXIT_OK
