// Hydrate a thread with the official TypeScript client's connectAgent() (@ag-ui/client 1.0.0),
// against a server with a store (AgentApp(agent, store=...)), and report what it holds.
//
//   node ts_connect.mjs URL THREAD [--full]
//
// @ag-ui/client's HttpAgent does not implement connect(): AbstractAgent.connect(input) throws
// AGUIConnectNotImplementedError. ThreadAgent below implements it the way CopilotKit's runtime
// client does: a GET to the server's thread endpoint, {url}/threads/{threadId}/events
// (?history=full with --full), read with the package's own HTTP and SSE helpers
// (runHttpRequest, transformHttpEventStream: the same parsing runAgent uses), as an Observable of
// events. connectAgent() then runs its usual pipeline over it: chunk expansion, verification,
// apply: the thread's history (one synthetic run of snapshots, or every stored event), then its
// live run until it ends.
//
// Prints exactly one JSON object on stdout:
//   ok, error              whether connectAgent() resolved, and the error text if it did not
//   messages, state        agent.messages / agent.state afterwards
//   pendingInterrupts      agent.pendingInterrupts afterwards
//   newMessages            what connectAgent() reported as new
//   warnings, logs         what the client wrote to console.warn/error and console.log/info/debug
//   events                 the type of every event the client delivered, in order
import { logs, warnings } from "./console_capture.mjs";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { full: { type: "boolean", default: false } },
});
if (positionals.length !== 2) {
  process.stderr.write("usage: node ts_connect.mjs URL THREAD [--full]\n");
  process.exit(2);
}
const [url, threadId] = positionals;

const { HttpAgent, runHttpRequest, transformHttpEventStream } = await import("@ag-ui/client");

class ThreadAgent extends HttpAgent {
  connect(input) {
    const base = this.url.replace(/\/+$/, "");
    const query = values.full ? "?history=full" : "";
    const target = `${base}/threads/${encodeURIComponent(input.threadId)}/events${query}`;
    return transformHttpEventStream(
      runHttpRequest(() =>
        this.fetch(target, {
          method: "GET",
          headers: { ...this.headers, Accept: "text/event-stream" },
          signal: this.abortController.signal,
        }),
      ),
      this.debugLogger,
    );
  }
}

const agent = new ThreadAgent({ url, threadId });
const events = [];
const report = { ok: false, error: null };
try {
  const result = await agent.connectAgent(
    {},
    {
      onEvent: ({ event }) => {
        events.push(event.type);
      },
    },
  );
  report.ok = true;
  report.newMessages = result.newMessages;
} catch (err) {
  report.error = err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

Object.assign(report, {
  messages: agent.messages,
  state: agent.state,
  pendingInterrupts: agent.pendingInterrupts ?? null,
  warnings,
  logs,
  events,
  threadId: agent.threadId,
});
process.stdout.write(JSON.stringify(report) + "\n");
