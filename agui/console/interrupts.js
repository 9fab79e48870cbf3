// A pending interrupt as a card: its reason, message and id; for a tool call its arguments (to
// edit) with Approve and Decline; a form from its responseSchema (form.js); Cancel. Each answer
// is a ResumeEntry, recorded in the thread; `onAnswered()` is called after each one.

import { h } from "./dom.js";
import { field } from "./form.js";

export function interruptCard(thread, interrupt, onAnswered) {
  const id = interrupt.id;
  const done = h("div", { class: "answer" });
  const problem = h("div", { class: "problem" });
  const call = interrupt.toolCallId ? thread.toolCalls.get(interrupt.toolCallId) : null;
  let original = "";
  if (call) original = call.chunks.join("");
  else if (interrupt.metadata?.arguments) original = JSON.stringify(interrupt.metadata.arguments);
  const args = interrupt.toolCallId ? h("textarea", { class: "edit-args", rows: 2 }, original) : null;
  const schema = interrupt.responseSchema;
  const approval = Boolean(interrupt.toolCallId) || Boolean(schema?.properties?.approved);
  const form = schema ? field(schema, "answer") : null;

  const answer = (entry) => {
    thread.answers.set(id, entry);
    card.classList.add("answered");
    const payload = entry.payload !== undefined ? " " + JSON.stringify(entry.payload) : "";
    done.textContent = `answered: ${entry.status}${payload}`;
    onAnswered();
  };
  // A button's action; what it throws (arguments or a form that do not parse) is shown.
  const button = (cls, label, action) => {
    const click = () => {
      problem.textContent = "";
      try {
        action();
      } catch (error) {
        problem.textContent = error.message;
      }
    };
    return h("button", { type: "button", class: cls, onclick: click }, label);
  };
  const approve = () => {
    const payload = { approved: true };
    if (args && args.value.trim() !== original.trim()) payload.editedArgs = JSON.parse(args.value);
    answer({ interruptId: id, status: "resolved", payload });
  };
  const decline = () => answer({ interruptId: id, status: "resolved", payload: { approved: false } });
  const submit = () => {
    const payload = form.read();
    answer({ interruptId: id, status: "resolved", ...(payload === undefined ? {} : { payload }) });
  };
  const cancel = () => answer({ interruptId: id, status: "cancelled" });

  const card = h(
    "div",
    { class: "interrupt", "data-interrupt": id },
    h("div", { class: "head" }, "interrupt ", h("b", {}, interrupt.reason), " ", h("code", {}, id)),
    interrupt.message ? h("p", { class: "message" }, interrupt.message) : null,
    interrupt.expiresAt ? h("p", {}, "expires at " + interrupt.expiresAt) : null,
    args ? h("label", {}, `arguments of ${call?.name ?? "the tool call"} ${interrupt.toolCallId}`, args) : null,
    approval ? h("div", { class: "buttons" }, button("approve", "Approve", approve), button("decline", "Decline", decline)) : null,
    form
      ? h("details", { class: "form", open: !approval }, h("summary", {}, "answer with the response schema's form"), form.el, button("submit", "Answer", submit))
      : null,
    button("cancel", "Cancel the interrupt", cancel),
    problem,
    done,
  );
  return card;
}
