// The page's script: one run of the official client against the agent named by ?agent=URL (on
// another origin), the assistant's text shown; then the agent's capabilities and, with ?resume=1
// (a server with a store), the run's events read again after their first id (Last-Event-ID, a
// header the browser asks the server about first). #status ends "done" or "error".
import { HttpAgent } from "@ag-ui/client";

const params = new URLSearchParams(location.search);
const url = params.get("agent");
const show = (id, text) => (document.getElementById(id).textContent = text);
const state = (name, text) => {
  const status = document.getElementById("status");
  status.dataset.state = name;
  status.textContent = text;
};

show("origin", location.origin);
show("agent", url);
const said = "hello from the browser";
show("user", said);
state("running", "running");

try {
  const agent = new HttpAgent({
    url,
    threadId: "browser-thread",
    initialMessages: [{ id: "browser-user-1", role: "user", content: said }],
  });
  await agent.runAgent({ runId: "browser-run-1" });
  const answer = agent.messages
    .filter((message) => message.role === "assistant" && typeof message.content === "string")
    .map((message) => message.content)
    .join("\n");
  show("answer", answer);

  const capabilities = await fetch(`${url}/capabilities`);
  if (!capabilities.ok) throw new Error(`capabilities: HTTP ${capabilities.status}`);
  show("capabilities", JSON.stringify(await capabilities.json()));

  if (params.get("resume") === "1") {
    const events = `${url}/runs/browser-run-1/events`;
    const whole = await (await fetch(events)).text();
    const first = whole.match(/^id: ?(.+)$/m)[1];
    const after = await fetch(events, { headers: { "Last-Event-ID": first } });
    const text = await after.text();
    const types = [...text.matchAll(/"type":"([A-Z_]+)"/g)].map((match) => match[1]);
    show("resumed", `after ${first}: ${types.length} events, ending ${types.at(-1)}`);
  }
  state("done", "done");
} catch (error) {
  show("error", `${error.name}: ${error.message}`);
  state("error", "error");
}
