// CopilotKit's runtime (@copilotkit/runtime 1.75, its v2 node listener, the default
// InMemoryAgentRunner) in front of an AG-UI server, driven by CopilotKit's own headless client
// (@copilotkit/core's CopilotKitCore) the way its React chat drives it:
//
//   send:  agent.addMessage({id, role: "user", content}); await copilotkit.runAgent({agent})
//   stop:  copilotkit.stopAgent({agent})        (CopilotChat's stop button, react-core 1.74)
//   mount: copilotkit.connectAgent({agent})     (the chat connects to its thread first)
//
// Usage: node copilotkit_host.mjs AGENT_URL [--thread ID] [--client top|runtime] [--turns JSON]
//
// AGENT_URL is the AG-UI server the runtime's one agent ("default", an @ag-ui/client HttpAgent)
// posts runs to. --client picks that HttpAgent: "top" (default) is the @ag-ui/client installed
// beside this script (1.0.0, what `npm install @copilotkit/runtime @ag-ui/client` gives an app),
// "runtime" the release @copilotkit/runtime itself depends on (0.0.59). --turns is a JSON list
// of {"text": "...", "stopAfter": N} (stopAfter: stop the turn once N text deltas arrived).
//
// Prints one JSON line: for each turn what the client saw (the assistant's text, errors, the
// run's events), and every request of the client to the runtime and of the runtime to the agent
// (method, path, status, whether and when it was aborted), times in ms from the start.

process.env.COPILOTKIT_TELEMETRY_DISABLED = "true";
process.env.DO_NOT_TRACK = "1";

import { createServer } from "node:http";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const T0 = Date.now();
const now = () => Date.now() - T0;

function parseArgs(argv) {
  const args = { url: argv[0], thread: "thread-copilotkit", client: "top", turns: null };
  for (let i = 1; i < argv.length; i += 2) {
    const [key, value] = [argv[i], argv[i + 1]];
    if (key === "--thread") args.thread = value;
    else if (key === "--client") args.client = value;
    else if (key === "--turns") args.turns = JSON.parse(value);
    else throw new Error(`unknown option ${key}`);
  }
  if (!args.url) throw new Error("usage: node copilotkit_host.mjs AGENT_URL [options]");
  args.turns ??= [
    { text: "first" },
    { text: "second" },
    { text: "slow", stopAfter: 2 },
    { text: "after the stop" },
  ];
  return args;
}

/** The ESM entry of the package `name` installed under `root` (a node_modules' parent). */
async function importFrom(root, name) {
  const folder = join(root, "node_modules", name);
  const manifest = JSON.parse(readFileSync(join(folder, "package.json"), "utf8"));
  const exported = manifest.exports?.["."];
  const entry =
    (typeof exported === "string" ? exported : exported?.import?.default ?? exported?.import) ??
    manifest.module ??
    manifest.main;
  return { module: await import(pathToFileURL(join(folder, entry)).href), version: manifest.version };
}

async function httpAgentClass(which) {
  if (which === "top") return importFrom(HERE, "@ag-ui/client");
  if (which === "runtime") {
    const nested = join(HERE, "node_modules", "@copilotkit", "runtime");
    const root = existsSync(join(nested, "node_modules", "@ag-ui", "client")) ? nested : HERE;
    return importFrom(root, "@ag-ui/client");
  }
  throw new Error(`--client must be top or runtime, not ${which}`);
}

const traffic = { runtime: [], agent: [] };

/** A fetch for the runtime's HttpAgent that records each request to the agent server. */
function recordingFetch(input, init = {}) {
  const url = new URL(typeof input === "string" ? input : input.url);
  let body = null;
  try {
    body = init.body ? JSON.parse(init.body) : null;
  } catch {}
  const entry = {
    method: init.method ?? "GET",
    path: url.pathname,
    runId: body?.runId ?? null,
    threadId: body?.threadId ?? null,
    at: now(),
    status: null,
    aborted: null,
    ended: null,
    error: null,
  };
  traffic.agent.push(entry);
  const signal = init.signal;
  if (signal) {
    if (signal.aborted) entry.aborted = now();
    else signal.addEventListener("abort", () => (entry.aborted = now()), { once: true });
  }
  return fetch(input, init).then(
    (response) => {
      entry.status = response.status;
      return response;
    },
    (error) => {
      entry.error = String(error?.name ?? error);
      throw error;
    },
  );
}

/** The runtime's node listener, recording each request of the client to it. */
function recordingListener(listener) {
  return (req, res) => {
    const entry = { method: req.method, path: req.url, at: now(), status: null, closed: null };
    traffic.runtime.push(entry);
    res.on("close", () => {
      entry.status = res.statusCode;
      entry.closed = now();
    });
    listener(req, res);
  };
}

function listen(server) {
  return new Promise((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve(server.address().port));
  });
}

const messageText = (message) =>
  typeof message.content === "string"
    ? message.content
    : Array.isArray(message.content)
      ? message.content.map((part) => part.text ?? "").join("")
      : "";

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { CopilotRuntime, InMemoryAgentRunner } = await import("@copilotkit/runtime/v2");
  const { createCopilotNodeListener } = await import("@copilotkit/runtime/v2/node");
  const client = await httpAgentClass(args.client);
  const runtimeVersion = JSON.parse(
    readFileSync(join(HERE, "node_modules/@copilotkit/runtime/package.json"), "utf8"),
  ).version;

  const upstream = new client.module.HttpAgent({ url: args.url, fetch: recordingFetch });
  const runtime = new CopilotRuntime({
    agents: { default: upstream },
    runner: new InMemoryAgentRunner(),
  });
  const listener = createCopilotNodeListener({
    runtime,
    basePath: "/api/copilotkit",
    activateChannels: false,
  });
  const server = createServer(recordingListener(listener));
  const port = await listen(server);
  const runtimeUrl = `http://127.0.0.1:${port}/api/copilotkit`;

  // CopilotKitCore connects to its runtime only in a browser: the page's location is all it
  // reads of `window` on this path.
  globalThis.window = { location: new URL(`http://127.0.0.1:${port}/`) };
  const { CopilotKitCore } = await import("@copilotkit/core");
  const coreVersion = JSON.parse(
    readFileSync(join(HERE, "node_modules/@copilotkit/core/package.json"), "utf8"),
  ).version;
  const copilotkit = new CopilotKitCore({ runtimeUrl });
  const coreErrors = [];
  copilotkit.subscribe({
    onError: ({ code, error }) => coreErrors.push({ at: now(), code, message: String(error?.message ?? error) }),
  });
  const deadline = Date.now() + 20000;
  while (!copilotkit.getAgent("default")) {
    if (Date.now() > deadline) throw new Error(`the runtime's agents never arrived (${copilotkit.runtimeConnectionStatus})`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const agent = copilotkit.getAgent("default");
  agent.threadId = args.thread;

  await copilotkit.connectAgent({ agent });

  const turns = [];
  for (const [index, turn] of args.turns.entries()) {
    const seen = { index, text: turn.text, events: [], deltas: 0, stoppedAt: null, errors: [] };
    const errorsBefore = coreErrors.length;
    const known = new Set(agent.messages.map((message) => message.id));
    const subscription = agent.subscribe({
      onEvent: ({ event }) => {
        seen.events.push(event.type);
        if (event.type === "RUN_ERROR") seen.errors.push({ code: event.code ?? null, message: event.message });
        if (event.type === "RUN_STARTED") seen.runId = event.runId;
      },
      onTextMessageContentEvent: () => {
        seen.deltas += 1;
        if (turn.stopAfter !== undefined && seen.deltas === turn.stopAfter && seen.stoppedAt === null) {
          seen.stoppedAt = now();
          copilotkit.stopAgent({ agent });
        }
      },
    });
    seen.startedAt = now();
    agent.addMessage({ id: `user-${index}-${T0}`, role: "user", content: turn.text });
    await copilotkit.runAgent({ agent });
    seen.endedAt = now();
    subscription.unsubscribe();
    seen.reply = agent.messages
      .filter((message) => !known.has(message.id) && message.role === "assistant")
      .map(messageText)
      .join("");
    seen.coreErrors = coreErrors.slice(errorsBefore);
    turns.push(seen);
    if (turn.pauseAfter) await new Promise((resolve) => setTimeout(resolve, turn.pauseAfter));
  }

  // The runtime answers its stop at once and finalizes the aborted run after it; let it settle
  // so the traffic shows every request's end.
  await new Promise((resolve) => setTimeout(resolve, 300));
  server.closeAllConnections?.();
  server.close();
  return {
    ok: true,
    versions: {
      "@copilotkit/runtime": runtimeVersion,
      "@copilotkit/core": coreVersion,
      "@ag-ui/client (agent)": client.version,
    },
    thread: args.thread,
    turns,
    traffic,
    messages: agent.messages.map((message) => ({ role: message.role, text: messageText(message) })),
  };
}

main().then(
  (report) => {
    process.stdout.write(JSON.stringify(report) + "\n");
    process.exit(0);
  },
  (error) => {
    process.stdout.write(JSON.stringify({ ok: false, error: String(error?.stack ?? error), traffic }) + "\n");
    process.exit(1);
  },
);
