"""The spec's string formats (`format:`) give ajv-formats' verdicts.

codegen/runtime/_formats.py is the one implementation every Python binding runs (the generated
decoders and encoders, the pydantic binding); it transcribes ajv-formats' "full" definitions. Each
case below is a string and the verdict read off those definitions; the transcription must give it,
and so must ajv 2020 with ajv-formats in node when .interop is installed (`nox -s interop`; the test
fails there without it, and is skipped elsewhere). tests/codegen/every_form_checks.py shows each
binding refusing a string of no format, naming the member.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest

from codegen.runtime import FORMATS, conforms

from .conftest import ROOT

CASES: list[tuple[str, str, bool]] = [
    ("date-time", "2026-12-04T18:16:15Z", True),
    ("date-time", "2026-12-04t18:16:15z", True),  # any case
    ("date-time", "2026-12-04 18:16:15+01:00", True),  # a space for the T
    ("date-time", "2026-12-04T18:16:15.123456789-05:30", True),
    ("date-time", "2026-12-04T18:16:15+0100", True),  # ajv-formats takes an offset without colon
    ("date-time", "2024-02-29T00:00:00Z", True),  # a leap year
    ("date-time", "2023-02-29T00:00:00Z", False),
    ("date-time", "1900-02-29T00:00:00Z", False),  # divisible by 100, not by 400
    ("date-time", "2000-02-29T00:00:00Z", True),
    ("date-time", "2026-04-31T00:00:00Z", False),
    ("date-time", "2026-13-01T00:00:00Z", False),
    ("date-time", "2026-12-04T24:00:00Z", False),
    ("date-time", "2026-12-04T23:59:60Z", True),  # a leap second at the end of the UTC day
    ("date-time", "2026-12-04T23:59:60+01:00", False),  # 22:59:60 UTC
    ("date-time", "2026-12-05T00:59:60+01:00", True),  # 23:59:60 UTC
    ("date-time", "2026-12-04T18:16:15", False),  # no offset
    ("date-time", "2026-12-04", False),
    ("date-time", "2026-12-04T18:16Z", False),  # no seconds
    ("date-time", "2026-12-04T18:16:15+24:00", False),
    ("date-time", "2026-12-04\u00a018:16:15Z", True),  # JavaScript's \s takes a no-break space
    ("date-time", "2026-12-04T18:16:15Z\n", False),
    ("date-time", "２０２６-12-04T18:16:15Z", False),  # fullwidth digits are no \d
    ("email", "nobody@example.com", True),
    ("email", "first.last+tag@mail.example.org", True),
    ("email", "NOBODY@EXAMPLE.COM", True),
    ("email", "nobody@localhost", False),  # ajv-formats wants a dot in the domain
    ("email", "no body@example.com", False),
    ("email", ".nobody@example.com", False),
    ("email", "nobody@-example.com", False),
    ("email", "nøbody@example.com", False),  # ASCII only
    ("email", "nobody@example.com\n", False),
    ("email", "nobody@exampl\u017f.com", False),  # the long s is no s, even with the i flag
    ("uri", "https://example.com/a/b?c=d#e", True),
    ("uri", "urn:isbn:0451450523", True),
    ("uri", "mailto:nobody@example.com", True),
    ("uri", "http://[::1]:8000/", True),
    ("uri", "http://127.0.0.1/x%20y", True),
    ("uri", "HTTP://EXAMPLE.COM", True),
    ("uri", "example.com/a", False),  # no scheme
    ("uri", "/relative/path", False),
    ("uri", "http://exa mple.com", False),
    ("uri", "http://example.com/%zz", False),
    ("uri", "1http://example.com", False),
    ("uri", "https://example.com/é", False),  # an IRI, not a URI
    ("uuid", "123e4567-e89b-12d3-a456-426614174000", True),
    ("uuid", "123E4567-E89B-12D3-A456-426614174000", True),
    ("uuid", "urn:uuid:123e4567-e89b-12d3-a456-426614174000", True),
    ("uuid", "00000000-0000-0000-0000-000000000000", True),  # any version, the nil UUID too
    ("uuid", "123e4567e89b12d3a456426614174000", False),
    ("uuid", "{123e4567-e89b-12d3-a456-426614174000}", False),
    ("uuid", "123e4567-e89b-12d3-a456-42661417400g", False),
    ("uuid", "123e4567-e89b-12d3-a456-4266141740000", False),
]
INTEROP = ROOT / ".interop"
SCRIPT = ROOT / "tests" / "interop" / "formats.mjs"


def test_the_cases_cover_every_format_both_ways() -> None:
    assert {(fmt, ok) for fmt, _, ok in CASES} == {(f, ok) for f in FORMATS for ok in (True, False)}


@pytest.mark.parametrize(("fmt", "value", "ok"), CASES, ids=[f"{f}:{v!r}" for f, v, _ in CASES])
def test_the_spec_formats_give_ajv_formats_verdicts(fmt: str, value: str, ok: bool) -> None:
    assert conforms(fmt, value) is ok


def test_a_lone_surrogate_is_of_no_format() -> None:
    assert not conforms("uri", "https://example.com/\ud800")


def test_ajv_formats_gives_the_same_verdicts() -> None:
    node = shutil.which("node")
    installed = (INTEROP / "node_modules" / "ajv-formats" / "package.json").is_file()
    if node is None or not installed:
        if os.environ.get("AGUI_INTEROP") == "1":
            pytest.fail("AGUI_INTEROP=1 needs node and .interop (tests/interop/package*.json)")
        pytest.skip("needs node and .interop (`nox -s interop` installs it)")
    work = INTEROP / "formats.mjs"  # beside node_modules, so that its imports resolve
    shutil.copyfile(SCRIPT, work)
    proc = subprocess.run(
        [node, str(work)],
        input=json.dumps([[fmt, value] for fmt, value, _ in CASES]),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    got = json.loads(proc.stdout)["ajv 2020 + ajv-formats"]
    wrong = [
        CASES[i][:2] for i, (a, (_, _, b)) in enumerate(zip(got, CASES, strict=True)) if a != b
    ]
    assert not wrong, f"ajv-formats disagrees on {wrong}"
