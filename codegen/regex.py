"""Spec patterns are ECMA-262 regular expressions (as in JSON Schema); Python runs them with `re`.

Dependency-free on purpose: the generator, the tests and the cross-SDK check all import it.
"""

from __future__ import annotations


def python_regex(pattern: str) -> str:
    """A spec pattern (ECMA-262, as JSON Schema reads it) in Python's dialect.

    The one difference that matters for anchored patterns is `$`: without the multiline flag it
    matches only at the very end in ECMA-262, while Python's `$` also matches before a final
    newline ("\\n" would pass as a JSON Pointer). Outside character classes it becomes `\\Z`.
    Spec patterns are expected to stay within the syntax both dialects share."""
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
