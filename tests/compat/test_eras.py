"""agui.wire.eras: the era table, the translation of a 1.0 stream for each era (Downgrade), the
upgrade of what pre-1.0 clients send (upgrade_input, with request bodies captured from the real
releases in requests/) and of what pre-1.0 servers send (LegacyReader).

Each rule has a test that fails without it. What each era accepts was measured on the real
packages; tests/interop/test_compat_matrix.py runs the real releases against the server."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from agui.wire.eras import (
    ERAS,
    NEWEST,
    OLDEST,
    Compat,
    Downgrade,
    LegacyReader,
    era_of,
    upgrade_input,
)

REQUESTS = Path(__file__).resolve().parent / "requests"
ERA = {era.name: era for era in ERAS}

RS = {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
RF = {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"}


def run(era: str, *events: dict[str, Any]) -> tuple[list[dict[str, Any]], Downgrade]:
    """The events as `era` gets them (RUN_STARTED and RUN_FINISHED around them)."""
    down = Downgrade(ERA[era])
    out = [o for e in (RS, *events, RF) for o in down.feed(e)]
    assert out[0] == RS and out[-1]["type"] == "RUN_FINISHED"
    return out[1:-1], down


def types(events: list[dict[str, Any]]) -> list[str]:
    return [e["type"] for e in events]


# ── the table ───────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(
    ("version", "era"),
    [
        ("0.0.35", "0.0.35"),
        ("0.0.36", "0.0.35"),
        ("0.0.37", "0.0.37"),
        ("0.0.40", "0.0.37"),
        ("0.0.41", "0.0.41"),
        ("0.0.47", "0.0.45"),
        ("0.0.52", "0.0.50"),
        ("0.0.58", "0.0.55"),
        ("0.0.59", "0.0.59"),
        ("0.0", "0.0.35"),
    ],
)
def test_a_release_is_in_the_newest_era_at_or_before_it(version: str, era: str) -> None:
    found = era_of(version if version != "0.0" else "0.0.35")
    assert found is not None and found.name == era


def test_1_0_and_later_have_no_era() -> None:
    assert era_of("1.0") is None
    assert era_of("1.1.0") is None


@pytest.mark.parametrize("bad", ["0.0.34", "0.0.1", "latest", "1", ""])
def test_what_is_no_supported_release_is_refused(bad: str) -> None:
    with pytest.raises(ValueError):
        era_of(bad)


def test_the_eras_grow() -> None:
    """Each era takes everything the one before it takes (so a release between two measured eras
    gets the older era's stream, which it accepts)."""
    for older, newer in itertools.pairwise(ERAS):
        assert older.events <= newer.events
        assert older.roles <= newer.roles
        assert older.text_roles <= newer.text_roles
        assert older.version < newer.version
    assert OLDEST is ERAS[0]


def test_compat_settings() -> None:
    auto = Compat.parse("auto")
    assert auto.era_for(None) is OLDEST
    assert auto.era_for("1.0") is None
    assert auto.era_for("0.0.47") is ERA["0.0.45"]  # a peer that declares an old version
    assert auto.era_for("not a version") is None
    pinned = Compat.parse("0.0.59")
    assert pinned.era_for(None) is ERA["0.0.59"]
    assert pinned.era_for("1.0") is None
    off = Compat.parse("off")
    assert off.era_for(None) is None and off.era_for("0.0.45") is None
    for bad in ("on", "1.0", "0.0.20", "0.0.x"):
        with pytest.raises(ValueError, match="compat"):
            Compat.parse(bad)


# ── 1.0 -> an era: events ───────────────────────────────────────────────────────────────────────

REASONING = [
    {"type": "REASONING_START", "messageId": "span"},
    {"type": "REASONING_MESSAGE_START", "messageId": "r1", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r1", "delta": "hm"},
    {"type": "REASONING_MESSAGE_END", "messageId": "r1"},
    {"type": "REASONING_END", "messageId": "span"},
]


def test_reasoning_is_dropped_where_no_thinking_span_exists() -> None:
    """0.0.35 knows THINKING_TEXT_MESSAGE_* but not THINKING_START, which its verifier demands
    first: no reasoning can reach it."""
    out, down = run("0.0.35", *REASONING)
    assert out == []
    assert down.notes.dropped["REASONING_* events"] == 5


def test_reasoning_becomes_thinking() -> None:
    out, down = run("0.0.37", *REASONING)
    assert out == [
        {"type": "THINKING_START"},
        {"type": "THINKING_TEXT_MESSAGE_START"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "hm"},
        {"type": "THINKING_TEXT_MESSAGE_END"},
        {"type": "THINKING_END"},
    ]
    assert down.notes.translated["REASONING_* events to THINKING_*"] == 5


def test_a_reasoning_message_outside_a_span_gets_a_thinking_span() -> None:
    out, _ = run("0.0.41", *REASONING[1:4])
    assert types(out) == [
        "THINKING_START",
        "THINKING_TEXT_MESSAGE_START",
        "THINKING_TEXT_MESSAGE_CONTENT",
        "THINKING_TEXT_MESSAGE_END",
        "THINKING_END",
    ]


def test_reasoning_chunks_become_a_thinking_message_closed_by_the_next_event() -> None:
    out, _ = run(
        "0.0.37",
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "r1", "delta": "a"},
        {"type": "REASONING_MESSAGE_CHUNK", "delta": "b"},
        {"type": "RAW", "event": {}},  # leaves the chunk stream open
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "r2", "delta": "c"},
        {"type": "STEP_STARTED", "stepName": "s"},
        {"type": "STEP_FINISHED", "stepName": "s"},
    )
    assert out == [
        {"type": "THINKING_START"},
        {"type": "THINKING_TEXT_MESSAGE_START"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "a"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "b"},
        {"type": "RAW", "event": {}},
        {"type": "THINKING_TEXT_MESSAGE_END"},
        {"type": "THINKING_END"},
        {"type": "THINKING_START"},
        {"type": "THINKING_TEXT_MESSAGE_START"},
        {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "c"},
        {"type": "THINKING_TEXT_MESSAGE_END"},
        {"type": "THINKING_END"},
        {"type": "STEP_STARTED", "stepName": "s"},
        {"type": "STEP_FINISHED", "stepName": "s"},
    ]


def test_a_thinking_span_left_open_is_closed_before_the_run_ends() -> None:
    down = Downgrade(ERA["0.0.37"])
    out = [o for e in (RS, REASONING[0], REASONING[1], RF) for o in down.feed(e)]
    assert types(out)[-3:] == ["THINKING_TEXT_MESSAGE_END", "THINKING_END", "RUN_FINISHED"]


def test_reasoning_stays_from_0_0_45() -> None:
    out, down = run("0.0.45", *REASONING)
    assert out == REASONING and not down.notes


def test_encrypted_reasoning_is_dropped_before_0_0_45() -> None:
    event = {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "m"}
    event["encryptedValue"] = "x"
    assert run("0.0.41", event)[0] == []
    assert run("0.0.45", event)[0] == [event]


@pytest.mark.parametrize(
    ("event", "first"),
    [
        (
            {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "p", "content": {}},
            "0.0.41",
        ),
        ({"type": "SUBAGENT_STARTED", "subagentRunId": "s", "name": "n"}, "0.0.59"),
        ({"type": "FUTURE_EVENT", "x": 1}, None),  # an unknown type (passed on by the lifecycle)
        ({"type": "THINKING_START"}, None),  # not a 1.0 event: never passed on
    ],
)
def test_event_types_an_era_does_not_know_are_dropped(
    event: dict[str, Any], first: str | None
) -> None:
    for era in ERAS:
        out, down = run(era.name, event)
        kept = first is not None and era.version >= era_of(first).version  # type: ignore[union-attr]
        assert out == ([event] if kept else []), era.name
        assert bool(down.notes.dropped) is not kept


def test_0_0_35_takes_assistant_text_only() -> None:
    out, down = run(
        "0.0.35",
        {"type": "TEXT_MESSAGE_START", "messageId": "a"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "a"},
        {"type": "TEXT_MESSAGE_START", "messageId": "u", "role": "user"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "u", "delta": "echo"},
        {"type": "TEXT_MESSAGE_END", "messageId": "u"},
    )
    assert out == [
        {"type": "TEXT_MESSAGE_START", "messageId": "a", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "a", "delta": "hi"},
        {"type": "TEXT_MESSAGE_END", "messageId": "a"},
    ]
    assert down.notes.dropped["user text messages"] == 1
    later, _ = run("0.0.37", {"type": "TEXT_MESSAGE_START", "messageId": "u", "role": "user"})
    assert later == [{"type": "TEXT_MESSAGE_START", "messageId": "u", "role": "user"}]


def test_0_0_35_drops_a_chunk_stream_of_another_role() -> None:
    out, _ = run(
        "0.0.35",
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "u", "role": "user", "delta": "x"},
        {"type": "TEXT_MESSAGE_CHUNK", "delta": "y"},
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "a", "delta": "z"},
    )
    assert out == [{"type": "TEXT_MESSAGE_CHUNK", "messageId": "a", "delta": "z"}]


@pytest.mark.parametrize("kind", ["TEXT_MESSAGE_CONTENT", "REASONING_MESSAGE_CONTENT"])
def test_empty_deltas_are_left_out_before_0_0_50(kind: str) -> None:
    event = {"type": kind, "messageId": "m", "delta": ""}
    assert run("0.0.45", event)[0] == []
    assert run("0.0.50", event)[0] == [event]


def test_empty_thinking_deltas_are_left_out() -> None:
    out, _ = run("0.0.37", REASONING[1], {**REASONING[2], "delta": ""}, REASONING[3])
    assert "THINKING_TEXT_MESSAGE_CONTENT" not in types(out)


def test_tool_results_with_parts_become_text() -> None:
    content = [
        {"type": "text", "text": "a"},
        {"type": "image", "source": {"type": "url", "value": "u"}},
    ]
    event = {"type": "TOOL_CALL_RESULT", "messageId": "m", "toolCallId": "c", "content": content}
    for era in ERAS:
        out, down = run(era.name, event)
        assert out == [{**event, "content": "a"}]
        assert down.notes.dropped["image content parts"] == 1


# ── 1.0 -> an era: messages ─────────────────────────────────────────────────────────────────────

IMAGE = {"type": "image", "source": {"type": "data", "value": "AA==", "mimeType": "image/png"}}
URL_AUDIO = {"type": "audio", "source": {"type": "url", "value": "https://x/a.mp3"}}
FILE_DOC = {
    "type": "document",
    "source": {"type": "file", "value": "file-123", "mimeType": "application/pdf"},
    "metadata": {"filename": "a.pdf"},
}
USER = {
    "id": "u",
    "role": "user",
    "content": [{"type": "text", "text": "see"}, IMAGE, URL_AUDIO, FILE_DOC],
}


def snapshot(era: str, *messages: dict[str, Any]) -> list[dict[str, Any]]:
    out, _ = run(era, {"type": "MESSAGES_SNAPSHOT", "messages": list(messages)})
    (event,) = out
    messages_out: list[dict[str, Any]] = event["messages"]
    return messages_out


def test_roles_an_era_does_not_know_are_left_out_of_snapshots() -> None:
    reasoning = {"id": "r", "role": "reasoning", "content": "hm"}
    activity = {"id": "a", "role": "activity", "activityType": "p", "content": {}}
    assistant = {"id": "m", "role": "assistant", "content": "hi"}
    assert snapshot("0.0.37", reasoning, activity, assistant) == [assistant]
    assert snapshot("0.0.41", reasoning, activity, assistant) == [activity, assistant]
    assert snapshot("0.0.45", reasoning, activity, assistant) == [reasoning, activity, assistant]


def test_user_parts_become_text_before_0_0_41() -> None:
    assert snapshot("0.0.37", USER) == [{"id": "u", "role": "user", "content": "see"}]


def test_media_parts_become_binary_parts_in_0_0_41_to_0_0_49() -> None:
    (message,) = snapshot("0.0.45", USER)
    assert message["content"] == [
        {"type": "text", "text": "see"},
        {"type": "binary", "mimeType": "image/png", "data": "AA=="},
        {"type": "binary", "mimeType": "audio/*", "url": "https://x/a.mp3"},
        {"type": "binary", "mimeType": "application/pdf", "id": "file-123", "filename": "a.pdf"},
    ]


def test_media_parts_stay_from_0_0_50_but_file_sources_become_binary() -> None:
    (message,) = snapshot("0.0.50", USER)
    assert message["content"][:3] == USER["content"][:3]
    assert message["content"][3] == {
        "type": "binary",
        "mimeType": "application/pdf",
        "id": "file-123",
        "filename": "a.pdf",
    }


def test_tool_message_parts_become_text_in_every_era() -> None:
    tool = {
        "id": "t",
        "role": "tool",
        "toolCallId": "c",
        "content": [{"type": "text", "text": "ok"}],
    }
    for era in ERAS:
        assert snapshot(era.name, tool) == [{**tool, "content": "ok"}]


def test_run_started_input_gets_its_tools_and_context_from_0_0_41() -> None:
    started = {**RS, "input": {"threadId": "t", "runId": "r", "messages": [USER]}}
    down = Downgrade(ERA["0.0.41"])
    (out,) = down.feed(started)
    assert out["input"]["tools"] == [] and out["input"]["context"] == []
    assert out["input"]["messages"][0]["content"][1]["type"] == "binary"
    (older,) = Downgrade(ERA["0.0.37"]).feed(started)
    assert older == started  # an unknown member there: its schema removes it


# ── outcomes ───────────────────────────────────────────────────────────────────────────────────


def finished(era: str, outcome: dict[str, Any]) -> dict[str, Any]:
    event = Downgrade(ERA[era]).feed({**RF, "outcome": outcome})[-1]
    return event


def test_outcomes_an_era_does_not_take_are_removed() -> None:
    assert "outcome" not in finished("0.0.59", {"type": "cancelled"})
    assert finished("0.0.55", {"type": "success", "pendingToolCallIds": ["c"]})["outcome"] == {
        "type": "success"
    }
    interrupt = {"type": "interrupt", "interrupts": [{"id": "i", "reason": "tool_call"}]}
    assert finished("0.0.59", interrupt)["outcome"] == interrupt
    # before 0.0.55 the member is unknown (its schema removes it): sent as it is
    assert finished("0.0.50", {"type": "cancelled"})["outcome"] == {"type": "cancelled"}


# ── framing and notes ─────────────────────────────────────────────────────────────────────────


def test_sse_data_puts_the_id_on_the_last_frame() -> None:
    down = Downgrade(ERA["0.0.37"])
    down.feed(RS)
    down.feed(REASONING[1])
    data = json.dumps(RF).encode()
    frames = down.sse_data(data, "7")
    assert frames.count(b"data: ") == 3
    assert frames.endswith(b'id: 7\ndata: {"type":"RUN_FINISHED","threadId":"t","runId":"r"}\n\n')
    assert b"id:" not in frames[: frames.rindex(b"id:")]
    assert Downgrade(ERA["0.0.35"]).sse_data(json.dumps(REASONING[0]).encode(), "8") == b""


@pytest.mark.parametrize("name", sorted(ERA))
def test_sse_data_of_text_deltas_is_what_feed_gives(name: str) -> None:
    """sse_data passes a text delta on undecoded when `feed` would pass it unchanged; around
    dropped roles, empty deltas, chunk streams and reasoning its frames are feed's all the same."""
    from agui.wire.sse import sse_data_frame

    def content(message: str, delta: str) -> dict[str, Any]:
        return {"type": "TEXT_MESSAGE_CONTENT", "messageId": message, "delta": delta}

    events = [
        RS,
        {"type": "TEXT_MESSAGE_START", "messageId": "m1", "role": "assistant"},
        content("m1", "Hello"),
        content("m1", ""),
        content("m1", 'a "quoted" \\ delta:"" ü'),
        {"type": "TEXT_MESSAGE_START", "messageId": "m2", "role": "developer"},
        content("m2", "maybe dropped"),
        {"type": "TEXT_MESSAGE_END", "messageId": "m2"},
        content("m1", "after"),
        {"type": "TEXT_MESSAGE_CHUNK", "messageId": "m3", "role": "developer", "delta": "x"},
        content("m1", "inside a chunk stream"),
        {"type": "REASONING_MESSAGE_CHUNK", "messageId": "r1", "delta": "think"},
        content("m1", "after reasoning"),
        {"type": "TEXT_MESSAGE_END", "messageId": "m1"},
        RF,
    ]
    fast, slow = Downgrade(ERA[name]), Downgrade(ERA[name])
    for number, event in enumerate(events):
        data = json.dumps(event, separators=(",", ":"), ensure_ascii=False).encode()
        out = slow.feed(json.loads(data))
        expected = b"".join(
            sse_data_frame(
                json.dumps(e, separators=(",", ":"), ensure_ascii=False).encode(),
                str(number) if k == len(out) - 1 else None,
            )
            for k, e in enumerate(out)
        )
        assert fast.sse_data(data, str(number)) == expected, (name, event)
    assert fast.notes.summary() == slow.notes.summary()


def test_the_notes_say_what_was_translated_and_dropped() -> None:
    _, down = run(
        "0.0.37",
        *REASONING,
        {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "p", "content": {}},
    )
    assert down.notes.summary() == (
        "translated REASONING_* events to THINKING_* (5x); dropped ACTIVITY_* events"
    )


# ── pre-1.0 clients' requests ─────────────────────────────────────────────────────────────────


def request(name: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads((REQUESTS / f"{name}.json").read_text())
    return body


@pytest.mark.parametrize(
    ("legacy", "modern"),
    [
        ("0.0.35-binary-data", "1.0.0-binary-data"),
        ("0.0.52-binary-data", "1.0.0-binary-data"),
        ("0.0.59-binary-data", "1.0.0-binary-data"),
        ("0.0.45-binary-url", "1.0.0-binary-url"),
        ("0.0.59-binary-url", "1.0.0-binary-url"),
    ],
)
def test_binary_parts_are_upgraded_as_the_1_0_client_upgrades_them(
    legacy: str, modern: str
) -> None:
    """The body a real 0.0.x release sent for a user message with an image, upgraded, holds the
    messages the official 1.0 client sent for the same message (it upgrades them itself)."""
    body = request(legacy)
    said = upgrade_input(body)
    assert said == ["Converted deprecated binary input content to the 1.0 media content parts."]
    assert body["messages"] == request(modern)["messages"]


def test_a_binary_part_with_only_an_id_stays_with_a_warning() -> None:
    part = {"type": "binary", "mimeType": "image/png", "id": "upload-1"}
    body = {"messages": [{"id": "u", "role": "user", "content": [part]}]}
    said = upgrade_input(body)
    assert body["messages"][0]["content"] == [part]
    assert "only an id" in said[1]


def test_a_binary_part_mirroring_a_media_part_is_not_doubled() -> None:
    part = {"type": "binary", "mimeType": "image/png", "data": "AA=="}
    body = {"messages": [{"id": "u", "role": "user", "content": [IMAGE, part]}]}
    upgrade_input(body)
    assert body["messages"][0]["content"] == [IMAGE]


def test_an_input_without_retired_shapes_is_left_alone() -> None:
    body = request("1.0.0-binary-data")
    before = json.dumps(body)
    assert upgrade_input(body) == []
    assert json.dumps(body) == before


# ── pre-1.0 servers' events ───────────────────────────────────────────────────────────────────


def test_thinking_becomes_reasoning_with_minted_ids() -> None:
    reader = LegacyReader()
    out = [
        reader.upgrade(e)[0]
        for e in (
            {"type": "THINKING_START", "title": "t"},
            {"type": "THINKING_TEXT_MESSAGE_START", "timestamp": 5},
            {"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "hm"},
            {"type": "THINKING_TEXT_MESSAGE_END"},
            {"type": "THINKING_END"},
        )
    ]
    assert types(out) == [
        "REASONING_START",
        "REASONING_MESSAGE_START",
        "REASONING_MESSAGE_CONTENT",
        "REASONING_MESSAGE_END",
        "REASONING_END",
    ]
    span, message = out[0]["messageId"], out[1]["messageId"]
    assert span != message and out[4]["messageId"] == span
    assert out[2]["messageId"] == out[3]["messageId"] == message
    assert out[1] == {
        "type": "REASONING_MESSAGE_START",
        "timestamp": 5,
        "messageId": message,
        "role": "reasoning",
    }
    assert "title" not in out[0]


def test_a_thinking_continuation_without_opener_gets_a_minted_id_and_says_so() -> None:
    event, said = LegacyReader().upgrade({"type": "THINKING_TEXT_MESSAGE_CONTENT", "delta": "x"})
    assert event["type"] == "REASONING_MESSAGE_CONTENT" and event["messageId"]
    assert any("Minting a messageId" in s for s in said)


def test_binary_parts_from_a_server_are_upgraded() -> None:
    part = {"type": "binary", "mimeType": "video/mp4", "url": "https://x/v.mp4"}
    message = {"id": "u", "role": "user", "content": [part]}
    snapshot_event = {"type": "MESSAGES_SNAPSHOT", "messages": [message]}
    upgraded, said = LegacyReader().upgrade(snapshot_event)
    assert upgraded["messages"][0]["content"] == [
        {
            "type": "video",
            "source": {"type": "url", "value": "https://x/v.mp4", "mimeType": "video/mp4"},
        }
    ]
    assert snapshot_event["messages"][0]["content"] == [part]  # the original is left alone
    assert said
    started = {**RS, "input": {"threadId": "t", "runId": "r", "messages": [message]}}
    upgraded, said = LegacyReader().upgrade(started)
    assert upgraded["input"]["messages"][0]["content"][0]["type"] == "video" and said


def test_a_current_event_is_passed_on_as_it_is() -> None:
    event = {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
    }
    upgraded, said = LegacyReader().upgrade(event)
    assert upgraded is event and said == []


def test_a_binary_part_with_data_and_url_keeps_the_data() -> None:
    part = {"type": "binary", "mimeType": "audio/wav", "data": "AA==", "url": "https://x/a.wav"}
    body = {"messages": [{"id": "u", "role": "user", "content": [part]}]}
    upgrade_input(body)
    assert body["messages"][0]["content"] == [
        {"type": "audio", "source": {"type": "data", "value": "AA==", "mimeType": "audio/wav"}}
    ]


# ── what a newer client would have read ─────────────────────────────────────────────────────────

VIDEO = {"type": "video", "source": {"type": "url", "value": "https://x/v.mp4"}}
EVERY_DROP: list[dict[str, Any]] = [
    RS,
    {"type": "REASONING_START", "messageId": "s"},
    {"type": "REASONING_MESSAGE_START", "messageId": "r", "role": "reasoning"},
    {"type": "REASONING_MESSAGE_CONTENT", "messageId": "r", "delta": "hm"},
    {"type": "REASONING_MESSAGE_END", "messageId": "r"},
    {"type": "REASONING_ENCRYPTED_VALUE", "subtype": "message", "entityId": "r", "value": "x"},
    {"type": "REASONING_END", "messageId": "s"},
    {"type": "ACTIVITY_SNAPSHOT", "messageId": "a", "activityType": "p", "content": {}},
    {"type": "SUBAGENT_STARTED", "subagentRunId": "sub", "name": "helper"},
    {"type": "TEXT_MESSAGE_START", "messageId": "d", "role": "developer"},
    {"type": "TEXT_MESSAGE_END", "messageId": "d"},
    {"type": "TEXT_MESSAGE_START", "messageId": "m"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": ""},
    {"type": "TEXT_MESSAGE_END", "messageId": "m"},
    {"type": "TOOL_CALL_RESULT", "messageId": "t", "toolCallId": "c", "content": [VIDEO]},
    {
        "type": "MESSAGES_SNAPSHOT",
        "messages": [
            USER,
            {"id": "r", "role": "reasoning", "content": "hm"},
            {"id": "a", "role": "activity", "activityType": "p", "content": {}},
            {"id": "t", "role": "tool", "toolCallId": "c", "content": [VIDEO]},
        ],
    },
    {"type": "SOMETHING_NEW"},
    {**RF, "outcome": {"type": "cancelled"}},
]
"""A stream with a drop of every kind for some era, each description from one source only."""


def _notes(era: str) -> Any:
    down = Downgrade(ERA[era])
    for event in EVERY_DROP:
        down.feed(event)
    return down.notes


@pytest.mark.parametrize("era", list(ERA))
def test_newer_counts_the_drops_the_newest_era_would_have_sent(era: str) -> None:
    """`notes.newer`: what this era dropped and the newest (0.0.59) would not have; what every
    era drops (content parts of tool results and messages, an unknown event type, the outcomes
    no 0.0.x release knows) is not counted there."""
    notes, newest = _notes(era), _notes(NEWEST.name)
    assert set(notes.newer) == set(notes.dropped) - set(newest.dropped)
    assert all(notes.newer[what] == notes.dropped[what] for what in notes.newer)
    assert notes.lost() == ", ".join(
        f"{what} ({n}x)" if n > 1 else what for what, n in notes.newer.items()
    )
    assert {"video content parts", "SOMETHING_NEW events"} <= set(newest.dropped)
    assert newest.newer == {} and newest.lost() == ""


def test_what_the_oldest_era_drops_that_0_0_59_reads() -> None:
    assert set(_notes(OLDEST.name).newer) == {
        "REASONING_* events",
        "ACTIVITY_* events",
        "SUBAGENT_* events",
        "developer text messages",
        "empty deltas",
        "reasoning messages",
        "activity messages",
        "image content parts",
        "audio content parts",
        "document content parts",
    }
    assert set(_notes("0.0.37").newer) >= {"REASONING_ENCRYPTED_VALUE events"}
