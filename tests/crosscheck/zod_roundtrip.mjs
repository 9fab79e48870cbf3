// Peer for the cross-SDK check: the official TypeScript SDK (@ag-ui/core 1.0.0, zod).
//
// The crosscheck's peer protocol (tests/crosscheck/peers.py, docs/cross-sdk.md):
// stdin:  JSON Lines of {"definition": <spec definition name>, "document": <JSON>, "text": <its text>}
// stdout: one line per input, in order: {"ok": true, "wire_text": <text>} or {"ok": false, "error": <text>}
//
// Each document is parsed the way a TypeScript consumer parses it (JSON.parse, then the
// exported zod schema) and written back the way a TypeScript producer writes it: events
// through EventEncoder (omitOptionalNulls(event, "Event") + JSON.stringify, minus the SSE
// framing), RunAgentInput through omitOptionalNulls(input, "RunAgentInput"), anything else
// with plain JSON.stringify. zod has already refused optional nulls by then, so the helper
// changes nothing for the other definitions.
import { omitOptionalNulls } from "@ag-ui/core";
import * as schemas from "@ag-ui/core/schemas";
import { EventEncoder } from "@ag-ui/encoder";

const encoder = new EventEncoder();
const eventMembers = new Set(schemas.EventSchemas.options);

function describe(issues) {
  return issues
    .map((issue) => `${issue.path.length ? issue.path.join(".") : "<root>"}: ${issue.message}`)
    .join("; ");
}

function roundtrip(definition, text) {
  const own = schemas[`${definition}Schema`];
  const isEvent = definition === "Event" || eventMembers.has(own);
  const schema = isEvent ? schemas.EventSchemas : own;
  if (schema === undefined) {
    return { ok: false, error: `unsupported: @ag-ui/core exports no ${definition}Schema` };
  }
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { ok: false, error: `JSON.parse: ${err.message}` };
  }
  const result = schema.safeParse(doc);
  if (!result.success) {
    return { ok: false, error: describe(result.error.issues) };
  }
  const value = result.data;
  if (isEvent && definition !== "Event" && !own.safeParse(value).success) {
    return { ok: false, error: `parsed as ${value.type}, not as ${definition}` };
  }
  let wire;
  if (isEvent) {
    const frame = encoder.encodeSSE(value);
    wire = frame.slice("data: ".length, -"\n\n".length);
  } else if (definition === "RunAgentInput") {
    wire = JSON.stringify(omitOptionalNulls(value, "RunAgentInput"));
  } else {
    wire = JSON.stringify(value);
  }
  return { ok: true, wire_text: wire };
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const lines = Buffer.concat(chunks).toString("utf8").split("\n").filter((l) => l.trim());
const out = lines.map((line) => {
  try {
    const { definition, text } = JSON.parse(line);
    return JSON.stringify(roundtrip(definition, text));
  } catch (err) {
    return JSON.stringify({ ok: false, error: `crashed: ${err?.stack ?? err}` });
  }
});
process.stdout.write(out.map((l) => l + "\n").join(""));
