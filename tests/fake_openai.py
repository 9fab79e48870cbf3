"""A fake OpenAI-compatible chat-completions server, for the model agent's tests.

An ASGI app (serve it with the `serve` fixture, or `live_server`) answering
`POST /v1/chat/completions` with scripted responses, in order: a stream of real chat-completion
chunks (as api.openai.com writes them: `chat.completion.chunk` objects with `usage: null`, the
usage in a last chunk with no choices, then `data: [DONE]`), an error status with a JSON body, a
stream that breaks off. It records every request body and its headers.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import attrs

MODEL = "fake-gpt"
SECRET = "sk-test-SECRET-0123456789"
"""An API key the tests use; it must never show up in an event, an error or a log line."""


@attrs.define
class Stream:
    """A 200 event stream of `chunks` (dicts are sent as JSON, bytes as they are). done: end with
    `data: [DONE]`. drop: break the connection after the chunks instead of ending the body."""

    chunks: list[Any]
    done: bool = True
    drop: bool = False


@attrs.define
class Status:
    """An error answer: `status` with a JSON body."""

    status: int
    body: Any


class FakeOpenAI:
    def __init__(self, *responses: Stream | Status) -> None:
        self.responses: list[Stream | Status] = list(responses)
        self.requests: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.paths: list[str] = []

    def add(self, *responses: Stream | Status) -> None:
        self.responses.extend(responses)

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert scope["type"] == "http"
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        self.paths.append(scope["path"])
        self.headers.append({k.decode().lower(): v.decode() for k, v in scope["headers"]})
        self.requests.append(json.loads(body))
        if scope["path"] != "/v1/chat/completions" or not self.responses:
            await _json(send, 599, {"error": {"message": "no scripted response for this request"}})
            return
        response = self.responses.pop(0)
        if isinstance(response, Status):
            await _json(send, response.status, response.body)
            return
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [(b"content-type", b"text/event-stream; charset=utf-8")],
            }
        )
        for item in response.chunks:
            data = item if isinstance(item, bytes) else json.dumps(item).encode()
            await send(
                {
                    "type": "http.response.body",
                    "body": b"data: " + data + b"\n\n",
                    "more_body": True,
                }
            )
        if response.drop:
            raise ConnectionAbortedError("the fake server drops the stream (on purpose)")
        tail = b"data: [DONE]\n\n" if response.done else b""
        await send({"type": "http.response.body", "body": tail, "more_body": False})


async def _json(send: Any, status: int, body: Any) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json")],
        }
    )
    await send({"type": "http.response.body", "body": json.dumps(body).encode()})


# ── chunks ─────────────────────────────────────────────────────────────────────────────────────


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None) -> dict[str, Any]:
    """One chat.completion.chunk with one choice."""
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "system_fingerprint": "fp_fake",
        "choices": [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish}],
        "usage": None,
    }


def usage_chunk(
    prompt: int, completion: int, *, reasoning: int | None = None, cached: int | None = None
) -> dict[str, Any]:
    """The last chunk of a stream with `include_usage`: no choices, the usage."""
    usage: dict[str, Any] = {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
    }
    if reasoning is not None:
        usage["completion_tokens_details"] = {"reasoning_tokens": reasoning}
    if cached is not None:
        usage["prompt_tokens_details"] = {"cached_tokens": cached}
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion.chunk",
        "created": 1_700_000_000,
        "model": MODEL,
        "choices": [],
        "usage": usage,
    }


def split(text: str, pieces: int) -> list[str]:
    """`text` cut into `pieces` parts of about the same size (none empty)."""
    size = max(1, -(-len(text) // pieces))
    return [text[i : i + size] for i in range(0, len(text), size)]


def reply(
    text: str | None = None,
    *,
    calls: Sequence[tuple[str, str, Any]] = (),
    reasoning: str | None = None,
    reasoning_key: str = "reasoning_content",
    usage: tuple[int, int] | None = (10, 5),
    pieces: int = 3,
    interleave: bool = True,
) -> Stream:
    """A whole streamed response: the role chunk, reasoning, text, then the tool calls
    `(id, name, arguments)` (arguments as JSON text, or a value to dump) with their argument
    text split into `pieces` deltas and, when `interleave`, the calls' deltas alternating by
    index, the finish reason ("tool_calls" or "stop"), and the usage chunk."""
    chunks: list[Any] = [chunk({"role": "assistant", "content": "", "refusal": None})]
    if reasoning:
        for piece in split(reasoning, pieces):
            chunks.append(chunk({reasoning_key: piece}))
    if text:
        for piece in split(text, pieces):
            chunks.append(chunk({"content": piece}))
    rows: list[list[dict[str, Any]]] = []
    for index, (call_id, name, arguments) in enumerate(calls):
        args = arguments if isinstance(arguments, str) else json.dumps(arguments)
        first = {
            "index": index,
            "id": call_id,
            "type": "function",
            "function": {"name": name, "arguments": ""},
        }
        rows.append(
            [first] + [{"index": index, "function": {"arguments": p}} for p in split(args, pieces)]
        )
    if interleave:
        longest = max((len(r) for r in rows), default=0)
        for position in range(longest):
            for row in rows:
                if position < len(row):
                    chunks.append(chunk({"tool_calls": [row[position]]}))
    else:
        for row in rows:
            for item in row:
                chunks.append(chunk({"tool_calls": [item]}))
    chunks.append(chunk({}, finish="tool_calls" if calls else "stop"))
    if usage is not None:
        chunks.append(usage_chunk(*usage))
    return Stream(chunks)
