#!/usr/bin/env node
/*
 * harness.cjs: the AG-UI 1.0.0 reference packages (@ag-ui/core, @ag-ui/proto,
 * @ag-ui/encoder, @ag-ui/client, pinned in package.json) behind one small CLI,
 * driven by the Python tests through subprocess (tests/interop/conftest.py).
 *
 *   node harness.cjs <subcommand> [options] < input > output
 *
 * Every subcommand reads all of stdin and writes all of stdout. "JSONL in" is
 * one JSON document per line, split on "\n" only (JSON.stringify leaves U+2028
 * raw). Output JSON is written by `dump` below, not JSON.stringify: -0, NaN and
 * +-Infinity are spelled -0.0 / NaN / Infinity / -Infinity (Python's json.loads
 * reads them), so decoded doubles reach Python exactly. console.warn is captured
 * per event and reported; every other console output goes to stderr so stdout
 * stays machine-readable. Exit 0 unless the harness itself failed (bad usage,
 * unparsable input): then exit 2 with the reason on stderr.
 *
 *   versions       -> {"<package>": "<version>", ..., "node": "v20..."}
 *   encode-proto   JSONL events in -> JSONL, one line per event:
 *                  {"frame": b64|null, "message": b64|null, "warnings": [str],
 *                   "error": {"name","message"}|null}
 *                  frame   = new EventEncoder({accept: AGUI_MEDIA_TYPE}).encodeBinary(e)
 *                  message = @ag-ui/proto encode(e) (unframed; the caller checks
 *                            frame == 4-byte BE length + message)
 *   decode-proto   a framed stream in (4-byte BE length + ag_ui.Event, repeated)
 *                  -> JSONL, one line per frame:
 *                  {"event": obj|null, "warnings": [str],
 *                   "error": {"name","message","unknownEventType": bool}|null}
 *                  then, if bytes are left that do not make a whole frame,
 *                  {"trailing": <byte count>}
 *   encode-sse     JSONL events in -> the exact bytes EventEncoder.encode() writes,
 *                  concatenated (each event "data: <json>\n\n")
 *   parse-stream   [--content-type CT] [--chunk-size N]: a response body in ->
 *                  {"events": [obj], "error": {"name","message"}|null,
 *                   "completed": bool, "warnings": [str]}
 *                  as HttpAgent.run() parses it: the body is served by a fake
 *                  fetch (status 200, header content-type: CT, omitted when CT
 *                  is not given) in chunks of N bytes (default: one chunk), so
 *                  runHttpRequest + transformHttpEventStream run unmodified.
 *   negotiate      JSON array of Accept values (string or null = not passed) in
 *                  -> JSON array of new EventEncoder({accept}).getContentType()
 *   validate       JSONL events in -> JSONL {"ok": bool, "data": obj|null,
 *                  "issues": [{"path": [...], "message": str}]}
 *                  from @ag-ui/core/schemas EventSchemas.safeParse (data = the
 *                  parsed output, zod defaults applied)
 *   judge          JSONL events in, read line by line -> one JSONL line per event,
 *                  written as soon as its line is read, so one long-lived process
 *                  serves a whole test session (tests/interop/conftest.py
 *                  ReferenceJudge): {"event": verdict, "wire": verdict}, a verdict
 *                  being {"ok": bool, "issues": [{"path": [...], "message": str}]}.
 *                  "event" is EventSchemas.safeParse of the event as given (what a
 *                  client reads from `data: <that JSON>`); "wire" of what the client
 *                  parses of what @ag-ui/encoder 1.0.0 writes for it (its null rule
 *                  omitOptionalNulls, then JSON.stringify). The strings "\0NaN\0",
 *                  "\0Infinity\0" and "\0-Infinity\0" stand for those numbers
 *   verify         JSONL events in -> {"passed": <events let through>, "completed":
 *                  bool, "error": {"name","message"}|null, "warnings": [str]}
 *                  from @ag-ui/client verifyEvents(), the client's check that a
 *                  run is a well-formed sequence (starts, ends, nesting, ids)
 *   apply          JSONL in, one JSON array of events per line -> JSONL
 *                  {"messages": [...], "state": obj|null, "warnings": [str]} per
 *                  line: what @ag-ui/client defaultApplyEvents() makes of the
 *                  events for a client starting with no messages and the state its
 *                  run input had (the RUN_STARTED input echo's, else {})
 *   patch          JSONL [doc, patch] pairs in -> JSONL {"doc": obj|null,
 *                  "error": {"name","message","index"}|null} per line: fast-json-patch's
 *                  applyPatch(doc, patch, true, false), as the client applies
 *                  STATE_DELTA and ACTIVITY_DELTA (its own copy of the package)
 *   shapes         -> the `shapes` table of @ag-ui/core's omitOptionalNulls
 *                  (dist/index.js), evaluated in an empty VM context
 *   zod-objects    -> {"<Name>": {"<key>": <optional: bool>}} for every object
 *                  schema @ag-ui/core/schemas exports as <Name>Schema
 */
"use strict";

const fs = require("fs");
const path = require("path");
const util = require("util");
const vm = require("vm");

const PROTO_MEDIA_TYPE = "application/vnd.ag-ui.event+proto";

class UsageError extends Error {}

// ---- output -----------------------------------------------------------------

// JSON text Python's json.loads reads back to the same value, doubles included.
function dump(value) {
  if (value === null || value === undefined) return "null";
  switch (typeof value) {
    case "number":
      if (Number.isNaN(value)) return "NaN";
      if (value === Infinity) return "Infinity";
      if (value === -Infinity) return "-Infinity";
      if (Object.is(value, -0)) return "-0.0";
      return JSON.stringify(value);
    case "string":
    case "boolean":
      return JSON.stringify(value);
    case "bigint":
      return value.toString();
    case "object":
      if (Array.isArray(value)) return "[" + value.map(dump).join(",") + "]";
      return (
        "{" +
        Object.keys(value)
          .filter((k) => value[k] !== undefined && typeof value[k] !== "function")
          .map((k) => JSON.stringify(k) + ":" + dump(value[k]))
          .join(",") +
        "}"
      );
    default:
      return "null";
  }
}

const b64 = (bytes) => Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).toString("base64");

const errorInfo = (err) =>
  err instanceof Error
    ? { name: err.name || err.constructor?.name || "Error", message: err.message }
    : { name: typeof err, message: String(err) };

// ---- console capture ------------------------------------------------------------

let captured = null; // the warnings array of the call in progress, or null

// The reference reports through console.warn only (console.error/debug appear
// in agent paths the harness does not run); nothing may reach stdout.
for (const method of ["log", "info", "debug", "trace", "warn", "error"]) {
  console[method] = (...args) => {
    if (method === "warn" && captured !== null) captured.push(util.format(...args));
    else process.stderr.write(util.format(...args) + "\n");
  };
}

// Runs fn (sync or async) with console.warn text appended to `into`, which
// keeps what was said before a throw.
async function capturing(into, fn) {
  const previous = captured;
  captured = into;
  try {
    return await fn();
  } finally {
    captured = previous;
  }
}

function capturingSync(into, fn) {
  const previous = captured;
  captured = into;
  try {
    return fn();
  } finally {
    captured = previous;
  }
}

// ---- input ------------------------------------------------------------------------

const readStdin = () => fs.readFileSync(0);

function readJsonLines(buf) {
  return buf
    .toString("utf8")
    .split("\n")
    .filter((line) => line.trim() !== "")
    .map((line, i) => {
      try {
        return JSON.parse(line);
      } catch (err) {
        throw new UsageError(`stdin line ${i + 1} is not JSON: ${err.message}`);
      }
    });
}

function parseOptions(argv, known) {
  const options = {};
  for (let i = 0; i < argv.length; i++) {
    const name = argv[i].replace(/^--/, "");
    if (!argv[i].startsWith("--") || !known.includes(name) || i + 1 >= argv.length) {
      throw new UsageError(`unexpected argument ${JSON.stringify(argv[i])}`);
    }
    options[name] = argv[++i];
  }
  return options;
}

// ---- subcommands ------------------------------------------------------------------

function versions() {
  const out = {};
  for (const name of [
    "@ag-ui/core",
    "@ag-ui/proto",
    "@ag-ui/encoder",
    "@ag-ui/client",
    "@bufbuild/protobuf",
    "zod",
    "rxjs",
  ]) {
    out[name] = JSON.parse(
      fs.readFileSync(path.join(__dirname, "node_modules", name, "package.json"), "utf8"),
    ).version;
  }
  out.node = process.version;
  return dump(out) + "\n";
}

function encodeProto(input) {
  const proto = require("@ag-ui/proto");
  const { EventEncoder } = require("@ag-ui/encoder");
  const encoder = new EventEncoder({ accept: PROTO_MEDIA_TYPE });
  if (encoder.getContentType() !== PROTO_MEDIA_TYPE) throw new Error("encoder did not pick protobuf");
  return readJsonLines(input)
    .map((event) => {
      const out = { frame: null, message: null, warnings: [], error: null };
      try {
        out.frame = b64(capturingSync(out.warnings, () => encoder.encodeBinary(event)));
        // Second, independent call (its warnings repeat the first's): the
        // caller checks the framing against it.
        out.message = b64(capturingSync([], () => proto.encode(event)));
      } catch (err) {
        out.error = errorInfo(err);
      }
      return dump(out) + "\n";
    })
    .join("");
}

function decodeProto(input) {
  const proto = require("@ag-ui/proto");
  const lines = [];
  let pos = 0;
  while (input.length - pos >= 4) {
    const n = input.readUInt32BE(pos);
    if (input.length - pos - 4 < n) break;
    // A copy, as the client's parseProtoStream hands decode a fresh array.
    const message = new Uint8Array(input.subarray(pos + 4, pos + 4 + n));
    pos += 4 + n;
    const out = { event: null, warnings: [], error: null };
    try {
      out.event = capturingSync(out.warnings, () => proto.decode(message));
    } catch (err) {
      out.error = {
        ...errorInfo(err),
        unknownEventType: err instanceof proto.AGUIUnknownEventTypeError,
      };
    }
    lines.push(dump(out) + "\n");
  }
  if (pos < input.length) lines.push(dump({ trailing: input.length - pos }) + "\n");
  return lines.join("");
}

function encodeSse(input) {
  const { EventEncoder } = require("@ag-ui/encoder");
  const encoder = new EventEncoder();
  return Buffer.from(readJsonLines(input).map((e) => encoder.encode(e)).join(""), "utf8");
}

async function parseStream(input, argv) {
  const options = parseOptions(argv, ["content-type", "chunk-size"]);
  const chunkSize = options["chunk-size"] === undefined ? 0 : Number(options["chunk-size"]);
  if (!Number.isInteger(chunkSize) || chunkSize < 0) throw new UsageError("bad --chunk-size");
  const { HttpAgent } = require("@ag-ui/client");

  const chunks = [];
  const step = chunkSize || Math.max(input.length, 1);
  for (let i = 0; i < input.length; i += step) chunks.push(new Uint8Array(input.subarray(i, i + step)));
  const headers = options["content-type"] === undefined ? {} : { "content-type": options["content-type"] };
  const fetch = async () =>
    new Response(
      new ReadableStream({
        pull(controller) {
          if (chunks.length) controller.enqueue(chunks.shift());
          else controller.close();
        },
      }),
      { status: 200, headers },
    );

  const agent = new HttpAgent({ url: "http://agui-wire.invalid/run", fetch });
  const runInput = { threadId: "thread", runId: "run", messages: [], tools: [], context: [] };
  const result = { events: [], error: null, completed: false, warnings: [] };
  await capturing(result.warnings, () =>
    new Promise((resolve) => {
      agent.run(runInput).subscribe({
        next: (event) => result.events.push(event),
        error: (err) => {
          result.error = errorInfo(err);
          resolve();
        },
        complete: () => {
          result.completed = true;
          resolve();
        },
      });
    }),
  );
  return dump(result) + "\n";
}

// Non-finite numbers travel as these strings (JSON has none): the event then holds
// the real NaN / Infinity, as a server's object would.
const NON_FINITE = { "\u0000NaN\u0000": NaN, "\u0000Infinity\u0000": Infinity, "\u0000-Infinity\u0000": -Infinity };

function judgeOne(line) {
  const { EventSchemas } = require("@ag-ui/core/schemas");
  const { omitOptionalNulls } = require("@ag-ui/core");
  const verdict = (value) => {
    const r = EventSchemas.safeParse(value);
    return {
      ok: r.success,
      issues: r.success ? [] : r.error.issues.map((i) => ({ path: i.path, message: i.message })),
    };
  };
  let nonFinite = false;
  const event = JSON.parse(line, (key, value) => {
    if (typeof value !== "string" || !Object.prototype.hasOwnProperty.call(NON_FINITE, value)) return value;
    nonFinite = true;
    return NON_FINITE[value];
  });
  const asRead = verdict(event);
  // What the client parses of what EventEncoder.encode writes: JSON.stringify after
  // the null rule (it writes null for NaN). omitOptionalNulls returns the event
  // itself when it drops nothing.
  const written = omitOptionalNulls(event, "Event");
  if (written === event && !nonFinite) return { event: asRead, wire: asRead };
  return { event: asRead, wire: verdict(JSON.parse(JSON.stringify(written))) };
}

// Line by line, each answer written at once: the caller waits for it before it
// sends the next event (or sends a batch and reads as many lines back).
function judge() {
  const readline = require("readline");
  const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  return new Promise((resolve, reject) => {
    let n = 0;
    lines.on("line", (line) => {
      n++;
      if (line.trim() === "") return;
      let answer;
      try {
        answer = judgeOne(line);
      } catch (err) {
        lines.close();
        reject(new UsageError(`stdin line ${n} is not JSON: ${err.message}`));
        return;
      }
      process.stdout.write(dump(answer) + "\n");
    });
    lines.on("close", () => resolve(""));
  });
}

async function verify(input) {
  const { verifyEvents } = require("@ag-ui/client");
  const { from } = requireRxjs();
  const events = readJsonLines(input);
  const result = { passed: 0, error: null, completed: false, warnings: [] };
  await capturing(result.warnings, () =>
    new Promise((resolve) => {
      verifyEvents()(from(events)).subscribe({
        next: () => result.passed++,
        error: (err) => {
          result.error = errorInfo(err);
          resolve();
        },
        complete: () => {
          result.completed = true;
          resolve();
        },
      });
    }),
  );
  return dump(result) + "\n";
}

async function apply(input) {
  const { defaultApplyEvents } = require("@ag-ui/client");
  const { from, lastValueFrom, toArray } = requireRxjs();
  const lines = [];
  for (const events of readJsonLines(input)) {
    const result = { messages: [], state: {}, warnings: [] };
    await capturing(result.warnings, async () => {
      const state = events[0]?.input?.state ?? {};
      const runInput = {
        threadId: "thread-1",
        runId: "run-1",
        messages: [],
        tools: [],
        context: [],
        state,
        forwardedProps: {},
      };
      const agent = { messages: [], state };
      const mutations = await lastValueFrom(
        defaultApplyEvents(runInput, from(events), agent, []).pipe(toArray()),
      );
      for (const m of mutations) {
        if (m.messages !== undefined) result.messages = m.messages;
        if (m.state !== undefined) result.state = m.state;
      }
    });
    lines.push(dump(result) + "\n");
  }
  return lines.join("");
}

function patch(input) {
  const clientDir = path.dirname(require.resolve("@ag-ui/client"));
  const { applyPatch } = require(require.resolve("fast-json-patch", { paths: [clientDir] }));
  return readJsonLines(input)
    .map(([doc, ops]) => {
      try {
        return dump({ doc: applyPatch(doc, ops, true, false).newDocument, error: null }) + "\n";
      } catch (err) {
        return dump({ doc: null, error: { ...errorInfo(err), index: err.index ?? null } }) + "\n";
      }
    })
    .join("");
}

// The rxjs the client itself resolves, so observables interoperate.
function requireRxjs() {
  const clientDir = path.dirname(require.resolve("@ag-ui/client"));
  return require(require.resolve("rxjs", { paths: [clientDir] }));
}

function negotiate(input) {
  const { EventEncoder } = require("@ag-ui/encoder");
  const accepts = JSON.parse(input.toString("utf8"));
  if (!Array.isArray(accepts)) throw new UsageError("negotiate wants a JSON array");
  const types = accepts.map((accept) =>
    new EventEncoder(accept === null ? undefined : { accept }).getContentType(),
  );
  return dump(types) + "\n";
}

function validate(input) {
  const { EventSchemas } = require("@ag-ui/core/schemas");
  return readJsonLines(input)
    .map((event) => {
      const r = EventSchemas.safeParse(event);
      const issues = r.success
        ? []
        : r.error.issues.map((i) => ({ path: i.path, message: i.message }));
      return dump({ ok: r.success, data: r.success ? r.data : null, issues }) + "\n";
    })
    .join("");
}

function shapes() {
  const file = require.resolve("@ag-ui/core");
  const source = fs.readFileSync(file, "utf8");
  const start = source.indexOf("const shapes = {");
  const end = source.indexOf("\n};\n", start);
  if (start < 0 || end < 0) throw new Error(`no shapes table in ${file}`);
  const literal = source.slice(start + "const shapes = ".length, end + 2);
  return dump(vm.runInNewContext("(" + literal + ")", Object.create(null))) + "\n";
}

function zodObjects() {
  const schemas = require("@ag-ui/core/schemas");
  const out = {};
  for (const [name, schema] of Object.entries(schemas)) {
    if (!name.endsWith("Schema") || schema?._zod?.def?.type !== "object") continue;
    const keys = {};
    for (const [key, field] of Object.entries(schema.shape)) keys[key] = field._zod.optin === "optional";
    out[name.slice(0, -"Schema".length)] = keys;
  }
  return dump(out) + "\n";
}

const COMMANDS = {
  versions,
  "encode-proto": encodeProto,
  "decode-proto": decodeProto,
  "encode-sse": encodeSse,
  "parse-stream": parseStream,
  negotiate,
  validate,
  judge,
  verify,
  apply,
  patch,
  shapes,
  "zod-objects": zodObjects,
};

async function main() {
  const [command, ...argv] = process.argv.slice(2);
  const run = COMMANDS[command];
  if (!run) throw new UsageError(`usage: harness.cjs {${Object.keys(COMMANDS).join("|")}} ...`);
  if (command !== "parse-stream" && argv.length) throw new UsageError(`${command} takes no options`);
  // judge reads its stdin itself, line by line; the rest read all of it first
  const takesInput = !["versions", "shapes", "zod-objects", "judge"].includes(command);
  const out = await run(takesInput ? readStdin() : Buffer.alloc(0), argv);
  process.stdout.write(out);
}

main().catch((err) => {
  process.stderr.write(`harness.cjs: ${err instanceof UsageError ? "" : "internal error: "}${err.stack || err}\n`);
  process.exitCode = 2;
});
