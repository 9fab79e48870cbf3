"""The type grammar as the loader reads it: what it accepts and, for everything the bindings could
not all express, the refusal, which names the YAML path and says why in a sentence.

Each case adds a few definitions to a copy of spec/agui.yaml (the real spec stays valid) and builds
the intermediate model; nothing is generated. The forms the loader accepts are run through every
binding by tests/test_codegen_every_form.py.
"""

from __future__ import annotations

import textwrap

import pytest

from codegen.load import SPEC_PATH, SpecError, load_ledger, read_spec
from codegen.model import Spec, TypeRef, build
from codegen.proto import build_proto

SPEC_TEXT = SPEC_PATH.read_text(encoding="utf-8")

# Definitions every case may use: an enum, bounded aliases, a pattern alias, an object, an alias
# of `A | B`.
BASE = """
Mood:
  kind: enum
  doc: "How someone feels."
  values:
    calm: "At ease."
    busy: "Occupied."
Percent:
  kind: alias
  type: int
  min: 0
  max: 100
  doc: "A share."
Slug:
  kind: alias
  type: str
  pattern: "^[a-z]+$"
  doc: "A lower-case name."
StrOrCount:
  kind: alias
  type: str | int
  doc: "A name or a count."
Point:
  kind: object
  doc: "A point."
  fields:
    x:
      type: number
      doc: "Across."
"""


def spec_with(definitions: str) -> str:
    """spec/agui.yaml with BASE and `definitions` (YAML at definition level) appended."""
    added = textwrap.indent(textwrap.dedent(BASE) + textwrap.dedent(definitions), "  ")
    return SPEC_TEXT.rstrip("\n") + "\n" + added


def model(definitions: str) -> Spec:
    return build(read_spec(spec_with(definitions)))


def holder(field: str) -> str:
    """An object `Holder` with one field, given as YAML under the field's wire name `f`."""
    return 'Holder:\n  kind: object\n  doc: "Holds the case."\n  fields:\n' + textwrap.indent(
        textwrap.dedent(field), "    "
    )


def field_type(definitions: str, name: str = "Holder", wire: str = "f") -> TypeRef:
    obj = next(o for o in model(definitions).objects if o.name == name)
    found = next(f for f in obj.fields if f.wire == wire)
    assert found.type is not None
    return found.type


# ── what the loader accepts ─────────────────────────────────────────────────────────────────────


def test_the_base_definitions_are_accepted() -> None:
    assert model("")


def test_number_takes_bounds_that_are_not_integers() -> None:
    t = field_type(holder('f:\n  type: number\n  min: -0.5\n  max: 2.5\n  doc: "case n"\n'))
    assert (t.kind, t.constraints.min, t.constraints.max, t.py) == (
        "number",
        -0.5,
        2.5,
        "int | float",
    )


def test_alias_constraints_follow_the_alias_into_lists_and_alternatives() -> None:
    t = field_type(holder('f:\n  type: list[Slug] | Percent\n  doc: "case c"\n'))
    items, percent = t.options
    assert items.item is not None and items.item.constraints.pattern == "^[a-z]+$"
    assert (percent.constraints.min, percent.constraints.max) == (0, 100)


def test_a_field_may_narrow_its_alias() -> None:
    t = field_type(holder('f:\n  type: Percent\n  min: 10\n  doc: "case n"\n'))
    assert (t.alias, t.constraints.min, t.constraints.max) == ("Percent", 10, 100)


def test_nested_lists_and_every_pair_of_kinds_are_accepted() -> None:
    pairs = [
        "str | int",
        "str | number",
        "str | bool",
        "str | list[str]",
        "str | object",
        "number | bool",
        "int | list[int]",
        "number | Point",
        "bool | list[bool]",
        "bool | object",
        "list[Point] | object",
        "Mood | Percent",
        "str | number | bool | list[list[str]] | Point",
    ]
    fields = "".join(f'p{i}:\n  type: {p}\n  doc: "pair"\n' for i, p in enumerate(pairs))
    fields += 'deep:\n  type: list[list[list[json]]]\n  doc: "nested"\n'
    assert model(holder(fields))


def test_defaults_of_each_scalar_are_accepted() -> None:
    fields = """
    s?:
      type: str
      default: "no"
      doc: "a quoted string"
    i?:
      type: int
      default: -3
      doc: "an integer"
    n?:
      type: number
      default: 0.25
      doc: "a number"
    n2?:
      type: number
      default: 2
      doc: "an integer is a number"
    b?:
      type: bool
      default: false
      doc: "a boolean"
    e?:
      type: Mood
      default: calm
      doc: "an enum value"
    a?:
      type: Percent
      default: 100
      doc: "within the alias's bounds"
    """
    obj = next(o for o in model(holder(fields)).objects if o.name == "Holder")
    assert [f.default for f in obj.fields] == ["no", -3, 0.25, 2, False, "calm", 100]


# ── what it refuses, and how it says so ──────────────────────────────────────────────────────────


def field(type_: str, extra: str = "") -> str:
    return holder(f'f:\n  type: "{type_}"\n{extra}  doc: "the case"\n')


F = "definitions.Holder.fields.f"
REFUSALS = [
    # type expressions
    (field("float"), f"{F}.type: unknown type 'float' (a JSON number is `number`"),
    (field("list[str"), f"{F}.type: 'list[str' is not a type: its brackets do not pair up"),
    (field("list[]"), f"{F}.type: 'list[]' is not a type: list[T] needs an item type T"),
    (field("str |"), f"{F}.type: 'str |' is not a type: an alternative of '|' is empty"),
    (field("Holder2"), f"{F}.type: unknown type 'Holder2'"),
    (field("Attributable"), f"{F}.type: 'Attributable' is a mixin"),
    # what other type systems write, answered with the spec's word for it
    (field("string"), f"{F}.type: unknown type 'string' (a string is `str`)"),
    (field("List[int]"), f"{F}.type: unknown type 'List[int]' (a list is `list[T]`)"),
    (field("any"), f"{F}.type: unknown type 'any' (any JSON value is `json`)"),
    (
        field("Bool"),
        f"{F}.type: unknown type 'Bool' (did you mean `bool`? names are case-sensitive)",
    ),
    (field("point"), f"{F}.type: unknown type 'point' (did you mean `Point`?"),
    (
        field("Optional[str]"),
        f"{F}.type: unknown type 'Optional[str]' (a member that may be absent is optional: "
        "`name?:`; null is a value only of a `nullable: true` json member)",
    ),
    (
        field("str?"),
        f"{F}.type: 'str?' is not a type: an optional member is marked on its wire name "
        "(`name?:`), not on its type",
    ),
    (field("list<str>"), f"{F}.type: 'list<str>' is not a type: a list is written list[T]"),
    (
        field("dict[str, Point]"),
        f"{F}.type: 'dict[str, Point]' is not a type: list[T] takes one item type, and there are "
        "no maps: an object of any keys is `object`, one of known keys an object definition",
    ),
    (
        'Tone:\n  kind: enum\n  doc: "A tone."\n  values:\n    warm:\n',
        'definitions.Tone.values.warm: the value has no documentation: write it `warm: "what '
        'it means"`',
    ),
    # A | B whose alternatives are the same JSON kind, or not told apart at all
    (
        field("int | number"),
        f"{F}.type: 'int | number': int and number are both JSON numbers, so a value could not "
        "be told apart; `number` alone takes integers too",
    ),
    (
        field("str | Mood"),
        f"{F}.type: 'str | Mood': str and Mood are both JSON strings, so a value could not be "
        "told apart",
    ),
    (
        field("Point | object"),
        f"{F}.type: 'Point | object': Point and object are both JSON objects, so a value could "
        "not be told apart; for several object shapes, declare a union with a discriminator",
    ),
    (
        field("list[str] | list[int]"),
        f"{F}.type: 'list[str] | list[int]': list[str] and list[int] are both JSON arrays",
    ),
    (
        field("Slug | str"),
        f"{F}.type: 'Slug | str': Slug and str are both JSON strings",
    ),
    (
        field("json | str"),
        f"{F}.type: 'json | str': `json` already takes any JSON value, so the alternatives "
        "cannot be told apart; use `json` alone",
    ),
    (
        field("list[json | int]"),
        f"{F}.type: 'json | int': `json` already takes any JSON value",
    ),
    (
        field("StrOrCount | bool"),
        f"{F}.type: 'StrOrCount | bool': the alternative StrOrCount is itself 'A | B' (str | int)",
    ),
    # aliases
    (
        'Loop:\n  kind: alias\n  type: Loop2\n  doc: "case a"\nLoop2:\n  kind: alias\n'
        '  type: list[Loop]\n  doc: "case b"\n',
        "definitions.Loop2.type: the alias Loop refers to itself (Loop -> Loop2 -> Loop)",
    ),
    # constraints
    (
        field("str", "  min: 1\n"),
        f"{F}: min/max apply to int and number values, not to a str",
    ),
    (
        field("list[int]", "  max: 5\n"),
        f"{F}: min/max apply to int and number values, not to a list[int]; to constrain the "
        "items of list[int], declare an alias with the constraint and use list[Alias]; for the "
        "least length of the list, write minItems",
    ),
    (  # a list of objects: its length is what min could mean
        field("list[Point]", "  min: 1\n"),
        f"{F}: min/max apply to int and number values, not to a list[Point]; for the least "
        "length of the list, write minItems (the grammar has no maximum length)",
    ),
    (
        field("list[str]", "  max: 3\n"),
        f"{F}: min/max apply to int and number values, not to a list[str]; for the least "
        "length of the list, write minItems (the grammar has no maximum length)",
    ),
    (
        field("list[str]", '  pattern: "^a"\n'),
        f"{F}: pattern applies to str values, not to a list[str]; to constrain the items of "
        "list[str], declare an alias with the constraint and use list[Alias]",
    ),
    (
        field("str | int", "  min: 0\n"),
        f"{F}: min/max apply to int and number values, not to a str | int; to constrain one "
        "alternative, declare an alias for it",
    ),
    (field("int", '  pattern: "^1$"\n'), f"{F}: pattern applies to str values, not to an int"),
    (
        field("Mood", '  pattern: "^c"\n'),
        f"{F}: pattern applies to str values, not to the enum Mood",
    ),
    (field("str", "  minItems: 1\n"), f"{F}: minItems applies to list values, not to a str"),
    (field("int", "  min: 1.5\n"), f"{F}: min 1.5 must be an integer: the value is an int"),
    (field("number", "  min: .inf\n"), f"{F}: min must be a finite number, not inf"),
    (field("number", "  min: 2\n  max: 1\n"), f"{F}: min 2 is greater than max 1: no value fits"),
    (
        field("Percent", "  min: -1\n"),
        f"{F}: min -1 would loosen Percent's min 0; a field or alias can only narrow the "
        "constraints of the alias it uses",
    ),
    (
        field("Slug", '  pattern: "^a"\n'),
        f"{F}: Slug already has a pattern; a second one cannot be added here",
    ),
    (
        field("str", '  pattern: "("\n'),
        f"{F}: pattern '(' is not an ECMA-262 regular expression (with the u flag, as JSON "
        "Schema reads it): Unbalanced parenthesis",
    ),
    # Python's dialect, which ECMA-262 (with the u flag) refuses: the generator never guesses
    (field("str", "  pattern: '^(?P<x>a)$'\n"), f"{F}: pattern '^(?P<x>a)$' is not an ECMA-262"),
    (field("str", "  pattern: '^a\\Z'\n"), f"{F}: pattern '^a\\\\Z' is not an ECMA-262"),
    (field("str", "  pattern: '(?i)^a$'\n"), f"{F}: pattern '(?i)^a$' is not an ECMA-262"),
    (field("str", "  pattern: '^a{$'\n"), f"{F}: pattern '^a{{$' is not an ECMA-262"),
    (
        'Bad:\n  kind: alias\n  type: bool\n  max: 1\n  doc: "case b"\n',
        "definitions.Bad: min/max apply to int and number values, not to the alias Bad, which is a "
        "bool",
    ),
    # defaults
    (
        holder('f?:\n  type: str\n  default: 5\n  doc: "case d"\n'),
        f"{F}?.default: the default 5 is not a string, and the member is a str",
    ),
    (
        holder('f?:\n  type: str\n  default: no\n  doc: "case d"\n'),
        f"{F}?.default: the default False is not a string, and the member is a str (YAML reads "
        "yes/no/on/off/true/false as booleans: quote it)",
    ),
    (
        holder('f?:\n  type: Mood\n  default: happy\n  doc: "case d"\n'),
        f"{F}?.default: the default 'happy' is not a value of Mood (calm, busy)",
    ),
    (
        holder('f?:\n  type: Percent\n  default: 500\n  doc: "case d"\n'),
        f"{F}?.default: the default 500 is outside [0, 100]",
    ),
    (
        holder('f?:\n  type: int\n  min: 0\n  default: -1\n  doc: "case d"\n'),
        f"{F}?.default: the default -1 is below the member's min, 0",
    ),
    (
        holder('f?:\n  type: number\n  max: 1\n  default: 1.5\n  doc: "case d"\n'),
        f"{F}?.default: the default 1.5 is above the member's max, 1",
    ),
    (
        holder('f?:\n  type: int\n  default: 1.5\n  doc: "case d"\n'),
        f"{F}?.default: the default 1.5 is not an integer, and the member is an int",
    ),
    (
        holder('f?:\n  type: number\n  default: true\n  doc: "case d"\n'),
        f"{F}?.default: the default True is not a number, and the member is a number",
    ),
    (
        holder('f?:\n  type: bool\n  default: "yes"\n  doc: "case d"\n'),
        f"{F}?.default: the default 'yes' is not a boolean (true or false)",
    ),
    (
        holder('f?:\n  type: Slug\n  default: "ABC"\n  doc: "case d"\n'),
        f"{F}?.default: the default 'ABC' does not match the pattern ^[a-z]+$",
    ),
    (
        holder('f:\n  type: str\n  default: "x"\n  doc: "case d"\n'),
        f"{F}.default: a required member is never absent, so a default would never apply",
    ),
    (
        holder('f?:\n  type: list[str]\n  default: "x"\n  doc: "case d"\n'),
        f"{F}?.default: a default applies to a str, int, number, bool or enum member, not a "
        "list[str]",
    ),
    (
        'Tagged:\n  kind: object\n  tag: t\n  doc: "case t"\n  fields:\n    type:\n      tag: true\n'
        '      default: t\n      doc: "the tag"\n',
        "definitions.Tagged.fields.type: a discriminator always holds one fixed string; default "
        "cannot apply",
    ),
    # formats and deprecation
    (field("int", "  format: uri\n"), f"{F}: format applies to str values, not to an int"),
    (
        field("list[str]", "  format: uuid\n"),
        f"{F}: format applies to str values, not to a list[str]; to constrain the items of "
        "list[str], declare an alias with the constraint and use list[Alias]",
    ),
    (
        'Link:\n  kind: alias\n  type: str\n  format: uri\n  doc: "case l"\n'
        + holder('f:\n  type: Link\n  format: email\n  doc: "case f"\n'),
        f"{F}: Link already has the format uri; a second one cannot be added here",
    ),
    (
        holder('f?:\n  type: str\n  format: date-time\n  default: "today"\n  doc: "case d"\n'),
        f"{F}?.default: the default 'today' is not a date and time (RFC 3339, with its offset) "
        "(format date-time)",
    ),
    (
        holder('f:\n  type: str\n  deprecated: true\n  doc: "case d"\n'),
        f"{F}.deprecated: a required member cannot be deprecated: every document must still carry "
        "it; make it optional (name?) first",
    ),
    (
        'Tagged:\n  kind: object\n  tag: t\n  doc: "case t"\n  fields:\n    type:\n      tag: true\n'
        '      deprecated: true\n      doc: "the tag"\n',
        "definitions.Tagged.fields.type: a discriminator always holds one fixed string; deprecated "
        "cannot apply",
    ),
    # enums
    (
        'Rank:\n  kind: enum\n  doc: "A rank."\n  values:\n    "1st": "First."\n',
        "definitions.Rank.values.1st: the value gives no Python member name (1ST); an enum value "
        "needs a letter before any digit or symbol",
    ),
    # other field rules
    (
        holder('f:\n  type: str\n  nullable: true\n  doc: "case n"\n'),
        f"{F}: only a required `json` field may be nullable",
    ),
    (  # a field renamed to a name its mixin has
        'Dup:\n  kind: object\n  with: [Attributable]\n  doc: "case d"\n  fields:\n'
        '    subagentRunId?:\n      type: str\n      doc: "again"\n',
        "definitions.Dup.fields: two fields are named 'subagentRunId', one from the mixin "
        "Attributable",
    ),
    (
        holder('f:\n  type: str\n  py: class\n  doc: "case n"\n'),
        f"{F}.py: 'class' is a Python keyword; choose another name",
    ),
]


@pytest.mark.parametrize(("definitions", "message"), REFUSALS, ids=[m for _, m in REFUSALS])
def test_the_loader_refuses_with_the_yaml_path_and_a_sentence(
    definitions: str, message: str
) -> None:
    with pytest.raises(SpecError) as info:
        model(definitions)
    problems = info.value.problems
    assert any(f"spec/agui.yaml: {message}" in p for p in problems), problems


@pytest.mark.parametrize(
    ("definitions", "where"),
    [
        (field("str | null"), f"{F}.type"),  # not also "json already takes any JSON value"
        (holder('f?:\n  type: nope\n  default: false\n  doc: "case d"\n'), f"{F}?.type"),
        (holder('f:\n  type: nope\n  min: 0\n  doc: "case m"\n'), f"{F}.type"),
        ('Bad:\n  kind: alias\n  type: nope\n  max: 1\n  doc: "case a"\n', "definitions.Bad.type"),
        (
            'Bad:\n  kind: alias\n  type: str | nope\n  doc: "case a"\n'
            + holder('f:\n  type: Bad\n  pattern: "^a"\n  doc: "use"\n'),
            "definitions.Bad.type",
        ),
    ],
)
def test_a_wrong_type_is_the_only_problem_named(definitions: str, where: str) -> None:
    """What is checked against a member's type (a default, a bound, an alternative) is not,
    when the type itself is wrong: its placeholder would be blamed instead."""
    with pytest.raises(SpecError) as info:
        model(definitions)
    assert len(info.value.problems) == 1, info.value.problems
    assert info.value.problems[0].startswith(f"spec/agui.yaml: {where}: unknown type ")


def test_a_problem_of_an_alias_is_reported_once() -> None:
    """An alias used by many fields is checked where it is declared, and said once."""
    uses = "".join(f'f{i}:\n  type: Bad\n  doc: "use"\n' for i in range(3))
    with pytest.raises(SpecError) as info:
        model('Bad:\n  kind: alias\n  type: str\n  min: 1\n  doc: "case b"\n' + holder(uses))
    assert len(info.value.problems) == 1, info.value.problems


def test_the_example_of_docs_extending_loads() -> None:
    """The types section of docs/extending.md shows a spec edit that the loader accepts."""
    page = (SPEC_PATH.parent.parent / "docs" / "extending.md").read_text("utf-8")
    block = page.split("## Types", 1)[1].split("```yaml\n", 1)[1].split("```", 1)[0]
    spec = build(read_spec(SPEC_TEXT.rstrip("\n") + "\n" + block))
    location = next(o for o in spec.objects if o.name == "LocationPart")
    lat = next(f for f in location.fields if f.wire == "lat")
    assert lat.type is not None and (lat.type.kind, lat.type.alias) == ("number", "Latitude")


# ── what only the protobuf layout can refuse ─────────────────────────────────────────────────────


def proto_problems(definitions: str) -> list[str]:
    """Generation's protobuf layout of spec/agui.yaml plus an event CASE (CaseEvent, whose
    `definitions` are given) and its other definitions."""
    text = spec_with(definitions).replace(
        '      SUBAGENT_ERROR: "Reports a failed subagent invocation; the run itself may carry on."\n',
        '      SUBAGENT_ERROR: "Reports a failed subagent invocation; the run itself may carry on."\n'
        '      CASE: "The case."\n',
        1,
    )
    text = text.replace(
        "      - SubagentErrorEvent\n", "      - SubagentErrorEvent\n      - CaseEvent\n", 1
    )
    with pytest.raises(SpecError) as info:
        build_proto(build(read_spec(text)), load_ledger())
    return info.value.problems


def case_event(fields: str) -> str:
    return (
        'CaseEvent:\n  kind: object\n  tag: CASE\n  with: [BaseEvent]\n  doc: "The case."\n'
        "  fields:\n" + textwrap.indent(textwrap.dedent(fields), "    ")
    )


def test_an_alternative_field_may_not_take_another_members_protobuf_name() -> None:
    problems = proto_problems(
        case_event(
            'x:\n  type: str | int\n  doc: "case x"\nxNumber:\n  type: int\n  doc: "case y"\n'
        )
    )
    assert problems == [
        "spec/agui.yaml: definitions.CaseEvent: two protobuf fields of CaseEvent are named "
        "'x_number' (a member of type A | B adds _number, _bool, _parts or _object to its name); "
        "rename one member"
    ]


def test_a_definition_may_not_take_a_wrapper_messages_name() -> None:
    problems = proto_problems(
        case_event('rows:\n  type: list[list[str]]\n  doc: "case rows"\n')
        + 'StringList:\n  kind: object\n  doc: "case clash"\n  fields:\n    s:\n      type: str\n'
        '      doc: "case s"\n'
    )
    clash = "spec/agui.yaml: definitions.StringList: the protobuf binding needs the message name "
    assert (
        f"{clash}StringList for list[str] (a list item of CaseEvent.rows); rename the definition"
        in problems
    )
    # and nothing else (a fork with a list[list[str]] of its own is named for it too)
    assert all(p.startswith(clash) for p in problems), problems


def test_an_unknown_format_is_refused_by_the_meta_schema_naming_the_formats() -> None:
    with pytest.raises(SpecError) as info:
        model(holder('f:\n  type: str\n  format: url\n  doc: "case u"\n'))
    (problem,) = info.value.problems
    assert f"{F}.format:" in problem and "'url' is not one of" in problem, problem
    assert all(name in problem for name in ("date-time", "email", "uri", "uuid")), problem
