// Drive a run with a given release of the official TypeScript client and report what it saw.
//
//   node ts_era_client.mjs PACKAGE URL [--message TEXT] [--forwarded JSON] [--tools JSON]
//
// PACKAGE is an installed name of @ag-ui/client: "@ag-ui/client" (1.0.0) or one of the npm
// aliases in package.json ("client-0-0-35", ...). Every release from 0.0.35 on has the same
// HttpAgent({url, threadId, initialMessages}).runAgent({forwardedProps, tools}, subscriber).
// Prints exactly one JSON object on stdout, as ts_client.mjs does:
//   ok, error              whether runAgent() resolved, and the error text if it did not
//   messages, state        agent.messages / agent.state once the run is over
//   warnings               everything the client wrote to console.warn / console.error
//   logs                   anything it wrote to console.log / info / debug
//   events                 the type of every event the client delivered, in order
//   outcome                the RUN_FINISHED outcome the client reported (1.0.0 only), or null
import { logs, warnings } from "./console_capture.mjs";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    message: { type: "string", default: "hello from TypeScript" },
    forwarded: { type: "string", default: "{}" },
    tools: { type: "string", default: "[]" },
    thread: { type: "string", default: "thread-ts-era" },
  },
});
if (positionals.length !== 2) {
  process.stderr.write("usage: node ts_era_client.mjs PACKAGE URL [--message TEXT] ...\n");
  process.exit(2);
}
const [pkg, url] = positionals;
const { HttpAgent } = await import(pkg);

const agent = new HttpAgent({
  url,
  threadId: values.thread,
  initialMessages: [{ id: "user-ts-1", role: "user", content: values.message }],
});

const events = [];
let outcome = null;
const report = { ok: false, error: null, package: pkg };
try {
  await agent.runAgent(
    { forwardedProps: JSON.parse(values.forwarded), tools: JSON.parse(values.tools) },
    {
      onEvent: ({ event }) => {
        events.push(event.type);
      },
      onRunFinishedEvent: (params) => {
        outcome = params.outcome ?? null;
      },
    },
  );
  report.ok = true;
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
});
process.stdout.write(JSON.stringify(report) + "\n");
