// Peer for the protobuf parity check: @ag-ui/proto 1.0.0, the official binary binding.
//
// stdin:  JSON array of documents (event JSON text)
// stdout: JSON array, same order, of {"bytes": hex|null, "error": string|null, "decoded": any}
//
// Each document is parsed as a TypeScript producer has it (JSON.parse) and written with the
// package's encode(); the bytes are then read back with its decode(), so the Python side can
// compare both directions. Warnings about unrecognised material are silenced: they are the
// package's, not findings.
import { decode, encode } from "@ag-ui/proto";

process.env.SUPPRESS_TRANSFORMATION_WARNINGS = "1";
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const documents = JSON.parse(Buffer.concat(chunks).toString("utf8"));
const out = documents.map((text) => {
  try {
    const bytes = encode(JSON.parse(text));
    let decoded = null;
    try {
      decoded = decode(bytes);
    } catch (error) {
      decoded = { "decode error": String(error?.message ?? error) };
    }
    return { bytes: Buffer.from(bytes).toString("hex"), error: null, decoded };
  } catch (error) {
    return { bytes: null, error: String(error?.message ?? error), decoded: null };
  }
});
process.stdout.write(JSON.stringify(out));
