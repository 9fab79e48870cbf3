// An example peer for the crosscheck (docs/cross-sdk.md#adding-a-peer): what another SDK's
// maintainer writes, here without any SDK. It reads JSON Lines of {definition, document, text}
// and writes one line per input, {"ok": true, "wire": ...} or {"ok": false, "error": ...}.
// It knows a few definitions and passes their documents through JSON.parse/JSON.stringify
// unchecked: it accepts invalid documents, writes 1.0 as 1, and has no schema for the rest.
import { createInterface } from "node:readline";

const KNOWN = new Set(["Event", "TextMessageStartEvent", "StateSnapshotEvent", "RunAgentInput"]);

for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
  if (!line.trim()) continue;
  const { definition, document } = JSON.parse(line);
  let answer;
  if (!KNOWN.has(definition)) answer = { ok: false, error: `unsupported: no ${definition} here` };
  else if (document === undefined) answer = { ok: false, error: "not JSON" };
  else answer = { ok: true, wire: document }; // a real SDK: decode, then encode again
  process.stdout.write(JSON.stringify(answer) + "\n");
}
