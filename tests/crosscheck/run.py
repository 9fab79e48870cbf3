"""Cross-SDK check: re-serialise every valid golden fixture with agui and with the official SDKs.

For each ``tests/fixtures/<Definition>/valid/*.json`` this computes agui's wire form
(``agui.encode(agui.decode(raw, cls, strict=True))``) and the form the official TypeScript
(@ag-ui/core 1.0.0) and Python (ag-ui-protocol 1.0.0) SDKs produce after parsing the same
document, then lists every fixture where a peer's bytes differ from agui's, and a summary
of the kinds of difference. The full result goes to ``.crosscheck/report.json``.

It also validates every fixture, valid and invalid, against the generated JSON Schema
(``generated/jsonschema/agui.schema.json``, with ECMA-262 patterns) and runs the invalid ones
through both peers too, then lists, per definition, every document a peer accepts that the
schema rejects or the other way round, with the reason (the fixture's expected problem, or the
peer's error).

A fork's additions (`extension: true` in the spec: tests/crosscheck/extensions.py) are listed
as extensions and not compared: a fixture that uses one (an extension definition, a member present,
an enum value, or an invalid fixture whose problem is in one) is neither a difference nor a
divergence, since the official SDKs cannot know it. The rest is compared as always.

Differences are findings, not failures: the exit status is 0 once everything ran, 1 if agui
rejects one of its own valid fixtures or the schema disagrees with a fixture, 2 if a peer could
not run at all.

Needs the npm packages installed under ``.crosscheck/`` first (``nox -s crosscheck`` does
it: ``npm ci --prefix .crosscheck`` with this folder's package.json and lock).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from extensions import Extensions  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
WORK = ROOT / ".crosscheck"
SCHEMA = ROOT / "generated" / "jsonschema" / "agui.schema.json"
SHOWN = 160  # characters of a wire shown in the table; the report keeps all of it


@dataclass
class Fixture:
    definition: str
    name: str  # path relative to tests/fixtures
    text: str  # the document as stored
    golden: str  # its canonical encoding, without the final newline


@dataclass
class Outcome:
    ok: bool
    wire: str | None
    error: str | None


@dataclass
class Difference:
    kind: str  # what groups it in the summary; no fixture-specific values
    detail: str  # the concrete instance


@dataclass
class Row:
    fixture: str
    definition: str
    agui: Outcome
    matches_golden: bool
    peers: dict[str, Outcome] = field(default_factory=dict)
    differences: dict[str, list[Difference]] = field(default_factory=dict)
    extensions: list[str] = field(default_factory=list)  # the fork's, when it uses any


@dataclass
class Invalid:
    """An invalid fixture, with the problem strict agui decoding reports for it."""

    definition: str
    name: str
    text: str
    pointer: str
    kind: str
    extensions: list[str] = field(default_factory=list)


@dataclass
class Divergence:
    """A document on which a peer's verdict differs from the JSON Schema's."""

    definition: str
    fixture: str
    peer: str
    peer_accepts: bool  # and so the schema rejects it, or the other way round
    why: str  # the fixture's expected problem, or the peer's error
    wire: str | None  # what the peer made of a document it accepted


class PeerFailure(Exception):
    pass


# ── collecting ────────────────────────────────────────────────────────────────


def collect() -> list[Fixture]:
    fixtures = []
    for path in sorted(FIXTURES.glob("*/valid/*.json")):
        if path.name.endswith(".expect.json"):
            continue
        text = path.read_bytes().decode("utf-8")
        expect = path.with_name(path.name.removesuffix(".json") + ".expect.json")
        golden = expect.read_bytes().decode("utf-8") if expect.exists() else text
        fixtures.append(
            Fixture(
                definition=path.parts[-3],
                name=path.relative_to(FIXTURES).as_posix(),
                text=text,
                golden=golden.removesuffix("\n"),
            )
        )
    return fixtures


def collect_invalid() -> list[Invalid]:
    cases = []
    for path in sorted(FIXTURES.glob("*/invalid/*.json")):
        if path.name.endswith(".expect.json"):
            continue
        expect = json.loads(
            path.with_name(path.name.removesuffix(".json") + ".expect.json").read_text("utf-8")
        )
        cases.append(
            Invalid(
                definition=path.parts[-3],
                name=path.relative_to(FIXTURES).as_posix(),
                text=path.read_bytes().decode("utf-8", "surrogateescape"),
                pointer=expect["pointer"],
                kind=expect["kind"],
            )
        )
    return cases


def schema_check() -> Any:
    """`check(definition, text) -> error or None` against the generated JSON Schema, each
    definition addressed by its $anchor. Patterns run in ECMA-262's sense (codegen.regex: python-jsonschema
    would use Python's `re`, a different dialect)."""
    import jsonschema
    import referencing
    from referencing.jsonschema import DRAFT202012

    sys.path.insert(0, str(ROOT))
    from codegen.regex import jsonschema_pattern

    schema = json.loads(SCHEMA.read_text("utf-8"))

    cls = jsonschema.validators.extend(
        jsonschema.Draft202012Validator, {"pattern": jsonschema_pattern}
    )
    registry = referencing.Registry().with_resource(
        schema["$id"], DRAFT202012.create_resource(schema)
    )
    validators: dict[str, Any] = {}

    def reject(token: str) -> Any:
        raise ValueError(f"{token} is not JSON")

    def check(definition: str, text: str) -> str | None:
        try:
            value = json.loads(text, parse_constant=reject)
        except ValueError as err:
            return f"not JSON: {err}"
        if definition not in validators:
            ref = {"$ref": f"{schema['$id']}#{definition}"}
            validators[definition] = cls(ref, registry=registry)
        error = jsonschema.exceptions.best_match(validators[definition].iter_errors(value))
        return None if error is None else f"{error.json_path}: {error.message[:160]}"

    return check


def run_agui(fixture: Fixture) -> Outcome:
    import agui

    try:
        cls = getattr(agui, fixture.definition)
        model = agui.decode(fixture.text.encode("utf-8"), cls, strict=True)
        return Outcome(True, agui.encode(model).decode("utf-8"), None)
    except Exception as err:
        return Outcome(False, None, f"{type(err).__name__}: {err}")


def run_peer(argv: list[str], fixtures: list[Fixture] | list[Invalid]) -> list[Outcome]:
    items = [{"definition": f.definition, "json": f.text} for f in fixtures]
    try:
        proc = subprocess.run(
            argv, input=json.dumps(items).encode("utf-8"), capture_output=True, check=False
        )
    except OSError as err:
        raise PeerFailure(f"cannot start {argv[0]}: {err}") from err
    if proc.returncode != 0:
        tail = proc.stderr.decode("utf-8", "replace").strip()[-2000:]
        raise PeerFailure(f"exited with {proc.returncode}: {tail}")
    try:
        results = json.loads(proc.stdout)
    except ValueError as err:
        raise PeerFailure(f"printed no JSON array: {err}") from err
    if not isinstance(results, list) or len(results) != len(fixtures):
        raise PeerFailure("answered a different number of documents than it was given")
    return [Outcome(bool(r["ok"]), r["wire"], r["error"]) for r in results]


def peers() -> dict[str, list[str]]:
    node_modules = WORK / "node_modules" / "@ag-ui" / "core"
    if not node_modules.is_dir():
        raise PeerFailure(
            "zod peer not installed: copy tests/crosscheck/package*.json to .crosscheck/ "
            "and run `npm ci --prefix .crosscheck` (or `nox -s crosscheck`)"
        )
    # Node resolves packages from the script's own folder, so the script runs from there.
    shutil.copy(HERE / "zod_roundtrip.mjs", WORK / "zod_roundtrip.mjs")
    pydantic = [sys.executable, str(HERE / "pydantic_roundtrip.py")]
    return {
        "zod": ["node", str(WORK / "zod_roundtrip.mjs")],
        "pydantic": pydantic,
        "pydantic[exclude_none]": [*pydantic, "--exclude-none"],
    }


def load_spec_model() -> Any:
    from extensions import load

    return load()


def parse_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def print_extensions(extensions: Any, rows: list[Row], invalid: list[Invalid]) -> None:
    """The fixtures that use the fork's extensions, which no official SDK is asked about."""
    if not extensions.any:
        return
    used = [(r.fixture, r.extensions) for r in rows if r.extensions]
    used += [(c.name, c.extensions) for c in invalid if c.extensions]
    print(
        f"\n── extensions (extension: true in the spec): {len(used)} fixtures use them, "
        "not compared with the official SDKs"
    )
    print(f"  declared: {', '.join(extensions.declared())}")
    for name, names in sorted(used):
        print(f"  {name}: {', '.join(names)}")


# ── comparing ─────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Num:
    """A JSON number that remembers how it was written."""

    text: str

    @property
    def value(self) -> Decimal:
        return Decimal(self.text)


def load(text: str) -> Any:
    return json.loads(text, parse_int=Num, parse_float=Num, parse_constant=Num)


def render(value: Any) -> str:
    """Compact JSON again, with numbers exactly as they were written."""
    if isinstance(value, Num):
        return value.text
    if isinstance(value, dict):
        inner = ",".join(
            f"{json.dumps(k, ensure_ascii=False)}:{render(v)}" for k, v in value.items()
        )
        return "{" + inner + "}"
    if isinstance(value, list):
        return "[" + ",".join(render(v) for v in value) + "]"
    return json.dumps(value, ensure_ascii=False)


def short(value: Any, limit: int = 60) -> str:
    text = render(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def where(path: str) -> str:
    return path or "<root>"


def is_index_like(key: str) -> bool:
    return key.isdigit() and (key == "0" or not key.startswith("0"))


def compare(ours: Any, theirs: Any, path: str, out: list[Difference]) -> None:
    """Collect how ``theirs`` departs from ``ours`` (agui's output), in the peer's terms."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        for key, value in ours.items():
            if key not in theirs:
                kind = f"drops null `{key}`" if value is None else f"drops `{key}`"
                out.append(Difference(kind, f"{path}/{key}: {short(value)}"))
        for key, value in theirs.items():
            if key not in ours:
                kind = f"adds `{key}` = {short(value, 20)}"
                out.append(Difference(kind, f"{path}/{key}: {short(value)}"))
        common = [k for k in ours if k in theirs]
        for key in common:
            compare(ours[key], theirs[key], f"{path}/{key}", out)
        their_order = [k for k in theirs if k in ours]
        if common != their_order:
            kind = (
                "moves integer-like keys first (JS object key order)"
                if their_order
                == sorted((k for k in common if is_index_like(k)), key=int)
                + [k for k in common if not is_index_like(k)]
                else "reorders object keys"
            )
            out.append(Difference(kind, f"{where(path)}: {common} → {their_order}"))
    elif isinstance(ours, list) and isinstance(theirs, list):
        if len(ours) != len(theirs):
            out.append(
                Difference("changes array length", f"{where(path)}: {len(ours)} → {len(theirs)}")
            )
        for index, (a, b) in enumerate(zip(ours, theirs, strict=False)):
            compare(a, b, f"{path}/{index}", out)
    elif isinstance(ours, Num) and isinstance(theirs, Num):
        if ours.value != theirs.value:
            kind = "changes a number's value"
            out.append(Difference(kind, f"{where(path)}: {ours.text} → {theirs.text}"))
        elif ours.text != theirs.text:
            integral = not re.search(r"[.eE]", theirs.text) and re.search(r"[.eE]", ours.text)
            kind = (
                "writes an integral float as an integer"
                if integral
                else "spells a number differently"
            )
            out.append(Difference(kind, f"{where(path)}: {ours.text} → {theirs.text}"))
    elif type(ours) is not type(theirs):
        kind = f"changes {type(ours).__name__} to {type(theirs).__name__}"
        out.append(Difference(kind, f"{where(path)}: {short(ours)} → {short(theirs)}"))
    elif ours != theirs:
        kind = "changes a string" if isinstance(ours, str) else "changes a value"
        out.append(Difference(kind, f"{where(path)}: {short(ours)} → {short(theirs)}"))


def differences(definition: str, ours: str, theirs: Outcome) -> list[Difference]:
    if not theirs.ok or theirs.wire is None:
        error = theirs.error or "no output"
        if error.startswith("unsupported"):
            return [Difference(f"has no schema for {definition}", error)]
        # Indices vary between fixtures; the reason does not.
        reason = re.sub(r"\.\d+(?=[.:])", ".*", error.split("; ")[0])
        return [Difference(f"rejects {definition}: {reason[:120]}", error)]
    if theirs.wire == ours:
        return []
    found: list[Difference] = []
    compare(load(ours), load(theirs.wire), "", found)
    if not found:
        at = next(
            (i for i, (a, b) in enumerate(zip(ours, theirs.wire, strict=False)) if a != b),
            min(len(ours), len(theirs.wire)),
        )
        snippet = (
            f"…{ours[max(0, at - 10) : at + 20]!r} vs …{theirs.wire[max(0, at - 10) : at + 20]!r}"
        )
        found.append(Difference("same JSON value, different text (escaping/spacing)", snippet))
    return found


# ── acceptance: the peers against the schema ──────────────────────────────────


def divergences(
    definition: str,
    fixture: str,
    schema_error: str | None,
    peers: dict[str, Outcome],
    expected: str | None,
) -> list[Divergence]:
    """Where a peer's verdict differs from the schema's. `expected` is the problem an invalid
    fixture is about ("null at /name"); None for a valid fixture."""
    found = []
    for peer, outcome in peers.items():
        if outcome.error is not None and outcome.error.startswith("unsupported"):
            continue  # the peer has no schema for this definition; listed elsewhere
        if outcome.ok == (schema_error is None):
            continue
        if outcome.ok:
            why = expected or f"the schema says {schema_error}"
        else:
            why = outcome.error or "rejected"
        found.append(Divergence(definition, fixture, peer, outcome.ok, why, outcome.wire))
    return found


def print_divergences(found: list[Divergence]) -> None:
    print("\n── acceptance: documents a peer judges differently from the JSON Schema")
    if not found:
        print("  none")
    for definition in sorted({d.definition for d in found}):
        print(f"\n  {definition}")
        for d in (d for d in found if d.definition == definition):
            verdict = "accepts" if d.peer_accepts else "rejects"
            print(f"    {d.peer:<9} {verdict} {d.fixture}: {clip(d.why)}")
            if d.peer_accepts and d.wire is not None:
                print(f"    {'':<9}   → {clip(d.wire)}")


KINDS = {
    "null": "null on an optional member",
    "unknown_property": "a member the definition does not have",
    "type": "a value of another JSON type",
    "missing": "a required member left out",
    "range": "an integer out of bounds",
    "pattern": "a string that does not match the pattern",
    "enum": "a value outside the enum",
    "const": "another value where one is fixed",
    "unknown_tag": "an unknown discriminator value",
    "min_items": "too few items",
    "json": "text that is not JSON",
}


def summarise_divergences(found: list[Divergence]) -> list[dict[str, Any]]:
    """Per peer and reason (the expected problem's kind, or the peer's error in general terms)."""
    groups: dict[tuple[str, str], list[Divergence]] = {}
    for d in found:
        if d.peer_accepts:
            kind = d.why.split(" at ")[0]
            reason = f"accepts what the schema rejects: {kind} ({KINDS.get(kind, kind)})"
        else:
            reason = (
                "rejects what the schema accepts: "
                + re.sub(r"\.\d+(?=[.:])", ".*", d.why.split("; ")[0])[:100]
            )
        groups.setdefault((d.peer, reason), []).append(d)
    return [
        {
            "peer": peer,
            "reason": reason,
            "fixtures": len(items),
            "definitions": sorted({d.definition for d in items}),
            "examples": [d.fixture for d in items[:3]],
        }
        for (peer, reason), items in sorted(
            groups.items(), key=lambda kv: (kv[0][0], -len(kv[1]), kv[0][1])
        )
    ]


# ── reporting ─────────────────────────────────────────────────────────────────


def clip(text: str | None) -> str:
    if text is None:
        return "-"
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def print_table(rows: list[Row]) -> None:
    for row in rows:
        if row.extensions or not any(row.differences.values()):
            continue
        print(f"\n== {row.fixture}")
        print(f"   {'agui':<24} {clip(row.agui.wire)}")
        for name, outcome in row.peers.items():
            found = row.differences[name]
            if not found:
                print(f"   {name:<24} (same bytes)")
                continue
            if not outcome.ok:
                print(f"   {name:<24} ERROR {clip(outcome.error)}")
                continue
            print(f"   {name:<24} {clip(outcome.wire)}")
            for diff in found:
                print(f"   {'':<24}   · {diff.kind}: {clip(diff.detail)}")


def summarise(rows: list[Row]) -> list[dict[str, Any]]:
    counts: Counter[tuple[str, str]] = Counter()
    examples: dict[tuple[str, str], tuple[str, str]] = {}
    for row in rows:
        for peer, found in row.differences.items():
            for kind in dict.fromkeys(d.kind for d in found):  # once per fixture
                counts[peer, kind] += 1
                detail = next(d.detail for d in found if d.kind == kind)
                examples.setdefault((peer, kind), (row.fixture, detail))
    return [
        {
            "peer": peer,
            "kind": kind,
            "fixtures": n,
            "example": examples[peer, kind][0],
            "detail": examples[peer, kind][1],
        }
        for (peer, kind), n in sorted(counts.items(), key=lambda kv: (kv[0][0], -kv[1], kv[0][1]))
    ]


def main() -> int:
    sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
    WORK.mkdir(exist_ok=True)
    fixtures = collect()
    print(f"crosscheck: {len(fixtures)} valid fixtures under {FIXTURES.relative_to(ROOT)}")
    try:
        import agui  # noqa: F401
    except Exception as err:
        print(f"crosscheck: cannot import agui: {err}", file=sys.stderr)
        return 2

    rows = [
        Row(f.name, f.definition, outcome, outcome.wire == f.golden)
        for f in fixtures
        for outcome in [run_agui(f)]
    ]
    try:
        extensions = Extensions(load_spec_model())
    except Exception as err:
        print(f"crosscheck: cannot read the spec's extensions: {err}", file=sys.stderr)
        return 2
    for f, row in zip(fixtures, rows, strict=True):
        row.extensions = extensions.touched(f.definition, parse_or_none(f.text))
    failures: dict[str, str] = {}
    try:
        commands = peers()
    except PeerFailure as err:
        print(f"crosscheck: {err}", file=sys.stderr)
        return 2
    for name, argv in commands.items():
        try:
            outcomes = run_peer(argv, fixtures) if fixtures else []
        except PeerFailure as err:
            failures[name] = str(err)
            continue
        for row, outcome in zip(rows, outcomes, strict=True):
            row.peers[name] = outcome
            if row.agui.wire is not None and not row.extensions:
                row.differences[name] = differences(row.definition, row.agui.wire, outcome)

    print_table(rows)

    # the JSON Schema on every fixture, and the peers on the invalid ones
    try:
        check = schema_check()
    except Exception as err:
        print(f"crosscheck: cannot load the JSON Schema: {err}", file=sys.stderr)
        return 2
    invalid = collect_invalid()
    for case in invalid:
        case.extensions = extensions.touched(
            case.definition, parse_or_none(case.text), case.pointer
        )
    schema_valid = {f.name: check(f.definition, f.text) for f in fixtures}
    schema_invalid = {c.name: check(c.definition, c.text) for c in invalid}
    invalid_peers: dict[str, list[Outcome]] = {}
    for name in ("zod", "pydantic"):
        try:
            invalid_peers[name] = run_peer(commands[name], invalid) if invalid else []
        except PeerFailure as err:
            failures[f"{name} (invalid fixtures)"] = str(err)
    found: list[Divergence] = []
    for row in rows:
        if row.extensions:
            continue  # the fork's own: the peers cannot know it
        peers_of_row = {k: v for k, v in row.peers.items() if k in ("zod", "pydantic")}
        found += divergences(
            row.definition, row.fixture, schema_valid[row.fixture], peers_of_row, None
        )
    for index, case in enumerate(invalid):
        if case.extensions:
            continue
        outcomes = {name: results[index] for name, results in invalid_peers.items()}
        expected = f"{case.kind} at {case.pointer or '/'}"
        found += divergences(
            case.definition, case.name, schema_invalid[case.name], outcomes, expected
        )
    print_divergences(found)
    accepted_by_schema = [c.name for c in invalid if schema_invalid[c.name] is None]
    rejected_by_schema = [f"{k}: {v}" for k, v in schema_valid.items() if v is not None]
    no_schema = sorted(
        {
            f"{peer} has no schema for {row.definition}"
            for row in rows
            for peer, outcome in row.peers.items()
            if not row.extensions
            and outcome.error is not None
            and outcome.error.startswith("unsupported")
        }
    )

    summary = summarise(rows)
    rejected = [r for r in rows if not r.agui.ok]
    off_golden = [r for r in rows if r.agui.ok and not r.matches_golden]

    print("\n── summary: fixtures per kind of difference (peer vs agui)")
    for entry in summary:
        print(f"  {entry['fixtures']:>4}  {entry['peer']:<24} {entry['kind']}")
        print(f"        {'':<24} e.g. {entry['example']}: {clip(entry['detail'])}")
    if not summary:
        print("  none")
    print("\n── summary: documents a peer judges differently from the JSON Schema")
    divergence_summary = summarise_divergences(found)
    for entry in divergence_summary:
        definitions = entry["definitions"]
        shown = ", ".join(definitions[:4]) + (", …" if len(definitions) > 4 else "")
        print(f"  {entry['fixtures']:>4}  {entry['peer']:<9} {entry['reason']}")
        print(f"        {'':<9} {len(definitions)} definitions: {shown}")
    if not divergence_summary:
        print("  none")
    for note in no_schema:
        print(f"  NOTE {note}")
    print(
        f"\n  JSON Schema: {len(fixtures) - len(rejected_by_schema)}/{len(fixtures)} valid fixtures "
        f"accepted, {len(invalid) - len(accepted_by_schema)}/{len(invalid)} invalid ones rejected"
    )
    for entry in rejected_by_schema:
        print(f"  FAIL the JSON Schema rejects the valid fixture {entry}")
    for name in accepted_by_schema:
        print(f"  FAIL the JSON Schema accepts the invalid fixture {name}")
    print_extensions(extensions, rows, invalid)
    compared = [r for r in rows if not r.extensions]
    same = sum(1 for r in compared if r.peers and not any(r.differences.values()))
    print(f"\n  {same}/{len(compared)} fixtures byte-identical across every peer")
    for row in off_golden:
        print(f"  NOTE agui output differs from the golden encoding: {row.fixture}")
    for row in rejected:
        print(f"  FAIL agui rejects its own valid fixture {row.fixture}: {row.agui.error}")
    for name, why in failures.items():
        print(f"  FAIL peer {name} did not run: {why}", file=sys.stderr)

    report = {
        "fixtures": [asdict(r) for r in rows],
        "summary": summary,
        "peer_failures": failures,
        "agui_rejects": [r.fixture for r in rejected],
        "agui_off_golden": [r.fixture for r in off_golden],
        "schema": {
            "valid_rejected": rejected_by_schema,
            "invalid_accepted": accepted_by_schema,
        },
        "acceptance": [asdict(d) for d in found],
        "extensions": {
            "declared": extensions.declared(),
            "fixtures": {
                item.name if isinstance(item, Invalid) else item.fixture: item.extensions
                for item in [*rows, *invalid]
                if item.extensions
            },
        },
        "acceptance_summary": divergence_summary,
    }
    out = WORK / "report.json"
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\n  report: {out.relative_to(ROOT)}")
    if failures:
        return 2
    return 1 if rejected or rejected_by_schema or accepted_by_schema else 0


if __name__ == "__main__":
    sys.exit(main())
