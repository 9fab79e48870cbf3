// The console's JS logic under `node --test` (run by tests/browser/test_console.py): JSON Patch
// (RFC 6902, with the RFC's own examples and pointer escaping), the SSE parser (line ends split
// across chunks, comments, ids, multi-line data), recordings, and the run reducer.

import test from "node:test";
import assert from "node:assert/strict";

import { applyPatch, PatchError, parsePointer, formatPointer } from "../../agui/console/patch.js";
import { SSEParser, recordedEvents, utf8Length } from "../../agui/console/sse.js";
import { Thread, setEventMembers } from "../../agui/console/run.js";

test("pointers: escaping both ways", () => {
  assert.deepEqual(parsePointer(""), []);
  assert.deepEqual(parsePointer("/a~1b/m~0n/~01"), ["a/b", "m~n", "~1"]);
  assert.equal(formatPointer(["a/b", "m~n", "~1"]), "/a~1b/m~0n/~01");
  assert.throws(() => parsePointer("a"), PatchError);
});

test("RFC 6902 appendix A examples", () => {
  const cases = [
    [{ foo: "bar" }, [{ op: "add", path: "/baz", value: "qux" }], { baz: "qux", foo: "bar" }],
    [{ foo: ["bar", "baz"] }, [{ op: "add", path: "/foo/1", value: "qux" }], { foo: ["bar", "qux", "baz"] }],
    [{ baz: "qux", foo: "bar" }, [{ op: "remove", path: "/baz" }], { foo: "bar" }],
    [{ foo: ["bar", "qux", "baz"] }, [{ op: "remove", path: "/foo/1" }], { foo: ["bar", "baz"] }],
    [{ baz: "qux", foo: "bar" }, [{ op: "replace", path: "/baz", value: "boo" }], { baz: "boo", foo: "bar" }],
    [
      { foo: { bar: "baz", waldo: "fred" }, qux: { corge: "grault" } },
      [{ op: "move", from: "/foo/waldo", path: "/qux/thud" }],
      { foo: { bar: "baz" }, qux: { corge: "grault", thud: "fred" } },
    ],
    [{ foo: ["all", "grass", "cows", "eat"] }, [{ op: "move", from: "/foo/1", path: "/foo/3" }], { foo: ["all", "cows", "eat", "grass"] }],
    [{ baz: "qux", foo: ["a", 2, "c"] }, [{ op: "test", path: "/baz", value: "qux" }, { op: "test", path: "/foo/1", value: 2 }], { baz: "qux", foo: ["a", 2, "c"] }],
    [{ foo: "bar" }, [{ op: "add", path: "/child", value: { grandchild: {} } }], { foo: "bar", child: { grandchild: {} } }],
    [{ foo: ["bar"] }, [{ op: "add", path: "/foo/-", value: ["abc", "def"] }], { foo: ["bar", ["abc", "def"]] }],
    [{ foo: null }, [{ op: "test", path: "/foo", value: null }], { foo: null }],
    [{ foo: 1 }, [{ op: "copy", from: "/foo", path: "/bar" }], { foo: 1, bar: 1 }],
    [{ "/": 9, "~1": 10 }, [{ op: "test", path: "/~01", value: 10 }], { "/": 9, "~1": 10 }],
    [{ a: 1 }, [{ op: "replace", path: "", value: [1] }], [1]],
  ];
  for (const [doc, patch, expected] of cases) assert.deepEqual(applyPatch(doc, patch).doc, expected);
});

test("failures leave the document as it was", () => {
  const doc = { foo: "bar", list: [1] };
  const failing = [
    [{ op: "add", path: "/baz/bat", value: "qux" }],
    [{ op: "test", path: "/foo", value: "nope" }],
    [{ op: "remove", path: "/missing" }],
    [{ op: "replace", path: "/missing", value: 1 }],
    [{ op: "add", path: "/list/2", value: 1 }],
    [{ op: "add", path: "/list/01", value: 1 }],
    [{ op: "move", from: "/list", path: "/list/0" }],
    [{ op: "add", path: "/x" }],
    [{ op: "frob", path: "/x", value: 1 }],
    [{ op: "add", path: "/a", value: 1 }, { op: "remove", path: "/nope" }],
  ];
  for (const patch of failing) assert.throws(() => applyPatch(doc, patch), PatchError, JSON.stringify(patch));
  assert.deepEqual(doc, { foo: "bar", list: [1] });
});

test("the changed paths, and __proto__ stays a member", () => {
  const { doc, changed } = applyPatch({ a: 1 }, [
    { op: "replace", path: "/a", value: 2 },
    { op: "add", path: "/__proto__", value: { polluted: true } },
  ]);
  assert.deepEqual(changed, ["/a", "/__proto__"]);
  assert.equal({}.polluted, undefined);
  assert.equal(Object.getPrototypeOf(doc), Object.prototype);
  assert.deepEqual(Object.keys(doc), ["a", "__proto__"]);
});

function parse(chunks) {
  const got = [];
  const parser = new SSEParser((m) => got.push(m));
  for (const chunk of chunks) parser.feed(chunk);
  return got;
}

test("SSE: line ends of every kind, split anywhere", () => {
  const text = 'id: 1\r\ndata: {"a":1}\r\n\r\n: keepalive\n\nevent: x\rdata: two\rdata: lines\r\rdata:no-space\n\n';
  const whole = parse([text]);
  assert.deepEqual(whole, [
    { data: '{"a":1}', id: "1", event: "message" },
    { data: "two\nlines", id: "1", event: "x" },
    { data: "no-space", id: "1", event: "message" },
  ]);
  for (let cut = 0; cut <= text.length; cut++) assert.deepEqual(parse([text.slice(0, cut), text.slice(cut)]), whole, `cut at ${cut}`);
  assert.deepEqual(parse(Array.from(text)), whole);
});

test("SSE: an id with NUL is ignored; an unfinished message is not dispatched", () => {
  assert.deepEqual(parse(["id: 7\ndata: a\n\nid: x\0y\ndata: b\n\ndata: c"]).map((m) => [m.id, m.data]), [["7", "a"], ["7", "b"]]);
});

test("SSE: a 200,000-frame stream, and a 2 MB line fed in 1,000-character pieces", () => {
  const frame = 'data: {"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"x"}\n\n';
  const big = frame.repeat(200_000);
  let count = 0;
  const parser = new SSEParser(() => count++);
  const started = performance.now();
  for (let i = 0; i < big.length; i += 65536) parser.feed(big.slice(i, i + 65536));
  assert.equal(count, 200_000);
  // About a tenth of a second (13 MB of frames); the bound only catches a parser that chokes.
  assert.ok(performance.now() - started < 60_000); // hang bound
  const line = "data: " + "y".repeat(2_000_000) + "\n\n";
  let got = null;
  const one = new SSEParser((m) => (got = m));
  for (let i = 0; i < line.length; i += 1000) one.feed(line.slice(i, i + 1000));
  assert.equal(got.data.length, 2_000_000);
});

test("recordings: JSON Lines, agui run --json lines, an array, an SSE capture", () => {
  const events = [{ type: "RUN_STARTED", threadId: "t", runId: "r" }, { type: "RUN_FINISHED", threadId: "t", runId: "r" }];
  const lines = events.map((e) => JSON.stringify(e));
  const expect = events;
  assert.deepEqual(recordedEvents("\ufeff" + lines.join("\n") + "\n").map(([, e]) => e), expect);
  assert.deepEqual(recordedEvents(events.map((e) => JSON.stringify({ at: 1, wire: e })).join("\r\n")).map(([, e]) => e), expect);
  assert.deepEqual(recordedEvents(JSON.stringify(events)).map(([, e]) => e), expect);
  assert.deepEqual(recordedEvents(lines.map((l) => `id: 1\ndata: ${l}\n\n`).join("")).map(([, e]) => e), expect);
  assert.deepEqual(recordedEvents(`data: ${lines[0]}`).map(([, e]) => e), [events[0]]); // no blank line at the end
});

test("utf8Length", () => {
  for (const s of ["", "abc", "é", "€", "😀", "a😀é€"]) assert.equal(utf8Length(s), Buffer.byteLength(s));
});

test("the reducer: text, tool calls, state, interrupts, warnings", () => {
  setEventMembers({
    RUN_STARTED: { required: ["threadId", "runId"], optional: ["input"] },
    RUN_FINISHED: { required: ["threadId", "runId"], optional: ["outcome", "usage"] },
    TEXT_MESSAGE_START: { required: ["messageId"], optional: ["role"] },
    TEXT_MESSAGE_CONTENT: { required: ["messageId", "delta"], optional: [] },
    TEXT_MESSAGE_END: { required: ["messageId"], optional: [] },
    TOOL_CALL_START: { required: ["toolCallId", "toolCallName"], optional: ["parentMessageId"] },
    TOOL_CALL_ARGS: { required: ["toolCallId", "delta"], optional: [] },
    TOOL_CALL_END: { required: ["toolCallId"], optional: [] },
    TOOL_CALL_RESULT: { required: ["messageId", "toolCallId", "content"], optional: [] },
    STATE_SNAPSHOT: { required: ["snapshot"], optional: [] },
    STATE_DELTA: { required: ["delta"], optional: [] },
  });
  const thread = new Thread("t");
  thread.addUser("hi");
  const events = [
    { type: "RUN_STARTED", threadId: "t", runId: "r1" },
    { type: "STATE_SNAPSHOT", snapshot: { n: 0 } },
    { type: "TOOL_CALL_START", toolCallId: "c1", toolCallName: "count", parentMessageId: "a1" },
    { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: '{"text"' },
    { type: "TOOL_CALL_ARGS", toolCallId: "c1", delta: ':"hi"}' },
    { type: "TOOL_CALL_END", toolCallId: "c1" },
    { type: "TOOL_CALL_RESULT", messageId: "t1", toolCallId: "c1", content: "2" },
    { type: "STATE_DELTA", delta: [{ op: "replace", path: "/n", value: 2 }] },
    { type: "TEXT_MESSAGE_START", messageId: "a2", role: "assistant", extra: 1 },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "a2", delta: "two " },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "a2", delta: "characters" },
    { type: "TEXT_MESSAGE_CONTENT", messageId: "nope", delta: "x" },
    { type: "TEXT_MESSAGE_END", messageId: "a2" },
    { type: "MYSTERY" },
    {
      type: "RUN_FINISHED",
      threadId: "t",
      runId: "r1",
      outcome: { type: "interrupt", interrupts: [{ id: "i1", reason: "tool_call", toolCallId: "c1" }] },
      usage: [{ inputTokens: 3, outputTokens: 4, totalTokens: 7 }],
    },
  ];
  thread.startRun("r1", "r1");
  for (const event of events) thread.apply(event, 1, null);
  assert.deepEqual(thread.state, { n: 2 });
  assert.deepEqual(thread.changedPaths, ["/n"]);
  assert.equal(thread.byId.get("a2").chunks.join(""), "two characters");
  assert.equal(thread.toolCalls.get("c1").result, "2");
  assert.equal(thread.run.status, "interrupted");
  assert.deepEqual(thread.run.usage, [{ inputTokens: 3, outputTokens: 4, totalTokens: 7 }]);
  assert.deepEqual(thread.interrupts.map((i) => i.id), ["i1"]);
  assert.deepEqual([...thread.warnings.keys()], [
    'TEXT_MESSAGE_START: unknown member "extra", which a tolerant client strips',
    "TEXT_MESSAGE_CONTENT for message nope, which was never started",
    "unknown event type MYSTERY: a tolerant client skips it",
  ]);
  const history = thread.history();
  assert.deepEqual(history.slice(1), [
    { id: "a1", role: "assistant", toolCalls: [{ id: "c1", type: "function", function: { name: "count", arguments: '{"text":"hi"}' } }] },
    { id: "t1", role: "tool", toolCallId: "c1", content: "2" },
    { id: "a2", role: "assistant", content: "two characters" },
  ]);
  assert.equal(history[0].role, "user");
  thread.answers.set("i1", { interruptId: "i1", status: "resolved", payload: { approved: true } });
  assert.deepEqual(thread.resumeEntries(), [{ interruptId: "i1", status: "resolved", payload: { approved: true } }]);
});
