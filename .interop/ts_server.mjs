// A small AG-UI server built on the official encoder (@ag-ui/encoder 1.0.0), for testing this
// package's client against it.
//
//   node ts_server.mjs [--port N]
//
// Listens on 127.0.0.1 (port 0 = any free port) and prints {"port": N} on stdout once it is
// listening. Every POST gets the same scripted run, echoing the request's threadId and runId and
// encoded frame by frame with encoder.encode(); anything else gets 405.
import http from "node:http";
import { parseArgs } from "node:util";
import { EventType } from "@ag-ui/core";
import { EventEncoder } from "@ag-ui/encoder";

const { values } = parseArgs({ options: { port: { type: "string", default: "0" } } });

function script(threadId, runId) {
  const message = "msg-ts-1";
  const call = "call-ts-1";
  return [
    { type: EventType.RUN_STARTED, threadId, runId },
    { type: EventType.TEXT_MESSAGE_START, messageId: message, role: "assistant" },
    { type: EventType.TEXT_MESSAGE_CONTENT, messageId: message, delta: "Hello from " },
    { type: EventType.TEXT_MESSAGE_CONTENT, messageId: message, delta: "TypeScript, héllo ✓" },
    { type: EventType.TEXT_MESSAGE_END, messageId: message },
    {
      type: EventType.TOOL_CALL_START,
      toolCallId: call,
      toolCallName: "lookup",
      parentMessageId: message,
    },
    { type: EventType.TOOL_CALL_ARGS, toolCallId: call, delta: '{"query":' },
    { type: EventType.TOOL_CALL_ARGS, toolCallId: call, delta: '"weather"}' },
    { type: EventType.TOOL_CALL_END, toolCallId: call },
    {
      type: EventType.TOOL_CALL_RESULT,
      messageId: "result-ts-1",
      toolCallId: call,
      content: "sunny",
      role: "tool",
    },
    { type: EventType.STATE_SNAPSHOT, snapshot: { count: 1, items: ["a"] } },
    {
      type: EventType.STATE_DELTA,
      delta: [
        { op: "replace", path: "/count", value: 2 },
        { op: "add", path: "/items/-", value: "b" },
      ],
    },
    { type: EventType.RUN_FINISHED, threadId, runId, result: { answer: 42 } },
  ];
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST") {
    res.writeHead(405, { Allow: "POST", "Content-Type": "application/json" });
    res.end(JSON.stringify({ error: "POST a RunAgentInput" }));
    return;
  }
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    let input;
    try {
      input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    } catch {
      res.writeHead(400, { "Content-Type": "application/json" });
      res.end(JSON.stringify({ error: "the body is not JSON" }));
      return;
    }
    const encoder = new EventEncoder({ accept: req.headers.accept });
    res.writeHead(200, { "Content-Type": encoder.getContentType(), "Cache-Control": "no-cache" });
    for (const event of script(input.threadId ?? "thread", input.runId ?? "run")) {
      res.write(encoder.encode(event));
    }
    res.end();
  });
});

server.listen(Number(values.port), "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
});
for (const signal of ["SIGTERM", "SIGINT"]) {
  process.on(signal, () => server.close(() => process.exit(0)));
}
