"""The reducer (agui.stream.reducer.Reducer): one test per rule of how events change messages and state.

Events are written in wire form and decoded strictly, so each test reads like the stream it is.
"""

from __future__ import annotations

from typing import Any

import pytest

import agui
from agui.errors import ProtocolError
from agui.stream.reducer import TRUNCATED, Reducer, merge_metadata

RUN = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
DONE = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def ev(wire: dict[str, Any]) -> Any:
    return agui.decode_json(wire, agui.Event, strict=True)


def reduce(*events: dict[str, Any], reducer: Reducer | None = None) -> Reducer:
    reducer = reducer if reducer is not None else Reducer()
    for wire in events:
        assert reducer.feed(ev(wire)) == [ev(wire)]
    return reducer


def text(message_id: str, *deltas: str, **start: Any) -> list[dict[str, Any]]:
    return [
        {"type": "TEXT_MESSAGE_START", "messageId": message_id, **start},
        *({"type": "TEXT_MESSAGE_CONTENT", "messageId": message_id, "delta": d} for d in deltas),
        {"type": "TEXT_MESSAGE_END", "messageId": message_id},
    ]


def kinds(reducer: Reducer) -> list[str]:
    return [w.kind for w in reducer.warnings]


# ── text messages ────────────────────────────────────────────────────────────────────────────


def test_text_start_creates_an_assistant_message_by_default() -> None:
    """TEXT_MESSAGE_START without a role creates an assistant message with empty content."""
    r = reduce({"type": "TEXT_MESSAGE_START", "messageId": "m"})
    assert r.messages_json() == [{"id": "m", "role": "assistant", "content": ""}]


def test_text_start_keeps_role_name_and_subagent() -> None:
    """The role, name and subagentRunId of TEXT_MESSAGE_START are those of the new message."""
    r = reduce(
        {
            "type": "TEXT_MESSAGE_START",
            "messageId": "m",
            "role": "user",
            "name": "ann",
            "subagentRunId": "s1",
        }
    )
    assert r.messages_json() == [
        {"id": "m", "role": "user", "content": "", "name": "ann", "subagentRunId": "s1"}
    ]


def test_content_appends_deltas_verbatim() -> None:
    """Deltas are concatenated as they are: no Unicode normalisation, zero-width kept, "" fine."""
    deltas = ("e\u0301", "", "\u200b", "x")
    r = reduce(*text("m", *deltas))
    assert r.messages_json()[0]["content"] == "".join(deltas)


def test_reopening_a_closed_message_appends() -> None:
    """A second START with the same id continues the message instead of replacing it."""
    r = reduce(*text("m", "Hello"), *text("m", ", world"))
    assert r.messages_json() == [{"id": "m", "role": "assistant", "content": "Hello, world"}]


def test_text_start_on_an_activity_message_is_dropped_with_a_warning() -> None:
    """Text aimed at an activity message's id never overwrites its structured content."""
    r = reduce(
        {
            "type": "ACTIVITY_SNAPSHOT",
            "messageId": "a",
            "activityType": "plan",
            "content": {"k": 1},
        },
        *text("a", "oops"),
    )
    assert r.messages_json() == [
        {"id": "a", "role": "activity", "activityType": "plan", "content": {"k": 1}}
    ]
    assert kinds(r) == ["activity", "activity", "activity"]


def test_content_for_an_unknown_message_warns() -> None:
    """CONTENT naming no message changes nothing and is reported."""
    r = reduce({"type": "TEXT_MESSAGE_CONTENT", "messageId": "nope", "delta": "x"})
    assert r.messages_json() == []
    assert kinds(r) == ["missing"]


def test_many_appends_read_back_mid_stream() -> None:
    """Content read while a message streams includes every delta so far (appends are buffered)."""
    r = reduce({"type": "TEXT_MESSAGE_START", "messageId": "m"})
    for i in range(1000):
        r.feed(ev({"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": str(i % 10)}))
        if i == 499:
            assert len(r.messages_json()[0]["content"]) == 500
    assert r.messages_json()[0]["content"] == "0123456789" * 100


# ── reasoning ────────────────────────────────────────────────────────────────────────────────


def test_reasoning_messages_are_assembled_and_spans_make_none() -> None:
    """REASONING_MESSAGE_* build a reasoning message; REASONING_START/END add nothing."""
    r = reduce(
        {"type": "REASONING_START", "messageId": "span"},
        {"type": "REASONING_MESSAGE_START", "messageId": "rm", "role": "reasoning"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm", "delta": "think"},
        {"type": "REASONING_MESSAGE_CONTENT", "messageId": "rm", "delta": "ing"},
        {"type": "REASONING_MESSAGE_END", "messageId": "rm"},
        {"type": "REASONING_END", "messageId": "span"},
    )
    assert r.messages_json() == [{"id": "rm", "role": "reasoning", "content": "thinking"}]


def test_reasoning_start_on_an_activity_message_is_dropped_with_a_warning() -> None:
    """Reasoning aimed at an activity message's id is dropped and reported."""
    r = reduce(
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "plan", "content": {}},
        {"type": "REASONING_MESSAGE_START", "messageId": "a", "role": "reasoning"},
    )
    assert r.messages_json()[0]["role"] == "activity"
    assert kinds(r) == ["activity"]


# ── tool calls ───────────────────────────────────────────────────────────────────────────────


def call(call_id: str, name: str = "search", arguments: str = "") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def test_tool_call_joins_its_parent_assistant_message() -> None:
    """TOOL_CALL_START with parentMessageId naming an assistant message adds the call to it."""
    r = reduce(
        *text("m", "Let me look."),
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c",
            "toolCallName": "search",
            "parentMessageId": "m",
        },
    )
    assert r.messages_json() == [
        {"id": "m", "role": "assistant", "content": "Let me look.", "toolCalls": [call("c")]}
    ]


def test_tool_call_without_parent_creates_a_message_named_after_the_call() -> None:
    """Without parentMessageId the call gets a new assistant message whose id is the call's."""
    r = reduce({"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "search"})
    assert r.messages_json() == [{"id": "c", "role": "assistant", "toolCalls": [call("c")]}]


def test_tool_call_with_an_unknown_parent_creates_that_message() -> None:
    """A parentMessageId naming no message becomes the id of a new assistant message."""
    r = reduce(
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c",
            "toolCallName": "search",
            "parentMessageId": "p",
            "subagentRunId": "s",
        }
    )
    assert r.messages_json() == [
        {"id": "p", "role": "assistant", "toolCalls": [call("c")], "subagentRunId": "s"}
    ]


def test_tool_call_whose_parent_is_not_an_assistant_falls_back_to_the_call_id() -> None:
    """A parent that is a user message is left alone; the call gets a message of its own."""
    r = reduce(
        *text("u", "hi", role="user"),
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c",
            "toolCallName": "search",
            "parentMessageId": "u",
        },
    )
    assert [m["id"] for m in r.messages_json()] == ["u", "c"]
    assert "toolCalls" not in r.messages_json()[0]
    assert kinds(r) == ["tool_call"]


def test_tool_call_args_append_to_the_arguments_text() -> None:
    """ARGS deltas concatenate into function.arguments, unparsed."""
    r = reduce(
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "search"},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '{"q": '},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": ""},
        {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": '"x"'},
        {"type": "TOOL_CALL_END", "toolCallId": "c"},
    )
    assert r.messages_json()[0]["toolCalls"] == [call("c", arguments='{"q": "x"')]


def test_repeated_tool_call_start_renames_instead_of_duplicating() -> None:
    """A START for a call that exists only updates its name, with a warning."""
    r = reduce(
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "search"},
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "fetch"},
    )
    assert r.messages_json()[0]["toolCalls"] == [call("c", "fetch")]
    assert kinds(r) == ["tool_call"]


def test_tool_call_metadata_goes_to_the_call_not_the_message() -> None:
    """Metadata of TOOL_CALL_* events is merged into the tool call."""
    r = reduce(
        *text("m", "x"),
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c",
            "toolCallName": "search",
            "parentMessageId": "m",
            "metadata": {"a": 1},
        },
        {"type": "TOOL_CALL_END", "toolCallId": "c", "metadata": {"b": 2}},
    )
    message = r.messages_json()[0]
    assert "metadata" not in message
    assert message["toolCalls"][0]["metadata"] == {"a": 1, "b": 2}


def test_tool_result_follows_its_assistant_message_after_earlier_results() -> None:
    """A tool message is inserted after the owning assistant message and its tool messages,
    before anything later."""
    r = reduce(
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c1",
            "toolCallName": "a",
            "parentMessageId": "m",
        },
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {
            "type": "TOOL_CALL_START",
            "toolCallId": "c2",
            "toolCallName": "b",
            "parentMessageId": "m",
        },
        {"type": "TOOL_CALL_END", "toolCallId": "c2"},
        *text("later", "after", role="user"),
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "one"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t2", "toolCallId": "c2", "content": "two"},
    )
    assert [m["id"] for m in r.messages_json()] == ["m", "t1", "t2", "later"]
    assert r.messages_json()[1] == {
        "id": "t1",
        "role": "tool",
        "content": "one",
        "toolCallId": "c1",
    }


def test_tool_result_for_an_unknown_call_is_appended_with_its_parts() -> None:
    """With no owning message the tool message goes last; part content is kept unchanged."""
    parts = [
        {"type": "text", "text": "hi"},
        {"type": "image", "source": {"type": "url", "value": "u"}},
    ]
    r = reduce(
        *text("m", "x"),
        {
            "type": "TOOL_CALL_RESULT",
            "messageId": "t",
            "toolCallId": "ghost",
            "content": parts,
            "subagentRunId": "s",
            "metadata": {"k": None},
        },
    )
    assert r.messages_json()[-1] == {
        "id": "t",
        "role": "tool",
        "content": parts,
        "toolCallId": "ghost",
        "subagentRunId": "s",
        "metadata": {"k": None},
    }


# ── metadata ─────────────────────────────────────────────────────────────────────────────────


def test_metadata_merges_shallowly_last_write_wins_keeping_nulls() -> None:
    """Keys accumulate across START/CONTENT/END; a later value replaces a key whole (no
    recursion), and a null value is data."""
    r = reduce(
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"a": {"x": 1}, "b": 1}},
        {
            "type": "TEXT_MESSAGE_CONTENT",
            "messageId": "m",
            "delta": "",
            "metadata": {"a": {"y": 2}},
        },
        {"type": "TEXT_MESSAGE_END", "messageId": "m", "metadata": {"b": None, "c": [1]}},
    )
    assert r.messages_json()[0]["metadata"] == {"a": {"y": 2}, "b": None, "c": [1]}


def test_merge_metadata_does_not_alias_the_event() -> None:
    """Merged values are copies: changing the event's metadata later changes nothing."""
    incoming = {"a": {"x": 1}}
    merged = merge_metadata({"b": 1}, incoming)
    incoming["a"]["x"] = 2
    assert merged == {"b": 1, "a": {"x": 1}}


# ── state ────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("snapshot", [None, 0, False, "", [], {}, [1, 2], 3.5])
def test_state_snapshot_replaces_with_any_value_even_falsy(snapshot: Any) -> None:
    """STATE_SNAPSHOT replaces the state by presence, never by truthiness: null and 0 count."""
    r = reduce({"type": "STATE_SNAPSHOT", "snapshot": {"old": True}})
    reduce({"type": "STATE_SNAPSHOT", "snapshot": snapshot}, reducer=r)
    assert r.state == snapshot
    assert type(r.state) is type(snapshot)


def test_state_starts_as_an_empty_object() -> None:
    """Before any snapshot the state is {} (what the TypeScript client sends)."""
    assert Reducer().state == {}


def test_state_delta_applies_an_rfc6902_patch() -> None:
    """STATE_DELTA applies its operations in order."""
    r = reduce(
        {"type": "STATE_SNAPSHOT", "snapshot": {"items": [1], "n": 0}},
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "add", "path": "/items/-", "value": 2},
                {"op": "replace", "path": "/n", "value": None},
                {"op": "copy", "from": "/items", "path": "/copy"},
                {"op": "remove", "path": "/copy/0", "value": "leftover members are ignored"},
            ],
        },
    )
    assert r.state == {"items": [1, 2], "n": None, "copy": [2]}


def test_state_delta_is_all_or_nothing() -> None:
    """A patch whose last `test` fails leaves the state exactly as it was, and warns."""
    r = reduce(
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
        {
            "type": "STATE_DELTA",
            "delta": [
                {"op": "replace", "path": "/a", "value": 2},
                {"op": "add", "path": "/b", "value": 3},
                {"op": "test", "path": "/a", "value": 3},
            ],
        },
    )
    assert r.state == {"a": 1}
    assert kinds(r) == ["patch_failed"]
    assert r.warnings[0].pointer == "/delta"


def test_state_delta_test_compares_json_types_strictly() -> None:
    """`test` with true against 1 fails: JSON booleans are not numbers."""
    r = reduce(
        {"type": "STATE_SNAPSHOT", "snapshot": {"a": 1}},
        {"type": "STATE_DELTA", "delta": [{"op": "test", "path": "/a", "value": True}]},
    )
    assert kinds(r) == ["patch_failed"]


def test_state_delta_on_a_missing_path_keeps_the_state() -> None:
    """Removing what is not there fails the patch; the run goes on."""
    r = reduce(
        {"type": "STATE_SNAPSHOT", "snapshot": None},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/a", "value": 1}]},
        {"type": "STATE_DELTA", "delta": [{"op": "replace", "path": "", "value": {"ok": 1}}]},
    )
    assert r.state == {"ok": 1}
    assert kinds(r) == ["patch_failed"]


def test_state_is_a_copy() -> None:
    """Changing the returned state or the event's snapshot does not change the reducer's."""
    snapshot = {"a": [1]}
    r = Reducer()
    r.feed(agui.StateSnapshotEvent(snapshot=snapshot))
    snapshot["a"].append(2)
    r.state["a"].append(3)
    assert r.state == {"a": [1]}


# ── messages snapshot ────────────────────────────────────────────────────────────────────────


def user(message_id: str, content: str = "x") -> dict[str, Any]:
    return {"id": message_id, "role": "user", "content": content}


def activity(message_id: str, kind: str = "plan", **content: Any) -> dict[str, Any]:
    return {"id": message_id, "role": "activity", "activityType": kind, "content": content}


def snapshot(*messages: dict[str, Any], **metadata: Any) -> dict[str, Any]:
    event: dict[str, Any] = {"type": "MESSAGES_SNAPSHOT", "messages": list(messages)}
    if metadata:
        event["metadata"] = metadata
    return event


def test_snapshot_reconciles_by_id() -> None:
    """Held messages in the snapshot keep their place and take the snapshot's copy; held messages
    not in it go; new ones are appended in snapshot order."""
    r = Reducer([user("a"), user("b"), user("c")])
    reduce(snapshot(user("new1"), user("c", "C"), user("a", "A"), user("new2")), reducer=r)
    assert r.messages_json() == [user("a", "A"), user("c", "C"), user("new1"), user("new2")]


def test_snapshot_keeps_client_only_activity_when_it_has_none() -> None:
    """Without activity messages and without a declaration, the snapshot leaves activity alone."""
    r = Reducer([user("a"), activity("act")])
    reduce(snapshot(user("a")), reducer=r)
    assert [m["id"] for m in r.messages_json()] == ["a", "act"]


def test_snapshot_with_activity_owns_all_activity() -> None:
    """A snapshot carrying activity messages replaces the client's activity messages."""
    r = Reducer([activity("act")])
    reduce(snapshot(activity("other")), reducer=r)
    assert [m["id"] for m in r.messages_json()] == ["other"]


def test_snapshot_declared_activity_types_are_authoritative() -> None:
    """Declared types are owned (deleted when absent); undeclared types are kept."""
    r = Reducer([activity("p", "plan"), activity("s", "search")])
    meta = {"@ag-ui/client": {"authoritativeActivityTypes": ["plan"]}}
    reduce(snapshot(**meta), reducer=r)
    assert [m["id"] for m in r.messages_json()] == ["s"]


def test_snapshot_declaring_null_owns_every_activity_type() -> None:
    """authoritativeActivityTypes null deletes every activity message the snapshot lacks."""
    r = Reducer([activity("p", "plan"), user("u")])
    reduce(
        snapshot(user("u"), **{"@ag-ui/client": {"authoritativeActivityTypes": None}}), reducer=r
    )
    assert [m["id"] for m in r.messages_json()] == ["u"]


def test_snapshot_with_an_invalid_declaration_deletes_no_activity() -> None:
    """A malformed declaration owns nothing, even when the snapshot carries activity."""
    r = Reducer([activity("p", "plan")])
    reduce(snapshot(activity("q"), **{"@ag-ui/client": "everything"}), reducer=r)
    assert [m["id"] for m in r.messages_json()] == ["p", "q"]


def test_snapshot_keeps_reasoning_unless_it_carries_some() -> None:
    """Reasoning messages survive a snapshot without reasoning and go when it has its own."""
    reasoning = {"id": "r1", "role": "reasoning", "content": "hm"}
    r = Reducer([reasoning])
    reduce(snapshot(user("u")), reducer=r)
    assert [m["id"] for m in r.messages_json()] == ["r1", "u"]
    reduce(snapshot(user("u"), {"id": "r2", "role": "reasoning", "content": ""}), reducer=r)
    assert [m["id"] for m in r.messages_json()] == ["u", "r2"]


def test_snapshot_replaces_tool_call_bookkeeping() -> None:
    """After a snapshot, tool calls are found in the snapshot's messages."""
    owner = {"id": "m", "role": "assistant", "toolCalls": [call("c")]}
    r = reduce(snapshot(owner), {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": "{}"})
    assert r.messages_json()[0]["toolCalls"][0]["function"]["arguments"] == "{}"


# ── activity ─────────────────────────────────────────────────────────────────────────────────


def act(message_id: str = "a", kind: str = "plan", **extra: Any) -> dict[str, Any]:
    content = extra.pop("content", {"step": 1})
    return {
        "type": "ACTIVITY_SNAPSHOT",
        "messageId": message_id,
        "activityType": kind,
        "content": content,
        **extra,
    }


def test_activity_snapshot_creates_an_activity_message() -> None:
    """ACTIVITY_SNAPSHOT for a new id appends an activity message."""
    r = reduce(act(subagentRunId="s"))
    assert r.messages_json() == [
        {
            "id": "a",
            "role": "activity",
            "activityType": "plan",
            "content": {"step": 1},
            "subagentRunId": "s",
        }
    ]


def test_activity_snapshot_replaces_by_default() -> None:
    """replace absent means true: content and activityType are replaced."""
    r = reduce(act(), act(kind="search", content={"q": "x"}))
    assert r.messages_json() == [activity("a", "search", q="x")]


def test_activity_snapshot_without_replace_keeps_content_but_merges_metadata() -> None:
    """replace: false leaves the content; its metadata still merges."""
    r = reduce(act(), act(content={"other": 2}, replace=False, metadata={"m": 1}))
    assert r.messages_json() == [{**activity("a", step=1), "metadata": {"m": 1}}]


def test_activity_snapshot_over_another_message_replaces_it_only_when_replacing() -> None:
    """A non-activity message under the id is replaced by the activity unless replace is false."""
    kept = reduce(*text("a", "hi"), act(replace=False))
    assert kept.messages_json()[0]["role"] == "assistant"
    replaced = reduce(*text("a", "hi"), act())
    assert replaced.messages_json() == [activity("a", step=1)]


def test_activity_delta_patches_the_content() -> None:
    """ACTIVITY_DELTA applies its patch to the activity's content."""
    r = reduce(
        act(),
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a",
            "activityType": "plan",
            "patch": [{"op": "replace", "path": "/step", "value": 2}],
        },
    )
    assert r.messages_json() == [activity("a", step=2)]


def test_activity_delta_to_a_missing_message_is_skipped_with_a_warning() -> None:
    """No message is invented for a delta whose target does not exist."""
    r = reduce(
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "ghost",
            "activityType": "plan",
            "patch": [{"op": "add", "path": "/x", "value": 1}],
        }
    )
    assert r.messages_json() == []
    assert kinds(r) == ["activity"]


def test_activity_delta_to_a_non_activity_message_warns() -> None:
    """A delta aimed at a text message leaves it alone and is reported."""
    r = reduce(
        *text("m", "hi"),
        {"type": "ACTIVITY_DELTA", "messageId": "m", "activityType": "plan", "patch": []},
    )
    assert r.messages_json()[0]["content"] == "hi"
    assert kinds(r) == ["activity"]


def test_failed_activity_patch_keeps_the_content() -> None:
    """An activity patch that fails is discarded whole and warned about."""
    r = reduce(
        act(),
        {
            "type": "ACTIVITY_DELTA",
            "messageId": "a",
            "activityType": "plan",
            "patch": [
                {"op": "replace", "path": "/step", "value": 9},
                {"op": "remove", "path": "/missing"},
            ],
        },
    )
    assert r.messages_json() == [activity("a", step=1)]
    assert kinds(r) == ["patch_failed"]


# ── encrypted values ─────────────────────────────────────────────────────────────────────────


def encrypted(subtype: str, entity: str) -> dict[str, Any]:
    return {
        "type": "REASONING_ENCRYPTED_VALUE",
        "subtype": subtype,
        "entityId": entity,
        "encryptedValue": "opaque",
    }


def test_encrypted_value_attaches_to_a_tool_call() -> None:
    """subtype tool-call stores the value on the named call."""
    r = reduce(
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "s"},
        encrypted("tool-call", "c"),
    )
    assert r.messages_json()[0]["toolCalls"][0]["encryptedValue"] == "opaque"


def test_encrypted_value_attaches_to_a_message() -> None:
    """subtype message stores the value on the named message."""
    r = reduce(*text("m", "x"), encrypted("message", "m"))
    assert r.messages_json()[0]["encryptedValue"] == "opaque"


def test_encrypted_value_for_an_unknown_entity_or_activity_is_ignored() -> None:
    """Unknown entities and activity messages are left alone, silently."""
    r = reduce(
        act(), encrypted("message", "a"), encrypted("message", "x"), encrypted("tool-call", "x")
    )
    assert r.messages_json() == [activity("a", step=1)]
    assert r.warnings == []


# ── runs ─────────────────────────────────────────────────────────────────────────────────────


def test_run_started_adds_input_messages_not_held() -> None:
    """RUN_STARTED.input.messages are appended unless their id is already held."""
    r = Reducer([user("a", "mine")])
    reduce(
        {
            **RUN,
            "input": {"threadId": "t", "runId": "r", "messages": [user("a", "theirs"), user("b")]},
        },
        reducer=r,
    )
    assert r.messages_json() == [user("a", "mine"), user("b")]


def test_run_finished_records_success_with_result_and_usage() -> None:
    """A successful run's result and usage are recorded."""
    r = reduce(RUN, {**DONE, "result": {"answer": 42}, "usage": [{"inputTokens": 3}]})
    (run,) = r.runs
    assert (run.outcome, run.thread_id, run.run_id, run.result) == (
        "success",
        "t",
        "r",
        {"answer": 42},
    )
    assert run.usage == (agui.TokenUsage(input_tokens=3),)


def test_pending_tool_calls_are_derived_from_the_run() -> None:
    """Without a list in the outcome, pending = calls started this run without a result."""
    r = reduce(
        RUN,
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "a"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {"type": "TOOL_CALL_START", "toolCallId": "c2", "toolCallName": "b"},
        {"type": "TOOL_CALL_END", "toolCallId": "c2"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t1", "toolCallId": "c1", "content": "ok"},
        DONE,
        {**RUN, "runId": "r2"},
        {**DONE, "runId": "r2"},
    )
    assert [run.pending_tool_call_ids for run in r.runs] == [("c2",), ()]


def test_pending_tool_calls_named_by_the_outcome_win() -> None:
    """A non-empty pendingToolCallIds in the success outcome is taken as it is."""
    r = reduce(
        RUN,
        {"type": "TOOL_CALL_START", "toolCallId": "c1", "toolCallName": "a"},
        {"type": "TOOL_CALL_END", "toolCallId": "c1"},
        {**DONE, "outcome": {"type": "success", "pendingToolCallIds": ["x", "y"]}},
    )
    assert r.runs[0].pending_tool_call_ids == ("x", "y")


def test_interrupt_outcome_sets_pending_interrupts_and_success_clears_them() -> None:
    """RUN_FINISHED with an interrupt outcome holds its interrupts until the next RUN_FINISHED."""
    interrupt = {"id": "i1", "reason": "tool_call", "toolCallId": "c"}
    r = reduce(RUN, {**DONE, "outcome": {"type": "interrupt", "interrupts": [interrupt]}})
    assert r.pending_interrupts == (agui.Interrupt(id="i1", reason="tool_call", tool_call_id="c"),)
    assert r.runs[0].outcome == "interrupt"
    assert r.runs[0].interrupts == r.pending_interrupts
    reduce({**RUN, "runId": "r2"}, {**DONE, "runId": "r2"}, reducer=r)
    assert len(r.pending_interrupts) == 0


def test_cancelled_outcome_is_recorded_and_clears_interrupts() -> None:
    """A cancelled run is recorded as cancelled and leaves nothing pending."""
    interrupt = {"id": "i1", "reason": "a"}
    r = reduce(
        RUN,
        {**DONE, "outcome": {"type": "interrupt", "interrupts": [interrupt]}},
        {**RUN, "runId": "r2"},
        {**DONE, "runId": "r2", "outcome": {"type": "cancelled"}},
    )
    assert r.runs[-1].outcome == "cancelled"
    assert r.runs[-1].completed
    assert len(r.pending_interrupts) == 0


def test_run_error_is_recorded_and_keeps_pending_interrupts() -> None:
    """RUN_ERROR records message and code; it does not touch pending interrupts."""
    interrupt = {"id": "i1", "reason": "input_required"}
    r = reduce(
        RUN,
        {**DONE, "outcome": {"type": "interrupt", "interrupts": [interrupt]}},
        {**RUN, "runId": "r2"},
        {"type": "RUN_ERROR", "message": "boom", "code": "E1"},
    )
    run = r.runs[-1]
    assert (run.outcome, run.run_id, run.error_message, run.error_code) == (
        "error",
        "r2",
        "boom",
        "E1",
    )
    assert not run.completed
    assert [i.id for i in r.pending_interrupts] == ["i1"]


def test_a_run_left_open_is_truncated_at_the_end_of_the_stream() -> None:
    """finish() records an open run as truncated, never as a success."""
    r = reduce(RUN, *text("m", "partial"))
    r.finish()
    (run,) = r.runs
    assert (run.outcome, run.error_message) == ("truncated", TRUNCATED)
    assert not r.run_open


def test_run_results_carry_the_warnings_of_their_run() -> None:
    """Each RunResult holds the warnings reported since the previous run ended."""
    bad = {"type": "STATE_DELTA", "delta": [{"op": "remove", "path": "/x"}]}
    r = reduce(RUN, bad, DONE, {**RUN, "runId": "r2"}, {**DONE, "runId": "r2"})
    assert [len(run.warnings) for run in r.runs] == [1, 0]


@pytest.mark.parametrize(
    "chunk",
    [
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m", "delta": "x"},
        {"type": "TOOL_CALL_CHUNK", "toolCallId": "c", "toolCallName": "n"},
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "m", "delta": "x"},
    ],
)
def test_chunk_events_must_be_expanded_first(chunk: dict[str, Any]) -> None:
    """A chunk that reaches the reducer is a pipeline error."""
    with pytest.raises(ProtocolError, match="must be transformed before being applied"):
        Reducer().feed(ev(chunk))


# ── what it exposes ──────────────────────────────────────────────────────────────────────────


def test_messages_are_the_typed_models() -> None:
    """`messages` returns agui Message models equal to the wire messages."""
    r = reduce(
        *text("u", "hi", role="user"),
        {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "s", "parentMessageId": "m"},
        {"type": "TOOL_CALL_RESULT", "messageId": "t", "toolCallId": "c", "content": "ok"},
        act(),
    )
    models = r.messages
    assert [type(m) for m in models] == [
        agui.UserMessage,
        agui.AssistantMessage,
        agui.ToolMessage,
        agui.ActivityMessage,
    ]
    assert [agui.to_json(m) for m in models] == r.messages_json()


def test_messages_json_are_copies() -> None:
    """Changing what `messages_json()` returns does not change the conversation."""
    r = reduce(*text("m", "x"))
    r.messages_json()[0]["content"] = "changed"
    assert r.messages_json()[0]["content"] == "x"


def test_reading_messages_again_costs_nothing() -> None:
    """Without a change in between, `messages` is the same tuple; after one, only the changed
    message is a new model, the others are the very same objects."""
    r = reduce(*text("a", "one"), *text("b", "two"))
    first = r.messages
    assert r.messages is first
    r.feed(agui.decode(b'{"type":"TEXT_MESSAGE_START","messageId":"b"}'))
    r.feed(agui.decode(b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"b","delta":"!"}'))
    second = r.messages
    assert second is not first
    assert second[0] is first[0]
    assert second[1] is not first[1] and second[1].content == "two!"


def test_messages_read_between_deltas_are_current() -> None:
    """Reading while a message streams gives the text so far, every time (the cache of a
    message is dropped by each change to it, metadata and tool-call arguments included)."""
    r = Reducer()
    r.feed(agui.decode(b'{"type":"TEXT_MESSAGE_START","messageId":"m"}'))
    seen = []
    for piece in ("a", "b", "c"):
        r.feed(agui.TextMessageContentEvent(message_id="m", delta=piece))
        seen.append(r.messages[0].content)
    assert seen == ["a", "ab", "abc"]
    r.feed(agui.TextMessageEndEvent(message_id="m", metadata={"k": 1}))
    assert r.messages[0].metadata == {"k": 1}
    r.feed(agui.ToolCallStartEvent(tool_call_id="c", tool_call_name="f", parent_message_id="m"))
    r.feed(agui.ToolCallArgsEvent(tool_call_id="c", delta='{"x"'))
    assert r.messages[0].tool_calls[0].function.arguments == '{"x"'
    r.feed(agui.ToolCallArgsEvent(tool_call_id="c", delta=":1}"))
    assert r.messages[0].tool_calls[0].function.arguments == '{"x":1}'


def test_a_long_stream_of_deltas_joins_exactly() -> None:
    """Thousands of deltas (joined in blocks as they arrive) give exactly their concatenation."""
    r = Reducer()
    r.feed(agui.decode(b'{"type":"TEXT_MESSAGE_START","messageId":"m"}'))
    deltas = [f"{i}," for i in range(5000)]
    for delta in deltas:
        r.feed(agui.TextMessageContentEvent(message_id="m", delta=delta))
    assert r.messages[0].content == "".join(deltas)


def test_seeded_messages_and_state() -> None:
    """A reducer can start from messages (models or wire) and a state."""
    r = Reducer([agui.UserMessage(id="a", content="x"), user("b")], state=0)
    assert [m["id"] for m in r.messages_json()] == ["a", "b"]
    assert r.state == 0
