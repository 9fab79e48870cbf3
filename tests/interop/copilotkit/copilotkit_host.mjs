// CopilotKit's runtime (@copilotkit/runtime 1.75, its v2 node listener, the default
// InMemoryAgentRunner) in front of an AG-UI server, driven by CopilotKit's own headless client
// (@copilotkit/core's CopilotKitCore) the way its React hooks drive it:
//
//   send:   agent.addMessage({id, role: "user", content}); await copilotkit.runAgent({agent})
//   stop:   copilotkit.stopAgent({agent})        (CopilotChat's stop button, react-core 1.74)
//   mount:  copilotkit.connectAgent({agent})     (the chat connects to its thread first)
//   tools:  copilotkit.addTool({name, parameters: zod, handler})   (useFrontendTool)
//   resume: what react-core's useInterrupt does with agent.pendingInterrupts: ɵInterruptState
//           .resolve(payload) (or .cancel()), a tool message per "tool_call" interrupt, then
//           copilotkit.runAgent({agent, resume, runId: the interrupted run's id})
//
// Usage: node copilotkit_host.mjs AGENT_URL [--client top|runtime] [--script JSON]
//        node copilotkit_host.mjs --runtime RUNTIME_URL [--script JSON]
//
// --runtime drives a CopilotKit runtime running elsewhere (docs/integrations/copilotkit.md's)
// instead of starting one (the runtime's own traffic to the agent is then not recorded).
//
// AGENT_URL is the AG-UI server the runtime's one agent ("default", an @ag-ui/client HttpAgent)
// posts runs to. --client picks that HttpAgent: "top" (default) is the @ag-ui/client installed
// beside this script (1.0.0, what `npm install @copilotkit/runtime @ag-ui/client` gives an app;
// it sends protocolVersion), "runtime" the release @copilotkit/runtime itself depends on (0.0.59,
// which sends none). --script is {"thread": ID, "tools": [TOOL], "steps": [STEP]}:
//
//   TOOL: {"name", "description", "result"}: a frontend tool taking {color: string} whose
//         handler records its arguments and returns `result`
//   STEP: {"send": TEXT, "stopAfter"?: N, "forwardedProps"?: {...}, "pauseAfter"?: MS}
//           a user turn; stopAfter: stop it once N text deltas arrived
//         {"resume": PAYLOAD, "cancel"?: true, "toolResults"?: false}
//           answer the pending interrupts as useInterrupt does (toolResults false: leave out
//           the tool messages it adds)
//         {"connect": true}   connectAgent on the same client
//         {"reload": true, "clearRuntime"?: true}
//           a new CopilotKitCore (a reloaded page) on the same thread, connected; clearRuntime:
//           the runtime's in-memory threads cleared first (a restarted runtime)
//
// Prints one JSON line: for each step what the client saw (events, errors, the assistant's
// text, the agent's messages, state and pending interrupts after it), every tool handler call,
// and every request of the client to the runtime and of the runtime to the agent (method, path,
// status, whether and when it was aborted), times in ms from the start.

process.env.COPILOTKIT_TELEMETRY_DISABLED = "true";
process.env.DO_NOT_TRACK = "1";

import { createServer } from "node:http";
import { existsSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const HERE = dirname(fileURLToPath(import.meta.url));
const T0 = Date.now();
const now = () => Date.now() - T0;
const HANG = 20000; // hang bound (ms) for the runtime's agent list to arrive

const DEFAULT_STEPS = [
  { send: "first" },
  { send: "second" },
  { send: "slow", stopAfter: 2 },
  { send: "after the stop" },
];

function parseArgs(argv) {
  const args = { url: null, runtime: null, client: "top", script: {} };
  let i = 0;
  if (argv[0] && !argv[0].startsWith("--")) [args.url, i] = [argv[0], 1];
  for (; i < argv.length; i += 2) {
    const [key, value] = [argv[i], argv[i + 1]];
    if (key === "--client") args.client = value;
    else if (key === "--runtime") args.runtime = value;
    else if (key === "--script") args.script = JSON.parse(value);
    else throw new Error(`unknown option ${key}`);
  }
  if (!args.url === !args.runtime) {
    throw new Error("usage: node copilotkit_host.mjs AGENT_URL | --runtime RUNTIME_URL [options]");
  }
  args.script.thread ??= "thread-copilotkit";
  args.script.tools ??= [];
  args.script.steps ??= DEFAULT_STEPS;
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
    protocolVersion: body?.protocolVersion ?? null,
    at: now(),
    status: null,
    aborted: null,
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

/** A message as the report shows it. */
const shown = (message) => ({
  id: message.id,
  role: message.role,
  text: messageText(message),
  ...(message.toolCalls?.length
    ? {
        toolCalls: message.toolCalls.map((call) => ({
          id: call.id,
          name: call.function.name,
          arguments: call.function.arguments,
        })),
      }
    : {}),
  ...(message.toolCallId ? { toolCallId: message.toolCallId } : {}),
});

async function main() {
  const args = parseArgs(process.argv.slice(2));
  const { CopilotRuntime, InMemoryAgentRunner } = await import("@copilotkit/runtime/v2");
  const { createCopilotNodeListener } = await import("@copilotkit/runtime/v2/node");
  const { z } = await import("zod");
  const client = await httpAgentClass(args.client);
  const version = (name) =>
    JSON.parse(readFileSync(join(HERE, "node_modules", name, "package.json"), "utf8")).version;

  let runner = null;
  let server = null;
  let runtimeUrl = args.runtime;
  if (!runtimeUrl) {
    const upstream = new client.module.HttpAgent({ url: args.url, fetch: recordingFetch });
    runner = new InMemoryAgentRunner();
    const runtime = new CopilotRuntime({ agents: { default: upstream }, runner });
    const listener = createCopilotNodeListener({
      runtime,
      basePath: "/api/copilotkit",
      activateChannels: false,
    });
    server = createServer(recordingListener(listener));
    const port = await listen(server);
    runtimeUrl = `http://127.0.0.1:${port}/api/copilotkit`;
  }

  // CopilotKitCore connects to its runtime only in a browser: the page's location is all it
  // reads of `window` on this path.
  globalThis.window = { location: new URL("/", runtimeUrl) };
  const { CopilotKitCore, ɵInterruptState } = await import("@copilotkit/core");

  const coreErrors = [];
  const toolCalls = [];

  /** A CopilotKitCore (a page) with the script's frontend tools, its agent on the thread. */
  async function page() {
    const copilotkit = new CopilotKitCore({ runtimeUrl });
    copilotkit.subscribe({
      onError: ({ code, error }) =>
        coreErrors.push({ at: now(), code, message: String(error?.message ?? error) }),
    });
    for (const tool of args.script.tools) {
      copilotkit.addTool({
        name: tool.name,
        description: tool.description,
        parameters: z.object({ color: z.string() }),
        handler: async (toolArgs) => {
          toolCalls.push({ at: now(), name: tool.name, args: toolArgs });
          return tool.result;
        },
      });
    }
    const deadline = Date.now() + HANG;
    while (!copilotkit.getAgent("default")) {
      if (Date.now() > deadline) {
        throw new Error(`the runtime's agents never arrived (${copilotkit.runtimeConnectionStatus})`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    const agent = copilotkit.getAgent("default");
    agent.threadId = args.script.thread;
    return { copilotkit, agent };
  }

  let { copilotkit, agent } = await page();
  await copilotkit.connectAgent({ agent });

  const steps = [];
  for (const [index, step] of args.script.steps.entries()) {
    const kind = "send" in step ? "send" : "resume" in step ? "resume" : step.reload ? "reload" : "connect";
    if (kind === "reload") {
      if (step.clearRuntime) {
        if (!runner) throw new Error("clearRuntime needs the runtime this script starts");
        runner.clearThreads();
      }
      ({ copilotkit, agent } = await page());
    }
    const seen = {
      index,
      kind,
      text: step.send ?? null,
      events: [],
      runId: null,
      runIds: [],
      interrupts: [],
      deltas: 0,
      stoppedAt: null,
      errors: [],
      thrown: null,
    };
    const errorsBefore = coreErrors.length;
    const known = new Set(agent.messages.map((message) => message.id));
    const subscription = agent.subscribe({
      onEvent: ({ event }) => {
        seen.events.push(event.type);
        if (event.type === "RUN_ERROR") seen.errors.push({ code: event.code ?? null, message: event.message });
        if (event.type === "RUN_STARTED") {
          seen.runId ??= event.runId;
          seen.runIds.push(event.runId);
        }
      },
      onRunFinishedEvent: (params) => {
        if (params.outcome === "interrupt") seen.interrupts.push(...params.interrupts);
      },
      onTextMessageContentEvent: () => {
        seen.deltas += 1;
        if (step.stopAfter !== undefined && seen.deltas === step.stopAfter && seen.stoppedAt === null) {
          seen.stoppedAt = now();
          copilotkit.stopAgent({ agent });
        }
      },
    });
    seen.startedAt = now();
    try {
      if (kind === "send") {
        agent.addMessage({ id: `user-${index}-${T0}`, role: "user", content: step.send });
        await copilotkit.runAgent({ agent, forwardedProps: step.forwardedProps });
      } else if (kind === "resume") {
        // react-core's useInterrupt, resolve()/cancel(): seeded from agent.pendingInterrupts
        const state = new ɵInterruptState();
        const pending = agent.pendingInterrupts;
        seen.answered = pending.map((interrupt) => interrupt.id);
        state.setStandard(pending);
        const decision = step.cancel ? state.cancel() : state.resolve(step.resume);
        seen.decision = decision.kind;
        if (decision.kind === "resume") {
          seen.resume = decision.resume;
          if (step.toolResults !== false) {
            for (const result of decision.toolResults) {
              agent.addMessage({
                id: `tool-${index}-${T0}`,
                role: "tool",
                toolCallId: result.toolCallId,
                content: result.content,
              });
            }
          }
          const runId = steps.flatMap((s) => s.runIds).at(-1);
          await copilotkit.runAgent({ agent, resume: decision.resume, ...(runId ? { runId } : {}) });
        }
      } else {
        await copilotkit.connectAgent({ agent });
      }
    } catch (error) {
      seen.thrown = String(error?.message ?? error);
    }
    seen.endedAt = now();
    subscription.unsubscribe();
    seen.reply = agent.messages
      .filter((message) => !known.has(message.id) && message.role === "assistant")
      .map(messageText)
      .join("");
    seen.messages = agent.messages.map(shown);
    seen.state = agent.state;
    seen.pendingInterrupts = agent.pendingInterrupts.map((interrupt) => interrupt.id);
    seen.coreErrors = coreErrors.slice(errorsBefore);
    steps.push(seen);
    if (step.pauseAfter) await new Promise((resolve) => setTimeout(resolve, step.pauseAfter));
  }

  // The runtime answers its stop at once and finalizes the aborted run after it; let it settle
  // so the traffic shows every request's end.
  await new Promise((resolve) => setTimeout(resolve, 300));
  server?.closeAllConnections?.();
  server?.close();
  return {
    ok: true,
    versions: {
      "@copilotkit/runtime": version("@copilotkit/runtime"),
      "@copilotkit/core": version("@copilotkit/core"),
      "@ag-ui/client (agent)": args.runtime ? null : client.version,
    },
    thread: args.script.thread,
    steps,
    toolCalls,
    traffic,
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
