"""``agui-wire`` on captures produced by the real ``@ag-ui/encoder`` 1.0.0.

The captures are made in the test run by the pinned npm packages (through
``node_harness``): the corpus and a realistic run, binary and SSE, plain, gzip,
inside a HAR file and on stdin. The CLI must read them exactly as the
reference's own decoder does, and write back what the reference writes.
"""

from __future__ import annotations

import gzip

import orjson
import pytest

from tests.support.cli_support import PROTO, SSE, chrome_har, har_entry, jsonl, run_cli
from tests.support.corpus import CASES, CORPUS, SSE_LOSSY, realistic_run
from tests.support.wire import json_equal

pytestmark = pytest.mark.interop

RUN = realistic_run(400, 11)


@pytest.fixture(scope="module")
def reference(node_harness, tmp_path_factory) -> dict[str, object]:
    d = tmp_path_factory.mktemp("reference")
    corpus_bin = b"".join(node_harness.encode_proto(CORPUS))
    corpus_sse = node_harness.encode_sse(CORPUS)
    run_bin = b"".join(node_harness.encode_proto(RUN))
    run_sse = node_harness.encode_sse(RUN)
    files = {}
    for name, data in (
        ("corpus.bin", corpus_bin),
        ("corpus.sse", corpus_sse),
        ("run.bin", run_bin),
        ("run.sse", run_sse),
    ):
        (d / name).write_bytes(data)
        files[name] = d / name
    return {
        "files": files,
        "corpus_decoded": node_harness.decode_proto_events(corpus_bin),
        "run_decoded": node_harness.decode_proto_events(run_bin),
        "dir": d,
    }


def test_decode_reference_binary_corpus(reference) -> None:
    r = run_cli("decode", reference["files"]["corpus.bin"])
    assert r.returncode == 0, r.stderr
    ours = jsonl(r.stdout)
    assert len(ours) == len(CORPUS)
    for i, (a, b) in enumerate(zip(ours, reference["corpus_decoded"], strict=True)):
        assert json_equal(a, b), (i, a, b)


def test_decode_reference_sse_corpus(reference) -> None:
    r = run_cli("decode", reference["files"]["corpus.sse"])
    assert r.returncode == 0, r.stderr
    ours = jsonl(r.stdout)
    for name, event, got in zip(CASES, CORPUS, ours, strict=True):
        if name not in SSE_LOSSY:
            assert json_equal(got, event), name


@pytest.mark.parametrize("kind", ["bin", "sse"])
def test_reference_run_through_stdin_gzip_and_har(reference, kind) -> None:
    data = reference["files"][f"run.{kind}"].read_bytes()
    expected = reference["run_decoded"]
    for args, stdin in (
        (["decode", "-"], data),
        (["decode", "-"], gzip.compress(data)),
    ):
        r = run_cli(*args, input=stdin)
        assert r.returncode == 0, r.stderr
        assert all(json_equal(a, b) for a, b in zip(jsonl(r.stdout), expected, strict=True))
    har = reference["dir"] / f"run-{kind}.har"
    ctype = PROTO if kind == "bin" else SSE
    har.write_bytes(chrome_har(har_entry("https://app/agent", data, ctype, binary=kind == "bin")))
    r = run_cli("decode", har)
    assert r.returncode == 0, r.stderr
    assert all(json_equal(a, b) for a, b in zip(jsonl(r.stdout), expected, strict=True))


def test_validate_and_inspect_reference_captures(reference) -> None:
    for name in ("run.bin", "run.sse"):
        r = run_cli("validate", reference["files"][name])
        assert r.returncode == 0, r.stdout
        assert f"valid: {len(RUN)} events, 0 error(s)".encode() in r.stdout
        r = run_cli("inspect", reference["files"][name], "--json")
        records = jsonl(r.stdout)
        assert [rec["type"] for rec in records] == [e["type"] for e in RUN]
    # the corpus is a bag of valid events, not a run: schema-clean only
    r = run_cli(
        "validate", reference["files"]["corpus.bin"], "--json", "--no-sequence", "--no-state"
    )
    doc = orjson.loads(r.stdout)
    assert [p for p in doc["problems"] if p["severity"] == "error"] == []


def test_convert_writes_what_the_reference_writes(reference, node_harness) -> None:
    # binary -> binary through our encoder is byte-identical to @ag-ui/encoder
    r = run_cli("convert", reference["files"]["run.sse"], "--to", "proto")
    assert r.returncode == 0, r.stderr
    assert r.stdout == reference["files"]["run.bin"].read_bytes()
    r = run_cli(
        "encode", "-", "--to", "proto", input=b"".join(orjson.dumps(e) + b"\n" for e in CORPUS)
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout == reference["files"]["corpus.bin"].read_bytes()
    # our SSE is read back by the reference decoder to the same events
    r = run_cli("convert", reference["files"]["run.bin"], "--to", "sse")
    parsed = node_harness.parse_stream(r.stdout, SSE)
    assert parsed.error is None, parsed.error
    assert all(
        json_equal(a, b) for a, b in zip(parsed.events, reference["run_decoded"], strict=True)
    )


def test_reference_client_agrees_on_a_truncated_capture(reference, node_harness, tmp_path) -> None:
    data = reference["files"]["run.bin"].read_bytes()[:-5]
    path = tmp_path / "cut.bin"
    path.write_bytes(data)
    theirs = node_harness.parse_stream(data, PROTO)
    r = run_cli("decode", path)
    assert r.returncode == 1
    ours = jsonl(r.stdout)
    assert theirs.error is not None
    assert "mid-frame" in theirs.error.message
    assert len(ours) == len(theirs.events) or len(ours) == len(RUN) - 1
    assert b"the stream ended inside event" in r.stderr
    assert b"mid-frame" in r.stderr
