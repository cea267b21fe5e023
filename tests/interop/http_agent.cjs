#!/usr/bin/env node
/*
 * http_agent.cjs: the real @ag-ui/client 1.0.0 HttpAgent against a real URL,
 * over Node's own fetch, for the end-to-end tests (tests/e2e). Unlike
 * harness.cjs parse-stream (a fake fetch serving a given body) nothing here is
 * stubbed: the request goes over TCP to the server under test.
 *
 *   node http_agent.cjs --url URL [--accept A] [--mode raw|pipeline]
 *                       [--thread-id T] [--run-id R] [--abort-after N]
 *
 * The HttpAgent always sends "Accept: text/event-stream"; --accept A overrides
 * it (a subclass replaces the header in requestInit, the documented extension
 * point). The agent picks the protobuf parser only when the response
 * content-type is exactly application/vnd.ag-ui.event+proto.
 *
 *   raw       agent.run(input): the events as the transport parses them.
 *   pipeline  agent.runAgent({runId}): the full client pipeline (schema
 *             enforcement, verifyEvents, event application); reports the events
 *             subscribers saw, the new messages and the final state.
 *
 * --abort-after N: after N events the client goes away (raw: unsubscribe and
 * abort the fetch; pipeline: agent.abortRun()), as a user closing the page.
 *
 * Output, one JSON object on stdout:
 *   {"accept": sent Accept, "status": int, "contentType": str|null,
 *    "events": [...], "completed": bool, "error": {"name","message"}|null,
 *    "warnings": [str], and for pipeline "newMessages", "messages", "state"}
 */
"use strict";

const util = require("util");

const warnings = [];
for (const method of ["log", "info", "debug", "trace", "warn", "error"]) {
  console[method] = (...args) => {
    if (method === "warn") warnings.push(util.format(...args));
    else process.stderr.write(util.format(...args) + "\n");
  };
}

function parseArgs(argv) {
  const options = {
    accept: null,
    mode: "raw",
    "thread-id": "thread-1",
    "run-id": "run-1",
    "abort-after": null,
  };
  for (let i = 0; i < argv.length; i += 2) {
    const name = argv[i].replace(/^--/, "");
    if (!argv[i].startsWith("--") || !(name in options || name === "url") || i + 1 >= argv.length) {
      throw new Error(`unexpected argument ${JSON.stringify(argv[i])}`);
    }
    options[name] = argv[i + 1];
  }
  if (!options.url) throw new Error("--url is required");
  if (!["raw", "pipeline"].includes(options.mode)) throw new Error("--mode is raw or pipeline");
  if (options["abort-after"] !== null) options["abort-after"] = Number(options["abort-after"]);
  return options;
}

const errorInfo = (err) =>
  err instanceof Error
    ? { name: err.name || "Error", message: err.message }
    : { name: typeof err, message: String(err) };

async function main() {
  const options = parseArgs(process.argv.slice(2));
  const { HttpAgent } = require("@ag-ui/client");

  const seen = { accept: null, status: null, contentType: null };
  // Node's global fetch, recording what went out and what came back.
  const fetchAndRecord = async (url, init) => {
    seen.accept = init.headers.Accept;
    const response = await fetch(url, init);
    seen.status = response.status;
    seen.contentType = response.headers.get("content-type");
    return response;
  };

  class Agent extends HttpAgent {
    requestInit(input) {
      const init = super.requestInit(input);
      if (options.accept !== null) init.headers = { ...init.headers, Accept: options.accept };
      return init;
    }
  }

  const agent = new Agent({
    url: options.url,
    threadId: options["thread-id"],
    fetch: fetchAndRecord,
    initialMessages: [{ id: "user-1", role: "user", content: "What's the weather in Zürich?" }],
    initialState: {},
  });
  const out = { events: [], completed: false, error: null, warnings, aborted: false };
  const abortAfter = options["abort-after"];

  if (options.mode === "raw") {
    const input = {
      threadId: options["thread-id"],
      runId: options["run-id"],
      messages: agent.messages,
      tools: [],
      context: [],
      state: {},
      forwardedProps: {},
    };
    await new Promise((resolve) => {
      const subscription = agent.run(input).subscribe({
        next: (event) => {
          out.events.push(event);
          if (out.events.length === abortAfter) {
            out.aborted = true;
            agent.abortController.abort();
            // Deferred: the subscription handle exists once subscribe() returns.
            setImmediate(() => subscription.unsubscribe());
            resolve();
          }
        },
        error: (err) => {
          out.error = errorInfo(err);
          resolve();
        },
        complete: () => {
          out.completed = true;
          resolve();
        },
      });
    });
  } else {
    try {
      const result = await agent.runAgent(
        { runId: options["run-id"] },
        {
          onEvent: ({ event }) => {
            out.events.push(event);
            if (out.events.length === abortAfter) {
              out.aborted = true;
              agent.abortRun();
            }
          },
          onRunFailed: ({ error }) => {
            out.error = errorInfo(error);
          },
        },
      );
      out.completed = out.error === null;
      out.newMessages = result.newMessages;
    } catch (err) {
      out.error = errorInfo(err);
    }
    out.messages = agent.messages;
    out.state = agent.state;
  }
  Object.assign(out, seen);
  process.stdout.write(JSON.stringify(out) + "\n");
}

main().catch((err) => {
  process.stderr.write(`http_agent.cjs: ${err.stack || err}\n`);
  process.exitCode = 2;
});
