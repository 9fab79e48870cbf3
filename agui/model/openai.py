"""A LanguageModel for OpenAI-compatible chat-completions servers, streaming over httpx.

    model = OpenAIChatModel("gpt-4o-mini")                       # api.openai.com, OPENAI_API_KEY
    model = OpenAIChatModel("qwen3", base_url="http://127.0.0.1:8080/v1")   # a local server

It POSTs `{base_url}/chat/completions` with `stream: true` and `stream_options.include_usage`, and
reads the chunks: text (`delta.content`), reasoning where the server sends it
(`delta.reasoning_content` or `delta.reasoning`), tool calls (several at once, told apart by their
`index`, arguments arriving in pieces), the finish reason, and the usage of the last chunk.

The key comes from `api_key=`, else AGUI_MODEL_API_KEY, else OPENAI_API_KEY (none: no
Authorization header, for local servers); the base URL from `base_url=`, else AGUI_MODEL_URL,
else OPENAI_BASE_URL, else https://api.openai.com/v1. Failures are raised as ModelError with a
code and a message that carry neither the key nor the provider's response body:

    MODEL_HTTP_ERROR        the server answered with an error status (the status is given)
    MODEL_CONNECTION_ERROR  the server could not be reached, or did not answer in time
    MODEL_STREAM_ERROR      the stream broke off, ended early, or held something that is no chunk
    MODEL_PROVIDER_ERROR    the server reported an error inside the stream
"""

from __future__ import annotations

import logging
import os
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any
from urllib.parse import urlsplit

import httpx
import orjson
from agui_generated import (
    AudioPart,
    ContentPart,
    DataSource,
    DocumentPart,
    FileSource,
    ImagePart,
    TextPart,
    TokenUsage,
    UrlSource,
)

from agui.model.interface import (
    AssistantPrompt,
    Finish,
    InstructionPrompt,
    ModelError,
    Part,
    PromptMessage,
    ReasoningDelta,
    TextDelta,
    ToolCallDelta,
    ToolCallEnd,
    ToolCallStart,
    ToolResultPrompt,
    ToolSpec,
    UserPrompt,
)
from agui.wire.sse import SSEDecoder, SSEError

__all__ = ["DEFAULT_BASE_URL", "OpenAIChatModel", "chat_messages", "chat_tools"]

log = logging.getLogger("agui.model")

DEFAULT_BASE_URL = "https://api.openai.com/v1"
KEY_VARIABLES = ("AGUI_MODEL_API_KEY", "OPENAI_API_KEY")
URL_VARIABLES = ("AGUI_MODEL_URL", "OPENAI_BASE_URL")
DEFAULT_TIMEOUT = httpx.Timeout(120.0, connect=10.0)
_MAX_ERROR_BODY = 16 * 1024
_AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}


class OpenAIChatModel:
    """A chat-completions model (see the module docstring).

    model: the model name sent with each request. base_url / api_key: see above.
    client: an httpx.AsyncClient to use (not closed here). timeout: for a client made here.
    headers: sent with every request. extra_body: merged into every request body (temperature,
    reasoning_effort, ...). provider: the name usage is reported under (default: "openai" for
    api.openai.com, otherwise the server's host).
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: httpx.AsyncClient | None = None,
        timeout: httpx.Timeout | float | None = DEFAULT_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        extra_body: Mapping[str, Any] | None = None,
        provider: str | None = None,
    ) -> None:
        self.model = model
        self.base_url = (base_url or _first_env(URL_VARIABLES) or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = api_key if api_key is not None else _first_env(KEY_VARIABLES)
        self.client = client
        self.timeout = timeout
        self.headers = dict(headers or {})
        self.extra_body = dict(extra_body or {})
        host = urlsplit(self.base_url).netloc
        self.provider = provider or ("openai" if host == "api.openai.com" else host or "openai")

    def __repr__(self) -> str:  # never the key
        return f"OpenAIChatModel(model={self.model!r}, base_url={self.base_url!r})"

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def request_body(
        self, prompt: Sequence[PromptMessage], tools: Sequence[ToolSpec]
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": chat_messages(prompt),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if tools:
            body["tools"] = chat_tools(tools)
        body.update(self.extra_body)
        return body

    async def stream(
        self, prompt: Sequence[PromptMessage], tools: Sequence[ToolSpec], /
    ) -> AsyncIterator[Part]:
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            **self.headers,
        }
        if self._api_key:
            headers["authorization"] = f"Bearer {self._api_key}"
        body = orjson.dumps(self.request_body(prompt, tools))
        own = self.client is None
        client = self.client or httpx.AsyncClient(timeout=self.timeout)
        reader = _ChunkReader(self.provider, self.model)
        try:
            try:
                async with client.stream("POST", self.url, content=body, headers=headers) as r:
                    if not r.is_success:
                        await self._http_error(r)
                    media = r.headers.get("content-type", "").split(";")[0].strip().lower()
                    if media == "application/json":
                        await self._json_instead_of_stream(r)
                    sse = SSEDecoder()
                    async for chunk in r.aiter_bytes():
                        for message in sse.feed(chunk):
                            for part in reader.message(message.data):
                                yield part
                        if reader.done:
                            break
                    if not reader.done:
                        for message in sse.close():
                            for part in reader.message(message.data):
                                yield part
            except (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
                log.warning("model %s: cannot connect: %s", self.model, type(exc).__name__)
                raise ModelError(
                    "MODEL_CONNECTION_ERROR", "The model provider could not be reached."
                ) from None
            except httpx.TimeoutException as exc:
                log.warning("model %s: timed out: %s", self.model, type(exc).__name__)
                raise ModelError(
                    "MODEL_CONNECTION_ERROR", "The model provider did not answer in time."
                ) from None
            except httpx.HTTPError as exc:  # a dropped connection, a broken chunked body, ...
                log.warning("model %s: the stream broke: %s", self.model, type(exc).__name__)
                raise ModelError(
                    "MODEL_STREAM_ERROR", "The model's stream broke off before it was complete."
                ) from None
            except SSEError:
                raise ModelError(
                    "MODEL_STREAM_ERROR", "The model's stream is not valid Server-Sent Events."
                ) from None
            for part in reader.finish():
                yield part
        finally:
            if own:
                await client.aclose()

    async def _http_error(self, response: httpx.Response) -> None:
        data = b""
        async for chunk in response.aiter_bytes():
            data += chunk
            if len(data) > _MAX_ERROR_BODY:
                break
        status = response.status_code
        # The body is not passed on (providers echo keys and prompts in errors); only the
        # provider's short error type/code is logged, for the operator.
        log.warning(
            "model %s: HTTP %d from the provider (%s)", self.model, status, _error_kind(data)
        )
        hint = {
            401: " Check the model API key.",
            403: " Check the model API key and its permissions.",
            404: " Check the model name and the base URL.",
            429: " The provider is rate limiting or out of quota.",
        }.get(status, "")
        raise ModelError(
            "MODEL_HTTP_ERROR", f"The model provider answered HTTP {status}.{hint}", status=status
        )

    async def _json_instead_of_stream(self, response: httpx.Response) -> None:
        data = await response.aread()
        log.warning(
            "model %s: a JSON answer instead of a stream (%s)", self.model, _error_kind(data)
        )
        raise ModelError(
            "MODEL_PROVIDER_ERROR"
            if _error_kind(data) != "no error object"
            else "MODEL_STREAM_ERROR",
            "The model provider did not answer with an event stream.",
        )


def _first_env(names: Sequence[str]) -> str | None:
    for name in names:
        value = os.environ.get(name)
        if value:
            return value
    return None


def _error_kind(data: bytes) -> str:
    """The provider's error type and code from an error body, and nothing else of it."""
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError:
        return "no JSON body"
    error = doc.get("error") if isinstance(doc, dict) else None
    if not isinstance(error, dict):
        return "no error object"
    kinds = [str(error[k])[:60] for k in ("type", "code") if isinstance(error.get(k), str | int)]
    return "/".join(kinds) or "error"


class _ChunkReader:
    """Chat-completion chunks -> parts, for one response."""

    def __init__(self, provider: str, model: str) -> None:
        self.provider = provider
        self.model = model
        self.done = False  # [DONE] seen
        self.finish_reason: str | None = None
        self.usage: TokenUsage | None = None
        # index -> [model's id, name, started, arguments buffered before the name]
        self.calls: dict[int, list[Any]] = {}
        self.open: list[str] = []  # ids of started calls not yet ended, in order

    def message(self, data: bytes) -> list[Part]:
        if self.done:
            return []
        if data.strip() == b"[DONE]":
            self.done = True
            return []
        try:
            chunk = orjson.loads(data)
        except orjson.JSONDecodeError:
            raise ModelError(
                "MODEL_STREAM_ERROR", "The model's stream held something that is not JSON."
            ) from None
        if not isinstance(chunk, dict):
            raise ModelError(
                "MODEL_STREAM_ERROR", "The model's stream held a chunk that is no object."
            )
        if chunk.get("error") is not None:
            log.warning("model %s: error in the stream (%s)", self.model, _error_kind(data))
            raise ModelError(
                "MODEL_PROVIDER_ERROR", "The model provider reported an error while streaming."
            )
        parts: list[Part] = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            if isinstance(delta, dict):
                parts += self._delta(delta)
            reason = choice.get("finish_reason")
            if isinstance(reason, str) and reason:
                self.finish_reason = reason
                parts += self._end_calls()
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            self.usage = self._usage(usage)
        return parts

    def _delta(self, delta: dict[str, Any]) -> list[Part]:
        parts: list[Part] = []
        for key in ("reasoning_content", "reasoning"):
            thought = delta.get(key)
            if isinstance(thought, str) and thought:
                parts.append(ReasoningDelta(thought))
                break
        content = delta.get("content")
        if isinstance(content, str) and content:
            parts.append(TextDelta(content))
        for position, item in enumerate(delta.get("tool_calls") or ()):
            if isinstance(item, dict):
                parts += self._tool_call(item, position)
        return parts

    def _tool_call(self, item: dict[str, Any], position: int) -> list[Part]:
        index = item.get("index")
        if not isinstance(index, int):  # some servers leave it out when they send whole calls
            known = [i for i, held in self.calls.items() if held[0] == item.get("id")]
            index = known[0] if known else len(self.calls) + position
        held = self.calls.setdefault(index, [None, None, False, ""])
        function = item.get("function") or {}
        if isinstance(item.get("id"), str) and item["id"] and held[0] is None:
            held[0] = item["id"]
        if isinstance(function.get("name"), str) and function["name"] and held[1] is None:
            held[1] = function["name"]
        arguments = function.get("arguments")
        piece = arguments if isinstance(arguments, str) else ""
        if not isinstance(arguments, str | type(None)):  # a server that sends an object
            piece = orjson.dumps(arguments).decode()
        parts: list[Part] = []
        if not held[2]:
            if held[1] is None:  # arguments before the name: hold them
                held[3] += piece
                return []
            held[0] = held[0] or f"call_{uuid.uuid4().hex[:24]}"
            held[2] = True
            self.open.append(held[0])
            parts.append(ToolCallStart(held[0], held[1]))
            piece, held[3] = held[3] + piece, ""
        if piece:
            parts.append(ToolCallDelta(held[0], piece))
        return parts

    def _end_calls(self) -> list[Part]:
        ended: list[Part] = [ToolCallEnd(call_id) for call_id in self.open]
        self.open = []
        return ended

    def _usage(self, usage: dict[str, Any]) -> TokenUsage:
        def count(value: Any) -> int | None:
            return (
                value
                if isinstance(value, int) and not isinstance(value, bool) and value >= 0
                else None
            )

        completion = usage.get("completion_tokens_details")
        prompt = usage.get("prompt_tokens_details")
        return TokenUsage(
            provider=self.provider,
            model=self.model,
            input_tokens=count(usage.get("prompt_tokens")),
            output_tokens=count(usage.get("completion_tokens")),
            total_tokens=count(usage.get("total_tokens")),
            reasoning_tokens=count(completion.get("reasoning_tokens"))
            if isinstance(completion, dict)
            else None,
            cached_input_tokens=count(prompt.get("cached_tokens"))
            if isinstance(prompt, dict)
            else None,
        )

    def finish(self) -> list[Part]:
        """The end of the body: a response that neither said [DONE] nor gave a finish reason
        was cut off."""
        if not self.done and self.finish_reason is None:
            raise ModelError("MODEL_STREAM_ERROR", "The model's stream ended before it finished.")
        unnamed = [held for held in self.calls.values() if not held[2]]
        if unnamed:
            raise ModelError("MODEL_STREAM_ERROR", "The model sent a tool call without a name.")
        return [*self._end_calls(), Finish(reason=self.finish_reason or "stop", usage=self.usage)]


# ── the request ────────────────────────────────────────────────────────────────────────────────


def chat_tools(tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
    """Tool definitions in the chat-completions form."""
    return [
        {
            "type": "function",
            "function": {
                "name": spec.name,
                "description": spec.description,
                "parameters": spec.parameters,
            },
        }
        for spec in tools
    ]


def chat_messages(prompt: Sequence[PromptMessage]) -> list[dict[str, Any]]:
    """Prompt messages in the chat-completions form. Developer instructions are sent as system
    messages (what every compatible server accepts); content a chat API cannot take (video, a file
    by URL, ...) is replaced by a short note in text."""
    messages: list[dict[str, Any]] = []
    for message in prompt:
        if isinstance(message, InstructionPrompt):
            messages.append({"role": "system", "content": message.content})
        elif isinstance(message, UserPrompt):
            content = message.content
            messages.append(
                {
                    "role": "user",
                    "content": content
                    if isinstance(content, str)
                    else [_user_part(part) for part in content],
                }
            )
        elif isinstance(message, AssistantPrompt):
            entry: dict[str, Any] = {"role": "assistant", "content": message.text or None}
            if message.tool_calls:
                entry["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": c.arguments or "{}"},
                    }
                    for c in message.tool_calls
                ]
            messages.append(entry)
        elif isinstance(message, ToolResultPrompt):
            text = _plain_text(message.content)
            if message.error is not None:
                text = f"{text}\nError: {message.error}" if text else f"Error: {message.error}"
            messages.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": text})
    return messages


def _user_part(part: ContentPart) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    source = getattr(part, "source", None)
    if source is None:  # a kind of part newer than this adapter, without a media source
        return _left_out(part.type)
    if isinstance(part, ImagePart):
        if isinstance(source, UrlSource):
            return {"type": "image_url", "image_url": {"url": source.value}}
        if isinstance(source, DataSource):
            return {"type": "image_url", "image_url": {"url": _data_url(source)}}
    if isinstance(part, AudioPart) and isinstance(source, DataSource):
        audio_format = _AUDIO_FORMATS.get(source.mime_type.lower())
        if audio_format is not None:
            return {
                "type": "input_audio",
                "input_audio": {"data": source.value, "format": audio_format},
            }
    if isinstance(part, DocumentPart):
        if isinstance(source, DataSource):
            return {
                "type": "file",
                "file": {"file_data": _data_url(source), "filename": "document"},
            }
        if isinstance(source, FileSource) and source.provider in (None, "openai"):
            return {"type": "file", "file": {"file_id": source.value}}
    kind = part.type
    if isinstance(source, UrlSource):
        return {"type": "text", "text": f"[{kind} at {source.value}]"}
    return _left_out(kind)


def _left_out(kind: str) -> dict[str, Any]:
    return {"type": "text", "text": f"[{kind} left out: this model adapter cannot send it]"}


def _data_url(source: DataSource) -> str:
    return f"data:{source.mime_type};base64,{source.value}"


def _plain_text(content: str | tuple[ContentPart, ...]) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(
        part.text if isinstance(part, TextPart) else f"[{part.type} left out]" for part in content
    )
