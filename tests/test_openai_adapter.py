"""The OpenAI-compatible chat-completions adapter, against a fake server on 127.0.0.1 that streams
real chat-completion chunks (tests/fake_openai.py).

What is sent (the body, the key from the environment, messages and tools in the chat form), what
is read (text, reasoning, parallel tool calls with split argument deltas, the finish reason, the
usage of the last chunk), and every way the provider can fail: an error status, an error chunk, a
stream that breaks off or ends early, no server at all. A failure is a ModelError whose code and
message carry neither the key nor the provider's body.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable
from typing import Any

import pytest

import agui
from agui.cli.demo import free_port
from agui.model import (
    AssistantPrompt,
    Finish,
    InstructionPrompt,
    ModelError,
    OpenAIChatModel,
    PromptToolCall,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultPrompt,
    ToolSpec,
    UserPrompt,
)

from .fake_openai import (
    MODEL,
    SECRET,
    FakeOpenAI,
    Status,
    Stream,
    chunk,
    reply,
    split,
    usage_chunk,
)

Serve = Callable[[Any], str]
PROMPT = [UserPrompt(content="hi")]


def collect(model: OpenAIChatModel, prompt: Any = PROMPT, tools: Any = ()) -> list[Any]:
    async def main() -> list[Any]:
        return [part async for part in model.stream(prompt, tools)]

    return asyncio.run(main())


def failure(model: OpenAIChatModel, into: list[Any] | None = None) -> ModelError:
    """The ModelError the stream raises; the parts before it go to `into`."""
    parts = [] if into is None else into

    async def main() -> None:
        async for part in model.stream(PROMPT, ()):
            parts.append(part)

    with pytest.raises(ModelError) as caught:
        asyncio.run(main())
    return caught.value


def fake_model(serve: Serve, *responses: Any, **options: Any) -> tuple[FakeOpenAI, OpenAIChatModel]:
    fake = FakeOpenAI(*responses)
    base = serve(fake) + "/v1"
    options.setdefault("api_key", SECRET)
    return fake, OpenAIChatModel(MODEL, base_url=base, **options)


def text_of(parts: list[Any]) -> str:
    return "".join(p.text for p in parts if isinstance(p, TextDelta))


# ── reading a stream ───────────────────────────────────────────────────────────────────────────


def test_text_streams_as_deltas_and_finishes_with_the_usage(serve: Serve) -> None:
    """Text: every content delta becomes a TextDelta in order; the usage of the last chunk (no
    choices) comes with the Finish, under the provider (the server's host) and the model."""
    stream = reply("Hello there, world.", pieces=4, usage=None)
    stream.chunks.append(usage_chunk(31, 7, reasoning=2, cached=16))
    _fake, model = fake_model(serve, stream)
    parts = collect(model)
    deltas = [p for p in parts if isinstance(p, TextDelta)]
    assert len(deltas) == 4
    assert text_of(parts) == "Hello there, world."
    finish = parts[-1]
    assert isinstance(finish, Finish) and finish.reason == "stop"
    assert finish.usage == agui.TokenUsage(
        provider=model.provider,
        model=MODEL,
        input_tokens=31,
        output_tokens=7,
        total_tokens=38,
        reasoning_tokens=2,
        cached_input_tokens=16,
    )
    assert model.provider.startswith("127.0.0.1:")
    assert [type(p) for p in parts].count(Finish) == 1


def test_the_request_asks_for_a_stream_with_usage(serve: Serve) -> None:
    """Request: POST {base}/chat/completions with the model, stream: true, stream_options
    include_usage, the tools in function form and the key as a bearer token."""
    fake, model = fake_model(serve, reply("ok"), extra_body={"temperature": 0})
    spec = ToolSpec(
        name="get_weather",
        description="The weather.",
        parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    )
    collect(model, tools=[spec])
    (body,) = fake.requests
    assert fake.paths == ["/v1/chat/completions"]
    assert body["model"] == MODEL
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}
    assert body["temperature"] == 0
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "description": "The weather.",
                "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            },
        }
    ]
    assert fake.headers[0]["authorization"] == f"Bearer {SECRET}"
    assert fake.headers[0]["content-type"] == "application/json"


def test_no_tools_no_tools_member(serve: Serve) -> None:
    """Request: without tools there is no `tools` member (some servers refuse an empty list)."""
    fake, model = fake_model(serve, reply("ok"))
    collect(model)
    assert "tools" not in fake.requests[0]


@pytest.mark.parametrize(
    ("variables", "expected"),
    [
        ({"AGUI_MODEL_API_KEY": "sk-agui", "OPENAI_API_KEY": "sk-openai"}, "Bearer sk-agui"),
        ({"OPENAI_API_KEY": "sk-openai"}, "Bearer sk-openai"),
        ({}, None),
    ],
)
def test_the_key_comes_from_the_environment(
    serve: Serve, monkeypatch: pytest.MonkeyPatch, variables: dict[str, str], expected: str | None
) -> None:
    """Key: AGUI_MODEL_API_KEY first, then OPENAI_API_KEY; none means no Authorization header
    (a local server)."""
    for name in ("AGUI_MODEL_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in variables.items():
        monkeypatch.setenv(name, value)
    fake = FakeOpenAI(reply("ok"))
    model = OpenAIChatModel(MODEL, base_url=serve(fake) + "/v1")
    collect(model)
    assert fake.headers[0].get("authorization") == expected
    assert "sk-" not in repr(model)


def test_the_base_url_comes_from_the_environment(
    serve: Serve, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Base URL: AGUI_MODEL_URL when no base_url is given (then OPENAI_BASE_URL, then OpenAI)."""
    fake = FakeOpenAI(reply("from the environment"))
    monkeypatch.setenv("AGUI_MODEL_URL", serve(fake) + "/v1/")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/unused")
    assert text_of(collect(OpenAIChatModel(MODEL, api_key=""))) == "from the environment"
    monkeypatch.delenv("AGUI_MODEL_URL")
    assert OpenAIChatModel(MODEL).base_url == "http://127.0.0.1:9/unused"
    monkeypatch.delenv("OPENAI_BASE_URL")
    assert OpenAIChatModel(MODEL).base_url == "https://api.openai.com/v1"
    assert OpenAIChatModel(MODEL).provider == "openai"


def test_parallel_tool_calls_with_split_argument_deltas(serve: Serve) -> None:
    """Tool calls: two calls whose argument deltas arrive interleaved, told apart by index, give
    a start per call (with the server's id and name), the deltas of each call in order (their
    text is the arguments), an end per call, and the finish reason tool_calls."""
    calls = [
        ("call_A1", "get_weather", {"city": "Paris", "unit": "C"}),
        ("call_B2", "get_time", {"zone": "Europe/Paris"}),
    ]
    _fake, model = fake_model(serve, reply(calls=calls, pieces=4))
    parts = collect(model)
    starts = [p for p in parts if isinstance(p, ToolCallStart)]
    assert starts == [ToolCallStart("call_A1", "get_weather"), ToolCallStart("call_B2", "get_time")]
    for call_id, _, arguments in calls:
        deltas = [p.arguments for p in parts if isinstance(p, ToolCallDelta) and p.id == call_id]
        assert len(deltas) == 4
        assert json.loads("".join(deltas)) == arguments
    # the deltas really were interleaved on the wire, and each call ends after its last delta
    order = [p.id for p in parts if isinstance(p, ToolCallDelta)]
    assert order[:2] == ["call_A1", "call_B2"]
    ends = [p for p in parts if isinstance(p, ToolCallEnd)]
    assert ends == [ToolCallEnd("call_A1"), ToolCallEnd("call_B2")]
    assert parts.index(ends[0]) > max(
        i for i, p in enumerate(parts) if isinstance(p, ToolCallDelta)
    )
    finish = parts[-1]
    assert isinstance(finish, Finish) and finish.reason == "tool_calls"


def test_text_then_tool_call_in_one_response(serve: Serve) -> None:
    """Tool calls: text before a call is streamed first; the call follows."""
    _fake, model = fake_model(
        serve, reply("Let me look.", calls=[("call_1", "lookup", {"q": "x"})], interleave=False)
    )
    parts = collect(model)
    kinds = [type(p).__name__ for p in parts]
    assert kinds.index("ToolCallStart") > max(i for i, k in enumerate(kinds) if k == "TextDelta")
    assert text_of(parts) == "Let me look."


def test_whole_tool_calls_without_index(serve: Serve) -> None:
    """Tool calls: a server that sends each call whole in one delta, without `index`, still gives
    one start, delta and end per call."""
    stream = Stream(
        [
            chunk({"role": "assistant"}),
            chunk(
                {
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "a", "arguments": "{}"},
                        },
                        {
                            "id": "c2",
                            "type": "function",
                            "function": {"name": "b", "arguments": '{"x":1}'},
                        },
                    ]
                }
            ),
            chunk({}, finish="tool_calls"),
        ]
    )
    _fake, model = fake_model(serve, stream)
    parts = collect(model)
    assert parts[:-1] == [
        ToolCallStart("c1", "a"),
        ToolCallDelta("c1", "{}"),
        ToolCallStart("c2", "b"),
        ToolCallDelta("c2", '{"x":1}'),
        ToolCallEnd("c1"),
        ToolCallEnd("c2"),
    ]
    assert isinstance(parts[-1], Finish) and parts[-1].usage is None


@pytest.mark.parametrize("key", ["reasoning_content", "reasoning"])
def test_reasoning_deltas(serve: Serve, key: str) -> None:
    """Reasoning: `reasoning_content` (DeepSeek, vLLM) and `reasoning` (OpenRouter, Ollama)
    deltas become ReasoningDeltas, before the text."""
    _fake, model = fake_model(serve, reply("Four.", reasoning="Two plus two.", reasoning_key=key))
    parts = collect(model)
    thoughts = [p for p in parts if isinstance(p, ReasoningDelta)]
    assert "".join(p.text for p in thoughts) == "Two plus two."
    assert parts.index(thoughts[-1]) < min(
        i for i, p in enumerate(parts) if isinstance(p, TextDelta)
    )


def test_a_finish_reason_without_done_is_complete(serve: Serve) -> None:
    """End: a server that never sends [DONE] but gave a finish reason has finished."""
    stream = reply("short")
    stream.done = False
    _fake, model = fake_model(serve, stream)
    parts = collect(model)
    assert text_of(parts) == "short" and isinstance(parts[-1], Finish)


# ── the messages sent ──────────────────────────────────────────────────────────────────────────


def test_prompt_messages_in_the_chat_form(serve: Serve) -> None:
    """Request: instructions (system and developer alike) as system messages, multimodal user
    content as content parts (image URL, inline image as a data URL, wav audio, an inline
    document, a video as a note), an assistant turn with its tool calls and ids, a tool result
    with its tool_call_id (and its error)."""
    fake, model = fake_model(serve, reply("ok"))
    user = agui.UserMessage(
        id="u1",
        content=(
            agui.TextPart(text="Look:"),
            agui.ImagePart(source=agui.UrlSource(value="https://example.com/a.png")),
            agui.ImagePart(source=agui.DataSource(value="iVBORw0K", mime_type="image/png")),
            agui.AudioPart(source=agui.DataSource(value="UklGRg==", mime_type="audio/wav")),
            agui.DocumentPart(
                source=agui.DataSource(value="JVBERi0=", mime_type="application/pdf")
            ),
            agui.VideoPart(source=agui.UrlSource(value="https://example.com/v.mp4")),
        ),
    )
    prompt = [
        InstructionPrompt(content="Be brief."),
        InstructionPrompt(content="Developer note.", role="developer"),
        UserPrompt(content=user.content),
        AssistantPrompt(
            text="Checking.",
            tool_calls=(PromptToolCall(id="call_9", name="lookup", arguments='{"q":"x"}'),),
        ),
        ToolResultPrompt(tool_call_id="call_9", content="found", error="partial"),
    ]
    collect(model, prompt)
    assert fake.requests[0]["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "Developer note."},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look:"},
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0K"}},
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {
                    "type": "file",
                    "file": {
                        "file_data": "data:application/pdf;base64,JVBERi0=",
                        "filename": "document",
                    },
                },
                {"type": "text", "text": "[video at https://example.com/v.mp4]"},
            ],
        },
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "call_9",
                    "type": "function",
                    "function": {"name": "lookup", "arguments": '{"q":"x"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_9", "content": "found\nError: partial"},
    ]


# ── failures ───────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("status", [500, 401, 429])
def test_an_error_status_is_model_http_error_without_the_body_or_key(
    serve: Serve, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    """HTTP errors: the status is reported (MODEL_HTTP_ERROR, .status); the provider's body
    (which here echoes the key and a prompt) is neither in the error nor in the log."""
    body = {
        "error": {
            "message": f"Incorrect API key provided: {SECRET}. Prompt was: my bank PIN is 1234",
            "type": "invalid_request_error",
            "code": "invalid_api_key",
        }
    }
    _fake, model = fake_model(serve, Status(status, body))
    with caplog.at_level(logging.DEBUG):
        error = failure(model)
    assert error.code == "MODEL_HTTP_ERROR"
    assert error.status == status
    assert f"HTTP {status}" in error.message
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for text in (error.message, str(error), logged):
        assert SECRET not in text and "PIN" not in text
    assert "invalid_request_error" in logged  # the operator still learns what kind of error


def test_an_error_chunk_mid_stream_is_model_provider_error(serve: Serve) -> None:
    """Error chunk: text streamed before the error is delivered, then MODEL_PROVIDER_ERROR
    (the error's message, which echoes the key, is not passed on)."""
    stream = reply("Partial answer", usage=None)
    stream.chunks = [
        *stream.chunks[:3],
        {"error": {"message": f"overloaded ({SECRET})", "type": "server_error"}},
    ]
    _fake, model = fake_model(serve, stream)
    parts: list[Any] = []
    error = failure(model, parts)
    assert error.code == "MODEL_PROVIDER_ERROR"
    assert SECRET not in error.message
    assert text_of(parts) == "".join(split("Partial answer", 3)[:2])


def test_a_dropped_stream_is_model_stream_error(serve: Serve) -> None:
    """Dropped stream: the connection breaks in the middle of the body: MODEL_STREAM_ERROR, after
    the parts that did arrive."""
    stream = reply("This will be cut", usage=None)
    stream.chunks = stream.chunks[:3]
    stream.drop = True
    _fake, model = fake_model(serve, stream)
    parts: list[Any] = []
    error = failure(model, parts)
    assert error.code == "MODEL_STREAM_ERROR"
    assert text_of(parts) == "".join(split("This will be cut", 3)[:2])


def test_a_stream_that_ends_early_is_model_stream_error(serve: Serve) -> None:
    """Ended early: a body that ends cleanly without [DONE] and without a finish reason was cut
    off: MODEL_STREAM_ERROR, never a silent success."""
    stream = reply("cut", usage=None)
    stream.chunks = stream.chunks[:2]
    stream.done = False
    _fake, model = fake_model(serve, stream)
    assert failure(model).code == "MODEL_STREAM_ERROR"


def test_a_chunk_that_is_not_json_is_model_stream_error(serve: Serve) -> None:
    """Garbage: a data line that is not JSON is MODEL_STREAM_ERROR."""
    _fake, model = fake_model(serve, Stream([chunk({"content": "ok"}), b"{not json"]))
    assert failure(model).code == "MODEL_STREAM_ERROR"


def test_no_server_is_model_connection_error() -> None:
    """Unreachable: nothing listens at the base URL: MODEL_CONNECTION_ERROR."""
    model = OpenAIChatModel(MODEL, base_url=f"http://127.0.0.1:{free_port()}/v1", api_key=SECRET)
    error = failure(model)
    assert error.code == "MODEL_CONNECTION_ERROR"
    assert SECRET not in error.message and "127.0.0.1" not in error.message
