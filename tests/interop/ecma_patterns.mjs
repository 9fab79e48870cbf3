// The JavaScript verdicts on spec patterns (tests/test_ecma_patterns.py).
//
//   node ecma_patterns.mjs SCHEMA.json < cases.json
//
// cases.json: [[member, pattern, value], ...], each a PatternProbe document {member: value}.
// Prints {"ajv 2020": [...], "zod": [...], "RegExp u": [...]}: true where the document (or the
// value) is accepted. ajv 2020 compiles the generated JSON Schema's PatternProbe (by its $anchor)
// with `unicodeRegExp` on, its default: patterns as `new RegExp(pattern, "u")`. zod: a "pointer"
// row goes through @ag-ui/core's own JsonPointerSchema (@ag-ui/core/schemas), the definition it
// has; @ag-ui/core has none for the others, so theirs is `z.string().regex()` (zod, the release
// @ag-ui/core uses) with the same RegExp, how a zod schema of the definition would read them.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import { JsonPointerSchema } from "@ag-ui/core/schemas";
import { z } from "zod";

const schema = JSON.parse(readFileSync(process.argv[2], "utf-8"));
const cases = JSON.parse(readFileSync(0, "utf-8"));
const ajv = new Ajv2020({ strict: false, allErrors: true });
ajv.addSchema(schema);
const validate = ajv.getSchema(`${schema.$id}#PatternProbe`);
if (!validate) throw new Error("no PatternProbe in the schema");

const out = { "ajv 2020": [], zod: [], "RegExp u": [] };
for (const [member, pattern, value] of cases) {
  out["ajv 2020"].push(validate({ [member]: value }));
  const zod = member === "pointer" ? JsonPointerSchema : z.string().regex(new RegExp(pattern, "u"));
  out.zod.push(zod.safeParse(value).success);
  out["RegExp u"].push(new RegExp(pattern, "u").test(value));
}
process.stdout.write(JSON.stringify(out));
