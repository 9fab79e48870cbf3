"""The benchmark corpus: one realistic chat run (599 events) and one RunAgentInput request body.

Everything comes from a fixed seed, so every run measures the same bytes. The documents are
built as plain JSON values, then passed through ag-ui-protocol 1.0.0 and dumped with
``model_dump_json(by_alias=True, exclude_none=True)``: that is the canonical wire form (compact,
keys in the official declaration order), and it proves the official SDK accepts every document.

Run it directly to print the corpus statistics: ``python benchmarks/corpus.py``.
"""

from __future__ import annotations

import base64
import functools
import json
import random
from collections import Counter
from dataclasses import dataclass
from typing import Any

from ag_ui.core import Event, RunAgentInput
from pydantic import BaseModel, TypeAdapter

SEED = 20261129
THREAD_ID = "thread_5d1c9a0e7b3f"
RUN_ID = "run_8e2a41c7d05b"
T0 = 1_764_444_000_000  # epoch milliseconds; each event advances a few ms

N_CONTENT = 500
N_TOOL_ARGS = (21, 21, 22)  # 64 TOOL_CALL_ARGS in total
N_STATE_DELTAS = 20
N_SNAPSHOT_MESSAGES = 50
N_INPUT_MESSAGES = 100
N_TOOLS = 10

Json = Any

# Token-sized pieces of an answer; about one in ten is not ASCII.
_WORDS = (
    " the", " a", " to", " of", " and", " in", " is", " that", " for", " it", " with", " as",
    " on", " this", " be", " are", " by", " you", " can", " we", " model", " data", " run",
    " state", " event", " stream", " agent", " tool", " call", " result", " message", " user",
    " token", " value", " field", " schema", " client", " server", " request", " response",
    "ing", "ed", "s", "ly", ",", ".", ":", ";", " (", ")", "\n", "\n\n", " -", " `", "`",
    " 42", " 2026", " %", " \"", "\"",
)  # fmt: skip
_NON_ASCII = (
    " café", " naïve", " über", " Zürich", " déjà", " señor", " façade", " 東京", "日本語",
    " 你好", " привет", " Ελλάδα", " 🚀", " ✅", " —", " …", " €", " ½", " 한국어", " ☕",
)  # fmt: skip

_TOOL_NAMES = (
    "search_documents", "get_weather", "create_calendar_event", "send_email", "lookup_user",
    "run_sql_query", "translate_text", "summarize_url", "list_files", "update_todo",
)  # fmt: skip


@dataclass(frozen=True)
class Corpus:
    """The benchmark documents, each a canonical compact JSON document."""

    events: tuple[bytes, ...]
    """The chat run, in stream order."""
    event_types: tuple[str, ...]
    """The ``type`` of each event, parallel to ``events``."""
    run_input: bytes
    """A RunAgentInput request body."""

    def of_type(self, event_type: str) -> tuple[bytes, ...]:
        """The events whose ``type`` is ``event_type``, in stream order."""
        return tuple(
            e for e, t in zip(self.events, self.event_types, strict=True) if t == event_type
        )


class _Gen:
    """Draws the corpus from one seeded random source."""

    def __init__(self, seed: int) -> None:
        self.rng = random.Random(seed)
        self.clock = T0

    def ident(self, prefix: str) -> str:
        return f"{prefix}_{self.rng.getrandbits(96):024x}"

    def now(self) -> int:
        self.clock += self.rng.randint(1, 40)
        return self.clock

    def token(self) -> str:
        pool = _NON_ASCII if self.rng.random() < 0.1 else _WORDS
        return self.rng.choice(pool)

    def sentence(self, n_tokens: int) -> str:
        return "".join(self.token() for _ in range(n_tokens)).strip() or "ok"

    def todo(self, i: int) -> dict[str, Json]:
        return {
            "id": f"todo-{i}",
            "title": self.sentence(self.rng.randint(3, 8)),
            "done": self.rng.random() < 0.3,
            "priority": self.rng.choice(["low", "medium", "high"]),
            "tags": self.rng.sample(["work", "home", "urgent", "later", "ideas"], 2),
            "estimateHours": round(self.rng.uniform(0.25, 8.0), 2),
        }

    def state(self) -> dict[str, Json]:
        return {
            "phase": "drafting",
            "todos": [self.todo(i) for i in range(10)],
            "notes": ["Customer prefers email", "Follow up in 2 weeks — Zürich office"],
            "progress": {"completed": 3, "total": 10, "ratio": 0.3},
            "user": {"id": "user_314", "locale": "de-CH", "timezone": "Europe/Zurich"},
        }

    def patch(self) -> list[dict[str, Json]]:
        ops: list[dict[str, Json]] = []
        for _ in range(self.rng.randint(1, 4)):
            i, j = self.rng.randrange(10), self.rng.randrange(10)
            kind = self.rng.choice(["add", "replace", "remove", "move", "copy", "test"])
            if kind == "add":
                ops.append({"op": "add", "path": "/todos/-", "value": self.todo(10 + i)})
            elif kind == "replace":
                ops.append({"op": "replace", "path": f"/todos/{i}/done", "value": True})
            elif kind == "remove":
                ops.append({"op": "remove", "path": f"/todos/{i}"})
            elif kind == "move":
                ops.append({"op": "move", "from": f"/todos/{i}", "path": f"/todos/{j}"})
            elif kind == "copy":
                ops.append({"op": "copy", "from": f"/todos/{i}/title", "path": "/notes/-"})
            else:
                ops.append({"op": "test", "path": "/phase", "value": "drafting"})
        return ops

    def image_data(self) -> str:
        return base64.b64encode(self.rng.randbytes(self.rng.randint(240, 480))).decode()

    def user_content(self) -> str | list[dict[str, Json]]:
        text = {"type": "text", "text": self.sentence(self.rng.randint(6, 24))}
        kind = self.rng.random()
        if kind < 0.6:
            return str(text["text"])
        if kind < 0.75:
            url = f"https://cdn.example.com/uploads/{self.ident('img')}.png"
            source = {"type": "url", "value": url, "mimeType": "image/png"}
            return [text, {"type": "image", "source": source}]
        if kind < 0.9:
            source = {"type": "data", "value": self.image_data(), "mimeType": "image/jpeg"}
            return [text, {"type": "image", "source": source}]
        source = {
            "type": "file",
            "value": self.ident("file"),
            "provider": "openai",
            "mimeType": "application/pdf",
        }
        return [text, {"type": "document", "source": source}]

    def tool_call(self) -> dict[str, Json]:
        args = {"query": self.sentence(4), "limit": self.rng.randint(1, 20), "exact": False}
        return {
            "id": self.ident("call"),
            "type": "function",
            "function": {
                "name": self.rng.choice(_TOOL_NAMES),
                "arguments": json.dumps(args, ensure_ascii=False),
            },
        }

    def messages(self, n: int) -> list[dict[str, Json]]:
        """A conversation: system and developer first, then user / assistant / tool turns."""
        out: list[dict[str, Json]] = [
            {
                "id": self.ident("msg"),
                "role": "system",
                "content": "You are a helpful assistant. Answer briefly; use tools when needed.",
            },
            {
                "id": self.ident("msg"),
                "role": "developer",
                "content": "Prefer metric units. Never reveal internal identifiers.",
                "name": "policy",
            },
        ]
        while len(out) < n:
            out.append({"id": self.ident("msg"), "role": "user", "content": self.user_content()})
            if len(out) < n and self.rng.random() < 0.35:
                calls = [self.tool_call() for _ in range(self.rng.randint(1, 2))]
                out.append({"id": self.ident("msg"), "role": "assistant", "toolCalls": calls})
                for call in calls:
                    if len(out) >= n:
                        break
                    result = json.dumps({"ok": True, "items": [self.sentence(5)]})
                    out.append(
                        {
                            "id": self.ident("msg"),
                            "role": "tool",
                            "content": result,
                            "toolCallId": call["id"],
                        }
                    )
            if len(out) < n:
                reply = self.sentence(self.rng.randint(15, 90))
                out.append({"id": self.ident("msg"), "role": "assistant", "content": reply})
        return out[:n]

    def tool(self, name: str) -> dict[str, Json]:
        return {
            "name": name,
            "description": f"{name.replace('_', ' ').capitalize()}: {self.sentence(12)}",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {"type": "string", "description": self.sentence(6)},
                    "limit": {"type": "integer", "minimum": 1, "maximum": 100, "default": 10},
                    "filters": {
                        "type": "object",
                        "properties": {
                            "since": {"type": "string", "format": "date-time"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                        },
                        "additionalProperties": False,
                    },
                    "mode": {"type": "string", "enum": ["fast", "thorough"]},
                },
                "required": ["query"],
                "additionalProperties": False,
            },
        }

    def events(self) -> list[dict[str, Json]]:
        answer_id = self.ident("msg")
        events: list[dict[str, Json]] = [
            {"type": "RUN_STARTED", "threadId": THREAD_ID, "runId": RUN_ID},
            {"type": "STATE_SNAPSHOT", "snapshot": self.state()},
            {"type": "TEXT_MESSAGE_START", "messageId": answer_id, "role": "assistant"},
        ]
        events += [
            {"type": "TEXT_MESSAGE_CONTENT", "messageId": answer_id, "delta": self.token()}
            for _ in range(N_CONTENT)
        ]
        events.append({"type": "TEXT_MESSAGE_END", "messageId": answer_id})
        deltas_left = N_STATE_DELTAS
        for k, n_args in enumerate(N_TOOL_ARGS):
            call_id = self.ident("call")
            name = _TOOL_NAMES[k]
            start = {"toolCallId": call_id, "toolCallName": name, "parentMessageId": answer_id}
            events.append({"type": "TOOL_CALL_START", **start})
            args = json.dumps(
                {"query": self.sentence(24), "limit": 10, "filters": {"tags": ["work", "ideas"]}},
                ensure_ascii=False,
            )
            cuts = sorted(self.rng.sample(range(1, len(args)), n_args - 1))
            for a, b in zip([0, *cuts], [*cuts, len(args)], strict=True):
                events.append({"type": "TOOL_CALL_ARGS", "toolCallId": call_id, "delta": args[a:b]})
            events.append({"type": "TOOL_CALL_END", "toolCallId": call_id})
            result = json.dumps({"ok": True, "items": [self.sentence(8) for _ in range(3)]})
            events.append(
                {
                    "type": "TOOL_CALL_RESULT",
                    "messageId": self.ident("msg"),
                    "toolCallId": call_id,
                    "content": result,
                    "role": "tool",
                }
            )
            n_deltas = deltas_left if k == len(N_TOOL_ARGS) - 1 else N_STATE_DELTAS // 3
            deltas_left -= n_deltas
            events += [{"type": "STATE_DELTA", "delta": self.patch()} for _ in range(n_deltas)]
        snapshot = self.messages(N_SNAPSHOT_MESSAGES)
        events.append({"type": "MESSAGES_SNAPSHOT", "messages": snapshot})
        usage = {
            "provider": "openai",
            "model": "gpt-4.1",
            "inputTokens": 18_432,
            "outputTokens": 1_204,
            "totalTokens": 19_636,
            "reasoningTokens": 256,
            "cachedInputTokens": 12_288,
        }
        events.append(
            {
                "type": "RUN_FINISHED",
                "threadId": THREAD_ID,
                "runId": RUN_ID,
                "outcome": {"type": "success"},
                "usage": [usage],
            }
        )
        for event in events:
            event["timestamp"] = self.now()
        return events

    def run_input(self) -> dict[str, Json]:
        return {
            "threadId": THREAD_ID,
            "runId": RUN_ID,
            "state": self.state(),
            "messages": self.messages(N_INPUT_MESSAGES),
            "tools": [self.tool(name) for name in _TOOL_NAMES[:N_TOOLS]],
            "context": [
                {"description": "The user's current page", "value": "/projects/42/board"},
                {"description": "Local time", "value": "2026-11-29T21:14:03+01:00"},
                {"description": "Preferred language", "value": "Deutsch (Schweiz) — de-CH"},
            ],
            "forwardedProps": {
                "client": {"name": "web", "version": "3.18.0"},
                "featureFlags": {"streaming": True, "tools": True, "betaUi": False},
                "temperature": 0.2,
            },
        }


def _canonical(value: Json, *, event: bool) -> bytes:
    """Validate ``value`` with ag-ui-protocol and dump it in canonical wire form."""
    model: BaseModel = (
        TypeAdapter(Event).validate_python(value) if event else RunAgentInput.model_validate(value)
    )
    out = model.model_dump_json(by_alias=True, exclude_none=True).encode()
    if json.loads(out) != value:  # the dump must carry exactly what was generated
        raise AssertionError(f"ag-ui-protocol changed a corpus document: {value!r:.200}")
    return out


@functools.cache
def load() -> Corpus:
    """Build the corpus (deterministic; cached per process)."""
    gen = _Gen(SEED)
    events = gen.events()
    run_input = gen.run_input()
    return Corpus(
        events=tuple(_canonical(e, event=True) for e in events),
        event_types=tuple(str(e["type"]) for e in events),
        run_input=_canonical(run_input, event=False),
    )


def _main() -> None:
    corpus = load()
    total = sum(map(len, corpus.events))
    print(f"{len(corpus.events)} events, {total:,} bytes")
    for event_type, n in Counter(corpus.event_types).items():
        docs = corpus.of_type(event_type)
        avg = sum(map(len, docs)) / len(docs)
        print(f"  {n:4d} x {event_type:<22} avg {avg:8,.0f} B")
    print(f"RunAgentInput: {len(corpus.run_input):,} bytes")


if __name__ == "__main__":
    _main()
