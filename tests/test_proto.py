"""The protobuf binding: the generated .proto files and ledger, the wire codec, framing, and the
binary transport between AgentApp and HttpAgent.

Byte parity with @ag-ui/proto 1.0.0 on every fixture is checked by the crosscheck session
(tests/crosscheck/proto_parity.mjs); here the bytes are checked against the values verified in the
protocol reference, and the codec against the protobuf runtime (an independent reader and writer
of the same .proto files).
"""

from __future__ import annotations

import asyncio
import json
import os
import struct
import tempfile
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest
from agui_generated import proto_wire

import agui
from agui import AgentApp, HttpAgent, StreamError
from agui.errors import ProtoStreamError
from agui.wire.proto import (
    ProtoFrameDecoder,
    accepts_proto,
    decode_proto_json,
    from_message,
    proto_frame,
    to_message,
)
from codegen.__main__ import PROTOS
from codegen.ledger import declared
from codegen.load import SPEC_PATH, SpecError, load_ledger, read_spec
from codegen.model import build
from codegen.proto import build_proto, parse_ledger
from codegen.render import environment, render_proto

from .conftest import FIXTURES, ROOT, run_input

EVENT_FIXTURES = sorted(
    p
    for d in FIXTURES.iterdir()
    if d.name == "Event" or d.name.endswith("Event")
    for p in (d / "valid").glob("*.json")
)

# What the binary form cannot carry, per fixture (docs/divergences.md); everything else
# must come back equal.
LOSSY = {
    # an empty optional array and an absent one are the same bytes; they come back absent
    "RunStartedEvent/valid/input-state-falsy.json",
    "SubagentFinishedEvent/valid/outcome-suspended-empty-ids.json",
    # members of a patch operation other than op/path/from/value have no field
    "StateDeltaEvent/valid/operation-extra-member.json",
}


def fixture_id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}/{path.name}"


def load(path: Path) -> Any:
    return agui.decode(path.read_bytes(), strict=True)


def test_there_are_event_fixtures() -> None:
    assert len(EVENT_FIXTURES) > 150


@pytest.mark.parametrize("path", EVENT_FIXTURES, ids=fixture_id)
def test_every_valid_event_round_trips(path: Path) -> None:
    event = load(path)
    back = agui.decode_proto(agui.encode_proto(event), strict=True)
    if fixture_id(path) in LOSSY:
        assert back != event
    else:
        assert back == event


def test_the_verified_bytes() -> None:
    """Reference §4.4: bytes @ag-ui/encoder 1.0.0 produced."""
    content = agui.TextMessageContentEvent(message_id="m", delta="hi")
    assert proto_frame(content).hex() == "0000000d120b0a02080112016d1a026869"
    started = agui.RunStartedEvent(thread_id="t", run_id="r", timestamp=1700000000000)
    assert proto_frame(started).hex() == "0000001362110a09080b1080d095ffbc311201741a0172"


def test_text_message_start_writes_no_type() -> None:
    """TEXT_MESSAGE_START is EventType 0, the proto3 default: base_event is empty."""
    data = agui.encode_proto(agui.TextMessageStartEvent(message_id="m"))
    assert data == bytes.fromhex("0a05" + "0a00" + "12016d")
    assert agui.decode_proto(data) == agui.TextMessageStartEvent(message_id="m")


def custom(value: Any, **more: Any) -> agui.CustomEvent:
    return agui.CustomEvent(name="n", value=value, **more)


def test_objects_are_written_in_javascript_property_order() -> None:
    """Array-index keys first (ascending), then the others as inserted; decoding keeps the
    order of the bytes."""
    event = custom({"b": 1, "10": 2, "a": 3, "2": 4, "02": 5})
    keys = list(agui.decode_proto(agui.encode_proto(event)).value)
    assert keys == ["2", "10", "b", "a", "02"]


def test_integral_numbers_come_back_as_integers() -> None:
    back = agui.decode_proto(agui.encode_proto(custom([1.0, 2.5, 2**53, 1e300, -0.0])))
    assert back.value == [1, 2.5, 2**53, 1e300, 0]
    assert [type(v) for v in back.value] == [int, float, int, float, int]


def test_null_and_absent_stay_apart() -> None:
    assert agui.decode_proto(agui.encode_proto(custom(None))).value is None
    raw = agui.RawEvent(event=None, source="s")
    assert agui.decode_proto(agui.encode_proto(raw)) == raw
    snapshot = agui.StateSnapshotEvent(snapshot={"k": None, "": 1})
    assert agui.decode_proto(agui.encode_proto(snapshot)) == snapshot


def test_what_the_binary_form_cannot_carry_is_an_encode_error() -> None:
    with pytest.raises(agui.EncodeError, match="nests deeper"):
        deep: Any = 0
        for _ in range(300):
            deep = [deep]
        agui.encode_proto(custom(deep))
    with pytest.raises(agui.EncodeError, match="not a JSON number"):
        agui.encode_proto(custom(float("nan")))
    with pytest.raises(agui.EncodeError, match="no arm"):
        agui.encode_proto(agui.UnknownEvent(type="FUTURE", raw={"type": "FUTURE"}))


# ── decoding what is not one well-formed event ──────────────────────────────────────────────────
def problem(data: bytes) -> str:
    with pytest.raises(agui.DecodeError) as info:
        agui.decode_proto(data)
    (p,) = info.value.problems
    assert p.kind == "protobuf"
    assert p.message.startswith("failed to decode protocol buffer message: ")
    return p.message


def envelope(arm: int, payload: bytes) -> bytes:
    return proto_wire._varint(arm << 3 | 2) + proto_wire._varint(len(payload)) + payload


BASE_CONTENT = bytes.fromhex("0a020801")  # base_event {type: TEXT_MESSAGE_CONTENT}


def test_malformed_bytes_are_decode_errors() -> None:
    assert "ends in the middle" in problem(envelope(2, BASE_CONTENT)[:-1])
    assert "ends in the middle" in problem(b"\x12\x80")
    assert "no event" in problem(b"")
    assert "not valid UTF-8" in problem(envelope(2, BASE_CONTENT + b"\x12\x01\xff"))
    assert "wire type 7" in problem(b"\x0f")
    assert "number 0" in problem(b"\x00\x00")
    assert "varint is longer" in problem(b"\x08" + b"\xff" * 11)
    two = envelope(2, BASE_CONTENT) + envelope(3, bytes.fromhex("0a020802"))
    assert "two events" in problem(two)
    mismatch = envelope(2, bytes.fromhex("0a020802"))
    assert "carries TEXT_MESSAGE_CONTENT but the base event declares TEXT_MESSAGE_END" in problem(
        mismatch
    )
    assert "no base_event" in problem(envelope(2, b"\x12\x01m"))


def test_protobuf_reading_rules() -> None:
    """Unknown fields are skipped, a singular message occurring twice is merged, and fields
    may come in any order."""
    expected = agui.TextMessageContentEvent(message_id="m", delta="hi", timestamp=5)
    reordered = (
        b"\x1a\x02hi" + b"\xa8\x1f\x01" + b"\x0a\x02\x08\x01" + b"\x12\x01m" + b"\x0a\x02\x10\x05"
    )
    assert agui.decode_proto(envelope(2, reordered)) == expected


def test_an_event_from_a_later_protocol_is_an_unknown_event() -> None:
    data = envelope(99, BASE_CONTENT)
    warnings: list[agui.Problem] = []
    event = agui.decode_proto(data, warnings=warnings)
    assert isinstance(event, agui.UnknownEvent)
    assert event.type == "(unknown ag_ui.Event arm 99)"
    assert warnings and warnings[0].kind == "unknown_tag"
    with pytest.raises(agui.DecodeError):
        agui.decode_proto(data, strict=True)


def test_decoded_objects_are_checked_like_json() -> None:
    """A timestamp beyond the safe-integer range decodes as protobuf but not as AG-UI."""
    data = envelope(2, b"\x0a\x0c\x08\x01\x10" + proto_wire._varint(2**60) + b"\x12\x01m")
    with pytest.raises(agui.DecodeError) as info:
        agui.decode_proto(data)
    assert info.value.problems[0].pointer == "/timestamp"


def test_an_unknown_content_part_is_dropped_with_a_warning() -> None:
    # TOOL_CALL_RESULT whose one content part is an InputContent arm this version lacks (the
    # next number the ledger would give one)
    arm = 1 + max(
        n
        for s, n in parse_ledger(LEDGER).items()
        if s.startswith("InputContent.part.") and n < SPEC.extension_numbers
    )
    assert arm < 16  # its key is then one byte
    part = bytes([(arm << 3) | 2, 0])
    payload = b"\x0a\x02\x08\x15" + b"\x1a\x01m" + b"\x22\x01c" + b"\x3a\x02" + part
    warnings: list[agui.Problem] = []
    event = agui.decode_proto(envelope(22, payload), warnings=warnings)
    assert event == agui.ToolCallResultEvent(message_id="m", tool_call_id="c", content=())
    assert [w.kind for w in warnings] == ["unknown_tag"]


# ── the protobuf runtime agrees ─────────────────────────────────────────────────────────────────
@pytest.fixture
def pb2() -> Any:
    return pytest.importorskip(
        "agui_generated.proto_pb2", reason="needs the agui-spec[proto] extra"
    )


@pytest.mark.parametrize("path", EVENT_FIXTURES, ids=fixture_id)
def test_the_protobuf_runtime_reads_and_writes_the_same_events(path: Path, pb2: Any) -> None:
    event = load(path)
    message = to_message(event)
    assert isinstance(message, pb2.Event)
    assert message.WhichOneof("event") == event.type.lower()
    expected = agui.decode_proto(agui.encode_proto(event))
    assert from_message(message) == expected
    # the runtime's own serialization (map entries in its order) reads back the same
    again = pb2.Event.FromString(message.SerializeToString(deterministic=True))
    assert from_message(again) == expected


def test_the_runtime_sees_the_fields_by_name(pb2: Any) -> None:
    message = to_message(
        agui.RunFinishedEvent(
            thread_id="t",
            run_id="r",
            outcome=agui.RunFinishedInterruptOutcome(
                interrupts=(agui.Interrupt(id="i", reason="input_required"),)
            ),
        )
    )
    finished = message.run_finished
    assert (
        finished.base_event.type
        == pb2.Event.DESCRIPTOR.file.pool.FindEnumTypeByName("ag_ui.EventType")
        .values_by_name["RUN_FINISHED"]
        .number
    )
    assert finished.outcome == "interrupt"
    assert [i.id for i in finished.interrupts] == ["i"]


def test_the_descriptors_are_what_protoc_makes_of_the_proto_files(pb2: Any) -> None:
    protoc = pytest.importorskip("grpc_tools.protoc", reason="needs grpcio-tools")
    import grpc_tools
    from google.protobuf import descriptor_pb2

    include = os.path.join(os.path.dirname(grpc_tools.__file__), "_proto")
    names = [name for name, _ in pb2.FILES]
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "set.pb")
        args = ["protoc", f"-I{ROOT / 'generated' / 'proto'}", f"-I{include}"]
        assert protoc.main([*args, f"--descriptor_set_out={out}", *names]) == 0
        compiled = descriptor_pb2.FileDescriptorSet.FromString(Path(out).read_bytes())
    ours = {name: descriptor_pb2.FileDescriptorProto.FromString(data) for name, data in pb2.FILES}
    assert {f.name: f for f in compiled.file} == ours


# ── the ledger ──────────────────────────────────────────────────────────────────────────────────
SPEC = build(read_spec(SPEC_PATH.read_text("utf-8")))
LEDGER = load_ledger()


def test_the_ledger_holds_the_official_slots() -> None:
    """Every slot the .proto files declare (live or reserved) is in the ledger and nothing else;
    the official numbers of @ag-ui/proto 1.0.0 (the crosscheck compares them all) stay."""
    slots = parse_ledger(LEDGER)
    files = render_proto(environment(), build_proto(SPEC, LEDGER))
    layout = declared(files[path] for path in PROTOS)
    assert {slot: d.number for slot, d in layout.items()} == slots
    assert slots["Event.event.reasoning_encrypted_value"] == 31
    assert slots["RunFinishedEvent.pending_tool_call_ids"] == 8
    assert slots["InputContentSource.source.file"] == 3
    assert slots["ToolCall.Function.arguments"] == 2
    assert slots["EventType.TEXT_MESSAGE_START"] == 0


def test_regenerating_keeps_the_ledger() -> None:
    assert build_proto(SPEC, LEDGER).ledger == LEDGER


def test_a_removed_field_is_reserved_and_its_number_never_reused() -> None:
    text = SPEC_PATH.read_text("utf-8")
    removed = text.replace(
        '      name?:\n        type: str\n        doc: "A display name for the author."\n', "", 1
    )
    assert removed != text
    schema = build_proto(build(read_spec(removed)), LEDGER)
    start = next(m for m in schema.messages if m.name == "TextMessageStartEvent")
    name = parse_ledger(LEDGER)["TextMessageStartEvent.name"]
    assert start.reserved == (name,) and start.reserved_names == ("name",)
    assert schema.ledger == LEDGER  # the slot stays in the ledger
    # a field added later gets a new number, not the reserved one
    added = removed.replace("  TextMessageStartEvent:\n", "  TextMessageStartEvent:\n", 1).replace(
        '        default: assistant\n        doc: "Who is speaking; absent means assistant."\n',
        '        default: assistant\n        doc: "Who is speaking; absent means assistant."\n'
        '      label?:\n        type: str\n        doc: "A label."\n',
        1,
    )
    schema = build_proto(build(read_spec(added)), LEDGER)
    start = next(m for m in schema.messages if m.name == "TextMessageStartEvent")
    official = [  # a fork's extensions are numbered from extensionNumbers up, apart
        n
        for s, n in parse_ledger(LEDGER).items()
        if s.startswith(f"{start.name}.") and n < SPEC.extension_numbers
    ]
    number = max(official) + 1
    assert {f.name: f.number for f in start.fields}["label"] == number
    assert f"TextMessageStartEvent.label = {number} string (unshipped)\n" in schema.ledger


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (("TextMessageStartEvent.name = 4", "TextMessageStartEvent.name = 3"), "number conflict"),
        (("TextMessageStartEvent.name = 4", "TextMessageStartEvent.name: 4"), "not 'Message.field"),
        (
            ("EventType.RAW = 9", "EventType.RAW = 9\nEventType.RAW = 40"),
            "EventType.RAW is listed twice",
        ),
        (("ToolCall.id = 1", "ToolCall.id = 19500"), "not a usable field number"),
    ],
)
def test_a_broken_ledger_fails_generation(edit: tuple[str, str], message: str) -> None:
    old, new = edit
    assert old in LEDGER
    with pytest.raises(SpecError, match=message):
        build_proto(SPEC, LEDGER.replace(old, new, 1))


# ── framing ─────────────────────────────────────────────────────────────────────────────────────
EVENTS = [load(p) for p in EVENT_FIXTURES[:40]]
STREAM = b"".join(proto_frame(e) for e in EVENTS)


@pytest.mark.parametrize("size", [1, 3, 4, 5, 17, 4096, len(STREAM)])
def test_frames_are_found_however_the_stream_is_chunked(size: int) -> None:
    decoder = ProtoFrameDecoder()
    messages = []
    for i in range(0, len(STREAM), size):
        messages += decoder.feed(STREAM[i : i + size])
    decoder.close()
    assert [agui.decode_proto(m) for m in messages] == EVENTS
    assert decoder.frames == len(EVENTS)


def test_an_oversized_frame_is_refused_before_it_arrives() -> None:
    decoder = ProtoFrameDecoder()
    good = proto_frame(EVENTS[0])
    assert decoder.feed(good + (10 * 1024 * 1024 + 1).to_bytes(4, "big")) == [good[4:]]
    with pytest.raises(ProtoStreamError, match=r"frame 2: message size 10485761 bytes"):
        decoder.feed(b"")
    small = ProtoFrameDecoder(max_frame_bytes=8)
    with pytest.raises(ProtoStreamError, match="exceeds the maximum of 8 bytes"):
        small.feed(good)


def test_a_stream_ending_mid_frame_is_an_error() -> None:
    decoder = ProtoFrameDecoder()
    decoder.feed(STREAM[:-3])
    with pytest.raises(ProtoStreamError, match=r"ended mid-frame: .* trailing bytes"):
        decoder.close()


@pytest.mark.parametrize(
    ("accept", "binary"),
    [
        (None, False),
        ("", False),
        ("text/event-stream", False),
        ("application/vnd.ag-ui.event+proto", True),
        ("Application/VND.AG-UI.Event+Proto", True),
        ("text/event-stream, application/vnd.ag-ui.event+proto;q=0.5", True),
        ("application/vnd.ag-ui.event+proto;q=0", False),
        ("application/vnd.ag-ui.event+proto;q=0.000", False),
        ("application/vnd.ag-ui.event+proto;q=nonsense", False),
        ("*/*", False),
        ("application/*", False),
        (b"application/vnd.ag-ui.event+proto", True),
    ],
)
def test_accept_names_the_media_type_explicitly(accept: Any, binary: bool) -> None:
    assert accepts_proto(accept) is binary


# ── the transport ───────────────────────────────────────────────────────────────────────────────
def scripted() -> list[Any]:
    """A run with every kind of content, with fixed ids (the server adds RUN_STARTED/FINISHED)."""
    return [
        agui.StepStartedEvent(step_name="plan"),
        agui.ReasoningStartEvent(message_id="r1"),
        agui.ReasoningMessageStartEvent(message_id="r1m"),
        agui.ReasoningMessageContentEvent(message_id="r1m", delta="thinking"),
        agui.ReasoningMessageEndEvent(message_id="r1m"),
        agui.ReasoningEndEvent(message_id="r1"),
        agui.StateSnapshotEvent(snapshot={"count": 0, "items": [], "10": "first"}),
        agui.StateDeltaEvent(
            delta=(
                agui.ReplaceOperation(path="/count", value=1.0),
                agui.AddOperation(path="/items/-", value={"k": None}),
            )
        ),
        agui.TextMessageStartEvent(message_id="m1"),
        agui.TextMessageContentEvent(message_id="m1", delta="Héllo ✨"),
        agui.TextMessageEndEvent(message_id="m1"),
        agui.ToolCallStartEvent(tool_call_id="c1", tool_call_name="search", parent_message_id="m1"),
        agui.ToolCallArgsEvent(tool_call_id="c1", delta='{"q":"x"}'),
        agui.ToolCallEndEvent(tool_call_id="c1"),
        agui.ToolCallResultEvent(
            message_id="t1",
            tool_call_id="c1",
            content=(
                agui.TextPart(text="found"),
                agui.ImagePart(source=agui.UrlSource(value="https://x/y.png")),
            ),
        ),
        agui.ActivitySnapshotEvent(
            message_id="a1", activity_type="PLAN", content={"steps": [1, 2]}
        ),
        agui.ActivityDeltaEvent(
            message_id="a1", activity_type="PLAN", patch=(agui.RemoveOperation(path="/steps/0"),)
        ),
        agui.CustomEvent(name="note", value=None, metadata={"b": 1, "a": [True, 2.5]}),
        agui.StepFinishedEvent(step_name="plan"),
    ]


async def scripted_agent(run: agui.RunAgentInput) -> Any:
    for event in scripted():
        yield event


async def post(app: Any, accept: str | None) -> httpx.Response:
    """A 1.0 client's request (it declares its protocolVersion, or the SSE stream would be the
    one a pre-1.0 client takes: AgentApp's compat)."""
    headers = {"content-type": "application/json"}
    if accept is not None:
        headers["accept"] = accept
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://agui") as client:
        body = agui.encode(attrs.evolve(run_input(), protocol_version=agui.PROTOCOL_VERSION))
        return await client.post("/", content=body, headers=headers)


def events_of(response: httpx.Response) -> list[Any]:
    decoder = ProtoFrameDecoder()
    frames = decoder.feed(response.content)
    decoder.close()
    return [agui.decode_proto(f, strict=True) for f in frames]


def test_the_server_answers_protobuf_to_an_explicit_accept() -> None:
    app = AgentApp(scripted_agent)
    response = asyncio.run(post(app, "application/vnd.ag-ui.event+proto"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/vnd.ag-ui.event+proto"
    assert response.headers["vary"] == "accept"
    events = events_of(response)
    assert type(events[0]) is agui.RunStartedEvent
    assert type(events[-1]) is agui.RunFinishedEvent
    sse = asyncio.run(post(app, "text/event-stream"))
    assert sse.headers["content-type"] == "text/event-stream"
    from_sse = [
        agui.decode(block[len(b"data: ") :])
        for block in sse.content.split(b"\n\n")
        if block.startswith(b"data: ")
    ]
    assert events == from_sse
    assert events[1:-1] == scripted()


@pytest.mark.parametrize("accept", [None, "*/*", "application/*", "text/event-stream"])
def test_the_server_keeps_sse_otherwise(accept: str | None) -> None:
    response = asyncio.run(post(AgentApp(scripted_agent), accept))
    assert response.headers["content-type"] == "text/event-stream"


def test_protobuf_can_be_switched_off() -> None:
    app = AgentApp(scripted_agent, protobuf=False)
    response = asyncio.run(post(app, "application/vnd.ag-ui.event+proto"))
    assert response.headers["content-type"] == "text/event-stream"
    assert "vary" not in response.headers


def test_an_unknown_event_is_dropped_from_a_binary_stream() -> None:
    async def agent(run: agui.RunAgentInput) -> Any:
        yield agui.UnknownEvent(type="FUTURE", raw={"type": "FUTURE"})
        yield agui.StepStartedEvent(step_name="s")
        yield agui.StepFinishedEvent(step_name="s")

    response = asyncio.run(post(AgentApp(agent), "application/vnd.ag-ui.event+proto"))
    assert [e.type for e in events_of(response)] == [
        "RUN_STARTED",
        "STEP_STARTED",
        "STEP_FINISHED",
        "RUN_FINISHED",
    ]


@pytest.mark.parametrize("mode", ["async", "sync"])
def test_http_agent_reads_a_binary_stream(serve: Any, mode: str) -> None:
    url = serve(AgentApp(scripted_agent))
    binary, text = HttpAgent(url, binary=True), HttpAgent(url)
    if mode == "sync":
        got, expected = list(binary.run_sync(run_input())), list(text.run_sync(run_input()))
    else:

        async def both() -> tuple[list[Any], list[Any]]:
            a = [e async for e in binary.run(run_input())]
            b = [e async for e in text.run(run_input())]
            return a, b

        got, expected = asyncio.run(both())
    assert got == expected and len(got) > 5


def test_a_conversation_runs_over_the_binary_transport(serve: Any) -> None:
    url = serve(AgentApp(scripted_agent))

    async def converse(binary: bool) -> agui.Conversation:
        conversation = agui.Conversation()
        await conversation.run(HttpAgent(url, binary=binary), "hello")
        return conversation

    over_proto, over_sse = asyncio.run(converse(True)), asyncio.run(converse(False))
    assert over_proto.messages[1:] == over_sse.messages[1:]  # [0]: the user's, with a random id
    assert len(over_proto.messages) == 5
    assert over_proto.state == over_sse.state == {"count": 1, "items": [{"k": None}], "10": "first"}
    assert over_proto.warnings == over_sse.warnings == []


def test_a_broken_binary_stream_raises_stream_error(serve: Any) -> None:
    good = proto_frame(agui.RunStartedEvent(thread_id="t", run_id="r"))

    def app_sending(body: bytes) -> Any:
        async def app(scope: Any, receive: Any, send: Any) -> None:
            await receive()
            headers = [(b"content-type", b"application/vnd.ag-ui.event+proto")]
            await send({"type": "http.response.start", "status": 200, "headers": headers})
            await send({"type": "http.response.body", "body": body})

        return app

    for body, message in [
        (good + good[:-2], "ended mid-frame"),
        (good + struct.pack(">I", 11 * 1024 * 1024), "exceeds the maximum"),
        (good + struct.pack(">I", 2) + b"\x0a\x00", "frame 2: failed to decode"),
    ]:
        events: list[Any] = []
        with pytest.raises(StreamError, match=message):
            for event in HttpAgent(serve(app_sending(body)), binary=True).run_sync(run_input()):
                events.append(event)
        assert [e.type for e in events] == ["RUN_STARTED"]


def test_json_of_a_frame_is_plain_json() -> None:
    """decode_proto_json gives the JSON object, before any check (what HttpAgent.frames yields)."""
    event = load(FIXTURES / "Event" / "valid" / "run-started-full-input.json")
    value = decode_proto_json(agui.encode_proto(event))
    assert json.loads(json.dumps(value)) == value
    assert agui.decode_json(value) == event


def test_the_readme_example_shows_the_real_frame() -> None:
    """The example of docs/binary-transport.md shows the bytes proto_frame really writes."""
    page = (ROOT / "docs" / "binary-transport.md").read_text("utf-8")
    block = page.split("# The binary transport (protobuf)", 1)[1].split("```python", 1)[1]
    lines = block.splitlines()
    at = next(i for i, line in enumerate(lines) if line.startswith("frame = "))
    first, comment = lines[at : at + 2]
    frame = eval(first.split("=", 1)[1], {"agui": agui, "proto_frame": proto_frame})
    assert comment == f"# {frame!r}"
