// Drive a run with the official TypeScript client (@ag-ui/client 1.0.0) over the transport named
// on the command line, and report what it saw.
//
//   node ts_proto_client.mjs URL --transport proto|sse
//
// @ag-ui/client 1.0.0's HttpAgent always sends `Accept: text/event-stream` (its own header wins
// over the `headers` option), but it picks its parser by the response's Content-Type. Its `fetch`
// option is the documented way to change the request, so "proto" passes a fetch that asks for
// application/vnd.ag-ui.event+proto instead. The report (one JSON line on stdout) has ok, error,
// messages, state, warnings, events (types, in order), outcome, and contentType (what the
// server answered).
import { parseArgs } from "node:util";

const warnings = [];
const show = (args) => args.map((a) => (typeof a === "string" ? a : JSON.stringify(a))).join(" ");
for (const name of ["warn", "error"]) console[name] = (...args) => warnings.push(show(args));
for (const name of ["log", "info", "debug"]) console[name] = () => {};

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { transport: { type: "string", default: "proto" } },
});
const { HttpAgent } = await import("@ag-ui/client");

let contentType = null;
const fetchVia = async (url, init) => {
  const headers = new Headers(init.headers);
  if (values.transport === "proto") headers.set("Accept", "application/vnd.ag-ui.event+proto");
  const response = await fetch(url, { ...init, headers });
  contentType = response.headers.get("content-type");
  return response;
};

const agent = new HttpAgent({
  url: positionals[0],
  threadId: "thread-proto-interop",
  initialMessages: [{ id: "user-1", role: "user", content: "hello" }],
  fetch: fetchVia,
});
const events = [];
const report = { ok: false, error: null, outcome: null };
try {
  await agent.runAgent(
    { runId: "run-proto-interop" },
    {
      onEvent: ({ event }) => {
        events.push(event.type);
      },
      onRunFinishedEvent: (params) => {
        report.outcome = params.outcome;
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
  events,
  contentType,
});
process.stdout.write(JSON.stringify(report) + "\n");
