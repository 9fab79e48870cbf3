"""Spec patterns are ECMA-262 regular expressions with the `u` flag, as JSON Schema 2020-12 and ajv
read them, and every Python binding runs them with an ECMA-262 engine: `regress` (the Rust crate of
that name, which implements ECMA-262's syntax and semantics; docs/dependencies.md says why).

Python's `re` is not that dialect: its `\\d` and `\\w` are Unicode-wide ("١٢" is `^\\d+$` to it),
its `$` also matches before a final newline, `.` crosses "\\r" and "\\u2028", `\\p{L}` is an error
and a lookbehind must have a fixed width. The generator, the generated decoders and encoders, the
pydantic binding and the JSON Schema checks of the tests therefore all go through this module, or
through the same engine with the same flag (the generated `_runtime.compiled`).

A string with a lone surrogate (which Python allows and the wire cannot carry: JSON text in UTF-8
has none, and orjson refuses to write one) matches no pattern.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from functools import lru_cache
from typing import Any

import regress

FLAGS = "u"
"""The flags every spec pattern runs with: JSON Schema 2020-12 reads `pattern` as ECMA-262 with
Unicode semantics (`\\p{...}`, code points rather than UTF-16 units), as ajv does."""


def compile_error(pattern: str) -> str | None:
    """Why `pattern` is not a valid ECMA-262 pattern with the `u` flag (None when it is one)."""
    try:
        regress.Regex(pattern, FLAGS)
    except regress.RegressError as exc:
        return str(exc) or type(exc).__name__
    return None


@lru_cache(maxsize=256)
def matcher(pattern: str) -> Callable[[str], bool]:
    """A test of `pattern` as JSON Schema's `pattern` runs it: a search (patterns anchor themselves
    with `^` and `$`). Raises ValueError for a pattern that is not ECMA-262."""
    try:
        find = regress.Regex(pattern, FLAGS).find
    except regress.RegressError as exc:
        raise ValueError(f"{pattern!r} is not an ECMA-262 pattern: {exc}") from None

    def matches(text: str) -> bool:
        try:
            return find(text) is not None
        except UnicodeEncodeError:  # a lone surrogate: never on the wire
            return False

    return matches


def search(pattern: str, text: str) -> bool:
    """Whether `text` matches the spec pattern `pattern` (ECMA-262, `u` flag)."""
    return matcher(pattern)(text)


def jsonschema_pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterator[Any]:
    """The `pattern` keyword for python-jsonschema, which has no engine hook of its own (its
    `pattern` calls `re.search`): `jsonschema.validators.extend(Draft202012Validator,
    {"pattern": jsonschema_pattern})`."""
    import jsonschema

    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield jsonschema.ValidationError(f"{instance!r} does not match {pattern!r}")


def spec_validator(schema: Any, registry: Any) -> Any:
    """A python-jsonschema 2020-12 validator of `schema` that reads the contract as agui's
    bindings do: `pattern` in ECMA-262's sense (jsonschema_pattern) and every spec `format`
    asserted with its one implementation (codegen/runtime/_formats.py; jsonschema's own format
    checkers differ, its `email` asks only for an @). `registry` resolves the `$ref`s."""
    import jsonschema

    from codegen.runtime import FORMATS, conforms

    checker = jsonschema.FormatChecker(formats=())
    for name in FORMATS:
        checker.checks(name)(
            lambda text, name=name: not isinstance(text, str) or conforms(name, text)
        )
    cls = jsonschema.validators.extend(  # type: ignore[no-untyped-call]  # untyped in the stubs
        jsonschema.Draft202012Validator, {"pattern": jsonschema_pattern}
    )
    return cls(schema, registry=registry, format_checker=checker)


def python_regex(pattern: str) -> str:
    """A spec pattern in Python's dialect, for generating example strings only (hypothesis's
    `from_regex` needs `re`): what it generates is then checked with `search`. It turns ECMA-262's
    `$` into `\\Z` outside character classes, since Python's `$` also matches before a final
    newline; the other differences (module docstring) are left as they are."""
    out: list[str] = []
    i, in_class = 0, False
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            out.append(pattern[i : i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "$":
            ch = "\\Z"
        out.append(ch)
        i += 1
    return "".join(out)
