// ajv-formats' verdicts on strings of the spec's formats (tests/test_formats.py).
//
//   node formats.mjs < cases.json
//
// cases.json: [[format, value], ...]. Prints {"ajv 2020 + ajv-formats": [...]}: true where
// `{"type": "string", "format": format}` accepts the value, with ajv-formats in its default
// ("full") mode added to ajv's 2020-12 dialect, as a JavaScript SDK asserts formats.
import { readFileSync } from "node:fs";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";

const cases = JSON.parse(readFileSync(0, "utf-8"));
const ajv = new Ajv2020({ strict: true, allErrors: true });
addFormats(ajv);
const validators = {};
const out = { "ajv 2020 + ajv-formats": [] };
for (const [format, value] of cases) {
  validators[format] ??= ajv.compile({ type: "string", format });
  out["ajv 2020 + ajv-formats"].push(validators[format](value));
}
process.stdout.write(JSON.stringify(out));
