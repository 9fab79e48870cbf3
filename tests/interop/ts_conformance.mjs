// Run conformance streams through the official TypeScript client (@ag-ui/client 1.0.0) and report,
// for each, what it made of them.
//
//   node ts_conformance.mjs URL [INPUT_JSON]     one run; INPUT_JSON is a RunAgentInput
//   node ts_conformance.mjs -                     runs read from stdin as JSON: one {url, input}
//                                                 object, or a list of them (run in order)
//
// Prints one line of JSON on stdout: the report of the run, or a list of reports for a list.
// A report:
//   outcome             the Python package's summary words: "failed" when runAgent() rejected
//                       (or timed out), "error" when a RUN_ERROR event was delivered (it does not
//                       reject runAgent in TypeScript), "interrupt" when the run left pending
//                       interrupts, else "completed"
//   error               the rejection's message, else the first RUN_ERROR's message, else null
//   rejected            whether runAgent() rejected (a client-side failure)
//   messages, state     agent.messages / agent.state once the run is over
//   pendingInterrupts   the ids of agent.pendingInterrupts
//   warnings            everything the client wrote to console.warn / console.error
//   eventTypes          the type of every event a subscriber was handed (after enforcement,
//                       chunk expansion and verification), in order
//
// Every run uses a fresh HttpAgent seeded from the input: threadId, initialMessages (messages),
// initialState (state, when given and not null); runAgent() gets runId, tools, context,
// forwardedProps and resume.
import { readFileSync } from "node:fs";

const warnings = [];
const logs = [];
const show = (args) =>
  args
    .map((a) => (typeof a === "string" ? a : a instanceof Error ? `${a.name}: ${a.message}` : safeJson(a)))
    .join(" ");
function safeJson(value) {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}
for (const name of ["warn", "error"]) console[name] = (...args) => warnings.push(show(args));
for (const name of ["log", "info", "debug"]) console[name] = (...args) => logs.push(show(args));
process.on("warning", (w) => warnings.push(`process warning: ${w.name}: ${w.message}`));
// Anything that escapes a run is reported against it rather than killing the batch.
process.on("unhandledRejection", (reason) => warnings.push(`unhandled rejection: ${show([reason])}`));

const { HttpAgent } = await import("@ag-ui/client");

const RUN_TIMEOUT_MS = 20_000;
const DEFAULT_INPUT = { threadId: "t1", runId: "r1", messages: [] };

async function runCase(url, input) {
  input = input ?? DEFAULT_INPUT;
  warnings.length = 0;
  logs.length = 0;
  const config = { url, threadId: input.threadId, initialMessages: input.messages ?? [] };
  if (input.state !== undefined && input.state !== null) config.initialState = input.state;
  const agent = new HttpAgent(config);

  const eventTypes = [];
  let runError = null;
  let rejection = null;
  let timedOut = false;
  const abortController = new AbortController();
  const timer = setTimeout(() => {
    timedOut = true;
    abortController.abort();
  }, RUN_TIMEOUT_MS);
  const parameters = { runId: input.runId, abortController };
  for (const key of ["tools", "context", "forwardedProps", "resume"]) {
    if (input[key] !== undefined && input[key] !== null) parameters[key] = input[key];
  }
  try {
    await agent.runAgent(parameters, {
      onEvent: ({ event }) => {
        eventTypes.push(event.type);
      },
      onRunErrorEvent: ({ event }) => {
        if (runError === null) runError = event;
      },
    });
  } catch (err) {
    rejection = err instanceof Error ? err.message : String(err);
  } finally {
    clearTimeout(timer);
  }
  let error = rejection;
  if (error === null && timedOut) error = `the run did not end within ${RUN_TIMEOUT_MS} ms`;
  if (error === null && runError !== null) error = runError.message ?? "RUN_ERROR";
  const pending = agent.pendingInterrupts ?? [];
  let outcome = "completed";
  if (rejection !== null || timedOut) outcome = "failed";
  else if (runError !== null) outcome = "error";
  else if (pending.length > 0) outcome = "interrupt";
  return {
    outcome,
    error,
    rejected: rejection !== null,
    messages: agent.messages,
    state: agent.state === undefined ? null : agent.state,
    pendingInterrupts: pending.map((i) => i.id),
    warnings: [...warnings],
    logs: [...logs],
    eventTypes,
  };
}

const argv = process.argv.slice(2);
let output;
if (argv.length === 1 && argv[0] === "-") {
  const request = JSON.parse(readFileSync(0, "utf8"));
  if (Array.isArray(request)) {
    output = [];
    for (const { url, input } of request) output.push(await runCase(url, input));
  } else {
    output = await runCase(request.url, request.input);
  }
} else if (argv.length === 1 || argv.length === 2) {
  output = await runCase(argv[0], argv.length === 2 ? JSON.parse(argv[1]) : undefined);
} else {
  process.stderr.write("usage: node ts_conformance.mjs URL [INPUT_JSON] | node ts_conformance.mjs -\n");
  process.exit(2);
}
process.stdout.write(JSON.stringify(output) + "\n");
