// A thread as the console holds it: its messages (as records the view renders), state, runs,
// events, warnings and pending interrupts, updated one event at a time. Every event costs work in
// proportion to its own size: text is kept as the list of its deltas, and the view appends only
// the deltas it has not shown yet.

import { applyPatch } from "./patch.js";

let members = {}; // event type -> Set of its wire members (from events.json)

export function setEventMembers(table) {
  members = {};
  for (const [type, { required, optional }] of Object.entries(table)) {
    members[type] = { all: new Set(["type", ...required, ...optional]), required };
  }
}

export function newId(prefix) {
  if (globalThis.crypto?.randomUUID) return prefix + crypto.randomUUID();
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return prefix + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
}

export class Thread {
  constructor(id, label) {
    this.id = id;
    this.label = label || id;
    this.records = []; // what the chat shows, in order (see `record`)
    this.byId = new Map(); // message id -> record
    this.toolCalls = new Map(); // tool call id -> record
    this.state = {};
    this.changedPaths = []; // what the last STATE_DELTA changed
    this.stateVersion = 0;
    this.events = []; // {type, time, size, event}
    this.types = new Set();
    this.runs = [];
    this.warnings = new Map(); // text -> count
    this.interrupts = []; // the pending ones
    this.answers = new Map(); // interrupt id -> resume entry
    this.dirty = new Set(); // records to render again
    this.reset = false; // the chat is to be built again (MESSAGES_SNAPSHOT)
    this.version = 0; // anything changed
    this.busy = false;
  }

  get run() {
    return this.runs[this.runs.length - 1];
  }

  // ── records ──────────────────────────────────────────────────────────────────────────────
  record(kind, id, fields = {}) {
    const rec = { kind, id, chunks: [], shown: 0, ...fields };
    this.records.push(rec);
    if (id !== undefined && kind !== "tool-call") this.byId.set(id, rec);
    this.dirty.add(rec);
    return rec;
  }

  touch(rec) {
    this.dirty.add(rec);
  }

  warn(text) {
    this.warnings.set(text, (this.warnings.get(text) || 0) + 1);
  }

  note(kind, text) {
    const rec = this.record(kind, undefined);
    rec.chunks.push(text);
    this.version++;
    return rec;
  }

  addUser(text) {
    const rec = this.record("user", newId("user-"));
    rec.chunks.push(text);
    this.version++;
    return rec;
  }

  // ── the next run's input ─────────────────────────────────────────────────────────────────
  history() {
    const messages = [];
    for (const rec of this.records) {
      const content = rec.chunks.join("");
      if (rec.kind === "user") messages.push({ id: rec.id, role: "user", content });
      else if (rec.kind === "assistant") {
        const message = { id: rec.id, role: "assistant" };
        if (content) message.content = content;
        if (rec.calls?.length) {
          message.toolCalls = rec.calls.map((call) => ({
            id: call.id,
            type: "function",
            function: { name: call.name, arguments: call.chunks.join("") },
          }));
        }
        if (message.content !== undefined || message.toolCalls) messages.push(message);
      } else if (rec.kind === "tool") {
        messages.push({ id: rec.id, role: "tool", toolCallId: rec.toolCallId, content });
      } else if (rec.kind === "reasoning" && content) {
        messages.push({ id: rec.id, role: "reasoning", content });
      }
    }
    return messages;
  }

  resumeEntries() {
    return this.interrupts.filter((i) => this.answers.has(i.id)).map((i) => this.answers.get(i.id));
  }

  // ── events ───────────────────────────────────────────────────────────────────────────────
  // Apply one event: `size` its size in bytes as received, `cursor` its SSE id, `time` the ms
  // since its run started (default: since the run started here).
  apply(event, size, cursor, time) {
    const run = this.run;
    if (time === undefined) time = run ? performance.now() - run.startedAt : 0;
    const type = event && typeof event === "object" ? String(event.type) : "(not an object)";
    this.events.push({ type, time, size, event });
    if (!this.types.has(type)) this.types.add(type);
    if (run) {
      run.events++;
      if (cursor != null) run.cursor = cursor;
    }
    this.version++;
    this.check(type, event, run);
    const handler = HANDLERS[type];
    if (handler) {
      try {
        handler(this, event, run);
      } catch (error) {
        this.warn(`${type}: ${error.message}`);
      }
    }
  }

  check(type, event, run) {
    const known = members[type];
    if (!known) {
      this.warn(`unknown event type ${type}: a tolerant client skips it`);
      return;
    }
    for (const key in event) {
      if (!known.all.has(key)) this.warn(`${type}: unknown member "${key}", which a tolerant client strips`);
    }
    for (const key of known.required) {
      if (!(key in event)) this.warn(`${type}: required member "${key}" is missing`);
    }
    if (type !== "RUN_STARTED" && (!run || run.status !== "running") && !this.replaying) {
      this.warn(`${type} outside a run (before RUN_STARTED or after its end)`);
    }
  }

  startRun(runId, label) {
    const run = {
      runId,
      label,
      startedAt: performance.now(),
      status: "starting",
      events: 0,
      usage: [],
      cursor: null,
      seenStart: false,
    };
    this.runs.push(run);
    this.version++;
    return run;
  }
}

function textRecord(thread, id, kind, extra) {
  let rec = thread.byId.get(id);
  if (!rec) rec = thread.record(kind, id, extra);
  return rec;
}

function appendTo(thread, rec, delta) {
  if (typeof delta !== "string" || delta === "") return;
  rec.chunks.push(delta);
  thread.dirty.add(rec);
}

function toolCall(thread, event) {
  const id = event.toolCallId;
  let call = thread.toolCalls.get(id);
  if (call) return call;
  const parentId = event.parentMessageId || "msg-" + id;
  let parent = thread.byId.get(parentId);
  if (!parent) parent = thread.record("assistant", parentId, { calls: [], hidden: true });
  parent.calls ||= [];
  call = thread.record("tool-call", id, { name: event.toolCallName, result: null, ended: false, parent });
  parent.calls.push(call);
  thread.toolCalls.set(id, call);
  return call;
}

function closeRun(thread, run, status) {
  if (!run) return;
  run.status = status;
  run.endedAt = performance.now();
}

const HANDLERS = {
  RUN_STARTED(thread, event, run) {
    let current = run;
    if (!current || current.runId !== event.runId) {
      if (current && current.status === "running") thread.warn(`RUN_STARTED ${event.runId} while run ${current.runId} is going`);
      if (!current || current.seenStart) current = thread.startRun(event.runId, event.runId);
      else current.runId = event.runId;
    }
    current.seenStart = true;
    current.status = "running";
    const input = event.input;
    if (input && Array.isArray(input.messages)) {
      for (const message of input.messages) {
        if (message && message.role === "user" && !thread.byId.has(message.id)) {
          const rec = thread.record("user", message.id);
          rec.chunks.push(typeof message.content === "string" ? message.content : JSON.stringify(message.content));
        }
      }
    }
  },
  RUN_FINISHED(thread, event, run) {
    closeRun(thread, run, "success"); // an absent outcome is a success
    if (run && Array.isArray(event.usage)) run.usage.push(...event.usage);
    const outcome = event.outcome;
    thread.interrupts = [];
    thread.answers = new Map();
    if (outcome && outcome.type === "interrupt" && Array.isArray(outcome.interrupts)) {
      if (run) run.status = "interrupted";
      thread.interrupts = outcome.interrupts;
    } else if (outcome && outcome.type && run) run.status = outcome.type;
    thread.interruptsVersion = (thread.interruptsVersion || 0) + 1;
  },
  RUN_ERROR(thread, event, run) {
    closeRun(thread, run, "error");
    if (run && Array.isArray(event.usage)) run.usage.push(...event.usage);
    thread.note("error", `RUN_ERROR${event.code ? " " + event.code : ""}: ${event.message}`);
  },
  TEXT_MESSAGE_START(thread, event) {
    if (thread.byId.has(event.messageId)) {
      const rec = thread.byId.get(event.messageId);
      if (!rec.hidden) thread.warn(`TEXT_MESSAGE_START for message ${event.messageId}, which was started before`);
      rec.hidden = false;
      rec.ended = false;
      thread.dirty.add(rec);
      return;
    }
    thread.record(event.role === "user" ? "user" : "assistant", event.messageId, { name: event.name });
  },
  TEXT_MESSAGE_CONTENT(thread, event) {
    const rec = thread.byId.get(event.messageId);
    if (!rec) {
      thread.warn(`TEXT_MESSAGE_CONTENT for message ${event.messageId}, which was never started`);
      return;
    }
    if (rec.ended) thread.warn(`TEXT_MESSAGE_CONTENT for message ${event.messageId} after its end`);
    appendTo(thread, rec, event.delta);
  },
  TEXT_MESSAGE_END(thread, event) {
    const rec = thread.byId.get(event.messageId);
    if (!rec) thread.warn(`TEXT_MESSAGE_END for message ${event.messageId}, which was never started`);
    else {
      rec.ended = true;
      thread.dirty.add(rec);
    }
  },
  TEXT_MESSAGE_CHUNK(thread, event) {
    if (event.messageId === undefined) return;
    const rec = textRecord(thread, event.messageId, event.role === "user" ? "user" : "assistant");
    rec.hidden = false;
    appendTo(thread, rec, event.delta);
  },
  REASONING_MESSAGE_START(thread, event) {
    textRecord(thread, event.messageId, "reasoning");
  },
  REASONING_MESSAGE_CONTENT(thread, event) {
    const rec = thread.byId.get(event.messageId);
    if (!rec) thread.warn(`REASONING_MESSAGE_CONTENT for message ${event.messageId}, which was never started`);
    else appendTo(thread, rec, event.delta);
  },
  REASONING_MESSAGE_CHUNK(thread, event) {
    if (event.messageId === undefined) return;
    appendTo(thread, textRecord(thread, event.messageId, "reasoning"), event.delta);
  },
  REASONING_MESSAGE_END(thread, event) {
    const rec = thread.byId.get(event.messageId);
    if (!rec) thread.warn(`REASONING_MESSAGE_END for message ${event.messageId}, which was never started`);
    else {
      rec.ended = true;
      thread.dirty.add(rec);
    }
  },
  TOOL_CALL_START(thread, event) {
    if (thread.toolCalls.has(event.toolCallId)) thread.warn(`TOOL_CALL_START for ${event.toolCallId}, started before`);
    toolCall(thread, event);
  },
  TOOL_CALL_ARGS(thread, event) {
    const call = thread.toolCalls.get(event.toolCallId);
    if (!call) thread.warn(`TOOL_CALL_ARGS for tool call ${event.toolCallId}, which was never started`);
    else appendTo(thread, call, event.delta);
  },
  TOOL_CALL_END(thread, event) {
    const call = thread.toolCalls.get(event.toolCallId);
    if (!call) thread.warn(`TOOL_CALL_END for tool call ${event.toolCallId}, which was never started`);
    else {
      call.ended = true;
      thread.dirty.add(call);
    }
  },
  TOOL_CALL_CHUNK(thread, event) {
    if (event.toolCallId === undefined) return;
    appendTo(thread, toolCall(thread, event), event.delta);
  },
  TOOL_CALL_RESULT(thread, event) {
    const call = thread.toolCalls.get(event.toolCallId);
    if (!call) thread.warn(`TOOL_CALL_RESULT for tool call ${event.toolCallId}, which was never started`);
    else {
      call.result = event.content;
      thread.dirty.add(call);
    }
    const rec = thread.record("tool", event.messageId, { toolCallId: event.toolCallId, hidden: true });
    rec.chunks.push(String(event.content));
  },
  STATE_SNAPSHOT(thread, event) {
    thread.state = event.snapshot;
    thread.changedPaths = [];
    thread.stateVersion++;
  },
  STATE_DELTA(thread, event) {
    const { doc, changed } = applyPatch(thread.state, event.delta);
    thread.state = doc;
    thread.changedPaths = changed;
    thread.stateVersion++;
  },
  MESSAGES_SNAPSHOT(thread, event) {
    thread.records = [];
    thread.byId = new Map();
    thread.toolCalls = new Map();
    thread.dirty = new Set();
    thread.reset = true;
    for (const message of event.messages || []) {
      const content = typeof message.content === "string" ? message.content : message.content == null ? "" : JSON.stringify(message.content);
      if (message.role === "tool") {
        HANDLERS.TOOL_CALL_RESULT(thread, { messageId: message.id, toolCallId: message.toolCallId, content });
      } else if (message.role === "activity") {
        HANDLERS.ACTIVITY_SNAPSHOT(thread, { messageId: message.id, activityType: message.activityType, content: message.content });
      } else {
        const kind = message.role === "user" ? "user" : message.role === "reasoning" ? "reasoning" : "assistant";
        const rec = thread.record(kind, message.id, { ended: true, role: message.role });
        if (content) rec.chunks.push(content);
        for (const call of message.toolCalls || []) {
          const done = toolCall(thread, { toolCallId: call.id, toolCallName: call.function?.name, parentMessageId: message.id });
          done.chunks.push(call.function?.arguments || "");
          done.ended = true;
        }
      }
    }
  },
  ACTIVITY_SNAPSHOT(thread, event) {
    let rec = thread.byId.get(event.messageId);
    if (rec && event.replace === false) return;
    if (!rec) rec = thread.record("activity", event.messageId);
    rec.activityType = event.activityType;
    rec.content = event.content;
    thread.dirty.add(rec);
  },
  ACTIVITY_DELTA(thread, event) {
    const rec = thread.byId.get(event.messageId);
    if (!rec) {
      thread.warn(`ACTIVITY_DELTA for activity ${event.messageId}, which has no snapshot`);
      return;
    }
    rec.content = applyPatch(rec.content, event.patch).doc;
    thread.dirty.add(rec);
  },
};
