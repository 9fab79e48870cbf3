// Drive a run with the official TypeScript client (@ag-ui/client 1.0.0) and report what it saw.
//
//   node ts_client.mjs URL [--message TEXT] [--forwarded JSON] [--tools JSON] [--thread ID]
//
// Prints exactly one JSON object on stdout:
//   ok, error              whether runAgent() resolved, and the error text if it did not
//   messages, state        agent.messages / agent.state once the run is over
//   warnings               everything the client wrote to console.warn / console.error
//   logs                   anything it wrote to console.log / info / debug (kept off stdout)
//   events                 the type of every event the client delivered, in order
//   outcome, result, pendingInterrupts, pendingToolCallIds, threadId, runId
import { logs, warnings } from "./console_capture.mjs";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    message: { type: "string", default: "hello from TypeScript" },
    forwarded: { type: "string", default: "{}" },
    tools: { type: "string", default: "[]" },
    thread: { type: "string", default: "thread-ts-interop" },
  },
});
if (positionals.length !== 1) {
  process.stderr.write(
    "usage: node ts_client.mjs URL [--message TEXT] [--forwarded JSON] [--tools JSON]\n",
  );
  process.exit(2);
}

const { HttpAgent } = await import("@ag-ui/client");

const agent = new HttpAgent({
  url: positionals[0],
  threadId: values.thread,
  initialMessages: [{ id: "user-ts-1", role: "user", content: values.message }],
});

const events = [];
let outcome = null;
let pendingToolCallIds = null;
const report = { ok: false, error: null };
try {
  const run = await agent.runAgent(
    { forwardedProps: JSON.parse(values.forwarded), tools: JSON.parse(values.tools) },
    {
      onEvent: ({ event }) => {
        events.push(event.type);
      },
      onRunStartedEvent: ({ event }) => {
        report.runId = event.runId;
      },
      onRunFinishedEvent: (params) => {
        outcome = params.outcome;
        pendingToolCallIds = params.pendingToolCallIds ?? null;
      },
    },
  );
  report.ok = true;
  report.result = run.result ?? null;
} catch (err) {
  report.error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

Object.assign(report, {
  messages: agent.messages,
  state: agent.state,
  warnings,
  logs,
  events,
  outcome,
  pendingInterrupts: agent.pendingInterrupts ?? null,
  pendingToolCallIds,
  threadId: agent.threadId,
});
process.stdout.write(JSON.stringify(report) + "\n");
