// Server-Sent Events read from a fetch() response, and recorded streams (JSON Lines, a JSON
// array or an SSE capture, as `agui replay` reads them).
//
// The parser is linear: each chunk is scanned once for line ends, and a line split across chunks
// is kept as pieces joined once, when its end arrives.

export class SSEParser {
  constructor(onMessage) {
    this.onMessage = onMessage; // ({data, id, event}) for each dispatched message
    this.pieces = []; // the unfinished line
    this.skipLF = false; // the last chunk ended in CR: a LF first in the next one is that line end
    this.data = [];
    this.event = "";
    this.lastId = null;
  }

  feed(text) {
    let i = 0;
    const n = text.length;
    if (this.skipLF && n > 0) {
      if (text.charCodeAt(0) === 10) i = 1;
      this.skipLF = false;
    }
    while (i < n) {
      let j = i;
      while (j < n) {
        const c = text.charCodeAt(j);
        if (c === 10 || c === 13) break;
        j++;
      }
      if (j === n) {
        this.pieces.push(text.slice(i));
        return;
      }
      let line = text.slice(i, j);
      if (this.pieces.length) {
        this.pieces.push(line);
        line = this.pieces.join("");
        this.pieces.length = 0;
      }
      if (text.charCodeAt(j) === 13) {
        if (j + 1 < n) {
          if (text.charCodeAt(j + 1) === 10) j++;
        } else {
          this.skipLF = true;
        }
      }
      i = j + 1;
      this.line(line);
    }
  }

  // The end of the stream: an unfinished message is dropped, as the SSE standard says.
  close() {
    this.pieces.length = 0;
    this.data = [];
    this.event = "";
  }

  line(line) {
    if (line === "") {
      if (this.data.length) {
        const message = { data: this.data.join("\n"), id: this.lastId, event: this.event || "message" };
        this.data = [];
        this.event = "";
        this.onMessage(message);
      } else {
        this.event = "";
      }
      return;
    }
    if (line.charCodeAt(0) === 58) return; // ":" a comment (the keepalive)
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.charCodeAt(0) === 32) value = value.slice(1);
    if (field === "data") this.data.push(value);
    else if (field === "id") {
      if (!value.includes("\0")) this.lastId = value;
    } else if (field === "event") this.event = value;
  }
}

const SLICE = 16384; // characters fed at once: a big chunk is read in slices, with yields between

// Read `response` (a fetch Response) as SSE; `onMessage` for each message. Yields to the browser
// every `budget` ms, so that a fast stream never holds the main thread for long (a body already
// buffered is read in microtasks, one chunk after the other, without a task boundary).
export async function readSSE(response, onMessage, budget = 40) {
  const parser = new SSEParser(onMessage);
  const reader = response.body.getReader();
  const decoder = new TextDecoder();
  let since = performance.now();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    const text = decoder.decode(value, { stream: true });
    for (let at = 0; at < text.length; at += SLICE) {
      parser.feed(at === 0 && text.length <= SLICE ? text : text.slice(at, at + SLICE));
      if (performance.now() - since > budget) {
        await nextTask();
        since = performance.now();
      }
    }
  }
  parser.feed(decoder.decode());
  parser.close();
  return parser.lastId;
}

let channel = null;
const waiting = [];

// A promise resolved in a task of its own (MessageChannel: not clamped like setTimeout).
export function nextTask() {
  if (typeof MessageChannel !== "function") return new Promise((resolve) => setTimeout(resolve, 0));
  if (!channel) {
    channel = new MessageChannel();
    channel.port1.onmessage = () => waiting.shift()?.();
    channel.port1.unref?.(); // (node: not what keeps the process going)
  }
  return new Promise((resolve) => {
    waiting.push(resolve);
    channel.port2.postMessage(0);
  });
}

// The events' JSON texts of a recording, by content: JSON Lines, a JSON array, or an SSE capture.
// Each item is [text, parsed]; a JSON Lines line of `agui run --json` ({"wire": event, ...}) is
// read as its event.
export function recordedEvents(text) {
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  const head = body.trimStart()[0];
  const found = [];
  if (head === "{") {
    for (const line of body.split(/\r\n|\r|\n/)) {
      if (!line.trim()) continue;
      const item = JSON.parse(line);
      found.push(unwrap(item, line));
    }
  } else if (head === "[") {
    for (const item of JSON.parse(body)) found.push(unwrap(item, JSON.stringify(item)));
  } else {
    const parser = new SSEParser((message) => found.push([message.data, JSON.parse(message.data)]));
    parser.feed(body);
    parser.feed("\n\n");
  }
  return found;
}

function unwrap(item, text) {
  if (item && typeof item === "object" && !("type" in item) && item.wire && typeof item.wire === "object") {
    return [JSON.stringify(item.wire), item.wire];
  }
  return [text, item];
}

// The length in bytes of `text` as UTF-8.
export function utf8Length(text) {
  let bytes = text.length;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c < 0x80) continue;
    if (c < 0x800) bytes += 1;
    else if (c >= 0xd800 && c < 0xdc00 && i + 1 < text.length) {
      bytes += 2; // a surrogate pair: 4 bytes for 2 units
      i++;
    } else bytes += 2;
  }
  return bytes;
}
