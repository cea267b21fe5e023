"""What ``decode`` writes, every other command reads.

Every output form of ``decode`` — plain, ``--pretty``, ``--sort-keys``,
``--envelope`` (also pretty), and a HAR with several AG-UI responses (enveloped
by default, each line naming its entry) — is piped into every reader:
``validate -``, ``encode -`` (both transports), ``convert -``, ``inspect -`` and
``cost -``. One stream's forms must read back as the capture itself does; the
several-response forms must be refused with one line saying how to pick an entry.
The capture is a real pydantic-ai run (tests/cli/captures). The commands run in
this process (``run_in_process``: some 40 runs without an interpreter start-up
each); tests/cli/test_cli_decode.py pipes through the real console script.
"""

from __future__ import annotations

import orjson
import pytest

import agui_wire
from tests.support.cli_support import jsonl, run_in_process

_RUNS: dict[tuple[object, ...], object] = {}


def run(*args: object, input: bytes | None = None):
    """``run_in_process``, each distinct run once (decode forms and direct reads repeat)."""
    key = (*map(str, args), input)
    if key not in _RUNS:
        _RUNS[key] = run_in_process(*args, input=input)
    return _RUNS[key]


ONE_STREAM = {
    "plain": (),
    "pretty": ("--pretty",),
    "sort-keys": ("--sort-keys",),
    "envelope": ("--envelope",),
    "envelope-pretty": ("--envelope", "--pretty"),
}
SEVERAL = {"har": (), "har-pretty": ("--pretty",)}
READERS = {
    "validate": ("validate", "-"),
    "encode-sse": ("encode", "-", "--to", "sse", "--lossy-numbers"),
    "encode-proto": ("encode", "-", "--to", "proto", "--lossy-numbers"),
    "convert": ("convert", "-", "--to", "sse", "--lossy-numbers"),
    "inspect": ("inspect", "-", "--json"),
    "cost": ("cost", "-", "--repeats", "1", "--json", "--lossy-numbers"),
}


def _normal(reader: str, out: bytes) -> object:
    """What must match between the capture and a decode form of it."""
    if reader == "validate":
        return out.split(b": ", 1)[1]  # the label differs (the file / stdin)
    if reader == "inspect":
        return [{"type": r["type"], "ids": r["ids"]} for r in jsonl(out)]  # offsets differ
    if reader in ("encode-sse", "convert"):  # SSE keeps the key order it is given
        return agui_wire.decode(out, agui_wire.SSE_MEDIA_TYPE)
    if reader == "cost":
        data = orjson.loads(out)
        plain = [t["bytes"] for t in data["transports"] if t["key"] in ("sse", "proto")]
        return data["events"], data["counts"], plain  # gzip's bytes vary with key order
    return out


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("form", list(ONE_STREAM))
def test_every_decode_form_reads_back(real, form, reader) -> None:
    capture = real["pydantic-ai.bin"]
    decoded = run("decode", capture, *ONE_STREAM[form])
    assert decoded.returncode == 0, decoded.stderr
    command = READERS[reader]
    # encode reads JSON Lines only: the capture itself goes through convert
    direct = run("convert" if command[0] == "encode" else command[0], capture, *command[2:])
    piped = run(*command, input=decoded.stdout)
    assert piped.returncode == direct.returncode == 0, piped.stderr
    assert _normal(reader, piped.stdout) == _normal(reader, direct.stdout)


@pytest.mark.parametrize("reader", list(READERS))
@pytest.mark.parametrize("form", list(SEVERAL))
def test_several_responses_are_refused_with_one_line(real, form, reader) -> None:
    decoded = run("decode", real["frameworks.har"], *SEVERAL[form])
    assert decoded.returncode == 0, decoded.stderr
    if form == "har":
        assert {e["entry"] for e in jsonl(decoded.stdout)} == {1, 2, 3, 4}
    piped = run(*READERS[reader], input=decoded.stdout)
    assert piped.returncode == 1
    said = piped.stderr.decode()
    if reader in ("validate", "inspect"):  # they report a bad frame on stdout
        said += piped.stdout.decode()
    hint = "an envelope of HAR entry 2 after entry 1: "
    assert said.count(hint) == 1, said
    assert "pick one with `agui-wire decode HAR --entry 1`" in said
    assert "jq -c 'select(.entry == 1) | .event'" in said


def test_the_jq_way_out_works(real) -> None:
    # what the refusal suggests, done by hand: one entry's events, unwrapped
    decoded = run("decode", real["frameworks.har"])
    events = [e["event"] for e in jsonl(decoded.stdout) if e["entry"] == 3]
    piped = run("validate", "-", input=b"".join(orjson.dumps(e) + b"\n" for e in events))
    assert piped.returncode == 0, piped.stdout
    assert f"valid: {len(events)} events".encode() in piped.stdout


def test_one_entry_of_a_har_reads_back_enveloped(real) -> None:
    decoded = run("decode", real["frameworks.har"], "--entry", "4", "--envelope")
    assert {e["entry"] for e in jsonl(decoded.stdout)} == {4}
    piped = run("validate", "-", input=decoded.stdout)
    assert piped.returncode == 0, piped.stdout
    assert b"stdin: valid: 22 events" in piped.stdout
