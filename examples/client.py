"""Run an AG-UI agent from the command line and print its events, one JSON per line.

    python examples/client.py http://127.0.0.1:8000/agent [--sse | --proto]

Uses ``agui_wire.client.run_agent`` with an ``httpx.Client``: by default it asks
for protobuf with SSE as the fallback; ``--sse``/``--proto`` insist on one.
The event count goes to stderr. Exits 1 with
the error on a failed request, a broken stream or an incomplete run.
"""

from __future__ import annotations

import argparse
import sys
import uuid

import httpx
import orjson

from agui_wire import PROTO_MEDIA_TYPE, SSE_MEDIA_TYPE, AguiWireError
from agui_wire.client import DEFAULT_ACCEPT, run_agent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("url")
    transport = parser.add_mutually_exclusive_group()
    transport.add_argument("--sse", action="store_true", help="ask for SSE only")
    transport.add_argument("--proto", action="store_true", help="ask for protobuf only")
    parser.add_argument("--thread-id", default="thread-1")
    parser.add_argument("--run-id", default=None, help="default: a fresh UUID")
    parser.add_argument("--message", default="What's the weather in Zürich?")
    parser.add_argument("--timeout", type=float, default=60.0, help="read timeout (s)")
    args = parser.parse_args(argv)

    accept = SSE_MEDIA_TYPE if args.sse else PROTO_MEDIA_TYPE if args.proto else DEFAULT_ACCEPT
    run_input = {
        "threadId": args.thread_id,
        "runId": args.run_id or str(uuid.uuid4()),
        "messages": [{"id": "user-1", "role": "user", "content": args.message}],
        "tools": [],
        "context": [],
        "state": {},
        "forwardedProps": {},
    }
    count = 0
    timeout = httpx.Timeout(10.0, read=args.timeout)
    try:
        with httpx.Client(timeout=timeout) as client:
            for event in run_agent(client, args.url, run_input, accept=accept):
                sys.stdout.buffer.write(orjson.dumps(event) + b"\n")
                sys.stdout.flush()
                count += 1
    except (AguiWireError, httpx.HTTPError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{count} events", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
