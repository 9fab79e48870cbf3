"""Server tools: Python functions the model agent runs for the model.

    @agui.model.tool
    async def get_weather(city: str, unit: Literal["C", "F"] = "C") -> dict[str, Any]:
        "The current weather in a city."
        ...

The argument schema comes from the type hints (or is given with `parameters=`); the description
from the docstring's first paragraph (or `description=`), and a parameter's from
`Annotated[str, "what it is"]` or a Google-style `Args:` section. Parameters annotated
`RunAgentInput` or `ToolContext` are not arguments: the agent passes the run's input, or a context
(the input, the call id, and `emit` for events such as state deltas), in them.

Arguments from the model are checked before the handler is called: JSON text of an object, every
required argument present, no unknown one, each of the declared type (the common JSON Schema
keywords are checked; anything fancier in an explicit schema is left to the handler). A failed
check, a `ToolError` or any other exception becomes an error result for the model, never a failed
run; a `ToolError`'s message is shown to the model (and the client) as written, any other
exception only by its type, and it is logged.
"""

from __future__ import annotations

import asyncio
import enum
import inspect
import re
import threading
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias, Union, get_args, get_origin, overload

import attrs
import orjson
from agui_generated import (
    ContentPart,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunStartedEvent,
)

from agui.errors import ToolError
from agui.model.interface import ToolSpec
from agui.wire.codec import DEFINITIONS, to_json

__all__ = [
    "TOOL_NAME",
    "ApprovalRule",
    "ServerTool",
    "ToolContext",
    "ToolError",
    "check_arguments",
    "schema_of",
    "tool",
]

ApprovalRule: TypeAlias = "bool | Callable[[RunAgentInput, dict[str, Any]], bool]"
"""Whether a call needs approval: always, never, or decided per run and arguments."""

TOOL_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A tool name model APIs accept (fullmatch)."""
_PARTS: tuple[type, ...] = get_args(ContentPart)
"""The content part classes (TextPart, ImagePart, ...): the members of the generated union."""
_MODELS = frozenset(cls for cls in DEFINITIONS.values() if isinstance(cls, type))
"""Every class of the spec, written in wire form when a tool returns one."""
_LIFECYCLE = (RunStartedEvent, RunFinishedEvent, RunErrorEvent)


@attrs.frozen(kw_only=True)
class ToolContext:
    """What a tool handler can know about its call, and its way to send events.

    `emit(event)` sends an AG-UI event (STATE_SNAPSHOT, STATE_DELTA, ACTIVITY_SNAPSHOT, CUSTOM,
    ...) to the client while the tool runs, before its TOOL_CALL_RESULT. It may be called from a
    sync handler's worker thread. Run lifecycle events are refused."""

    input: RunAgentInput
    tool_call_id: str
    tool_name: str
    _sink: Callable[[Any], None] = attrs.field(alias="sink", repr=False)

    @property
    def state(self) -> Any:
        """The run's state as the client sent it (None when it sent none)."""
        return self.input.state

    def emit(self, event: Any) -> None:
        if isinstance(event, _LIFECYCLE):
            raise ValueError(f"a tool cannot send {event.type.value}: the agent owns the run")
        if not hasattr(event, "type"):
            raise TypeError(f"not an AG-UI event: {type(event).__name__}")
        self._sink(event)


@attrs.frozen(kw_only=True)
class ServerTool:
    """A tool the agent runs itself. Build it with `tool(fn)`; its `spec` is what the model sees."""

    name: str
    description: str
    parameters: dict[str, Any]
    handler: Callable[..., Any]
    requires_approval: ApprovalRule = False
    """True: every call waits for the user's approval (an interrupt); a callable decides per run
    and arguments."""
    _arguments: tuple[str, ...] = attrs.field(alias="arguments", default=())
    """The handler's parameters the model fills."""
    _injected: tuple[tuple[str, str], ...] = attrs.field(alias="injected", default=())
    """(parameter, "input" | "context") the agent fills."""
    _converters: Mapping[str, Callable[[Any], Any]] = attrs.field(alias="converters", factory=dict)
    _extra_keywords: bool = attrs.field(alias="extra_keywords", default=False)
    """The handler takes **kwargs: every argument is passed on."""

    @property
    def spec(self) -> ToolSpec:
        return ToolSpec(name=self.name, description=self.description, parameters=self.parameters)

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.handler)

    def needs_approval(self, input: RunAgentInput, arguments: dict[str, Any]) -> bool:
        rule = self.requires_approval
        return bool(rule(input, arguments) if callable(rule) else rule)

    def keywords(self, arguments: Mapping[str, Any], context: ToolContext) -> dict[str, Any]:
        """The handler's keyword arguments: the model's (converted to the declared Python types)
        and the injected ones."""
        keywords: dict[str, Any] = {}
        for key, value in arguments.items():
            if key not in self._arguments and not self._extra_keywords:
                continue
            convert = self._converters.get(key)
            keywords[key] = convert(value) if convert is not None else value
        for parameter, what in self._injected:
            keywords[parameter] = context.input if what == "input" else context
        return keywords

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> Any:
        """Call the handler (a sync one in a worker thread) and return what it returns."""
        keywords = self.keywords(arguments, context)
        if self.is_async:
            return await self.handler(**keywords)
        result = await asyncio.to_thread(self.handler, **keywords)
        if inspect.isawaitable(result):  # a sync callable that hands back a coroutine
            return await result
        return result


@overload
def tool(fn: Callable[..., Any], /) -> ServerTool: ...
@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    requires_approval: ApprovalRule = False,
) -> Callable[[Callable[..., Any]], ServerTool]: ...
@overload
def tool(
    fn: Callable[..., Any],
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    requires_approval: ApprovalRule = False,
) -> ServerTool: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    parameters: Mapping[str, Any] | None = None,
    requires_approval: ApprovalRule = False,
) -> ServerTool | Callable[[Callable[..., Any]], ServerTool]:
    """Make a server tool of a function (sync or async); usable as `@tool` or `@tool(...)`.

    name: default the function's name. description: default the docstring's first paragraph.
    parameters: an explicit JSON Schema (an object schema) instead of the one derived from the
    type hints; the model's arguments are then passed as keywords as they are.
    requires_approval: see ServerTool.
    """

    def make(fn: Callable[..., Any]) -> ServerTool:
        return _build(fn, name, description, parameters, requires_approval)

    return make if fn is None else make(fn)


def _build(
    fn: Callable[..., Any],
    name: str | None,
    description: str | None,
    parameters: Mapping[str, Any] | None,
    requires_approval: ApprovalRule,
) -> ServerTool:
    if not callable(fn):
        raise TypeError(f"a tool needs a function, not {type(fn).__name__}")
    tool_name: str = name or str(getattr(fn, "__name__", ""))
    if not TOOL_NAME.fullmatch(tool_name):
        raise ValueError(
            f"tool name {tool_name!r} must be 1 to 64 letters, digits, '_' or '-' (what model "
            "APIs accept)"
        )
    summary, documented = _docstring(inspect.getdoc(fn) or "")
    hints = _hints(fn)
    signature = inspect.signature(fn)
    injected: list[tuple[str, str]] = []
    arguments: list[str] = []
    converters: dict[str, Callable[[Any], Any]] = {}
    properties: dict[str, Any] = {}
    required: list[str] = []
    extra_keywords = False
    for parameter in signature.parameters.values():
        hint = hints.get(parameter.name, Any)
        kind = _injected(hint)
        if kind is not None:
            injected.append((parameter.name, kind))
            continue
        if parameter.kind is parameter.VAR_KEYWORD:
            extra_keywords = True
            continue
        if parameter.kind in (parameter.POSITIONAL_ONLY, parameter.VAR_POSITIONAL):
            if parameter.default is parameter.empty or parameter.kind is parameter.VAR_POSITIONAL:
                raise TypeError(
                    f"tool {tool_name}: parameter {parameter.name!r} is positional-only; tools "
                    "are called with keyword arguments"
                )
            continue
        arguments.append(parameter.name)
        if parameters is not None:
            continue
        try:
            schema, convert = _schema(hint)
        except TypeError as exc:
            raise TypeError(
                f"tool {tool_name}: parameter {parameter.name!r}: {exc}; give the schema "
                "with parameters="
            ) from None
        note = _strip_annotated(hint)[1] or documented.get(parameter.name)
        if note:
            schema = {**schema, "description": note}
        if parameter.default is parameter.empty:
            required.append(parameter.name)
        elif _plain_json(parameter.default):
            schema = {**schema, "default": parameter.default}
        properties[parameter.name] = schema
        if convert is not None:
            converters[parameter.name] = convert
    if parameters is None:
        schema_doc: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            schema_doc["required"] = required
        if not extra_keywords:
            schema_doc["additionalProperties"] = False
    else:
        schema_doc = dict(parameters)
        if schema_doc.get("type", "object") != "object":
            raise ValueError(f"tool {tool_name}: parameters must be an object schema")
    return ServerTool(
        name=tool_name,
        description=description if description is not None else summary,
        parameters=schema_doc,
        handler=fn,
        requires_approval=requires_approval,
        arguments=tuple(arguments),
        injected=tuple(injected),
        converters=converters,
        extra_keywords=extra_keywords,
    )


def _injected(hint: Any) -> str | None:
    """What the agent fills a parameter with: "input" (RunAgentInput), "context" (ToolContext),
    either also when optional; None for an argument the model gives."""
    bare = _strip_annotated(hint)[0]
    if get_origin(bare) in (Union, types.UnionType):
        options = [a for a in get_args(bare) if a is not type(None)]
        bare = options[0] if len(options) == 1 else bare
    if bare is RunAgentInput:
        return "input"
    if bare is ToolContext:
        return "context"
    return None


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    target = fn if inspect.isfunction(fn) or inspect.ismethod(fn) else type(fn).__call__
    try:
        return typing.get_type_hints(target, include_extras=True)
    except Exception as exc:  # a forward reference that cannot be resolved
        raise TypeError(f"cannot read the type hints of {fn!r}: {exc}") from None


def _docstring(doc: str) -> tuple[str, dict[str, str]]:
    """The first paragraph, and the parameter notes of a Google-style `Args:` section."""
    text = doc.strip()
    summary = " ".join(text.split("\n\n")[0].split()) if text else ""
    notes: dict[str, str] = {}
    inside = False
    indent: int | None = None
    current: str | None = None
    for line in doc.splitlines():
        stripped = line.strip()
        if stripped in ("Args:", "Arguments:", "Parameters:"):
            inside, indent, current = True, None, None
            continue
        if not inside or not stripped:
            continue
        level = len(line) - len(line.lstrip())
        if level == 0:  # the next section
            inside = False
            continue
        match = _PARAM_LINE.fullmatch(stripped)
        if match and (indent is None or level <= indent):
            indent, current = level, match.group(1)
            notes[current] = match.group(2)
        elif current is not None:
            notes[current] = f"{notes[current]} {stripped}".strip()
    return summary, notes


_PARAM_LINE = re.compile(r"(\w+)(?:\s*\([^)]*\))?\s*:\s*(.*)")


def _strip_annotated(hint: Any) -> tuple[Any, str | None]:
    if get_origin(hint) is typing.Annotated:
        base, *extras = get_args(hint)
        note = next((e for e in extras if isinstance(e, str)), None)
        return base, note
    return hint, None


def _plain_json(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


Convert: TypeAlias = "Callable[[Any], Any] | None"


def schema_of(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a Python type hint, as tool parameters use it."""
    return _schema(hint)[0]


def _schema(hint: Any) -> tuple[dict[str, Any], Convert]:
    """(schema, converter from the JSON value to the Python value, or None for "as is")."""
    hint, note = _strip_annotated(hint)
    schema, convert = _bare_schema(hint)
    if note:
        schema = {**schema, "description": note}
    return schema, convert


_SIMPLE: dict[Any, str] = {str: "string", bool: "boolean", int: "integer", float: "number"}
_NUMBERS: dict[Any, Callable[[Any], Any]] = {float: float, int: int}  # 2.0 is an integer in JSON


def _bare_schema(hint: Any) -> tuple[dict[str, Any], Convert]:
    if hint is Any or hint is object:
        return {}, None
    if hint is None or hint is type(None):
        return {"type": "null"}, None
    if hint in _SIMPLE:
        return {"type": _SIMPLE[hint]}, _NUMBERS.get(hint)
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        values = [member.value for member in hint]
        if not all(_plain_json(v) for v in values):
            raise TypeError(f"enum {hint.__name__} has values that are not JSON")
        return {"enum": values}, hint
    if _is_typeddict(hint):
        return _typeddict_schema(hint)
    origin, args = get_origin(hint), get_args(hint)
    if origin is Literal:
        if not all(_plain_json(v) for v in args):
            raise TypeError("a Literal of values that are not JSON")
        return {"enum": list(args)}, None
    if origin is Union or origin is types.UnionType:
        options = [_schema(a) for a in args]
        schemas = [s for s, _ in options]
        converters = [(a, c) for a, (_, c) in zip(args, options, strict=True) if c is not None]
        convert: Convert = None
        if converters:
            convert = _union_converter(converters)
        return {"anyOf": schemas}, convert
    if origin in (list, tuple, set, frozenset) or origin in _SEQUENCES:
        if origin is tuple and not (len(args) == 2 and args[1] is Ellipsis):
            if not args:
                return {"type": "array"}, tuple
            parts = [_schema(a) for a in args]
            return {
                "type": "array",
                "prefixItems": [s for s, _ in parts],
                "minItems": len(args),
                "maxItems": len(args),
            }, lambda value: tuple(c(v) if c else v for (_, c), v in zip(parts, value, strict=True))
        item, item_convert = _schema(args[0]) if args else ({}, None)
        build: Callable[[Any], Any] = list if origin in (list, *_SEQUENCES) else origin
        schema: dict[str, Any] = {"type": "array", "items": item}
        if origin in (set, frozenset):
            schema["uniqueItems"] = True
        if item_convert is None:
            return schema, (None if build is list else build)
        return schema, lambda value: build(item_convert(v) for v in value)
    if origin in (dict, *_MAPPINGS):
        if args and args[0] is not str:
            raise TypeError("object keys must be str")
        value, value_convert = _schema(args[1]) if len(args) == 2 else ({}, None)
        schema = (
            {"type": "object"} if value == {} else {"type": "object", "additionalProperties": value}
        )
        if value_convert is None:
            return schema, None
        return schema, lambda obj: {k: value_convert(v) for k, v in obj.items()}
    if hint in (list, tuple, set, frozenset):
        return {"type": "array"}, (None if hint is list else hint)
    if hint is dict:
        return {"type": "object"}, None
    raise TypeError(f"no JSON Schema for {hint!r}")


_SEQUENCES = (Sequence, typing.Sequence)
_MAPPINGS = (Mapping, typing.Mapping)


def _union_converter(converters: list[tuple[Any, Callable[[Any], Any]]]) -> Callable[[Any], Any]:
    def convert(value: Any) -> Any:
        for hint, converter in converters:
            schema = _schema(hint)[0]
            if not check_value(value, schema):
                try:
                    return converter(value)
                except (TypeError, ValueError):
                    continue
        return value

    return convert


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__total__")


def _typeddict_schema(hint: Any) -> tuple[dict[str, Any], Convert]:
    fields = typing.get_type_hints(hint, include_extras=True)
    properties: dict[str, Any] = {}
    converters: dict[str, Callable[[Any], Any]] = {}
    for key, value_hint in fields.items():
        properties[key], convert = _schema(value_hint)
        if convert is not None:
            converters[key] = convert
    schema: dict[str, Any] = {
        "type": "object",
        "properties": properties,
        "additionalProperties": False,
    }
    required = [k for k in fields if k in hint.__required_keys__]
    if required:
        schema["required"] = required
    if not converters:
        return schema, None
    return schema, lambda obj: {
        k: converters[k](v) if k in converters else v for k, v in obj.items()
    }


# ── checking arguments ─────────────────────────────────────────────────────────────────────────


def check_arguments(text: str, schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Parse a call's argument text and check it against the tool's schema.

    Returns (arguments, problems); problems are short lines "pointer: what is wrong", empty when
    the arguments are fine. Empty text means no arguments."""
    if not text.strip():
        value: Any = {}
    else:
        try:
            value = orjson.loads(text)
        except orjson.JSONDecodeError:
            return {}, ["the arguments are not valid JSON"]
    if not isinstance(value, dict):
        return {}, [f"the arguments must be a JSON object, not {_json_type(value)}"]
    problems: list[str] = []
    _check(value, schema, "", problems)
    return value, problems


def check_value(value: Any, schema: Mapping[str, Any]) -> list[str]:
    """The problems of `value` against `schema` (the keywords _check knows), as lines."""
    problems: list[str] = []
    _check(value, schema, "", problems)
    return problems


_TYPES: dict[str, Callable[[Any], bool]] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: (
        (isinstance(v, int) and not isinstance(v, bool))
        or (isinstance(v, float) and v.is_integer())
    ),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
}


def _json_type(value: Any) -> str:
    for name in ("null", "boolean", "integer", "number", "string", "array", "object"):
        if _TYPES[name](value):
            return "an integer" if name == "integer" else f"{_article(name)} {name}"
    return type(value).__name__


def _article(word: str) -> str:
    return "an" if word[0] in "aeiou" else "a"


def _check(value: Any, schema: Any, at: str, problems: list[str]) -> None:
    if schema is True or not isinstance(schema, Mapping):
        return
    where = at or "(arguments)"
    declared = schema.get("type")
    if declared is not None:
        names = [declared] if isinstance(declared, str) else list(declared)
        if not any(_TYPES.get(n, lambda v: True)(value) for n in names):
            problems.append(f"{where}: expected {' or '.join(names)}, got {_json_type(value)}")
            return
    if "const" in schema and value != schema["const"]:
        problems.append(f"{where}: must be {orjson.dumps(schema['const']).decode()}")
    if "enum" in schema and not any(_same(value, option) for option in schema["enum"]):
        allowed = ", ".join(orjson.dumps(o).decode() for o in schema["enum"])
        problems.append(f"{where}: must be one of {allowed}")
    for keyword in ("anyOf", "oneOf"):
        if keyword in schema:
            if not any(not check_value(value, option) for option in schema[keyword]):
                problems.append(f"{where}: matches none of the allowed forms")
    if isinstance(value, dict):
        properties = schema.get("properties") or {}
        for key in schema.get("required") or ():
            if key not in value:
                problems.append(f"{at}/{key}: missing")
        extra = schema.get("additionalProperties", True)
        for key, item in value.items():
            if key in properties:
                _check(item, properties[key], f"{at}/{key}", problems)
            elif extra is False:
                problems.append(f"{at}/{key}: not an argument of this tool")
            else:
                _check(item, extra, f"{at}/{key}", problems)
    elif isinstance(value, list):
        prefix = schema.get("prefixItems") or ()
        for index, item in enumerate(value):
            if index < len(prefix):
                _check(item, prefix[index], f"{at}/{index}", problems)
            elif "items" in schema:
                _check(item, schema["items"], f"{at}/{index}", problems)
        if "minItems" in schema and len(value) < schema["minItems"]:
            problems.append(f"{where}: needs at least {schema['minItems']} items")
        if "maxItems" in schema and len(value) > schema["maxItems"]:
            problems.append(f"{where}: takes at most {schema['maxItems']} items")
    elif isinstance(value, int | float) and not isinstance(value, bool):
        if "minimum" in schema and value < schema["minimum"]:
            problems.append(f"{where}: must be at least {schema['minimum']}")
        if "maximum" in schema and value > schema["maximum"]:
            problems.append(f"{where}: must be at most {schema['maximum']}")


def _same(a: Any, b: Any) -> bool:
    """JSON equality: true is not 1."""
    return type(a) is type(b) and a == b if isinstance(a, bool) or isinstance(b, bool) else a == b


# ── results ────────────────────────────────────────────────────────────────────────────────────


def result_content(value: Any) -> str | tuple[Any, ...]:
    """What a tool returned, as TOOL_CALL_RESULT content: text as it is, content parts as parts,
    anything else as JSON text. An agui model anywhere in the value is written in wire form
    (camelCase names, absent members left out), another attrs instance as its fields. Raises
    TypeError for a value that is not JSON."""
    if isinstance(value, str):
        return value
    if isinstance(value, list | tuple) and value and all(isinstance(p, _PARTS) for p in value):
        return tuple(value)
    try:
        return orjson.dumps(value, default=_plain).decode()
    except orjson.JSONEncodeError as exc:
        raise TypeError(str(exc)) from None


def _plain(value: Any) -> Any:
    if type(value) in _MODELS:
        return to_json(value)
    if attrs.has(type(value)):  # one level only: models nested inside still come here
        return attrs.asdict(value, recurse=False)
    if isinstance(value, set | frozenset):
        return list(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def thread_safe_sink(put: Callable[[Any], None]) -> Callable[[Any], None]:
    """`put` callable from any thread: calls from other threads are handed to this loop."""
    loop = asyncio.get_running_loop()
    owner = threading.get_ident()

    def sink(item: Any) -> None:
        if threading.get_ident() == owner:
            put(item)
        else:
            loop.call_soon_threadsafe(put, item)

    return sink
