// A pre-1.0 AG-UI server: a release of the official encoder (an npm alias: "encoder-0-0-35" or
// "encoder-0-0-45") emitting the events of its era, as the servers built on it did: no
// protocolVersion in RUN_STARTED, reasoning as THINKING_* events, and (0.0.45) a
// MESSAGES_SNAPSHOT whose user message carries a legacy binary content part.
//
//   node ts_legacy_server.mjs ENCODER [--port N]
//
// Listens on 127.0.0.1 and prints {"port": N} once listening. Every POST gets the scripted run,
// echoing the request's threadId and runId; anything else gets 405.
import http from "node:http";
import { parseArgs } from "node:util";

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: { port: { type: "string", default: "0" } },
});
const encoderPackage = positionals[0];
const { EventEncoder } = await import(encoderPackage);
const era = encoderPackage === "encoder-0-0-35" ? "0.0.35" : "0.0.45";

// A 1x1 PNG.
const PNG =
  "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg==";

function script(threadId, runId, user) {
  const message = "msg-legacy-1";
  const call = "call-legacy-1";
  const events = [{ type: "RUN_STARTED", threadId, runId }];
  if (era === "0.0.45") {
    events.push({
      type: "MESSAGES_SNAPSHOT",
      messages: [
        {
          id: user.id,
          role: "user",
          content: [
            { type: "text", text: user.text },
            { type: "binary", mimeType: "image/png", data: PNG, filename: "dot.png" },
          ],
        },
      ],
    });
  }
  events.push(
    { type: "STEP_STARTED", stepName: "think" },
    { type: "THINKING_START", title: "Planning" },
    { type: "THINKING_TEXT_MESSAGE_START" },
    { type: "THINKING_TEXT_MESSAGE_CONTENT", delta: "The user wants " },
    { type: "THINKING_TEXT_MESSAGE_CONTENT", delta: "the weather." },
    { type: "THINKING_TEXT_MESSAGE_END" },
    { type: "THINKING_END" },
    { type: "STEP_FINISHED", stepName: "think" },
    { type: "TEXT_MESSAGE_START", messageId: message, role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: message, delta: "Let me look " },
    { type: "TEXT_MESSAGE_CONTENT", messageId: message, delta: "that up." },
    { type: "TEXT_MESSAGE_END", messageId: message },
    { type: "TOOL_CALL_START", toolCallId: call, toolCallName: "weather", parentMessageId: message },
    { type: "TOOL_CALL_ARGS", toolCallId: call, delta: '{"city":"Paris"}' },
    { type: "TOOL_CALL_END", toolCallId: call },
    { type: "TOOL_CALL_RESULT", messageId: "result-legacy-1", toolCallId: call, content: "21 C", role: "tool" },
    { type: "STATE_SNAPSHOT", snapshot: { city: "Paris" } },
    { type: "TEXT_MESSAGE_START", messageId: "msg-legacy-2", role: "assistant" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "msg-legacy-2", delta: "It is 21 C in Paris." },
    { type: "TEXT_MESSAGE_END", messageId: "msg-legacy-2" },
    { type: "RUN_FINISHED", threadId, runId },
  );
  return events;
}

const server = http.createServer((req, res) => {
  if (req.method !== "POST") {
    res.writeHead(405, { Allow: "POST" });
    res.end();
    return;
  }
  const chunks = [];
  req.on("data", (chunk) => chunks.push(chunk));
  req.on("end", () => {
    const input = JSON.parse(Buffer.concat(chunks).toString("utf8"));
    const first = (input.messages ?? []).find((m) => m.role === "user") ?? { id: "user", content: "" };
    const text = typeof first.content === "string" ? first.content : "";
    const encoder = new EventEncoder({ accept: req.headers.accept });
    res.writeHead(200, { "Content-Type": "text/event-stream", "Cache-Control": "no-cache" });
    for (const event of script(input.threadId, input.runId, { id: first.id, text })) {
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
