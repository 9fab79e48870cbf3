// A form for an interrupt's responseSchema: objects, strings, numbers, integers, booleans and
// enums get fields; anything else a raw JSON box. `field(schema)` returns {el, read()}, where
// read() gives the value (undefined: left empty) or throws with what is wrong.

import { h } from "./dom.js";

export function field(schema, name = "answer", required = true) {
  const s = schema && typeof schema === "object" ? schema : {};
  const title = s.title || name;
  const help = s.description ? h("small", {}, s.description) : null;
  if (Array.isArray(s.enum)) {
    const select = h("select", { name }, required ? null : h("option", { value: "" }, "—"),
      s.enum.map((v, i) => h("option", { value: String(i) }, JSON.stringify(v))));
    return { el: h("label", {}, title, " ", select, help), read: () => (select.value === "" ? undefined : s.enum[Number(select.value)]) };
  }
  if (s.type === "boolean") {
    const box = h("input", { type: "checkbox", name, checked: s.default === true });
    return { el: h("label", { class: "check" }, box, " ", title, help), read: () => box.checked };
  }
  if (s.type === "string") {
    const input = h("input", { type: "text", name, value: s.default ?? "" });
    return { el: h("label", {}, title, " ", input, help), read: () => (input.value === "" && !required ? undefined : input.value) };
  }
  if (s.type === "number" || s.type === "integer") {
    const input = h("input", { type: "number", name, step: s.type === "integer" ? "1" : "any", value: s.default ?? "" });
    return {
      el: h("label", {}, title, " ", input, help),
      read() {
        if (input.value === "") {
          if (required) throw new Error(`${title}: a number is required`);
          return undefined;
        }
        const n = Number(input.value);
        if (!Number.isFinite(n) || (s.type === "integer" && !Number.isInteger(n))) throw new Error(`${title}: not ${s.type === "integer" ? "an integer" : "a number"}`);
        return n;
      },
    };
  }
  if (s.type === "object" && s.properties && typeof s.properties === "object") {
    const needed = new Set(Array.isArray(s.required) ? s.required : []);
    const fields = Object.entries(s.properties).map(([key, sub]) => [key, field(sub, key, needed.has(key))]);
    return {
      el: h("fieldset", {}, h("legend", {}, title), help, fields.map(([, f]) => f.el)),
      read() {
        const value = {};
        for (const [key, f] of fields) {
          const v = f.read();
          if (v !== undefined) value[key] = v;
          else if (needed.has(key)) throw new Error(`${key} is required`);
        }
        return value;
      },
    };
  }
  const box = h("textarea", { name, rows: 3, placeholder: "JSON" }, s.default !== undefined ? JSON.stringify(s.default) : "");
  return {
    el: h("label", { class: "raw" }, title + " (JSON)", box, help),
    read() {
      if (box.value.trim() === "") {
        if (required) throw new Error(`${title}: a JSON value is required`);
        return undefined;
      }
      return JSON.parse(box.value);
    },
  };
}
