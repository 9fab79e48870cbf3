// A server built on the official encoder (@ag-ui/encoder 1.0.0) that answers in whichever
// transport the request's Accept header gets from it: encodeBinary() writes protobuf frames when
// the encoder accepted application/vnd.ag-ui.event+proto, SSE otherwise.
//
//   node ts_proto_server.mjs
//
// Prints {"port": N} once listening on 127.0.0.1; every POST gets the same scripted run.
import http from "node:http";
import { EventEncoder } from "@ag-ui/encoder";

function script(threadId, runId) {
  return [
    { type: "RUN_STARTED", threadId, runId, timestamp: 1700000000000 },
    { type: "TEXT_MESSAGE_START", messageId: "m1", role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "m1", delta: "héllo ✓", metadata: { b: 1, 2: "x" } },
    { type: "TEXT_MESSAGE_END", messageId: "m1" },
    { type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "lookup", parentMessageId: "m1" },
    { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: '{"q":1}' },
    { type: "TOOL_CALL_END", toolCallId: "c1" },
    {
      type: "TOOL_CALL_RESULT",
      messageId: "r1",
      toolCallId: "c1",
      content: [{ type: "text", text: "sunny" }, { type: "image", source: { type: "data", value: "AA==", mimeType: "image/png" } }],
    },
    { type: "STATE_SNAPSHOT", snapshot: { count: 1, items: ["a"], nested: { n: null } } },
    { type: "STATE_DELTA", delta: [{ op: "replace", path: "/count", value: 2.5 }, { op: "remove", path: "/items/0" }] },
    { type: "ACTIVITY_SNAPSHOT", messageId: "a1", activityType: "PLAN", content: { steps: [] }, replace: false },
    { type: "CUSTOM", name: "c", value: null },
    { type: "RAW", event: [1, "two", false] },
    {
      type: "RUN_FINISHED",
      threadId,
      runId,
      result: { answer: 42 },
      outcome: { type: "success", pendingToolCallIds: ["c9"] },
      usage: [{ provider: "p", inputTokens: 3, outputTokens: 4 }],
    },
  ];
}

const server = http.createServer((req, res) => {
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const encoder = new EventEncoder({ accept: req.headers.accept });
    res.writeHead(200, { "Content-Type": encoder.getContentType() });
    for (const event of script(input.threadId, input.runId)) res.write(encoder.encodeBinary(event));
    res.end();
  });
});
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(JSON.stringify({ port: server.address().port }) + "\n");
});
for (const signal of ["SIGTERM", "SIGINT"]) process.on(signal, () => server.close(() => process.exit(0)));
