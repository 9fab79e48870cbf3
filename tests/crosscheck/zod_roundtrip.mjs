// Peer for the cross-SDK check: the official TypeScript SDK (@ag-ui/core 1.0.0, zod).
//
// stdin:  JSON array of {"definition": <spec definition name>, "json": <document text>}
// stdout: JSON array, same order, of {"ok": bool, "wire": string|null, "error": string|null}
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
    return { ok: false, wire: null, error: `unsupported: @ag-ui/core exports no ${definition}Schema` };
  }
  let doc;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { ok: false, wire: null, error: `JSON.parse: ${err.message}` };
  }
  const result = schema.safeParse(doc);
  if (!result.success) {
    return { ok: false, wire: null, error: describe(result.error.issues) };
  }
  const value = result.data;
  if (isEvent && definition !== "Event" && !own.safeParse(value).success) {
    return { ok: false, wire: null, error: `parsed as ${value.type}, not as ${definition}` };
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
  return { ok: true, wire, error: null };
}

const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const items = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const results = items.map(({ definition, json }) => {
  try {
    return roundtrip(definition, json);
  } catch (err) {
    return { ok: false, wire: null, error: `crashed: ${err?.stack ?? err}` };
  }
});
process.stdout.write(JSON.stringify(results));
