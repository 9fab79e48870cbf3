"""One nesting limit, decoding and encoding alike: an any-JSON value (state, metadata, a patch
value, an unknown event kept whole) may nest MAX_JSON_DEPTH levels of arrays and objects, the value
itself the first. At the limit a document decodes and encodes again, whichever way it is written
(agui.encode, to_json, sse_frame, the binary form); one level more is refused both ways, with the
pointer of the array or object one level too deep. Small values are measured by a walk, large ones
by orjson; both answers are checked here, and so is the margin to what orjson reads and writes.
"""

from __future__ import annotations

import io
from collections.abc import Iterator
from typing import Any

import httpx
import orjson
import pytest
from agui_generated import _runtime
from agui_generated._runtime import MAX_JSON_DEPTH

import agui
from agui.wire.codec import dumps
from agui.wire.proto import proto_frame

from .conftest import live_server

DEEPEST_POSITION = 6
"""The most levels of models the spec puts around an any-JSON value (checked below)."""


def nested(levels: int, leaf: Any = 0) -> Any:
    """`leaf` inside `levels` one-item arrays: [[0]] is two levels."""
    value = leaf
    for _ in range(levels):
        value = [value]
    return value


def wide(levels: int) -> Any:
    """A large value nesting `levels` deep: 400 objects beside the deep branch, so that measuring
    it goes past the walk's budget to orjson."""
    return {"items": [{"id": n, "tags": ["a"]} for n in range(400)], "deep": nested(levels - 1)}


def inner(levels: int) -> str:
    """The pointer, under the value, of the array one level past `levels` in nested()."""
    return "/0" * levels


def body(state: Any) -> bytes:
    return orjson.dumps({"threadId": "t", "runId": "r", "messages": [], "state": state})


def deep_body(levels: int, run_id: str) -> bytes:
    """body(nested(levels)) for a run of its own, written by hand: orjson writes no more than 254
    levels."""
    state = b"[" * levels + b"0" + b"]" * levels
    return b'{"threadId":"t","runId":"%s","messages":[],"state":%s}' % (run_id.encode(), state)


def depth_problem(error: agui.DecodeError) -> agui.Problem:
    """The one problem of a refused document, which must be a depth problem."""
    assert [p.kind for p in error.problems] == ["depth"], error.problems
    problem = error.problems[0]
    assert problem.message == f"nests deeper than {MAX_JSON_DEPTH} levels"
    return problem


def written(event: Any) -> Iterator[bytes]:
    """Every way out of an event, as bytes (the binary form has no arm for an UnknownEvent)."""
    yield agui.encode(event)
    yield agui.sse_frame(event)
    yield dumps(agui.to_json(event))
    yield orjson.dumps(agui.to_json(event))  # the whole document in one orjson call
    if not isinstance(event, agui.UnknownEvent):
        yield agui.encode_proto(event)
        yield proto_frame(event)


def refused(event: Any) -> agui.EncodeError:
    """Every way out refuses the event alike and writes nothing; the error agui.encode raised."""
    out = io.BytesIO()
    with pytest.raises(agui.EncodeError) as caught:
        out.write(agui.encode(event))
    for write in (agui.sse_frame, agui.to_json, agui.encode_proto, proto_frame):
        with pytest.raises(agui.EncodeError) as other:
            out.write(write(event))
        assert other.value.pointer == caught.value.pointer
    assert out.getvalue() == b""
    assert caught.value.message == f"nests deeper than {MAX_JSON_DEPTH} levels"
    return caught.value


# ── the limit ───────────────────────────────────────────────────────────────────────────────────


def test_the_limit_is_inside_what_orjson_reads_and_writes() -> None:
    """orjson reads 1024 levels and writes 254 (refusing the 1025th and the 255th); a document at
    the limit nests MAX_JSON_DEPTH levels plus the models around its value, which orjson writes in
    one call with room to spare."""
    assert orjson.loads(b"[" * 1024 + b"]" * 1024) is not None
    with pytest.raises(orjson.JSONDecodeError):
        orjson.loads(b"[" * 1025 + b"]" * 1025)
    orjson.dumps(nested(254))
    with pytest.raises(orjson.JSONEncodeError):
        orjson.dumps(nested(255))
    assert MAX_JSON_DEPTH + DEEPEST_POSITION + 100 <= 254
    assert _runtime._orjson_pad() == 254 - MAX_JSON_DEPTH + 1


def test_the_deepest_position_of_an_any_json_value() -> None:
    """DEEPEST_POSITION is what the spec gives: the levels of objects and arrays of models above
    the deepest any-JSON value (RUN_STARTED.input.messages[i].toolCalls[j].metadata, say)."""
    from codegen.load import SPEC_PATH, load_spec
    from codegen.model import Object, build

    spec = build(load_spec(SPEC_PATH))
    items = {d.name: d for d in spec.definitions}

    def above(name: str) -> int | None:
        """Levels from a definition's object down to its deepest any-JSON value's container."""
        item = items[name]
        if not isinstance(item, Object):
            found = [above(member) for member in item.members]
            return max((f for f in found if f is not None), default=None)
        best = 1 if item.open else None  # an open object's extra members are any JSON
        for field in item.fields:
            if field.type is not None:
                levels = of_type(field.type)
                if levels is not None:
                    best = max(best or 0, 1 + levels)
        return best

    def of_type(t: Any) -> int | None:
        if t.kind in ("json", "object"):
            return 0
        if t.kind == "list":
            levels = of_type(t.item)
            return None if levels is None else levels + 1
        if t.kind == "either":
            found = [of_type(o) for o in t.options]
            return max((f for f in found if f is not None), default=None)
        if t.kind in ("ref", "union"):
            return above(t.name)
        return None

    deepest = max(above(d.name) or 0 for d in spec.definitions)
    assert deepest == DEEPEST_POSITION


def test_the_binary_form_has_the_same_limit() -> None:
    from agui_generated import proto_wire

    assert proto_wire.MAX_DEPTH == MAX_JSON_DEPTH


# ── decoding ────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("shape", ["nested", "wide"])
def test_a_run_input_whose_state_nests_to_the_limit_decodes_and_encodes_again(shape: str) -> None:
    state = nested(MAX_JSON_DEPTH) if shape == "nested" else wide(MAX_JSON_DEPTH)
    data = body(state)
    run = agui.decode(data, agui.RunAgentInput, strict=True)
    assert run.state == state
    assert agui.decode_json(orjson.loads(data), agui.RunAgentInput).state == state
    assert orjson.loads(agui.encode(run)) == orjson.loads(data)
    assert orjson.loads(dumps(agui.to_json(run))) == orjson.loads(data)


@pytest.mark.parametrize("shape", ["nested", "wide"])
@pytest.mark.parametrize("strict", [True, False])
def test_a_state_one_level_deeper_is_refused_where_it_is(shape: str, strict: bool) -> None:
    """From text and from parsed values alike, with the pointer of the array one level past the
    limit."""
    if shape == "nested":
        state, where = nested(MAX_JSON_DEPTH + 1), "/state" + inner(MAX_JSON_DEPTH)
    else:
        state, where = wide(MAX_JSON_DEPTH + 1), "/state/deep" + inner(MAX_JSON_DEPTH - 1)
    with pytest.raises(agui.DecodeError) as caught:
        agui.decode(body(state), agui.RunAgentInput, strict=strict)
    assert depth_problem(caught.value).pointer == where
    with pytest.raises(agui.DecodeError) as caught:
        agui.decode_json(orjson.loads(body(state)), agui.RunAgentInput, strict=strict)
    assert depth_problem(caught.value).pointer == where
    with pytest.raises(agui.DecodeError) as caught:
        agui.decode(body(state).decode(), agui.RunAgentInput, strict=strict)  # a str
    assert depth_problem(caught.value).pointer == where


def test_the_limit_is_the_value_s_not_the_document_s() -> None:
    """The same state one level further down (RUN_STARTED.input.state) may still nest to the
    limit, and no more."""
    for levels, refused_at in ((MAX_JSON_DEPTH, None), (MAX_JSON_DEPTH + 1, MAX_JSON_DEPTH)):
        event = {
            "type": "RUN_STARTED",
            "threadId": "t",
            "runId": "r",
            "input": {"threadId": "t", "runId": "r", "messages": [], "state": nested(levels)},
        }
        if refused_at is None:
            started = agui.decode(orjson.dumps(event))
            assert orjson.loads(agui.encode(started)) == event
            continue
        with pytest.raises(agui.DecodeError) as caught:
            agui.decode(orjson.dumps(event))
        assert depth_problem(caught.value).pointer == "/input/state" + inner(refused_at)


def test_every_kind_of_any_json_value_is_measured() -> None:
    """An object member (metadata), a value member (a patch's value), an open object's own member
    (a patch operation's extra), a message's metadata inside a snapshot, an unknown event kept
    whole: at the limit each decodes and encodes again, one level more is refused there."""
    limit, past = MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1

    def cases(levels: int) -> list[tuple[dict[str, Any], str]]:
        return [
            (
                {
                    "type": "TEXT_MESSAGE_START",
                    "messageId": "m",
                    "metadata": {"x": nested(levels - 1)},
                },
                "/metadata/x" + inner(levels - 2),
            ),
            (
                {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "add", "path": "/a", "value": nested(levels)}],
                },
                "/delta/0/value" + inner(levels - 1),
            ),
            (
                {
                    "type": "STATE_DELTA",
                    "delta": [{"op": "remove", "path": "/a", "x": nested(levels)}],
                },
                "/delta/0/x" + inner(levels - 1),
            ),
            (
                {
                    "type": "MESSAGES_SNAPSHOT",
                    "messages": [
                        {
                            "id": "u",
                            "role": "user",
                            "content": "hi",
                            "metadata": {"x": nested(levels - 1)},
                        }
                    ],
                },
                "/messages/0/metadata/x" + inner(levels - 2),
            ),
            ({"type": "FUTURE_EVENT", "x": nested(levels - 1)}, "/x" + inner(levels - 2)),
        ]

    for document, _ in cases(limit):
        event = agui.decode(orjson.dumps(document))
        for out in written(event):
            assert out  # written, whichever way
        assert orjson.loads(agui.encode(event)) == document
    for document, where in cases(past):
        with pytest.raises(agui.DecodeError) as caught:
            agui.decode(orjson.dumps(document))
        assert depth_problem(caught.value).pointer == where, document["type"]


def test_a_short_document_is_not_measured(monkeypatch: pytest.MonkeyPatch) -> None:
    """Text too short, or with too few brackets, to nest past the limit is decoded without a look
    at its values' nesting; text that might is measured."""
    looked: list[Any] = []

    def measured(value: Any) -> bool:
        looked.append(value)
        return False

    monkeypatch.setattr(_runtime, "_nests_deeper_large", measured)
    agui.decode(body({"a": [1, 2]}), agui.RunAgentInput)
    agui.decode(body({"text": "x" * 10_000}), agui.RunAgentInput)
    assert looked == []
    assert not _runtime.may_nest_deeper(b"[" * MAX_JSON_DEPTH + b"]" * MAX_JSON_DEPTH)
    assert _runtime.may_nest_deeper(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1))
    agui.decode(body(wide(3)), agui.RunAgentInput)
    assert looked == [orjson.loads(body(wide(3)))]  # the document, measured once


# ── encoding ────────────────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize("shape", ["nested", "wide"])
def test_a_state_at_the_limit_is_written_every_way(shape: str) -> None:
    state = nested(MAX_JSON_DEPTH) if shape == "nested" else wide(MAX_JSON_DEPTH)
    event = agui.StateSnapshotEvent(snapshot=state)
    for out in written(event):
        assert out
    assert agui.decode_proto(agui.encode_proto(event)).snapshot == state
    assert agui.decode(agui.encode(event)) == event


@pytest.mark.parametrize("shape", ["nested", "wide"])
def test_a_state_one_level_deeper_is_refused_every_way(shape: str) -> None:
    """Also below the 254 levels orjson would write: the limit is agui's, the same as decoding's."""
    if shape == "nested":
        state, where = nested(MAX_JSON_DEPTH + 1), "/snapshot" + inner(MAX_JSON_DEPTH)
    else:
        state, where = wide(MAX_JSON_DEPTH + 1), "/snapshot/deep" + inner(MAX_JSON_DEPTH - 1)
    assert refused(agui.StateSnapshotEvent(snapshot=state)).pointer == where
    run = agui.RunAgentInput(thread_id="t", run_id="r", messages=(), state=state)
    with pytest.raises(agui.EncodeError) as caught:
        agui.encode(run)
    assert caught.value.pointer == where.replace("/snapshot", "/state")


def test_tuples_enum_members_and_shared_values_are_measured_as_written() -> None:
    """What is written as an array (a tuple) or as its value (an enum member) counts as that; a
    value shared at two depths is measured where it is deepest."""
    import enum

    class Shape(enum.Enum):
        DEEP = nested(MAX_JSON_DEPTH)

    assert agui.encode(agui.CustomEvent(name="n", value=nested(MAX_JSON_DEPTH - 1, ())))
    with pytest.raises(agui.EncodeError):
        agui.encode(agui.CustomEvent(name="n", value=nested(MAX_JSON_DEPTH, ())))
    assert agui.encode(agui.CustomEvent(name="n", value=Shape.DEEP))
    with pytest.raises(agui.EncodeError):
        agui.encode(agui.CustomEvent(name="n", value=[Shape.DEEP]))
    shared = nested(MAX_JSON_DEPTH - 2)
    ok = {"a": shared, "b": [shared]}  # b/0 holds it at its deepest: levels 3 to MAX_JSON_DEPTH
    assert agui.encode(agui.CustomEvent(name="n", value=ok))
    too_deep = {"a": shared, "b": [[shared]]}
    with pytest.raises(agui.EncodeError) as caught:
        agui.encode(agui.CustomEvent(name="n", value=too_deep))
    assert caught.value.pointer == "/value/b/0/0" + inner(MAX_JSON_DEPTH - 3)


@pytest.mark.parametrize(
    "document",
    [
        {"type": "STATE_SNAPSHOT", "snapshot": "levels"},  # a google.protobuf.Value
        {"type": "TEXT_MESSAGE_START", "messageId": "m", "metadata": {"x": "levels"}},  # a Struct
    ],
)
def test_the_binary_form_reads_to_the_limit_and_no_further(
    document: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Bytes from a peer that nest one level too deep are refused by the binary reader itself
    (the decode after it does not measure again), in a Value and in a Struct alike."""
    from agui_generated import proto_wire

    def made(levels: int) -> dict[str, Any]:
        if "snapshot" in document:
            return {**document, "snapshot": nested(levels)}
        return {**document, "metadata": {"x": nested(levels - 1)}}

    with monkeypatch.context() as patched:
        patched.setattr(proto_wire, "MAX_DEPTH", 1000)  # a peer that writes deeper
        at_limit = proto_wire.encode_event(made(MAX_JSON_DEPTH))
        past = proto_wire.encode_event(made(MAX_JSON_DEPTH + 1))
    assert agui.to_json(agui.decode_proto(at_limit)) == made(MAX_JSON_DEPTH)
    with pytest.raises(agui.DecodeError) as caught:
        agui.decode_proto(past)
    [problem] = caught.value.problems
    assert problem.kind == "protobuf"
    assert f"nests deeper than {MAX_JSON_DEPTH} levels" in problem.message


@pytest.mark.parametrize("levels", [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1])
def test_without_orjson_s_limit_a_walk_measures(
    levels: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An orjson that writes any depth (before 3.11.5) cannot measure: a large value is walked."""
    monkeypatch.setattr(_runtime, "_orjson_pad", lambda: None)
    assert _runtime.nests_deeper(wide(levels)) is (levels > MAX_JSON_DEPTH)
    assert _runtime.nests_deeper(nested(levels)) is (levels > MAX_JSON_DEPTH)


# ── the server ──────────────────────────────────────────────────────────────────────────────────


async def echo_state(run: agui.RunAgentInput) -> Any:
    yield agui.StateSnapshotEvent(snapshot=run.state)


@pytest.mark.parametrize("store", [None, "memory://"])
def test_the_server_takes_a_state_at_the_limit_and_refuses_one_level_more(
    store: str | None,
) -> None:
    """With a store too, which writes the input down again: at the limit the run streams the
    state back; one level more is a 400 naming where, never a 500 (a state of 1000 levels
    decoded but could not be encoded again, and the store's write of it failed)."""
    app = agui.AgentApp(echo_state, path="/agent", store=store)
    with live_server(app) as base, httpx.Client(timeout=30) as client:
        headers = {"Content-Type": "application/json"}
        at_limit = deep_body(MAX_JSON_DEPTH, "r-limit")
        answer = client.post(f"{base}/agent", content=at_limit, headers=headers)
        assert answer.status_code == 200, answer.text
        assert f'"snapshot":{orjson.dumps(nested(MAX_JSON_DEPTH)).decode()}' in answer.text
        assert "RUN_FINISHED" in answer.text
        for levels in (MAX_JSON_DEPTH + 1, 1000):  # 1000: it decoded, and failed to encode
            past = deep_body(levels, f"r-{levels}")
            answer = client.post(f"{base}/agent", content=past, headers=headers)
            assert answer.status_code == 400, answer.text
            [problem] = answer.json()["problems"]
            assert problem["kind"] == "depth"
            assert problem["pointer"] == "/state" + inner(MAX_JSON_DEPTH)
