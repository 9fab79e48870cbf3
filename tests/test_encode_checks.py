"""agui.encode writes only valid documents: every member it writes is checked, at low cost.

One case per kind of violation: the JSON type of a member (str, int, bool, object, array, a
model of the right class, in a union slot too), a bool where an int goes, an enum value, a
bound, a pattern, minItems, None in a required member, and any-JSON values that are not JSON
(NaN and the infinities at any depth, sets, non-string keys, arbitrary objects), plus a dict
passed for a model. Each case asserts the exact JSON pointer (in wire names) and that nothing is
written, on every way out: agui.encode, sse_frame, to_json and the binary transport.

Then properties over the whole spec (strategies of tests/test_properties.py): a valid model encodes
byte for byte as the unchecked encoder did (an independent reference written here from the spec),
and a wrong value in any member of any definition is refused with that member's pointer.
"""

from __future__ import annotations

import enum
import io
import math
import pickle
import uuid
import warnings
from collections import OrderedDict
from typing import Any

import attrs
import orjson
import pytest
from agui_generated import _runtime
from hypothesis import given, settings, strategies as st

import agui
from agui import errors
from agui.wire.codec import dumps, make_converter
from agui.wire.proto import proto_frame

from .test_properties import EXAMPLES, OBJECTS, SPEC, instances

NAN, INF = float("nan"), float("inf")


def refused(event: Any) -> agui.EncodeError:
    """The event is refused alike by every way of writing it, and nothing is written: return the
    error agui.encode raised."""
    out = io.BytesIO()
    with pytest.raises(agui.EncodeError) as info:
        out.write(agui.encode(event))
    assert out.getvalue() == b""
    error = info.value
    for write in (agui.sse_frame, agui.to_json, agui.encode_proto, proto_frame):
        with pytest.raises(agui.EncodeError) as other:
            out.write(write(event))
        assert out.getvalue() == b""
        assert (other.value.pointer, other.value.message) == (error.pointer, error.message)
    assert str(error) == f"{error.pointer}: {error.message}" if error.pointer else error.message
    return error


def pointer_of(event: Any) -> str:
    return refused(event).pointer


def start(**members: Any) -> agui.TextMessageStartEvent:
    return agui.TextMessageStartEvent(**({"message_id": "m"} | members))


def snapshot(messages: Any) -> agui.MessagesSnapshotEvent:
    return agui.MessagesSnapshotEvent(messages=messages)


def finished(**members: Any) -> agui.RunFinishedEvent:
    return agui.RunFinishedEvent(thread_id="t", run_id="r", **members)


def delta(*ops: Any) -> agui.StateDeltaEvent:
    return agui.StateDeltaEvent(delta=ops)


def assistant(*calls: Any) -> agui.MessagesSnapshotEvent:
    return snapshot((agui.AssistantMessage(id="a", tool_calls=calls),))


# ── the JSON type of each member ─────────────────────────────────────────────────────────────


def test_a_string_member_holding_an_int() -> None:
    """The issue's example: messageId 5 was written as "messageId":5."""
    error = refused(start(message_id=5))
    assert error.pointer == "/messageId"
    assert str(error) == "/messageId: expected a string, got int 5"


@pytest.mark.parametrize(
    ("event", "pointer", "message"),
    [
        (agui.RawEvent(event=1, timestamp="12"), "/timestamp", "expected an integer, got str '12'"),
        (agui.RawEvent(event=1, timestamp=1.5), "/timestamp", "expected an integer, got float 1.5"),
        (agui.RawEvent(event=1, timestamp=2.0), "/timestamp", "expected an integer, got float 2.0"),
        (
            agui.ActivitySnapshotEvent(message_id="m", activity_type="a", content={}, replace=1),
            "/replace",
            "expected a boolean, got int 1",
        ),
        (
            agui.ActivitySnapshotEvent(message_id="m", activity_type="a", content=[1]),
            "/content",
            "expected an object (a dict), got list",
        ),
        (snapshot("m"), "/messages", "expected an array (a tuple or a list), got str 'm'"),
        (snapshot({"m": 1}), "/messages", "expected an array (a tuple or a list), got dict"),
        (
            snapshot((agui.UserMessage(id="u", content=5),)),
            "/messages/0/content",
            "expected a string or an array, got int 5",
        ),
        (
            assistant(agui.ToolCall(id="c", function="f")),
            "/messages/0/toolCalls/0/function",
            "expected a FunctionCall, got str 'f'",
        ),
        (
            assistant(agui.ToolCall(id="c", function=agui.FunctionCall(name="f", arguments={}))),
            "/messages/0/toolCalls/0/function/arguments",
            "expected a string, got dict",
        ),
        (
            finished(outcome=agui.RunFinishedSuccessOutcome(pending_tool_call_ids=("a", 1))),
            "/outcome/pendingToolCallIds/1",
            "expected a string, got int 1",
        ),
    ],
)
def test_a_member_of_the_wrong_json_type(event: Any, pointer: str, message: str) -> None:
    error = refused(event)
    assert (error.pointer, error.message) == (pointer, message)


def test_a_bool_is_not_an_int() -> None:
    """bool is a subclass of int in Python; on the wire true is not 1."""
    error = refused(agui.RawEvent(event=1, timestamp=True))
    assert (error.pointer, error.message) == ("/timestamp", "expected an integer, got bool True")
    usage = agui.TokenUsage(input_tokens=False)
    assert pointer_of(finished(usage=(usage,))) == "/usage/0/inputTokens"


def test_an_enum_member_holds_the_enum_or_its_exact_string() -> None:
    error = refused(start(role="narrator"))
    assert error.pointer == "/role"
    assert (
        error.message == "'narrator' is not a TextMessageRole (developer, system, assistant, user)"
    )
    assert pointer_of(start(role="Assistant")) == "/role"  # exact: case matters
    assert pointer_of(start(role=1)) == "/role"
    subtype = agui.ReasoningEncryptedValueEvent(
        subtype="tool_call", entity_id="e", encrypted_value="v"
    )
    assert pointer_of(subtype) == "/subtype"
    # the enum's own member and its exact wire string are the same on the wire
    wire = b'{"type":"TEXT_MESSAGE_START","messageId":"m","role":"user"}'
    assert agui.encode(start(role=agui.TextMessageRole.USER)) == wire
    assert agui.encode(start(role="user")) == wire


def test_a_range_error_names_the_bounds_there_are() -> None:
    """The interval where the spec bounds both sides; the one bound where it bounds one (a fork's
    `min: 0` alone), never an interval ending in None. The every-form fork runs it through the
    codec and `agui validate` (tests/codegen/every_form_checks.py)."""
    assert _runtime.outside(-2, 0, 100) == "-2 is outside [0, 100]"
    assert _runtime.outside(-2, 0, None) == "-2 must be ≥ 0"
    assert _runtime.outside(0.25, None, 0.1) == "0.25 must be ≤ 0.1"


@pytest.mark.parametrize(
    ("event", "pointer"),
    [
        (agui.RawEvent(event=1, timestamp=2**53), "/timestamp"),
        (agui.RawEvent(event=1, timestamp=-(2**53)), "/timestamp"),
        (finished(usage=(agui.TokenUsage(input_tokens=-1),)), "/usage/0/inputTokens"),
        (
            agui.RunStartedEvent(
                thread_id="t",
                run_id="r",
                input=agui.RunAgentInput(thread_id="t", run_id="r", messages=(), state=1),
                timestamp=2**60,
            ),
            "/timestamp",
        ),
    ],
)
def test_an_integer_outside_its_bounds(event: Any, pointer: str) -> None:
    error = refused(event)
    assert error.pointer == pointer
    assert "is outside [" in error.message
    # the bounds themselves are valid
    agui.encode(agui.RawEvent(event=1, timestamp=2**53 - 1))
    agui.encode(agui.RawEvent(event=1, timestamp=-(2**53) + 1))
    agui.encode(finished(usage=(agui.TokenUsage(input_tokens=0),)))


@pytest.mark.parametrize(
    ("op", "pointer"),
    [
        (agui.AddOperation(path="todos/0", value=1), "/delta/0/path"),
        (agui.RemoveOperation(path="/a~2"), "/delta/0/path"),
        (agui.MoveOperation(from_="a", path="/b"), "/delta/0/from"),
        (agui.CopyOperation(from_="/a", path="/b~"), "/delta/0/path"),
    ],
)
def test_a_string_that_does_not_match_its_pattern(op: Any, pointer: str) -> None:
    """A JSON Patch path is a JSON Pointer (the pattern of JsonPointer, inherited from the alias)."""
    error = refused(delta(agui.AddOperation(path="/ok", value=1), op))
    assert error.pointer == pointer.replace("/delta/0/", "/delta/1/")
    assert error.message.endswith("does not match ^(/([^/~]|~[01])*)*$")
    # matching strings, remembered after the first time, still pass
    for _ in range(2):
        agui.encode(delta(agui.AddOperation(path="", value=1), agui.RemoveOperation(path="/a~0~1")))


def test_an_array_shorter_than_its_min_items() -> None:
    error = refused(finished(outcome=agui.RunFinishedInterruptOutcome(interrupts=())))
    assert (error.pointer, error.message) == ("/outcome/interrupts", "needs at least 1 item")


@pytest.mark.parametrize(
    ("event", "pointer", "expected"),
    [
        (start(message_id=None), "/messageId", "a string"),
        (agui.TextMessageContentEvent(message_id="m", delta=None), "/delta", "a string"),
        (snapshot(None), "/messages", "an array (a tuple or a list)"),
        (
            snapshot((agui.ActivityMessage(id="a", activity_type="t", content=None),)),
            "/messages/0/content",
            "an object (a dict)",
        ),
        (
            snapshot((agui.ToolMessage(id="t", content="c", tool_call_id=None),)),
            "/messages/0/toolCallId",
            "a string",
        ),
        (
            assistant(agui.ToolCall(id="c", function=None)),
            "/messages/0/toolCalls/0/function",
            "a FunctionCall",
        ),
    ],
)
def test_none_in_a_required_member(event: Any, pointer: str, expected: str) -> None:
    """None means "absent", and a required member cannot be absent (where null is a value, as in
    CUSTOM.value, None is written as null)."""
    error = refused(event)
    assert (error.pointer, error.message) == (
        pointer,
        f"expected {expected}, got None (the member is required)",
    )
    assert agui.encode(agui.CustomEvent(name="n", value=None)).endswith(b'"value":null}')


@pytest.mark.parametrize(
    ("event", "pointer", "expected"),
    [
        (snapshot((agui.TextPart(text="t"),)), "/messages/0", "a Message (DeveloperMessage, "),
        (
            # the same tag ("success") in another union is still another class
            finished(outcome=agui.SubagentFinishedSuccessOutcome()),
            "/outcome",
            "a RunFinishedOutcome (RunFinishedSuccessOutcome, RunFinishedInterruptOutcome or "
            "RunFinishedCancelledOutcome)",
        ),
        (
            snapshot(
                (
                    agui.UserMessage(
                        id="u",
                        content=(agui.TextPart(text="t"), agui.UrlSource(value="https://x")),
                    ),
                )
            ),
            "/messages/0/content/1",
            SPEC.expected_models["ContentPart"],  # the union's members, as the spec lists them
        ),
        (
            snapshot(
                (
                    agui.UserMessage(
                        id="u", content=(agui.ImagePart(source=agui.TextPart(text="x")),)
                    ),
                )
            ),
            "/messages/0/content/0/source",
            "a PartSource (DataSource, UrlSource or FileSource)",
        ),
        (
            agui.ToolCallResultEvent(message_id="m", tool_call_id="c", content=({"type": "text"},)),
            "/content/0",
            "a ContentPart (",
        ),
        (
            agui.RunStartedEvent(thread_id="t", run_id="r", input=finished()),
            "/input",
            "a RunAgentInput",
        ),
    ],
)
def test_a_model_of_the_wrong_class(event: Any, pointer: str, expected: str) -> None:
    error = refused(event)
    assert error.pointer == pointer
    assert error.message.startswith(f"expected {expected}")


# ── any-JSON values ──────────────────────────────────────────────────────────────────────────


@pytest.mark.parametrize(("number", "name"), [(NAN, "NaN"), (INF, "Infinity"), (-INF, "-Infinity")])
@pytest.mark.parametrize("with_null", [False, True])
def test_nan_and_the_infinities_inside_state_at_depth(
    number: float, name: str, with_null: bool
) -> None:
    """orjson writes NaN and the infinities as null: the issue's example wrote {"x":null}. A null
    elsewhere in the value (or none) changes nothing."""
    state: dict[str, Any] = {"a": {"b": [1, 2.5, {"c": number}]}}
    if with_null:
        state["z"] = None
    error = refused(agui.StateSnapshotEvent(snapshot=state))
    assert (error.pointer, error.message) == ("/snapshot/a/b/2/c", f"{name} is not a JSON number")
    assert pointer_of(agui.StateSnapshotEvent(snapshot={"x": number})) == "/snapshot/x"
    assert pointer_of(agui.CustomEvent(name="n", value=number)) == "/value"
    body = agui.RunAgentInput(thread_id="t", run_id="r", messages=(), state={"k": [number]})
    assert (
        pointer_of(agui.RunStartedEvent(thread_id="t", run_id="r", input=body))
        == "/input/state/k/0"
    )
    assert (
        pointer_of(delta(agui.ReplaceOperation(path="/x", value=(None, number))))
        == "/delta/0/value/1"
    )


def test_a_set_is_not_json() -> None:
    error = refused(agui.RawEvent(event={"tags": {1, 2}}))
    assert (error.pointer, error.message) == ("/event/tags", "set is not JSON (a list is)")
    assert pointer_of(agui.RawEvent(event=frozenset())) == "/event"


def test_an_object_key_that_is_not_a_string() -> None:
    error = refused(agui.CustomEvent(name="n", value={"a": {1: "x"}}))
    assert (error.pointer, error.message) == (
        "/value/a",
        "an object key must be a string, not int 1",
    )
    assert pointer_of(agui.StateSnapshotEvent(snapshot={None: 1})) == "/snapshot"


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (object(), "object is not JSON"),
        (b"bytes", "bytes is not JSON (a string is; base64 for binary data)"),
        (
            agui.TextPart(text="t"),
            "TextPart is a model, not JSON; turn it into JSON first (to_json)",
        ),
        (complex(1, 2), "complex is not JSON"),
    ],
)
def test_an_arbitrary_object_inside_metadata(value: Any, message: str) -> None:
    error = refused(agui.StepStartedEvent(step_name="s", metadata={"o": [1, value]}))
    assert (error.pointer, error.message) == ("/metadata/o/1", message)


def test_datetimes_and_dataclasses_are_not_json_either() -> None:
    """orjson would write them on its own; the encoder does not let it."""
    import dataclasses
    import datetime

    @dataclasses.dataclass
    class Point:
        x: int

    assert (
        pointer_of(agui.CustomEvent(name="n", value={"at": datetime.date(2026, 1, 1)}))
        == "/value/at"
    )
    assert pointer_of(agui.CustomEvent(name="n", value=[Point(1)])) == "/value/0"


def test_pointers_escape_slash_and_tilde() -> None:
    event = agui.StepStartedEvent(step_name="s", metadata={"a/b": {"c~d": NAN}})
    assert pointer_of(event) == "/metadata/a~1b/c~0d"


def test_a_cycle_is_not_json() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    error = refused(agui.CustomEvent(name="n", value={"l": loop}))
    assert (error.pointer, error.message) == ("/value/l/1", "the list contains itself")


def test_the_members_an_open_object_keeps_are_checked_too() -> None:
    op = agui.RemoveOperation(path="/x", extra={"value": NAN})
    assert pointer_of(delta(op)) == "/delta/0/value"
    assert pointer_of(delta(agui.RemoveOperation(path="/x", extra={1: 2}))) == "/delta/0"


def test_what_is_json_is_written() -> None:
    """Tuples are arrays, subclasses of str and int are strings and integers, integers of any
    size and nesting to the limit the decoder reads (MAX_JSON_DEPTH) are written; members holding
    a StrEnum or an IntEnum member are written as the plain string or integer."""

    class Color(enum.StrEnum):
        RED = "red"

    class Level(enum.IntEnum):
        HIGH = 3

    deep: Any = "leaf"
    for _ in range(_runtime.MAX_JSON_DEPTH - 1):  # inside `value`, the first level
        deep = [deep]
    value = {"t": (1, 2.5, None), "c": Color.RED, "l": Level.HIGH, "big": 2**70, "deep": deep}
    value["od"] = OrderedDict(a=1)
    event = agui.CustomEvent(name=Color.RED, value=value, timestamp=Level.HIGH)
    assert orjson.loads(agui.encode(event)) == {
        "type": "CUSTOM",
        "timestamp": 3,
        "name": "red",
        "value": {
            "t": [1, 2.5, None],
            "c": "red",
            "l": 3,
            "big": 2**70,
            "deep": deep,
            "od": {"a": 1},
        },
    }
    assert agui.to_json(event)["name"] == "red" and type(agui.to_json(event)["name"]) is str


def test_enum_members_and_uuids_inside_json_are_written_as_orjson_writes_them() -> None:
    """orjson writes them as JSON (a member as its value, a UUID as its string) and telling them
    apart would cost a walk of every value, so they pass, on every way out alike."""

    class Mode(enum.Enum):
        FAST = "fast"

    event = agui.CustomEvent(name="n", value={"m": Mode.FAST, "id": uuid.UUID(int=1), "x": None})
    assert agui.encode(event) == (
        b'{"type":"CUSTOM","name":"n","value":'
        b'{"m":"fast","id":"00000000-0000-0000-0000-000000000001","x":null}}'
    )


# ── what is not a model ──────────────────────────────────────────────────────────────────────


def test_a_dict_passed_for_a_model_says_what_to_do() -> None:
    wire = {"type": "TEXT_MESSAGE_CONTENT", "messageId": "m", "delta": "hi"}
    error = refused(wire)
    assert error.pointer == ""
    assert str(error) == error.message
    assert error.message.startswith(
        "cannot encode dict: not an AG-UI model; build events with the model classes "
        "(agui.TextMessageContentEvent, ...)"
    )
    assert "agui.decode_json(value)" in error.message
    assert agui.encode(agui.decode_json(wire)) == orjson.dumps(wire)
    other = refused({"a": 1})
    assert "decode_json" not in other.message
    assert refused("TEXT_MESSAGE_CONTENT").message.startswith(
        "cannot encode str: not an AG-UI model"
    )
    assert refused(agui.TextMessageContentEvent).message.startswith("cannot encode type:")


def test_a_subclass_of_a_model_is_no_model() -> None:
    @attrs.frozen(kw_only=True)
    class Mine(agui.StepStartedEvent):
        pass

    assert refused(Mine(step_name="s")).message.startswith("cannot encode Mine: not an AG-UI model")


# ── UnknownEvent ─────────────────────────────────────────────────────────────────────────────


def test_an_unknown_event_is_written_as_received_and_checked() -> None:
    """What tolerant decoding makes of an event of an unknown type is written back as received,
    and checked like any other event: its raw object is JSON, its type is UnknownEvent.type and
    that is a type this package does not know."""
    raw = b'{"type":"FUTURE","x":[1,2.5,null],"y":{"z":"w"}}'
    event = agui.decode(raw, warnings=[])
    assert type(event) is agui.UnknownEvent
    assert agui.encode(event) == raw
    assert agui.to_json(event) == orjson.loads(raw)
    nan = agui.UnknownEvent(type="FUTURE", raw={"type": "FUTURE", "x": [NAN]})
    with pytest.raises(agui.EncodeError) as info:
        agui.encode(nan)
    assert info.value.pointer == "/x/0"
    cases = [
        (agui.UnknownEvent(type="RUN_STARTED", raw={"type": "RUN_STARTED"}), "/type"),
        (agui.UnknownEvent(type="FUTURE", raw={"type": "PAST"}), "/type"),
        (agui.UnknownEvent(type="FUTURE", raw={}), "/type"),
        (agui.UnknownEvent(type=5, raw={"type": 5}), "/type"),
        (agui.UnknownEvent(type="FUTURE", raw=["FUTURE"]), ""),
        (agui.UnknownEvent(type="FUTURE", raw={"type": "FUTURE", 1: 2}), ""),
    ]
    for bad, pointer in cases:
        for write in (agui.encode, agui.to_json, agui.sse_frame):
            with pytest.raises(agui.EncodeError) as info:
                write(bad)
            assert info.value.pointer == pointer, (bad, write)
    with pytest.raises(agui.EncodeError, match="is a known event type: build a RunStartedEvent"):
        agui.encode(cases[0][0])


# ── the error ────────────────────────────────────────────────────────────────────────────────


def test_the_error_is_one_class_everywhere_and_keeps_its_pointer() -> None:
    assert agui.EncodeError is errors.EncodeError is _runtime.EncodeError
    assert issubclass(agui.EncodeError, agui.AguiError) and issubclass(agui.EncodeError, ValueError)
    error = refused(start(message_id=5))
    assert (error.pointer, error.message) == ("/messageId", "expected a string, got int 5")
    back = pickle.loads(pickle.dumps(error))
    assert (str(back), back.pointer, back.message) == (str(error), error.pointer, error.message)
    plain = agui.EncodeError("cannot encode X as protobuf: ...")
    assert (plain.pointer, str(plain)) == ("", "cannot encode X as protobuf: ...")


def test_the_converter_checks_too() -> None:
    converter = make_converter()
    with pytest.raises(agui.EncodeError) as info:
        converter.unstructure(start(message_id=5))
    assert info.value.pointer == "/messageId"


def test_an_array_of_json_values_points_at_the_item() -> None:
    """The runtime's writer for list[json] members (no member of the spec has one yet). An item
    of list[json] is never null (tests/test_codegen_every_form.py runs such a member)."""
    items = [1, "a", {"ok": [2.5, None]}, {"bad": NAN}]
    with pytest.raises(agui.EncodeError) as info:
        _runtime.w_json_items(items, "values", _runtime.json_plain)
    assert info.value.pointer == "/values/3/bad"
    assert _runtime.w_json_items(items[:3], "values", _runtime.json_plain) == items[:3]


def test_dumps_still_writes_deep_values() -> None:
    deep: Any = 0
    for _ in range(300):
        deep = [deep]
    assert orjson.loads(dumps(deep)) == deep


# ── properties over the whole spec ───────────────────────────────────────────────────────────


def reference(x: Any) -> Any:
    """The JSON object of a model as the encoders wrote it before they checked anything, derived
    from the spec here: wire names in spec order, the constants, absent optional members left
    out, enum members as their strings, arrays as lists, any-JSON values as they are, and an
    open object's other members after the named ones."""
    obj = OBJECTS[type(x).__name__]
    out: dict[str, Any] = {}
    for f in obj.fields:
        if f.is_class_constant:
            out[f.wire] = f.wire_value
            continue
        value = getattr(x, f.py)
        if value is None and not f.required:
            continue
        out[f.wire] = value if f.type is None else _reference_value(value, f.type)
    if obj.open and x.extra:
        for key, value in x.extra.items():
            out.setdefault(key, value)
    return out


def _reference_value(value: Any, t: Any) -> Any:
    if t.kind in ("ref", "union"):
        return reference(value)
    if t.kind == "list":
        return [_reference_value(item, t.item) for item in value]
    if t.kind == "either":
        return value if isinstance(value, str) else _reference_value(value, t.options[1])
    if t.kind == "enum":
        return value.value if isinstance(value, enum.Enum) else value
    return value


@pytest.mark.parametrize("name", list(OBJECTS))
@EXAMPLES
@given(data=st.data())
def test_a_valid_model_encodes_byte_for_byte_as_before(name: str, data: st.DataObject) -> None:
    """The checks change nothing for a valid model: the same bytes as the unchecked encoding,
    and to_json gives the same values."""
    x = data.draw(instances(name), label=name)
    assert agui.encode(x) == orjson.dumps(reference(x))
    assert agui.to_json(x) == reference(x)


def _wrong_values(t: Any, nullable: bool) -> list[Any]:
    """Values a member of type `t` must refuse, each refused at the member itself."""
    wrong: dict[str, list[Any]] = {
        "str": [5, None, b"s", ["s"]],
        "int": ["5", True, 1.5, None],
        "number": ["5", True, None, NAN, float("inf")],
        "bool": [1, "true", None],
        "enum": ["not a value", 5, None],
        "json": [NAN, {1, 2}, object()] + ([] if nullable else [None]),
        "object": [[], "o", None, float("-inf")],
        "ref": [object(), {"a": 1}, None, "x"],
        "union": [object(), {"type": "x"}, None],
        "list": ["abc", {"a": 1}, None, {1}],
    }
    if t.kind == "either":  # a value of a JSON kind none of the alternatives is
        kinds = {o.json_kind for o in t.options}
        other = {"string": "s", "number": 5, "boolean": True, "array": [5], "object": {"a": 1}}
        return [None, *(v for kind, v in other.items() if kind not in kinds)]
    return wrong[t.kind]


def _members() -> list[tuple[str, str]]:
    return [
        (o.name, f.py)
        for o in SPEC.objects
        for f in o.fields
        if not f.is_class_constant and f.const is None
    ]


@pytest.mark.parametrize(("name", "member"), _members())
@settings(EXAMPLES, max_examples=10)
@given(data=st.data())
def test_a_wrong_value_in_any_member_is_refused_at_that_member(
    name: str, member: str, data: st.DataObject
) -> None:
    """Every member of every definition checks what it holds: a wrong value there is an
    EncodeError whose pointer is that member's wire name (for optional members None is absent,
    which is fine)."""
    obj = OBJECTS[name]
    field = next(f for f in obj.fields if f.py == member)
    assert field.type is not None
    x = data.draw(instances(name), label=name)
    for bad in _wrong_values(field.type, field.nullable):
        if bad is None and not field.required:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # a deprecated member x holds
            changed = attrs.evolve(x, **{member: bad})
        with pytest.raises(agui.EncodeError) as info:
            agui.encode(changed)
        assert info.value.pointer == "/" + field.wire, (bad, info.value)
        with pytest.raises(agui.EncodeError) as other:
            agui.to_json(changed)
        assert other.value.pointer == info.value.pointer


def test_integral_floats_in_json_stay_floats() -> None:
    """Any-JSON values keep their exact types (docs/wire.md): 1.0 is written 1.0, finite floats
    pass, -0.0 too."""
    value = [1.0, -0.0, 1e300, math.pi]
    wire = agui.encode(agui.CustomEvent(name="n", value=value))
    assert wire == b'{"type":"CUSTOM","name":"n","value":' + orjson.dumps(value) + b"}"
    assert wire.startswith(b'{"type":"CUSTOM","name":"n","value":[1.0,-0.0,')
