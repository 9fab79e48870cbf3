"""Random well-formed runs are accepted without a warning and give the messages built directly.

The strategy plays a producer that keeps every rule of the spec: RUN_STARTED, then a random
interleaving of text messages (START/CONTENT*/END, or a run of chunks), tool calls (START/ARGS*/END
or chunks, attached to an assistant message or not, some answered by TOOL_CALL_RESULT), reasoning
spans and messages, steps, state snapshots and deltas that apply, CUSTOM and RAW events, then
everything still open is closed and RUN_FINISHED ends the run. While it emits the events it builds,
independently of the client, the messages and the state they stand for; the whole client
(Conversation.consume on the frames as bytes) must arrive at exactly those.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import attrs
from hypothesis import HealthCheck, given, settings, strategies as st

import agui
from agui.stream.conversation import Conversation

from .runner import _same

SAFE = 2**53 - 1
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-SAFE, SAFE)
    | st.floats(allow_nan=False, allow_infinity=False).filter(lambda f: not f.is_integer())
    | st.text(max_size=6)
)
JSON = st.recursive(
    _scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
"""Any JSON value, null included."""
KEYS = st.sampled_from("abcde")
"""State keys for deltas: plain letters, so the JSON pointer is "/" + key."""
TEXT = st.text(max_size=8)
ACTIONS = (
    "text_start",
    "text_content",
    "text_end",
    "text_chunks",
    "tool_start",
    "tool_args",
    "tool_end",
    "tool_chunks",
    "tool_result",
    "span_start",
    "span_end",
    "reasoning_start",
    "reasoning_content",
    "reasoning_end",
    "reasoning_chunks",
    "step_start",
    "step_end",
    "state_snapshot",
    "state_delta",
    "custom",
    "raw",
)

MORE = {"text_content", "tool_args", "tool_result", "reasoning_content"}


@attrs.define
class Producer:
    """The events emitted so far and what they must come to."""

    events: list[dict[str, Any]] = attrs.Factory(list)
    messages: dict[str, dict[str, Any]] = attrs.Factory(dict)
    """Every message but tool messages, by id (insertion order = creation order)."""
    results: dict[str, list[dict[str, Any]]] = attrs.Factory(dict)
    """The tool messages that follow each message, in the order they were minted."""
    calls: dict[str, str] = attrs.Factory(dict)
    """toolCallId -> the id of the message that holds the call."""
    open_text: list[str] = attrs.Factory(list)
    open_tools: list[str] = attrs.Factory(list)
    unanswered: list[str] = attrs.Factory(list)
    open_reasoning: list[str] = attrs.Factory(list)
    open_spans: list[str] = attrs.Factory(list)
    open_steps: list[str] = attrs.Factory(list)
    state: Any = attrs.Factory(dict)
    count: int = 0

    def fresh(self, prefix: str) -> str:
        self.count += 1
        return f"{prefix}{self.count}"

    def emit(self, type_: str, **members: Any) -> None:
        self.events.append({"type": type_, **members})

    def expected_messages(self) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        for mid, message in self.messages.items():
            out.append(message)
            out += self.results.get(mid, [])
        return out

    # ── the building blocks ──────────────────────────────────────────────────────────────────

    def new_text(self, mid: str, role: str | None, name: str | None) -> None:
        message: dict[str, Any] = {"id": mid, "role": role or "assistant", "content": ""}
        if name is not None:
            message["name"] = name
        self.messages[mid] = message

    def new_call(self, tid: str, name: str, parent: str | None) -> dict[str, Any]:
        call = {"id": tid, "type": "function", "function": {"name": name, "arguments": ""}}
        holder = tid if parent is None else parent
        if parent is None:
            self.messages[tid] = {"id": tid, "role": "assistant", "toolCalls": []}
        self.messages[holder].setdefault("toolCalls", []).append(call)
        self.calls[tid] = holder
        return call

    def assistants(self) -> list[str]:
        return [m["id"] for m in self.messages.values() if m["role"] == "assistant"]


def _step(draw: Any, p: Producer) -> None:
    """Emit one random action that is legal where the stream stands."""
    possible = [
        a
        for a in ACTIONS
        if not (
            (a in ("text_content", "text_end") and not p.open_text)
            or (a in ("tool_args", "tool_end") and not p.open_tools)
            or (a == "tool_result" and not p.unanswered)
            or (a in ("reasoning_content", "reasoning_end") and not p.open_reasoning)
            or (a == "span_end" and not p.open_spans)
            or (a == "step_end" and not p.open_steps)
            or (a == "state_delta" and not isinstance(p.state, dict))
        )
    ]
    # Continuations are listed three times, so messages get content and calls get answers.
    action = draw(st.sampled_from([a for a in possible for _ in range(3 if a in MORE else 1)]))

    def pick(ids: list[str]) -> str:
        chosen: str = draw(st.sampled_from(ids))
        return chosen

    if action == "text_start":
        mid = p.fresh("m")
        role = draw(st.sampled_from([None, "assistant", "user", "system", "developer"]))
        name = draw(st.none() | TEXT)
        extra = {k: v for k, v in (("role", role), ("name", name)) if v is not None}
        p.emit("TEXT_MESSAGE_START", messageId=mid, **extra)
        p.new_text(mid, role, name)
        p.open_text.append(mid)
    elif action == "text_content":
        mid, delta = pick(p.open_text), draw(TEXT)
        p.emit("TEXT_MESSAGE_CONTENT", messageId=mid, delta=delta)
        p.messages[mid]["content"] += delta
    elif action == "text_end":
        mid = pick(p.open_text)
        p.emit("TEXT_MESSAGE_END", messageId=mid)
        p.open_text.remove(mid)
    elif action == "text_chunks":
        mid = p.fresh("m")
        role = draw(st.sampled_from([None, "assistant", "user"]))
        deltas = draw(st.lists(TEXT, min_size=1, max_size=3))
        p.emit(
            "TEXT_MESSAGE_CHUNK", messageId=mid, delta=deltas[0], **({"role": role} if role else {})
        )
        for delta in deltas[1:]:
            p.emit("TEXT_MESSAGE_CHUNK", delta=delta)
        p.new_text(mid, role, None)
        p.messages[mid]["content"] = "".join(deltas)
    elif action in ("tool_start", "tool_chunks"):
        tid, name = p.fresh("tc"), draw(st.text(min_size=1, max_size=6))
        parent = draw(st.none() | st.sampled_from(p.assistants())) if p.assistants() else None
        extra = {} if parent is None else {"parentMessageId": parent}
        call = p.new_call(tid, name, parent)
        if action == "tool_start":
            p.emit("TOOL_CALL_START", toolCallId=tid, toolCallName=name, **extra)
            p.open_tools.append(tid)
        else:
            deltas = draw(st.lists(TEXT, min_size=1, max_size=3))
            p.emit("TOOL_CALL_CHUNK", toolCallId=tid, toolCallName=name, delta=deltas[0], **extra)
            for delta in deltas[1:]:
                p.emit("TOOL_CALL_CHUNK", delta=delta)
            call["function"]["arguments"] = "".join(deltas)
            p.unanswered.append(tid)
    elif action == "tool_args":
        tid, delta = pick(p.open_tools), draw(TEXT)
        p.emit("TOOL_CALL_ARGS", toolCallId=tid, delta=delta)
        holder = p.messages[p.calls[tid]]
        call = next(c for c in holder["toolCalls"] if c["id"] == tid)
        call["function"]["arguments"] += delta
    elif action == "tool_end":
        tid = pick(p.open_tools)
        p.emit("TOOL_CALL_END", toolCallId=tid)
        p.open_tools.remove(tid)
        p.unanswered.append(tid)
    elif action == "tool_result":
        tid, mid = pick(p.unanswered), p.fresh("res")
        content: Any = draw(
            TEXT | st.lists(st.builds(lambda t: {"type": "text", "text": t}, TEXT), max_size=2)
        )
        p.emit("TOOL_CALL_RESULT", messageId=mid, toolCallId=tid, content=content)
        p.unanswered.remove(tid)
        message = {"id": mid, "role": "tool", "content": content, "toolCallId": tid}
        p.results.setdefault(p.calls[tid], []).append(message)
    elif action == "span_start":
        sid = p.fresh("span")
        p.emit("REASONING_START", messageId=sid)
        p.open_spans.append(sid)
    elif action == "span_end":
        sid = pick(p.open_spans)
        p.emit("REASONING_END", messageId=sid)
        p.open_spans.remove(sid)
    elif action == "reasoning_start":
        rid = p.fresh("r")
        p.emit("REASONING_MESSAGE_START", messageId=rid, role="reasoning")
        p.messages[rid] = {"id": rid, "role": "reasoning", "content": ""}
        p.open_reasoning.append(rid)
    elif action == "reasoning_content":
        rid, delta = pick(p.open_reasoning), draw(TEXT)
        p.emit("REASONING_MESSAGE_CONTENT", messageId=rid, delta=delta)
        p.messages[rid]["content"] += delta
    elif action == "reasoning_end":
        rid = pick(p.open_reasoning)
        p.emit("REASONING_MESSAGE_END", messageId=rid)
        p.open_reasoning.remove(rid)
    elif action == "reasoning_chunks":
        rid = p.fresh("r")
        deltas = draw(st.lists(TEXT, min_size=1, max_size=3))
        p.emit("REASONING_MESSAGE_CHUNK", messageId=rid, delta=deltas[0])
        for delta in deltas[1:]:
            p.emit("REASONING_MESSAGE_CHUNK", delta=delta)
        p.messages[rid] = {"id": rid, "role": "reasoning", "content": "".join(deltas)}
    elif action == "step_start":
        name = p.fresh("step")
        p.emit("STEP_STARTED", stepName=name)
        p.open_steps.append(name)
    elif action == "step_end":
        name = pick(p.open_steps)
        p.emit("STEP_FINISHED", stepName=name)
        p.open_steps.remove(name)
    elif action == "state_snapshot":
        p.state = draw(st.dictionaries(KEYS, JSON, max_size=3) | JSON)
        p.emit("STATE_SNAPSHOT", snapshot=copy.deepcopy(p.state))
    elif action == "state_delta":
        ops = []
        for _ in range(draw(st.integers(0, 3))):
            key = draw(KEYS)
            if key in p.state:
                op = draw(st.sampled_from(["replace", "remove", "test"]))
            else:
                op = "add"
            if op == "remove":
                ops.append({"op": op, "path": f"/{key}"})
                del p.state[key]
            elif op == "test":
                ops.append({"op": op, "path": f"/{key}", "value": copy.deepcopy(p.state[key])})
            else:
                value = draw(JSON)
                ops.append({"op": op, "path": f"/{key}", "value": copy.deepcopy(value)})
                p.state[key] = value
        p.emit("STATE_DELTA", delta=ops)
    elif action == "custom":
        p.emit("CUSTOM", name=draw(TEXT), value=draw(JSON))
    else:
        p.emit("RAW", event=draw(JSON))


@st.composite
def runs(draw: Any) -> Producer:
    """A well-formed run, with the messages and state it stands for."""
    p = Producer()
    p.emit("RUN_STARTED", threadId="t", runId="r", protocolVersion=agui.PROTOCOL_VERSION)
    for _ in range(draw(st.integers(0, 40))):
        _step(draw, p)
    closing = (
        [("TEXT_MESSAGE_END", "messageId", m) for m in p.open_text]
        + [("TOOL_CALL_END", "toolCallId", t) for t in p.open_tools]
        + [("REASONING_MESSAGE_END", "messageId", r) for r in p.open_reasoning]
        + [("REASONING_END", "messageId", s) for s in p.open_spans]
        + [("STEP_FINISHED", "stepName", s) for s in p.open_steps]
    )
    for type_, key, value in draw(st.permutations(closing)):
        p.emit(type_, **{key: value})
    p.emit("RUN_FINISHED", threadId="t", runId="r")
    return p


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(runs())
def test_well_formed_runs_are_accepted_as_built(producer: Producer) -> None:
    """No warning, a completed run, and exactly the messages and state built alongside."""
    frames = [json.dumps(e, ensure_ascii=False).encode() for e in producer.events]
    conversation = Conversation("t")
    result = conversation.consume(frames)
    summary = conversation.summary()
    assert summary["warnings"] == []
    assert result is not None and result.outcome == "success"
    assert (summary["outcome"], summary["error"]) == ("completed", None)
    expected = producer.expected_messages()
    assert summary["messages"] == expected
    assert _same(producer.state, summary["state"]), (producer.state, summary["state"])
    # The direct construction is itself valid wire JSON for the spec's Message.
    for message in expected:
        agui.decode_json(message, agui.Message, strict=True)
