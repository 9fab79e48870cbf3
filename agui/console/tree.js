// A JSON value as a tree of nested lists; the members at `changed` (JSON pointers) highlighted.

import { h } from "./dom.js";
import { formatPointer } from "./patch.js";

export function jsonTree(value, changed = []) {
  const marks = new Set(changed);
  const root = h("ul", { class: "tree" });
  root.append(node("(state)", value, [], marks, true));
  return root;
}

function scalar(value) {
  const kind = value === null ? "null" : typeof value;
  return h("span", { class: "v-" + kind }, JSON.stringify(value));
}

function node(key, value, path, marks, open) {
  const pointer = formatPointer(path);
  const li = h("li", { "data-path": pointer });
  if (marks.has(pointer)) li.classList.add("changed");
  const label = h("span", { class: "key" }, key);
  if (value === null || typeof value !== "object") {
    li.append(label, ": ", scalar(value));
    return li;
  }
  const entries = Array.isArray(value) ? value.map((v, i) => [String(i), v]) : Object.entries(value);
  const summary = h("summary", {}, label, h("span", { class: "count" }, Array.isArray(value) ? ` [${entries.length}]` : ` {${entries.length}}`));
  const list = h("ul");
  for (const [k, v] of entries) list.append(node(k, v, [...path, k], marks, open || path.length < 2));
  li.append(h("details", { open: open || path.length < 3 }, summary, list));
  return li;
}
