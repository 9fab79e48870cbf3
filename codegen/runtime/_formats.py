r"""The string formats a spec member may declare (`format:`), each a test of a string.

A format is part of the contract wherever the spec writes one: every Python binding refuses a
string that is not of its format (the attrs decoders and encoders, the pydantic binding), and the
JSON Schema carries it as `format`, which a validator asserts when told to (ajv with ajv-formats,
jsonschema with a FormatChecker; JSON Schema 2020-12 makes `format` an annotation by default).

The definitions are those of ajv-formats 3 in its "full" mode, the checker JavaScript SDKs run on
a JSON Schema, transcribed here so that both give the same verdict on every string
(tests/test_formats.py asks ajv for its verdicts on a table of cases). Their regular expressions
are JavaScript's with the `i` flag and without `u`; every class in them is ASCII, and without `u`
JavaScript never folds a non-ASCII character onto an ASCII one (the long s is no s, the Kelvin
sign no k), so they match ASCII text only, and on ASCII text Python's `re` with ASCII and
IGNORECASE reads them alike (with `\Z` for the final `$`). The one exception is the separator of
date-time, JavaScript's `\s`, which is Unicode-wide without `u` too: it is spelled out.

* `date-time`: RFC 3339 section 5.6, a date and a time with its offset (`Z` or `+01:00`), `T` or
  a space between them, any case; a real calendar date; a leap second only at 23:59 UTC;
* `uri`: an absolute URI (RFC 3986, a scheme and then any of its forms);
* `uuid`: 8-4-4-4-12 hexadecimal digits, any case and version, optionally `urn:uuid:` first;
* `email`: an address of the dot-atom form (`local@host.example`), ASCII only.

This file is the one implementation: the generator checks a `default:` with it, and
`python -m codegen` copies it into the generated tree (`agui_generated/_formats.py`), which both
generated bindings import from.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache, lru_cache

FORMATS: dict[str, str] = {
    "date-time": "a date and time (RFC 3339, with its offset)",
    "email": "an email address",
    "uri": "an absolute URI (RFC 3986)",
    "uuid": "a UUID",
}
"""Each format -> how an error message names what a string of it is."""

_DATE = r"^(\d\d\d\d)-(\d\d)-(\d\d)$"
_TIME = r"^(\d\d):(\d\d):(\d\d(?:\.\d+)?)(z|([+-])(\d\d)(?::?(\d\d))?)?$"
_SEPARATOR = "[tT\t\n\x0b\x0c\r \xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]"
"""JavaScript's /t|\\s/i: a T or any white space or line terminator of ECMA-262."""
_SPLIT = re.compile(_SEPARATOR)
_DAYS = (0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_NOT_URI_FRAGMENT = re.compile("[/:]")
_URI = (
    r"^(?:[a-z][a-z0-9+\-.]*:)(?:\/?\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:]|%[0-9a-f]{2})*@)?(?:"
    r"\[(?:(?:(?:(?:[0-9a-f]{1,4}:){6}|::(?:[0-9a-f]{1,4}:){5}|(?:[0-9a-f]{1,4})?::(?:[0-9"
    r"a-f]{1,4}:){4}|(?:(?:[0-9a-f]{1,4}:){0,1}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){3}|(?:("
    r"?:[0-9a-f]{1,4}:){0,2}[0-9a-f]{1,4})?::(?:[0-9a-f]{1,4}:){2}|(?:(?:[0-9a-f]{1,4}:){0"
    r",3}[0-9a-f]{1,4})?::[0-9a-f]{1,4}:|(?:(?:[0-9a-f]{1,4}:){0,4}[0-9a-f]{1,4})?::)(?:[0"
    r"-9a-f]{1,4}:[0-9a-f]{1,4}|(?:(?:25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]"
    r"\d|[01]?\d\d?))|(?:(?:[0-9a-f]{1,4}:){0,5}[0-9a-f]{1,4})?::[0-9a-f]{1,4}|(?:(?:[0-9a"
    r"-f]{1,4}:){0,6}[0-9a-f]{1,4})?::)|[Vv][0-9a-f]+\.[a-z0-9\-._~!$&'()*+,;=:]+)\]|(?:(?"
    r":25[0-5]|2[0-4]\d|[01]?\d\d?)\.){3}(?:25[0-5]|2[0-4]\d|[01]?\d\d?)|(?:[a-z0-9\-._~!$"
    r"&'()*+,;=]|%[0-9a-f]{2})*)(?::\d*)?(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})*"
    r")*|\/(?:(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-._~!$&'()*+,;=:"
    r"@]|%[0-9a-f]{2})*)*)?|(?:[a-z0-9\-._~!$&'()*+,;=:@]|%[0-9a-f]{2})+(?:\/(?:[a-z0-9\-."
    r"_~!$&'()*+,;=:@]|%[0-9a-f]{2})*)*)(?:\?(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})"
    r"*)?(?:#(?:[a-z0-9\-._~!$&'()*+,;=:@/?]|%[0-9a-f]{2})*)?$"
)
_UUID = r"^(?:urn:uuid:)?[0-9a-f]{8}-(?:[0-9a-f]{4}-){3}[0-9a-f]{12}$"
_EMAIL = (
    r"^[a-z0-9!#$%&'*+/=?^_`{|}~-]+(?:\.[a-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
    r"@(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+[a-z0-9](?:[a-z0-9-]*[a-z0-9])?$"
)


@cache
def _regex(source: str) -> re.Pattern[str]:
    """One of ajv-formats' anchored expressions, for ASCII text (see the module's docstring)."""
    return re.compile(source.removesuffix("$") + r"\Z", re.ASCII | re.IGNORECASE)


def _matches(source: str, text: str) -> bool:
    return text.isascii() and _regex(source).match(text) is not None


def _groups(source: str, text: str) -> tuple[str | None, ...] | None:
    """The groups of the match, None for a group that took no part; None for no match."""
    found = _regex(source).match(text) if text.isascii() else None
    return None if found is None else found.groups()


def _date(text: str) -> bool:
    parts = _groups(_DATE, text)
    if parts is None:
        return False
    year, month, day = (int(p or 0) for p in parts)
    leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
    return 1 <= month <= 12 and 1 <= day <= (29 if month == 2 and leap else _DAYS[month])


def _time(text: str) -> bool:
    parts = _groups(_TIME, text)
    if parts is None:
        return False
    hour, minute = int(parts[0] or 0), int(parts[1] or 0)
    second = float(parts[2] or 0)
    zone, sign = parts[3], -1 if parts[4] == "-" else 1
    zone_hour, zone_minute = int(parts[5] or 0), int(parts[6] or 0)
    if zone_hour > 23 or zone_minute > 59 or not zone:
        return False
    if hour <= 23 and minute <= 59 and second < 60:
        return True
    # a leap second: 23:59:60 in UTC
    utc_minute = minute - zone_minute * sign
    utc_hour = hour - zone_hour * sign - (1 if utc_minute < 0 else 0)
    return utc_hour in (23, -1) and utc_minute in (59, -1) and second < 61


def _date_time(text: str) -> bool:
    pieces = _SPLIT.split(text)  # JavaScript's str.split(/t|\s/i)
    return len(pieces) == 2 and _date(pieces[0]) and _time(pieces[1])


def _uri(text: str) -> bool:
    return _NOT_URI_FRAGMENT.search(text) is not None and _matches(_URI, text)


def _matching(source: str) -> Callable[[str], bool]:
    return lambda text: _matches(source, text)


_TESTS: dict[str, Callable[[str], bool]] = {
    "date-time": _date_time,
    "email": _matching(_EMAIL),
    "uri": _uri,
    "uuid": _matching(_UUID),
}


def conforms(fmt: str, text: str) -> bool:
    """Whether `text` is a string of the format `fmt` (a key of FORMATS). A string with a lone
    surrogate, which the wire cannot carry, is of no format (it is no ASCII)."""
    return _TESTS[fmt](text)


def expression(fmt: str) -> re.Pattern[str] | None:
    """The regular expression that defines a format, for one a regular expression alone defines
    (email, uri, uuid; date-time also asks for a real calendar date): for drawing examples of the
    format (tests/test_properties.py), each still to be confirmed by `conforms`."""
    source = {"email": _EMAIL, "uri": _URI, "uuid": _UUID}.get(fmt)
    return None if source is None else _regex(source)


def tester(fmt: str) -> Callable[[str], bool]:
    """A cached test of one format, for the decoders and encoders: the same strings (ids, links)
    recur in a stream, and a cache hit costs less than the regular expressions."""
    return lru_cache(maxsize=4096)(_TESTS[fmt])
