#!/usr/bin/env node
/*
 * node_bench.cjs: the pinned @ag-ui/encoder and @ag-ui/proto 1.0.0 timed on the same
 * events as benchmarks/compare.py (which writes them as JSONL and runs this).
 *
 *   node --expose-gc node_bench.cjs --rounds R --min-time S name=events.jsonl ...
 *
 * Per workload, contenders are warmed up (JIT), calibrated to at least S seconds per
 * sample, then timed round-robin for R rounds with process.hrtime.bigint(), gc()
 * before each sample. Prints one JSON object: per workload and contender the
 * samples in ns/event, the output size and its sha256 (compare.py checks the
 * protobuf bytes are identical to agui_wire's).
 *
 * Packages resolve from tests/interop/node_modules (NODE_PATH set by compare.py).
 */
"use strict";

const crypto = require("crypto");
const fs = require("fs");

const PROTO_MEDIA_TYPE = "application/vnd.ag-ui.event+proto";

function args(argv) {
  const out = { rounds: 15, minTime: 0.05, workloads: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === "--rounds") out.rounds = Number(argv[++i]);
    else if (argv[i] === "--min-time") out.minTime = Number(argv[++i]);
    else {
      const eq = argv[i].indexOf("=");
      out.workloads.push({ name: argv[i].slice(0, eq), file: argv[i].slice(eq + 1) });
    }
  }
  return out;
}

const gc = globalThis.gc || (() => {});

function concat(chunks) {
  return Buffer.concat(chunks.map((c) => (typeof c === "string" ? Buffer.from(c, "utf8") : c)));
}

function timeOnce(fn, reps) {
  gc();
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < reps; i++) fn();
  return Number(process.hrtime.bigint() - t0);
}

function main() {
  const opts = args(process.argv.slice(2));
  const { EventEncoder } = require("@ag-ui/encoder");
  const proto = require("@ag-ui/proto");
  const protoEncoder = new EventEncoder({ accept: PROTO_MEDIA_TYPE });
  const sseEncoder = new EventEncoder();
  if (protoEncoder.getContentType() !== PROTO_MEDIA_TYPE) throw new Error("protobuf not negotiated");
  const path = require("path");
  const version = (name) =>
    JSON.parse(fs.readFileSync(path.join(path.dirname(require.resolve(name)), "..", "package.json"), "utf8"))
      .version;
  const result = {
    node: process.version,
    packages: { "@ag-ui/encoder": version("@ag-ui/encoder"), "@ag-ui/proto": version("@ag-ui/proto") },
    workloads: {},
  };
  const warnings = [];
  console.warn = (...a) => warnings.push(a.join(" "));

  for (const { name, file } of opts.workloads) {
    const events = fs
      .readFileSync(file, "utf8")
      .split("\n")
      .filter((l) => l)
      .map((l) => JSON.parse(l));
    const frames = events.map((e) => protoEncoder.encodeBinary(e));
    const messages = frames.map((f) => f.subarray(4)); // what the client's parser hands decode
    const sse = events.map((e) => sseEncoder.encode(e)).join("");
    const contenders = {
      "encodeBinary (protobuf)": () => events.map((e) => protoEncoder.encodeBinary(e)),
      "encode (SSE, string)": () => events.map((e) => sseEncoder.encode(e)),
      "encodeBinary (SSE, bytes)": () => events.map((e) => sseEncoder.encodeBinary(e)),
      "@ag-ui/proto decode (per frame)": () => messages.map((m) => proto.decode(m)),
      "SSE split + JSON.parse": () =>
        sse
          .split("\n\n")
          .slice(0, -1)
          .map((c) => JSON.parse(c.slice(6))),
    };
    const out = {};
    const entries = Object.entries(contenders);
    for (const [label, fn] of entries) {
      const output = fn();
      const isEncode = label.startsWith("encode");
      const bytes = isEncode ? concat(output) : null;
      // Warm up: at least 5 calls and 0.5 s, so the JIT has settled.
      let calls = 0;
      const t0 = process.hrtime.bigint();
      while (calls < 5 || Number(process.hrtime.bigint() - t0) < 5e8) {
        fn();
        calls++;
      }
      const one = timeOnce(fn, 1);
      out[label] = {
        reps: Math.max(1, Math.ceil((opts.minTime * 1e9) / Math.max(one, 1))),
        samples: [],
        bytes: bytes ? bytes.length : null,
        sha256: bytes ? crypto.createHash("sha256").update(bytes).digest("hex") : null,
        decoded: isEncode ? null : output.length,
      };
    }
    for (let r = 0; r < opts.rounds; r++) {
      for (let k = 0; k < entries.length; k++) {
        const [label, fn] = entries[(k + r) % entries.length];
        const entry = out[label];
        entry.samples.push(timeOnce(fn, entry.reps) / entry.reps / events.length);
      }
    }
    result.workloads[name] = { events: events.length, contenders: out };
  }
  result.warnings = warnings.slice(0, 5);
  result.warning_count = warnings.length;
  process.stdout.write(JSON.stringify(result) + "\n");
}

main();
