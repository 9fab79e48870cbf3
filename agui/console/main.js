// The console page: threads, the composer, the stream of each run, and the panels, drawn once
// per animation frame with what changed since the last one.

import { $, h, clear } from "./dom.js";
import { readSSE, recordedEvents, utf8Length, nextTask } from "./sse.js";
import { Thread, newId, setEventMembers } from "./run.js";
import { renderChat } from "./chat.js";
import { Timeline } from "./timeline.js";
import { jsonTree } from "./tree.js";
import { interruptCard } from "./interrupts.js";

const DROP = "drop"; // an abort that stands for a broken connection (aguiConsole.dropConnection)
const endpoint = location.pathname.replace(/\/console\/?$/, "");
let protocolVersion = "1.0";
const threads = [];
let current = null;
const drawn = { thread: null, state: -1, version: -1, interrupts: -1, types: 0, warnings: -1 };

const timeline = new Timeline($("timeline"), (item, index) => {
  $("event-json").textContent = `#${index} ${item.type} (${item.size} B, ${Math.round(item.time)} ms)\n` + JSON.stringify(item.event, null, 2);
});

// ── drawing ────────────────────────────────────────────────────────────────────────────────
let scheduled = false;
function schedule() {
  if (!scheduled) {
    scheduled = true;
    requestAnimationFrame(frame);
  }
}

function frame() {
  scheduled = false;
  const thread = current;
  if (!thread) return;
  const fresh = drawn.thread !== thread;
  if (fresh) {
    drawn.thread = thread;
    drawn.state = drawn.version = drawn.interrupts = drawn.warnings = -1;
    drawn.types = 0;
    $("chat").replaceChildren(thread.chatEl);
    clear($("filter"));
    $("filter").append(h("option", { value: "" }, "all types"));
    timeline.show(thread);
    $("event-json").textContent = "";
    drawThreads();
    $("thread-id").textContent = `id ${thread.id}`;
  }
  const chat = $("chat");
  const atBottom = chat.scrollTop + chat.clientHeight >= chat.scrollHeight - 40;
  renderChat(thread, thread.chatEl);
  if (atBottom) chat.scrollTop = chat.scrollHeight;
  if (!fresh) timeline.update();
  if (thread.types.size !== drawn.types) {
    const known = new Set(Array.from($("filter").options, (o) => o.value));
    for (const type of thread.types) if (!known.has(type)) $("filter").append(h("option", { value: type }, type));
    drawn.types = thread.types.size;
  }
  if (thread.stateVersion !== drawn.state) {
    drawn.state = thread.stateVersion;
    $("state").replaceChildren(jsonTree(thread.state, thread.changedPaths));
    $("changed").textContent = thread.changedPaths.length ? "last STATE_DELTA changed: " + thread.changedPaths.join(", ") : "";
  }
  if ((thread.interruptsVersion || 0) !== drawn.interrupts) {
    drawn.interrupts = thread.interruptsVersion || 0;
    drawInterrupts(thread);
  }
  if (thread.version !== drawn.version) {
    drawn.version = thread.version;
    drawRuns(thread);
    drawWarnings(thread);
    drawControls(thread);
  }
}

function drawThreads() {
  const select = $("threads");
  clear(select);
  for (const thread of threads) select.append(h("option", { value: thread.id, selected: thread === current }, thread.label));
}

function drawControls(thread) {
  const run = thread.run;
  $("stop").disabled = !thread.busy;
  $("resume").disabled = thread.busy || !run || !run.dropped || run.cursor == null;
  $("send").disabled = thread.busy || thread.recorded;
  $("status").textContent = thread.busy ? `run ${run?.runId ?? ""} going` : run ? `last run ${run.status}` : "no run yet";
}

function drawRuns(thread) {
  const body = $("runs");
  clear(body);
  for (const run of thread.runs) {
    const took = run.endedAt ? `${Math.round(run.endedAt - run.startedAt)} ms` : "";
    const usage = run.usage.map((u) => `${u.inputTokens ?? "?"} in / ${u.outputTokens ?? "?"} out / ${u.totalTokens ?? "?"} total` + (u.model ? ` (${[u.provider, u.model].filter(Boolean).join(" ")})` : "")).join("; ");
    body.append(h("tr", { class: "run-" + run.status }, h("td", {}, h("code", {}, run.runId ?? run.label)), h("td", { class: "run-status" }, run.status), h("td", {}, String(run.events)), h("td", {}, took), h("td", { class: "usage" }, usage || "—")));
  }
}

function drawWarnings(thread) {
  if (thread.warnings.size === drawn.warnings) return;
  drawn.warnings = thread.warnings.size;
  const list = $("warnings");
  clear(list);
  let n = 0;
  for (const [text, count] of thread.warnings) {
    if (++n > 100) {
      list.append(h("li", {}, `… and ${thread.warnings.size - 100} more kinds`));
      break;
    }
    list.append(h("li", {}, text, count > 1 ? ` (×${count})` : ""));
  }
  $("warnings-count").textContent = thread.warnings.size ? ` (${thread.warnings.size})` : "";
}

function drawInterrupts(thread) {
  const box = $("interrupts");
  clear(box);
  const answered = () => {
    if (thread.interrupts.every((i) => thread.answers.has(i.id))) send(thread); // the resume run
  };
  for (const interrupt of thread.interrupts) box.append(interruptCard(thread, interrupt, answered));
}

// ── threads and runs ───────────────────────────────────────────────────────────────────────
function addThread(thread) {
  thread.chatEl = h("div", { class: "messages" });
  threads.push(thread);
  select(thread);
  return thread;
}

function select(thread) {
  current = thread;
  drawn.thread = null;
  schedule();
}

function onMessage(thread, message) {
  let event;
  try {
    event = JSON.parse(message.data);
  } catch {
    thread.warn(`a frame that is not JSON: ${message.data.slice(0, 80)}`);
    return;
  }
  thread.apply(event, utf8Length(message.data), message.id);
  schedule();
}

// The body of an HTTP error as text: AgentApp's JSON ({"error", "problems": [{pointer, kind,
// message}], "more"}) as its error and a line per problem; any other body as it came.
function httpError(body) {
  let parsed;
  try {
    parsed = JSON.parse(body);
  } catch {
    return body;
  }
  if (!parsed || typeof parsed.error !== "string") return body;
  const lines = [parsed.error];
  for (const problem of Array.isArray(parsed.problems) ? parsed.problems : []) {
    lines.push(`  ${problem.pointer || "(the body)"}: ${problem.message}` + (problem.kind ? ` (${problem.kind})` : ""));
  }
  if (parsed.more) lines.push(`  … and ${parsed.more} more`);
  return lines.join("\n");
}

async function follow(thread, run, request) {
  thread.busy = true;
  thread.version++;
  schedule();
  const controller = new AbortController();
  thread.controller = controller;
  try {
    const response = await request(controller.signal);
    const type = response.headers.get("content-type") || "";
    if (!response.ok || !type.startsWith("text/event-stream")) {
      const body = await response.text();
      thread.note("error", `HTTP ${response.status}${response.statusText ? " " + response.statusText : ""}: ${httpError(body)}`);
      if (run.status === "starting") {
        run.status = "refused";
        run.endedAt = performance.now();
      }
      return;
    }
    await readSSE(response, (message) => onMessage(thread, message));
    const last = thread.run;
    if (last && last.status === "running") {
      last.dropped = true;
      last.status = "dropped";
      thread.note("error", "the stream ended before the run did (no RUN_FINISHED or RUN_ERROR)" + (last.cursor != null ? ": Resume reads the rest" : ""));
    }
  } catch (error) {
    const last = thread.run || run;
    if (controller.signal.aborted && controller.signal.reason !== DROP) {
      thread.note("info", "stopped: the console closed the connection");
      if (last.status === "running" || last.status === "starting") {
        last.status = "disconnected";
        last.endedAt = performance.now();
      }
    } else {
      thread.note("error", `transport error: ${error.message}`);
      if (last.status === "running" || last.status === "starting") {
        last.status = "dropped";
        last.dropped = true;
      }
    }
  } finally {
    thread.busy = false;
    thread.controller = null;
    thread.version++;
    schedule();
    if (!$("stored-group").hidden) loadStored(); // the run's thread, now first
  }
}

function send(thread = current) {
  if (thread.busy || thread.recorded) return;
  const pending = thread.interrupts.filter((i) => !thread.answers.has(i.id));
  if (pending.length) {
    thread.note("error", `answer the pending interrupt(s) first: ${pending.map((i) => i.id).join(", ")}`);
    schedule();
    return;
  }
  let forwardedProps;
  try {
    forwardedProps = JSON.parse($("forwarded").value || "{}");
  } catch (error) {
    thread.note("error", `forwardedProps is not JSON: ${error.message}`);
    schedule();
    return;
  }
  const text = $("message").value;
  if (text.trim()) thread.addUser(text);
  $("message").value = "";
  const runId = newId("run-");
  const input = {
    threadId: thread.id,
    runId,
    protocolVersion,
    state: thread.state,
    messages: thread.history(),
    tools: [],
    context: [],
    forwardedProps,
  };
  const resume = thread.resumeEntries();
  if (resume.length) input.resume = resume;
  thread.interrupts = [];
  thread.answers = new Map();
  thread.interruptsVersion = (thread.interruptsVersion || 0) + 1;
  const run = thread.startRun(runId, runId);
  run.input = input;
  window.dispatchEvent(new CustomEvent("agui-console-send", { detail: { runId } }));
  return follow(thread, run, (signal) =>
    fetch(endpoint, {
      method: "POST",
      // the console resumes a cut stream (Last-Event-ID): a durable server keeps the run going
      headers: { "content-type": "application/json", accept: "text/event-stream", "agui-resume": "1" },
      body: JSON.stringify(input),
      signal,
    }),
  );
}

function connect(id) {
  let thread = threads.find((t) => t.id === id);
  if (!thread) thread = addThread(new Thread(id, `${id} (connected)`));
  else select(thread);
  if (thread.busy) return;
  const run = thread.startRun(null, "connect");
  return follow(thread, run, (signal) =>
    fetch(`${endpoint}/threads/${encodeURIComponent(id)}/events`, { headers: { accept: "text/event-stream" }, signal }),
  );
}

function resume(thread = current) {
  const run = thread.run;
  if (!run || !run.dropped || run.cursor == null) return;
  run.dropped = false;
  run.status = "running";
  thread.note("info", `resuming run ${run.runId} after event ${run.cursor}`);
  return follow(thread, run, (signal) =>
    fetch(`${endpoint}/runs/${encodeURIComponent(run.runId)}/events`, {
      headers: { accept: "text/event-stream", "last-event-id": run.cursor },
      signal,
    }),
  );
}

async function stop(thread = current) {
  const run = thread.run;
  if (!thread.busy || !run) return;
  if (run.cursor == null || !run.runId) {
    thread.controller?.abort();
    return;
  }
  try {
    const response = await fetch(`${endpoint}/runs/${encodeURIComponent(run.runId)}/stop`, { method: "POST" });
    thread.note("info", `stop: HTTP ${response.status} ${await response.text()}`);
  } catch (error) {
    thread.note("error", `stop: ${error.message}`);
  }
  schedule();
}

async function openRecording(file) {
  const thread = addThread(new Thread(newId("recording-"), `${file.name} (recording)`));
  thread.recorded = true;
  let items;
  try {
    items = recordedEvents(await file.text());
  } catch (error) {
    thread.note("error", `${file.name} is not a recording (JSON Lines, a JSON array or an SSE capture): ${error.message}`);
    schedule();
    return;
  }
  thread.busy = true;
  let since = performance.now();
  let started = null; // the timestamp of the run's RUN_STARTED, when the recording has them
  for (const [text, event] of items) {
    const at = typeof event?.timestamp === "number" ? event.timestamp : null;
    if (event?.type === "RUN_STARTED") started = at;
    thread.apply(event, utf8Length(text), null, at !== null && started !== null ? at - started : 0);
    if (performance.now() - since > 40) {
      schedule();
      await nextTask();
      since = performance.now();
    }
  }
  thread.busy = false;
  thread.version++;
  thread.note("info", `opened ${file.name}: ${items.length} events`);
  schedule();
}

// ── the stored threads (a durable store's GET {endpoint}/threads) ────────────────────────────
let storedNext = null;
let storedLoading = null;
let storedAgain = false; // asked again while a read was going: read once more after it

// Read the caller's threads, newest first, into the picker (more: the next page, appended). A
// server without a store (404), or one that refuses the listing, leaves the picker hidden.
function loadStored(more = false) {
  if (storedLoading) {
    if (!more) storedAgain = true;
    return storedLoading;
  }
  storedLoading = (async () => {
    let url = `${endpoint}/threads?limit=50`;
    if (more && storedNext) url += `&before=${encodeURIComponent(storedNext)}`;
    try {
      const response = await fetch(url, { headers: { accept: "application/json" } });
      if (!response.ok) return;
      const page = await response.json();
      if (!page || !Array.isArray(page.threads)) return;
      const picker = $("stored");
      if (!more) picker.replaceChildren(h("option", { value: "" }, "pick a thread…"));
      for (const option of [...picker.options]) if (option.dataset.more) option.remove();
      for (const t of page.threads) picker.append(h("option", { value: t.threadId }, storedLabel(t)));
      storedNext = typeof page.next === "string" ? page.next : null;
      if (storedNext) picker.append(h("option", { value: "", "data-more": "1" }, "more…"));
      picker.value = "";
      $("stored-group").hidden = false;
    } catch (error) {
      console.warn("stored threads:", error);
    } finally {
      storedLoading = null;
      document.body.dataset.stored = String(Number(document.body.dataset.stored || 0) + 1);
    }
    if (storedAgain) {
      storedAgain = false;
      await loadStored();
    }
  })();
  return storedLoading;
}

function storedLabel(t) {
  const last = t.lastRun || {};
  const when = typeof t.updatedAt === "string" ? t.updatedAt.slice(0, 19).replace("T", " ") : "";
  return `${t.threadId} · ${last.outcome || last.status || "?"} · ${when}`;
}

function pickStored(option) {
  $("stored").value = "";
  if (!option) return;
  if (option.dataset.more) loadStored(true);
  else if (option.value) connect(option.value);
}

// ── the page ───────────────────────────────────────────────────────────────────────────────
async function start() {
  $("endpoint").textContent = endpoint || "/";
  try {
    const response = await fetch("console/events.json");
    const table = await response.json();
    protocolVersion = table.protocolVersion;
    setEventMembers(table.events);
  } catch (error) {
    console.warn("events.json:", error);
  }
  addThread(new Thread(newId("thread-")));
  $("send").addEventListener("click", () => send());
  $("message").addEventListener("keydown", (e) => {
    if (e.key === "Enter" && (e.ctrlKey || e.metaKey)) send();
  });
  $("new-thread").addEventListener("click", () => addThread(new Thread(newId("thread-"))));
  $("threads").addEventListener("change", (e) => select(threads.find((t) => t.id === e.target.value)));
  $("connect").addEventListener("click", () => {
    const id = $("connect-id").value.trim();
    if (id) connect(id);
  });
  $("stop").addEventListener("click", () => stop());
  $("resume").addEventListener("click", () => resume());
  $("filter").addEventListener("change", (e) => timeline.setFilter(e.target.value));
  $("open").addEventListener("change", (e) => {
    const file = e.target.files[0];
    if (file) openRecording(file);
    e.target.value = "";
  });
  $("thread-id").addEventListener("click", () => {
    $("connect-id").value = current.id;
  });
  $("stored").addEventListener("change", (e) => pickStored(e.target.selectedOptions[0]));
  $("stored-refresh").addEventListener("click", () => loadStored());
  try {
    const response = await fetch(`${endpoint}/capabilities`, { headers: { accept: "application/json" } });
    if (response.ok) {
      const capabilities = await response.json();
      $("capabilities").textContent = JSON.stringify(capabilities, null, 2);
      $("capabilities-summary").textContent = Object.entries(capabilities).map(([key, value]) => (value && typeof value === "object" && "supported" in value ? `${key}: ${value.supported ? "yes" : "no"}` : key)).join(" · ");
      if (capabilities.transport?.resumable) await loadStored(); // a store: its thread API
    } else $("capabilities-summary").textContent = `no capabilities (HTTP ${response.status})`;
  } catch (error) {
    $("capabilities-summary").textContent = `capabilities: ${error.message}`;
  }
  document.body.dataset.ready = "true";
}

// For tests and the devtools: the threads, and a way to break the current stream as a network
// failure would (a durable run goes on, and Resume reads the rest).
window.aguiConsole = {
  threads: () => threads,
  loadStored,
  current: () => current,
  dropConnection: () => current?.controller?.abort(DROP),
};
start();
