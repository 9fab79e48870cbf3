// The chat: each record of a thread (run.js) as an element, made once; text records get the
// deltas they have not shown yet appended as one text node per frame. A long text is laid out in
// blocks of about SEGMENT characters (cut after a line end or a space when there is one), so that
// appending to it lays out its last block again, not the whole text.

import { h, clear } from "./dom.js";

const SEGMENT = 8192;

export function renderChat(thread, container) {
  if (thread.reset) {
    clear(container);
    for (const rec of thread.records) rec.el = null;
    for (const rec of thread.records) thread.dirty.add(rec);
    thread.reset = false;
  }
  for (const rec of thread.dirty) {
    if (!rec.el) create(rec, container);
    update(rec);
  }
  thread.dirty.clear();
}

function create(rec, container) {
  rec.body = h("div", { class: "text" });
  if (rec.kind === "reasoning") {
    rec.el = h("details", { class: "msg reasoning" }, h("summary", {}, "reasoning"), rec.body);
  } else if (rec.kind === "tool-call") {
    rec.argsEl = h("pre", { class: "args" });
    rec.resultEl = h("pre", { class: "result" });
    rec.statusEl = h("span", { class: "status" });
    rec.el = h("div", { class: "msg tool-call", "data-tool-call": rec.id },
      h("div", { class: "head" }, "tool call ", h("b", {}, rec.name || "?"), " ", h("code", {}, rec.id), " ", rec.statusEl),
      rec.argsEl, rec.resultEl);
    rec.body = rec.argsEl;
  } else if (rec.kind === "activity") {
    rec.el = h("div", { class: "msg activity" }, h("div", { class: "head" }, "activity ", h("b", {}, rec.activityType || "")), rec.body);
  } else {
    const role = { user: "you", assistant: "assistant", error: "error", info: "" }[rec.kind] ?? rec.kind;
    rec.el = h("div", { class: `msg ${rec.kind}` }, role ? h("div", { class: "head" }, role) : null, rec.body);
  }
  if (rec.id !== undefined) rec.el.dataset.id = rec.id;
  container.append(rec.el);
}

function update(rec) {
  if (rec.chunks.length > rec.shown) {
    appendText(rec, rec.chunks.slice(rec.shown).join(""));
    rec.shown = rec.chunks.length;
  }
  rec.el.hidden = Boolean(rec.hidden) && rec.chunks.length === 0;
  if (rec.kind === "tool") rec.el.hidden = true;
  if (rec.kind === "tool-call") {
    rec.statusEl.textContent = rec.result !== null ? "done" : rec.ended ? "called" : "streaming arguments…";
    if (rec.result !== null) rec.resultEl.textContent = "→ " + rec.result;
  }
  if (rec.kind === "activity") rec.body.textContent = JSON.stringify(rec.content, null, 2);
  rec.el.classList.toggle("streaming", !rec.ended && (rec.kind === "assistant" || rec.kind === "reasoning"));
}

function appendText(rec, text) {
  while (text) {
    if (!rec.segment || rec.filled >= SEGMENT) {
      rec.segment = h("span", { class: "segment" });
      rec.body.append(rec.segment);
      rec.filled = 0;
    }
    const room = SEGMENT - rec.filled;
    let take = text.length;
    if (take > room) {
      const cut = Math.max(text.lastIndexOf("\n", room - 1), text.lastIndexOf(" ", room - 1));
      take = cut >= 0 ? cut + 1 : room;
    }
    rec.segment.append(take === text.length ? text : text.slice(0, take));
    rec.filled = take === text.length ? rec.filled + take : SEGMENT;
    text = text.slice(take);
  }
}
