// Imported first by the client scripts: the official client reports protocol problems on the
// console, so every console line is kept (warn/error in `warnings`, the rest in `logs`) and
// stdout stays free for the script's one-line JSON report.
export const warnings = [];
export const logs = [];

export const show = (args) =>
  args
    .map((a) => (typeof a === "string" ? a : a instanceof Error ? a.stack || a.message : safeJson(a)))
    .join(" ");

function safeJson(value) {
  try {
    return JSON.stringify(value);
  } catch {
    return String(value);
  }
}

for (const name of ["warn", "error"]) console[name] = (...args) => warnings.push(show(args));
for (const name of ["log", "info", "debug"]) console[name] = (...args) => logs.push(show(args));
process.on("warning", (w) => warnings.push(`process warning: ${w.name}: ${w.message}`));
