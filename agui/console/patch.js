// JSON Patch (RFC 6902) over JSON Pointers (RFC 6901), applied to a copy: a patch that fails
// leaves the document as it was. `applyPatch` returns the new document and the paths it changed.

export class PatchError extends Error {}

export function parsePointer(pointer) {
  if (pointer === "") return [];
  if (typeof pointer !== "string" || pointer[0] !== "/") {
    throw new PatchError(`not a JSON pointer: ${JSON.stringify(pointer)}`);
  }
  return pointer
    .slice(1)
    .split("/")
    .map((token) => token.replace(/~1/g, "/").replace(/~0/g, "~"));
}

export function formatPointer(tokens) {
  return tokens.map((token) => "/" + String(token).replace(/~/g, "~0").replace(/\//g, "~1")).join("");
}

const has = (object, key) => Object.prototype.hasOwnProperty.call(object, key);

function isContainer(value) {
  return value !== null && typeof value === "object";
}

function arrayIndex(array, token, forAdd) {
  if (forAdd && token === "-") return array.length;
  if (!/^(0|[1-9][0-9]*)$/.test(token)) throw new PatchError(`not an array index: ${token}`);
  const index = Number(token);
  if (index > array.length || (!forAdd && index === array.length)) {
    throw new PatchError(`index ${index} is out of bounds (length ${array.length})`);
  }
  return index;
}

function setMember(object, key, value) {
  if (key === "__proto__") {
    Object.defineProperty(object, key, { value, enumerable: true, writable: true, configurable: true });
  } else {
    object[key] = value;
  }
}

function parentOf(doc, tokens, path) {
  let node = doc;
  for (let i = 0; i < tokens.length - 1; i++) {
    const token = tokens[i];
    if (Array.isArray(node)) node = node[arrayIndex(node, token, false)];
    else if (isContainer(node) && has(node, token)) node = node[token];
    else throw new PatchError(`${path}: ${formatPointer(tokens.slice(0, i + 1))} does not exist`);
  }
  if (!isContainer(node)) throw new PatchError(`${path}: the parent is not an object or array`);
  return node;
}

export function getPointer(doc, pointer) {
  let node = doc;
  for (const token of parsePointer(pointer)) {
    if (Array.isArray(node)) node = node[arrayIndex(node, token, false)];
    else if (isContainer(node) && has(node, token)) node = node[token];
    else throw new PatchError(`${pointer} does not exist`);
  }
  return node;
}

export function deepEqual(a, b) {
  if (a === b) return true;
  if (!isContainer(a) || !isContainer(b) || Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) return a.length === b.length && a.every((item, i) => deepEqual(item, b[i]));
  const keys = Object.keys(a);
  return keys.length === Object.keys(b).length && keys.every((key) => has(b, key) && deepEqual(a[key], b[key]));
}

function add(doc, path, value) {
  const tokens = parsePointer(path);
  if (!tokens.length) return value;
  const parent = parentOf(doc, tokens, path);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) parent.splice(arrayIndex(parent, last, true), 0, value);
  else setMember(parent, last, value);
  return doc;
}

function remove(doc, path) {
  const tokens = parsePointer(path);
  if (!tokens.length) throw new PatchError("cannot remove the whole document");
  const parent = parentOf(doc, tokens, path);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) return parent.splice(arrayIndex(parent, last, false), 1)[0];
  if (!has(parent, last)) throw new PatchError(`${path} does not exist`);
  const value = parent[last];
  delete parent[last];
  return value;
}

function replace(doc, path, value) {
  getPointer(doc, path);
  const tokens = parsePointer(path);
  if (!tokens.length) return value;
  const parent = parentOf(doc, tokens, path);
  const last = tokens[tokens.length - 1];
  if (Array.isArray(parent)) parent[arrayIndex(parent, last, false)] = value;
  else setMember(parent, last, value);
  return doc;
}

export function applyPatch(document, operations) {
  if (!Array.isArray(operations)) throw new PatchError("a patch is an array of operations");
  let doc = structuredClone(document);
  const changed = [];
  for (const op of operations) {
    if (!isContainer(op) || typeof op.path !== "string") throw new PatchError("an operation needs a path");
    const needsValue = op.op === "add" || op.op === "replace" || op.op === "test";
    if (needsValue && !has(op, "value")) throw new PatchError(`${op.op} ${op.path}: no value`);
    switch (op.op) {
      case "add":
        doc = add(doc, op.path, structuredClone(op.value));
        break;
      case "remove":
        remove(doc, op.path);
        break;
      case "replace":
        doc = replace(doc, op.path, structuredClone(op.value));
        break;
      case "move": {
        if (typeof op.from !== "string") throw new PatchError("move needs from");
        if (op.path !== op.from && op.path.startsWith(op.from + "/")) {
          throw new PatchError(`cannot move ${op.from} into itself`);
        }
        if (op.path === op.from) {
          getPointer(doc, op.from);
          break;
        }
        const value = remove(doc, op.from);
        doc = add(doc, op.path, value);
        changed.push(op.from);
        break;
      }
      case "copy":
        if (typeof op.from !== "string") throw new PatchError("copy needs from");
        doc = add(doc, op.path, structuredClone(getPointer(doc, op.from)));
        break;
      case "test":
        if (!deepEqual(getPointer(doc, op.path), op.value)) throw new PatchError(`test ${op.path} failed`);
        continue;
      default:
        throw new PatchError(`unknown operation ${JSON.stringify(op.op)}`);
    }
    changed.push(op.path);
  }
  return { doc, changed };
}
