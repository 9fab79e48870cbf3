"""The pydantic binding (generated/agui_pydantic, made by datamodel-code-generator from the JSON
Schema) agrees with strict agui.decode on every golden fixture, and converts both ways.

Wire documents are validated with `by_name=False` (snake_case keys are not part of the contract;
the models accept them only when constructing in Python) and written back with `by_alias=True,
exclude_unset=True`: absent members stay absent, required nulls stay null.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import agui_pydantic
import httpx
import pytest
from pydantic import MISSING, BaseModel, TypeAdapter, ValidationError

import agui
from agui.wire.codec import DEFINITIONS, TAGS
from codegen.load import SPEC_PATH, read_spec
from codegen.model import Spec, build

from .conftest import FIXTURES, ROOT


def _cases(kind: str) -> list[Path]:
    return sorted(
        p for p in FIXTURES.glob(f"*/{kind}/*.json") if not p.name.endswith(".expect.json")
    )


def _id(path: Path) -> str:
    return f"{path.parent.parent.name}/{path.parent.name}/{path.stem}"


@cache
def adapter(name: str) -> TypeAdapter[Any]:
    return TypeAdapter(getattr(agui_pydantic, name))


def wire(name: str, value: Any) -> bytes:
    return adapter(name).dump_json(value, by_alias=True, exclude_unset=True)


def golden(path: Path) -> bytes:
    expect = path.with_name(path.stem + ".expect.json")
    return (expect.read_bytes() if expect.exists() else path.read_bytes()).removesuffix(b"\n")


@pytest.mark.parametrize("path", _cases("valid"), ids=_id)
def test_valid_fixture_round_trips_through_pydantic(path: Path) -> None:
    name = path.parent.parent.name
    value = adapter(name).validate_json(path.read_bytes(), by_name=False)
    assert wire(name, value) == golden(path)


@pytest.mark.parametrize("path", _cases("invalid"), ids=_id)
def test_invalid_fixture_is_rejected_by_pydantic(path: Path) -> None:
    name = path.parent.parent.name
    with pytest.raises(ValidationError):
        adapter(name).validate_json(path.read_bytes(), by_name=False)


@pytest.mark.parametrize("path", _cases("valid"), ids=_id)
def test_conversion_both_ways_preserves_equality(path: Path) -> None:
    name = path.parent.parent.name
    model = agui.decode(path.read_bytes(), getattr(agui, name), strict=True)
    converted = agui.to_pydantic(model)
    assert type(converted).__name__ == type(model).__name__
    assert converted == adapter(name).validate_json(path.read_bytes(), by_name=False)
    back = agui.from_pydantic(converted)
    assert back == model
    assert agui.encode(back) == golden(path)


@pytest.mark.parametrize("path", _cases("valid"), ids=_id)
def test_union_members_come_back_as_their_own_class(path: Path) -> None:
    name = path.parent.parent.name
    for union, members in TAGS.items():
        if getattr(agui, name) in members.values():
            value = adapter(union).validate_json(path.read_bytes(), by_name=False)
            assert type(value).__name__ == name
            assert wire(union, value) == golden(path)


# ── the shape of the generated models ─────────────────────────────────────────────────────────


def test_closed_models_forbid_extras_and_patch_operations_keep_them() -> None:
    open_ = {name for name in TAGS["JsonPatchOperation"].values()}
    for name, cls in DEFINITIONS.items():
        if name in TAGS:
            continue
        model = getattr(agui_pydantic, name)
        assert issubclass(model, agui_pydantic.WireModel)
        wanted = "allow" if cls in open_ else "forbid"
        assert model.model_config.get("extra") == wanted, name


def test_unions_are_discriminated() -> None:
    for union, key in [
        ("Event", "type"),
        ("Message", "role"),
        ("JsonPatchOperation", "op"),
        ("ContentPart", "type"),
        ("PartSource", "type"),
        ("RunFinishedOutcome", "type"),
        ("SubagentFinishedOutcome", "type"),
    ]:
        with pytest.raises(ValidationError) as info:
            adapter(union).validate_python({key: "no-such-tag"})
        errors = info.value.errors()
        assert [e["type"] for e in errors] == ["union_tag_invalid"], union


def test_names_aliases_and_absence() -> None:
    event = agui_pydantic.TextMessageStartEvent(type="TEXT_MESSAGE_START", message_id="m1")
    assert event.message_id == "m1"
    # the spec's default (assistant) is what a reader assumes: absent stays absent
    assert event.role is MISSING
    assert event.model_dump_json() == '{"type":"TEXT_MESSAGE_START","messageId":"m1"}'
    assert event.model_dump_json(exclude_unset=True) == (
        '{"type":"TEXT_MESSAGE_START","messageId":"m1"}'
    )
    assert agui.from_pydantic(event) == agui.TextMessageStartEvent(message_id="m1")
    by_alias = agui_pydantic.TextMessageStartEvent.model_validate(
        {"type": "TEXT_MESSAGE_START", "messageId": "m1"}
    )
    assert by_alias == event
    snake = b'{"type":"TEXT_MESSAGE_START","message_id":"m1"}'
    adapter("TextMessageStartEvent").validate_json(snake)  # by name: Python construction
    with pytest.raises(ValidationError):
        adapter("TextMessageStartEvent").validate_json(snake, by_name=False)


def test_null_is_not_absent() -> None:
    for document in (
        b'{"type":"TEXT_MESSAGE_END","messageId":"m1","timestamp":null}',
        b'{"type":"TEXT_MESSAGE_END","messageId":"m1","rawEvent":null}',
        b'{"type":"TEXT_MESSAGE_END","messageId":"m1","metadata":null}',
    ):
        with pytest.raises(ValidationError):
            adapter("Event").validate_json(document)
    custom = adapter("Event").validate_json(b'{"type":"CUSTOM","name":"n","value":null}')
    assert wire("Event", custom) == b'{"type":"CUSTOM","name":"n","value":null}'


def test_integers_take_integral_floats_but_no_strings_or_booleans() -> None:
    ok = adapter("TokenUsage").validate_json(b'{"inputTokens":2.0}')
    assert wire("TokenUsage", ok) == b'{"inputTokens":2}'
    for bad in (b'"2"', b"true", b"2.5", b"-1", b"9007199254740992"):
        with pytest.raises(ValidationError):
            adapter("TokenUsage").validate_json(b'{"inputTokens":' + bad + b"}")


def test_conversion_errors() -> None:
    unknown = agui.decode(b'{"type":"FUTURE","x":1}', agui.Event)
    assert isinstance(unknown, agui.UnknownEvent)
    with pytest.raises(TypeError, match="UnknownEvent"):
        agui.to_pydantic(unknown)

    class Stranger(BaseModel):
        x: int

    with pytest.raises(TypeError, match="Stranger"):
        agui.from_pydantic(Stranger(x=1))
    broken = agui_pydantic.TextMessageEndEvent.model_construct(type="TEXT_MESSAGE_END")
    with pytest.raises(agui.DecodeError):
        agui.from_pydantic(broken)


def test_importing_agui_does_not_import_pydantic() -> None:
    code = "import sys, agui; assert 'pydantic' not in sys.modules, 'pydantic imported'"
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)


def test_the_readme_fastapi_example_serves_a_run(serve: Callable[[Any], str]) -> None:
    """The FastAPI endpoint of docs/bindings.md, run as written: the pydantic RunAgentInput is the
    body, the events are this package's SSE frames, and a body breaking the contract is a 422."""
    page = (ROOT / "docs" / "bindings.md").read_text("utf-8")
    block = page.split("A FastAPI endpoint taking the pydantic", 1)[1]
    code = block.split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, "docs/bindings.md", "exec"), namespace)
    url = serve(namespace["api"]) + "/agent"
    body = {
        "threadId": "t1",
        "runId": "r1",
        "messages": [{"id": "u", "role": "user", "content": "hi"}],
    }
    with httpx.Client(timeout=10) as client:
        response = client.post(url, json=body)
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        frames = [f for f in response.content.split(b"\n\n") if f]
        events = [agui.decode(f.removeprefix(b"data: "), strict=True) for f in frames]
        assert [e.type for e in events] == [
            "RUN_STARTED",
            "TEXT_MESSAGE_START",
            "TEXT_MESSAGE_CONTENT",
            "TEXT_MESSAGE_END",
            "RUN_FINISHED",
        ]
        assert client.post(url, json={**body, "parentRunId": None}).status_code == 422


def test_duplicate_keys_are_judged_after_the_parser_keeps_the_last() -> None:
    """No schema can see a duplicate key: every binding's JSON parser (orjson, json, jiter)
    keeps the last one, so all three judge the same document."""
    raw = b'{"type":"TEXT_MESSAGE_END","messageId":1,"messageId":"m"}'
    assert (
        agui.encode(agui.decode(raw, strict=True)) == b'{"type":"TEXT_MESSAGE_END","messageId":"m"}'
    )
    assert wire("Event", adapter("Event").validate_json(raw)) == agui.encode(agui.decode(raw))
    bad = b'{"type":"TEXT_MESSAGE_END","messageId":"m","messageId":1}'
    with pytest.raises(agui.DecodeError):
        agui.decode(bad, strict=True)
    with pytest.raises(ValidationError):
        adapter("Event").validate_json(bad)


# ── for users of the binding: documentation, and constructing without the tag ────────────────


@cache
def spec() -> Spec:
    return build(read_spec(SPEC_PATH.read_text(encoding="utf-8")))


def pinned() -> list[tuple[str, str, str]]:
    """(class, wire name, value) of each member a class pins: discriminators and required
    constants."""
    return [(o.name, f.wire, f.wire_value) for o in spec().objects for f in o.constants]


def test_member_descriptions_are_in_the_models_json_schema() -> None:
    """Every member's doc in the spec is its Field description, so model_json_schema() (and
    FastAPI's OpenAPI page, below) shows it."""
    for obj in spec().objects:
        model = getattr(agui_pydantic, obj.name)
        properties = model.model_json_schema(by_alias=True)["properties"]
        assert list(properties) == [f.wire for f in obj.fields], obj.name
        for f in obj.fields:
            assert properties[f.wire]["description"] == " ".join(f.doc.split()), (obj.name, f.wire)
    delta = agui_pydantic.TextMessageContentEvent.model_fields["delta"].description
    assert delta is not None and delta.startswith("The text to append.")


def test_fastapi_shows_the_descriptions_in_its_openapi_document(
    serve: Callable[[Any], str],
) -> None:
    from fastapi import FastAPI

    api = FastAPI()

    @api.post("/agent")
    async def run_agent(body: agui_pydantic.RunAgentInput) -> None:
        return None

    with httpx.Client(timeout=10) as client:
        document = client.get(serve(api) + "/openapi.json").raise_for_status().json()
    schemas = document["components"]["schemas"]
    docs = {o.name: {f.wire: " ".join(f.doc.split()) for f in o.fields} for o in spec().objects}
    for name in ("RunAgentInput", "UserMessage", "ToolCall", "TextPart", "Tool"):
        properties = schemas[name]["properties"]
        assert {wire: p.get("description") for wire, p in properties.items()} == docs[name], name
    # the discriminator is required there too, as on the wire
    assert "role" in schemas["UserMessage"]["required"]
    assert "type" in schemas["ToolCall"]["required"]


@pytest.mark.parametrize(
    "path",
    [p for p in _cases("valid") if p.parent.parent.name in {c for c, _, _ in pinned()}],
    ids=_id,
)
def test_constructing_may_leave_out_what_the_class_pins(path: Path) -> None:
    """A model built from a valid document's members, less its discriminator (and required
    constants), is that document: the class fills them in, counts them as set, and writes them."""
    name = path.parent.parent.name
    leave_out = {wire for cls, wire, _ in pinned() if cls == name}
    model = getattr(agui_pydantic, name)
    document = adapter(name).validate_json(path.read_bytes(), by_name=False)
    aliases = {field: info.alias or field for field, info in model.model_fields.items()}
    order = [*model.model_fields, *(document.model_extra or {})]  # extras: patch operations'
    # read past the attribute, which warns when the member is deprecated
    values = {**vars(document), **(document.model_extra or {})}
    members = {
        field: values[field]
        for field in order
        if field in document.model_fields_set and aliases.get(field, field) not in leave_out
    }
    built = model(**members)
    assert built == document
    assert built.model_fields_set == document.model_fields_set
    assert wire(name, built) == golden(path)
    assert built.model_dump_json().encode() == wire(name, document)


def test_constructing_without_the_discriminator() -> None:
    event = agui_pydantic.TextMessageStartEvent(message_id="m")
    assert event.type == "TEXT_MESSAGE_START"
    assert event.model_dump_json(exclude_unset=True) == (
        '{"type":"TEXT_MESSAGE_START","messageId":"m"}'
    )
    assert agui.from_pydantic(event) == agui.TextMessageStartEvent(message_id="m")
    message = agui_pydantic.UserMessage(id="u", content="hi")
    patch = agui_pydantic.AddOperation(path="/a", value=1)
    call = agui_pydantic.ToolCall(
        id="c", function=agui_pydantic.FunctionCall(name="f", arguments="")
    )
    assert (message.role, patch.op, call.type) == ("user", "add", "function")
    built = agui_pydantic.TextMessageEndEvent.model_construct(message_id="m")
    assert (
        built.model_dump_json(exclude_unset=True) == '{"type":"TEXT_MESSAGE_END","messageId":"m"}'
    )
    # the tag, when given, is checked as ever
    with pytest.raises(ValidationError):
        agui_pydantic.TextMessageStartEvent(type="TEXT_MESSAGE_END", message_id="m")


@pytest.mark.parametrize(("name", "key"), [(n, k) for n, k, _ in pinned()], ids=str)
def test_validating_a_document_still_requires_what_the_class_pins(name: str, key: str) -> None:
    """On the wire path (model_validate, model_validate_json, a TypeAdapter) a pinned member is
    required, as the contract says: the constructor's default never stands in for it, and
    validation does not go through the constructor. model_json_schema() says it is required."""
    model = getattr(agui_pydantic, name)
    assert model.__pydantic_custom_init__ is False
    assert key in model.model_json_schema(by_alias=True)["required"]
    for validate in (
        lambda: model.model_validate({}, by_alias=True, by_name=False),
        lambda: model.model_validate({}),
        lambda: model.model_validate_json(b"{}", by_name=False),
        lambda: adapter(name).validate_json(b"{}"),
    ):
        with pytest.raises(ValidationError) as info:
            validate()
        assert {"type": "missing", "loc": (key,)} in [
            {"type": e["type"], "loc": e["loc"]} for e in info.value.errors()
        ]


def test_a_member_inside_a_document_needs_its_tag_too() -> None:
    call = {"id": "c", "function": {"name": "f", "arguments": ""}}
    document = {"id": "a", "role": "assistant", "toolCalls": [call]}
    with pytest.raises(ValidationError) as info:
        adapter("Message").validate_python(document, by_name=False)
    assert [(e["type"], e["loc"]) for e in info.value.errors()] == [
        ("missing", ("assistant", "toolCalls", 0, "type"))
    ]
    with pytest.raises(ValidationError) as info:
        agui_pydantic.RunAgentInput.model_validate(
            {"threadId": "t", "runId": "r", "messages": [{"id": "u", "content": "hi"}]}
        )
    assert [e["type"] for e in info.value.errors()] == ["union_tag_not_found"]


def test_type_checkers_take_a_constructor_without_the_discriminator(tmp_path: Path) -> None:
    """The pinned member's default is in the source, which is what type checkers read."""
    use = tmp_path / "use.py"
    use.write_text(
        "import agui_pydantic\n\n"
        'event = agui_pydantic.TextMessageStartEvent(message_id="m")\n'
        'message = agui_pydantic.UserMessage(id="u", content="hi")\n'
        'patch = agui_pydantic.RemoveOperation(path="/a")\n'
        'call = agui_pydantic.ToolCall(id="c", function=agui_pydantic.FunctionCall(name="f", arguments=""))\n'
    )
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "c"), str(use)],
        cwd=tmp_path,
        env={**os.environ, "MYPYPATH": str(ROOT / "generated")},
        capture_output=True,
        text=True,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
