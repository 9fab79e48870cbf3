"""The rules of agui.encode / agui.decode that the fixtures alone do not pin down."""

from __future__ import annotations

import json
import logging

import attrs
import pytest

import agui
from agui.wire.codec import make_converter


def _problems(data: bytes, cls: object = agui.Event, strict: bool = True) -> list[tuple[str, str]]:
    with pytest.raises(agui.DecodeError) as info:
        agui.decode(data, cls, strict=strict)
    return [(p.pointer, p.kind) for p in info.value.problems]


def test_encode_writes_spec_order_and_omits_absent_members() -> None:
    event = agui.TextMessageStartEvent(name="Ada", message_id="m1", timestamp=5)
    assert (
        agui.encode(event)
        == b'{"type":"TEXT_MESSAGE_START","timestamp":5,"messageId":"m1","name":"Ada"}'
    )


def test_required_null_is_kept_and_distinct_from_absent() -> None:
    """CUSTOM.value null is written as null; a missing value is an error, not a null."""
    event = agui.decode(b'{"type":"CUSTOM","name":"n","value":null}', strict=True)
    assert isinstance(event, agui.CustomEvent) and event.value is None
    assert agui.encode(event) == b'{"type":"CUSTOM","name":"n","value":null}'
    assert ("/value", "missing") in _problems(b'{"type":"CUSTOM","name":"n"}')


def test_null_inside_metadata_survives() -> None:
    raw = b'{"type":"STEP_STARTED","metadata":{"k":null},"stepName":"s"}'
    assert agui.encode(agui.decode(raw, strict=True)) == raw


def test_one_error_lists_every_problem_with_wire_pointers() -> None:
    raw = b'{"type":"MESSAGES_SNAPSHOT","messages":[{"id":"1","role":"user","content":[{"type":"image","source":{"type":"ftp","value":"x"}}]},{"id":2,"role":"system","content":"s"}]}'
    found = _problems(raw)
    assert ("/messages/0/content/0/source/type", "unknown_tag") in found
    assert ("/messages/1/id", "type") in found


def test_no_coercion() -> None:
    """ "12" is not 12, 1 is not true, true is not 1, 1.5 is not an integer."""
    assert ("/timestamp", "type") in _problems(b'{"type":"RAW","timestamp":"12","event":1}')
    assert ("/timestamp", "type") in _problems(b'{"type":"RAW","timestamp":true,"event":1}')
    assert ("/timestamp", "type") in _problems(b'{"type":"RAW","timestamp":1.5,"event":1}')
    assert ("/replace", "type") in _problems(
        b'{"type":"ACTIVITY_SNAPSHOT","messageId":"m","activityType":"a","content":{},"replace":1}'
    )
    # a wrong type is an error in tolerant mode too
    assert ("/delta", "type") in _problems(
        b'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":42}', strict=False
    )


def test_integral_float_is_an_integer() -> None:
    """JSON Schema (and JavaScript) read 2.0 as the integer 2; it comes back as 2."""
    event = agui.decode(b'{"type":"RAW","timestamp":2.0,"event":1}', strict=True)
    assert event.timestamp == 2 and type(event.timestamp) is int
    assert agui.encode(event) == b'{"type":"RAW","timestamp":2,"event":1}'


def test_any_json_values_keep_their_exact_types() -> None:
    """Opaque JSON is not normalised: 1.0 stays a float and is written back as 1.0."""
    raw = b'{"type":"STATE_SNAPSHOT","snapshot":{"a":1.0,"b":1,"c":[true,null,"x"]}}'
    event = agui.decode(raw, strict=True)
    assert type(event.snapshot["a"]) is float and type(event.snapshot["b"]) is int
    assert agui.encode(event) == raw


def test_bounds_on_timestamp_and_token_counts() -> None:
    assert ("/timestamp", "range") in _problems(
        b'{"type":"RAW","timestamp":9007199254740992,"event":1}'
    )
    assert ("/usage/0/inputTokens", "range") in _problems(
        b'{"type":"RUN_ERROR","message":"m","usage":[{"inputTokens":-1}]}'
    )


def test_tolerant_mode_strips_unknown_members_and_reports_each() -> None:
    warnings: list[agui.Problem] = []
    raw = b'{"type":"TEXT_MESSAGE_END","messageId":"m","future":1,"metadata":{"keep":1}}'
    event = agui.decode(raw, warnings=warnings)
    assert (
        agui.encode(event) == b'{"type":"TEXT_MESSAGE_END","metadata":{"keep":1},"messageId":"m"}'
    )
    assert [(w.pointer, w.kind) for w in warnings] == [("/future", "unknown_property")]
    assert ("/future", "unknown_property") in _problems(raw)


def test_tolerant_mode_drops_unknown_union_members_in_arrays_and_optional_members() -> None:
    warnings: list[agui.Problem] = []
    raw = b'{"type":"STATE_DELTA","delta":[{"op":"increment","path":"/a"},{"op":"remove","path":"/b"}]}'
    event = agui.decode(raw, warnings=warnings)
    assert [type(op) for op in event.delta] == [agui.RemoveOperation]
    assert [(w.pointer, w.kind) for w in warnings] == [("/delta/0", "unknown_tag")]
    warnings.clear()
    finished = agui.decode(
        b'{"type":"RUN_FINISHED","threadId":"t","runId":"r","outcome":{"type":"paused"}}',
        warnings=warnings,
    )
    assert finished.outcome is None and [(w.pointer, w.kind) for w in warnings] == [
        ("/outcome", "unknown_tag")
    ]


def test_unknown_union_member_in_a_required_member_is_an_error_even_when_tolerant() -> None:
    raw = b'{"type":"image","source":{"type":"ftp","value":"x"}}'
    assert ("/source/type", "unknown_tag") in _problems(raw, agui.ContentPart, strict=False)


def test_null_on_an_optional_member() -> None:
    raw = b'{"type":"TEXT_MESSAGE_START","messageId":"m","name":null}'
    assert ("/name", "null") in _problems(raw)
    warnings: list[agui.Problem] = []
    assert agui.decode(raw, warnings=warnings).name is None
    assert [(w.pointer, w.kind) for w in warnings] == [("/name", "null")]


def test_unknown_event_type_is_passed_on_when_tolerant() -> None:
    warnings: list[agui.Problem] = []
    raw = b'{"type":"FUTURE_EVENT","x":1}'
    event = agui.decode(raw, warnings=warnings)
    assert event == agui.UnknownEvent(type="FUTURE_EVENT", raw={"type": "FUTURE_EVENT", "x": 1})
    assert [(w.pointer, w.kind) for w in warnings] == [("/type", "unknown_tag")]
    assert agui.encode(event) == raw
    assert _problems(raw) == [("/type", "unknown_tag")]


def test_warnings_are_logged_when_no_list_is_given(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agui"):
        agui.decode(b'{"type":"TEXT_MESSAGE_END","messageId":"m","zzz":1}')
    assert "/zzz" in caplog.text


def test_open_objects_keep_unknown_members() -> None:
    """JSON Patch operations are open: a remove with a leftover value is valid and survives."""
    raw = b'{"op":"remove","path":"/a","value":3}'
    op = agui.decode(raw, agui.JsonPatchOperation, strict=True)
    assert isinstance(op, agui.RemoveOperation) and op.extra == {"value": 3}
    assert agui.encode(op) == raw


def test_pointer_escapes_tilde_and_slash() -> None:
    assert ("/a~1b~0c", "unknown_property") in _problems(
        b'{"type":"TEXT_MESSAGE_END","messageId":"m","a/b~c":1}'
    )


def test_not_json_and_not_an_object() -> None:
    assert _problems(b'{"type":') == [("", "json")]
    assert _problems(b"[1]") == [("", "type")]
    assert _problems('"\u00e9"'.encode()) == [("", "type")]


def test_decoding_as_a_member_class_checks_its_tag() -> None:
    raw = b'{"type":"TEXT_MESSAGE_END","messageId":"m"}'
    assert ("/type", "const") in _problems(raw, agui.TextMessageStartEvent)


def test_models_are_frozen_keyword_only_and_hold_tuples() -> None:
    event = agui.decode(
        b'{"type":"RUN_FINISHED","threadId":"t","runId":"r","usage":[{"inputTokens":1}]}'
    )
    assert isinstance(event.usage, tuple)
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.run_id = "x"  # type: ignore[misc]
    with pytest.raises(TypeError):
        agui.RunFinishedEvent("t", "r")  # type: ignore[misc]
    with pytest.raises(TypeError, match="run_id"):
        agui.RunFinishedEvent(thread_id="t")  # type: ignore[call-arg]


def test_discriminators_are_class_constants() -> None:
    assert agui.TextMessageStartEvent.type is agui.EventType.TEXT_MESSAGE_START
    assert agui.ReasoningMessageStartEvent(message_id="m").role == "reasoning"
    assert agui.encode(agui.ReasoningMessageStartEvent(message_id="m")) == (
        b'{"type":"REASONING_MESSAGE_START","messageId":"m","role":"reasoning"}'
    )


def test_encode_rejects_what_is_not_a_model_or_not_json() -> None:
    with pytest.raises(agui.EncodeError):
        agui.encode({"type": "RAW"})
    with pytest.raises(agui.EncodeError):
        agui.encode(agui.RawEvent(event={1, 2}))


def test_cattrs_converter_uses_the_generated_hooks() -> None:
    converter = make_converter()
    event = converter.structure({"type": "RUN_STARTED", "threadId": "t", "runId": "r"}, agui.Event)
    assert isinstance(event, agui.RunStartedEvent)
    assert converter.unstructure(event) == {"type": "RUN_STARTED", "threadId": "t", "runId": "r"}
    with pytest.raises(agui.DecodeError):
        converter.structure({"type": "RUN_STARTED"}, agui.Event)


UNKNOWN_MEMBER = {"type": "TEXT_MESSAGE_END", "messageId": "m", "future": 1}


def test_tolerant_cattrs_converter_reports_into_the_warnings_list(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """make_converter(strict=False, warnings=lst): what tolerant decoding removes is appended to
    the list (and not logged), as agui.decode does."""
    warnings: list[agui.Problem] = []
    converter = make_converter(strict=False, warnings=warnings)
    with caplog.at_level(logging.WARNING, logger="agui"):
        event = converter.structure(dict(UNKNOWN_MEMBER), agui.Event)
    assert event == agui.TextMessageEndEvent(message_id="m")
    assert [(w.pointer, w.kind) for w in warnings] == [("/future", "unknown_property")]
    assert caplog.records == []


def test_tolerant_cattrs_converter_logs_without_a_warnings_list(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Without a list, the warning goes to the "agui" logger."""
    converter = make_converter(strict=False)
    with caplog.at_level(logging.WARNING, logger="agui"):
        event = converter.structure(dict(UNKNOWN_MEMBER), agui.Event)
    assert event == agui.TextMessageEndEvent(message_id="m")
    [record] = caplog.records
    assert record.name == "agui" and record.levelno == logging.WARNING
    assert "/future" in record.getMessage()


def test_tolerant_cattrs_converter_passes_an_unknown_event_on() -> None:
    """An event of an unknown type comes back as UnknownEvent, with the unknown_tag warning, and
    agui.encode writes it as received."""
    warnings: list[agui.Problem] = []
    raw = b'{"type":"FUTURE_EVENT","payload":{"a":[1,2.5,null]},"n":1}'
    event = make_converter(strict=False, warnings=warnings).structure(json.loads(raw), agui.Event)
    assert event == agui.UnknownEvent(type="FUTURE_EVENT", raw=json.loads(raw))
    assert [(w.pointer, w.kind) for w in warnings] == [("/type", "unknown_tag")]
    assert agui.encode(event) == raw


def test_strict_cattrs_converter_raises_on_what_tolerant_mode_removes() -> None:
    warnings: list[agui.Problem] = []
    converter = make_converter(warnings=warnings)  # strict is the default
    with pytest.raises(agui.DecodeError) as info:
        converter.structure(dict(UNKNOWN_MEMBER), agui.Event)
    assert [(p.pointer, p.kind) for p in info.value.problems] == [("/future", "unknown_property")]
    with pytest.raises(agui.DecodeError) as info:
        converter.structure({"type": "FUTURE_EVENT"}, agui.Event)
    assert [(p.pointer, p.kind) for p in info.value.problems] == [("/type", "unknown_tag")]
    assert warnings == []


def test_protocol_version() -> None:
    assert agui.PROTOCOL_VERSION == "1.0"
