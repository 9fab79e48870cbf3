// The transport benchmark's Node peer (benchmarks/transport.py): a plain node:http server that
// streams the benchmark's run with the official encoder, @ag-ui/encoder 1.0.0.
//
//   node transport_node.mjs --events N
//
// transport.py copies this file into .crosscheck/ (where `nox -s bench` installs
// tests/crosscheck's npm packages, @ag-ui/encoder among them) and runs it from there. It listens
// on 127.0.0.1 (a free port) and prints the port on its first line, like the Python servers.
// Every POST is a run: the body is parsed (JSON.parse), then the agent, an async generator,
// builds every event as it goes (RUN_STARTED with the request's threadId and runId,
// TEXT_MESSAGE_START, token-sized TEXT_MESSAGE_CONTENT deltas, TEXT_MESSAGE_END, RUN_FINISHED)
// and the server writes `encoder.encode(event)` for each with res.write, waiting for "drain"
// when the socket's buffer is full, and stops when the client leaves. `forwardedProps.events`
// overrides the event count. Anything else gets 405.
import http from "node:http";
import { parseArgs } from "node:util";
import { EventType } from "@ag-ui/core";
import { EventEncoder } from "@ag-ui/encoder";

const { values } = parseArgs({ options: { events: { type: "string", default: "100000" } } });
const EVENTS = Number(values.events);
const MESSAGE_ID = "msg-bench";
// The same tokens as transport.py's TOKENS: a leading space and a short word.
const TOKENS = (
  "The quick brown fox jumps over the lazy dog, and then it runs back to the river where" +
  " the water is cold . It is a fine day for a long walk ; isn't it ?"
)
  .split(/\s+/)
  .map((word) => " " + word);

async function* agent(input) {
  const props = input.forwardedProps;
  const count = props && typeof props.events === "number" ? props.events : EVENTS;
  yield { type: EventType.RUN_STARTED, threadId: input.threadId, runId: input.runId };
  yield { type: EventType.TEXT_MESSAGE_START, messageId: MESSAGE_ID, role: "assistant" };
  for (let i = 0; i < count - 4; i++) {
    yield {
      type: EventType.TEXT_MESSAGE_CONTENT,
      messageId: MESSAGE_ID,
      delta: TOKENS[i % TOKENS.length],
    };
  }
  yield { type: EventType.TEXT_MESSAGE_END, messageId: MESSAGE_ID };
  yield { type: EventType.RUN_FINISHED, threadId: input.threadId, runId: input.runId };
}

// The socket's buffer emptied, or the client left.
function drained(res) {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done);
      res.off("close", done);
      resolve();
    };
    res.on("drain", done);
    res.on("close", done);
  });
}

async function stream(req, res, input) {
  const encoder = new EventEncoder({ accept: req.headers.accept });
  res.writeHead(200, { "Content-Type": encoder.getContentType(), "Cache-Control": "no-cache" });
  let gone = false;
  res.on("close", () => {
    gone = true;
  });
  for await (const event of agent(input)) {
    if (gone) break;
    if (!res.write(encoder.encode(event))) await drained(res);
  }
  res.end();
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
    stream(req, res, input).catch((error) => {
      console.error(error);
      res.destroy();
    });
  });
});

server.keepAliveTimeout = 120_000;
server.listen(0, "127.0.0.1", () => {
  process.stdout.write(`${server.address().port}\n`);
});
for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => process.exit(0));
