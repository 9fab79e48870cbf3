"""Cross-SDK check: every golden fixture through agui and through each peer SDK, against a baseline.

For each ``tests/fixtures/<Definition>/{valid,invalid}/*.json`` this asks every peer (a command
speaking the protocol of tests/crosscheck/peers.py: the built-in @ag-ui/core 1.0.0 under node and
ag-ui-protocol 1.0.0, and any `--peer NAME=COMMAND`) what it makes of the document, and compares:
a valid fixture must be accepted and written back as ``agui.encode(agui.decode(raw, strict=True))``
writes it, byte for byte; an invalid one must be rejected. Each way a peer departs from that is a
divergence, keyed by (peer, definition, fixture, kind). The divergences known and explained are in
tests/crosscheck/baseline.json; one that is not is new, and fails the run.

It also validates every fixture against the generated JSON Schema (with ECMA-262 patterns): the
schema disagreeing with a fixture fails, as does agui rejecting one of its own valid fixtures.

A fork's additions (`extension: true` in the spec: tests/crosscheck/extensions.py) cannot be known
to the official SDKs: a fixture that uses one is not a divergence but gets a verdict per peer,
accept (written back with the extension), strip (accepted, the extension gone) or reject.

`--against FILE.jsonl` instead reads events another SDK wrote (one event per line, the `data:` of
its SSE frames) and checks that agui decodes each and encodes it back to the same bytes.

Exit status: 0 when nothing new was found (a stale baseline entry is a warning, a failure with
`--strict`); 1 on a new divergence, a failure of agui or of the schema, or a difference under
`--against`; 2 when agui or a peer could not run. The full result is written to
``.crosscheck/report.json``. Needs the npm packages under ``.crosscheck/`` for the zod peer
(``nox -s crosscheck`` installs them) and ag-ui-protocol for the pydantic peers.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
import baseline as baseline_file  # noqa: E402
from baseline import Baseline, BaselineError, Key  # noqa: E402
from extensions import Extensions  # noqa: E402
from peers import (  # noqa: E402
    WORK,
    Num,
    Outcome,
    PeerFailure,
    ask,
    default_peers,
    load,
    parse_peer,
    render,
)

FIXTURES = ROOT / "tests" / "fixtures"
SCHEMA = ROOT / "generated" / "jsonschema" / "agui.schema.json"
SHOWN = 160  # characters of a wire shown; the report keeps all of it

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


@dataclass
class Document:
    definition: str
    name: str  # path relative to tests/fixtures
    text: str  # as stored
    valid: bool
    golden: str | None = None  # a valid one's canonical encoding, without the final newline
    kind: str | None = None  # an invalid one's expected problem
    pointer: str | None = None
    extensions: list[str] = field(default_factory=list)

    @property
    def expected(self) -> str:
        return f"{self.kind} at {self.pointer or '/'}"


@dataclass
class Difference:
    kind: str  # what groups it; no fixture-specific values
    detail: str  # the concrete instance


@dataclass
class Divergence:
    peer: str
    definition: str
    fixture: str
    kind: str
    detail: str
    wire: str | None = None
    reason: str | None = None  # the baseline's, when known

    @property
    def key(self) -> Key:
        return Key(self.peer, self.definition, self.fixture, self.kind)


@dataclass
class Verdict:
    """What a peer does with a fixture that uses the fork's extensions."""

    peer: str
    fixture: str
    extensions: list[str]
    verdict: str  # accept | strip | reject
    detail: str


# ── collecting ────────────────────────────────────────────────────────────────


def collect() -> list[Document]:
    documents = []
    for path in sorted(FIXTURES.glob("*/valid/*.json")):
        if path.name.endswith(".expect.json"):
            continue
        text = path.read_bytes().decode("utf-8")
        expect = path.with_name(path.name.removesuffix(".json") + ".expect.json")
        golden = expect.read_bytes().decode("utf-8") if expect.exists() else text
        documents.append(
            Document(
                path.parts[-3],
                path.relative_to(FIXTURES).as_posix(),
                text,
                True,
                golden=golden.removesuffix("\n"),
            )
        )
    for path in sorted(FIXTURES.glob("*/invalid/*.json")):
        if path.name.endswith(".expect.json"):
            continue
        expect = json.loads(
            path.with_name(path.name.removesuffix(".json") + ".expect.json").read_text("utf-8")
        )
        documents.append(
            Document(
                path.parts[-3],
                path.relative_to(FIXTURES).as_posix(),
                path.read_bytes().decode("utf-8", "surrogateescape"),
                False,
                kind=expect["kind"],
                pointer=expect["pointer"],
            )
        )
    return documents


def schema_check() -> Any:
    """`check(definition, text) -> error or None` against the generated JSON Schema, each
    definition addressed by its $anchor. Patterns run in ECMA-262's sense and formats are
    asserted (codegen.regex.spec_validator: python-jsonschema would use Python's `re`, another
    dialect, and leave formats unchecked)."""
    import jsonschema
    import referencing
    from referencing.jsonschema import DRAFT202012

    sys.path.insert(0, str(ROOT))
    from codegen.regex import spec_validator

    schema = json.loads(SCHEMA.read_text("utf-8"))
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
            validators[definition] = spec_validator(ref, registry)
        error = jsonschema.exceptions.best_match(validators[definition].iter_errors(value))
        return None if error is None else f"{error.json_path}: {error.message[:160]}"

    return check


def run_agui(definition: str, text: str) -> Outcome:
    import agui

    try:
        cls = getattr(agui, definition)
        model = agui.decode(text.encode("utf-8", "surrogateescape"), cls, strict=True)
        return Outcome(True, agui.encode(model).decode("utf-8"), None)
    except Exception as err:
        return Outcome(False, None, f"{type(err).__name__}: {err}")


def parse_or_none(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


# ── comparing ─────────────────────────────────────────────────────────────────


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


def wire_differences(ours: str, theirs: str) -> list[Difference]:
    """How the text `theirs` departs from `ours`, once per kind."""
    if theirs == ours:
        return []
    found: list[Difference] = []
    try:
        compare(load(ours), load(theirs), "", found)
    except ValueError as err:
        return [Difference("writes text that is not JSON", f"{err}: {theirs[:80]!r}")]
    if not found:
        at = next(
            (i for i, (a, b) in enumerate(zip(ours, theirs, strict=False)) if a != b),
            min(len(ours), len(theirs)),
        )
        snippet = f"…{ours[max(0, at - 10) : at + 20]!r} vs …{theirs[max(0, at - 10) : at + 20]!r}"
        found.append(Difference("same JSON value, different text (escaping/spacing)", snippet))
    unique: dict[str, Difference] = {}
    for d in found:
        unique.setdefault(d.kind, d)
    return list(unique.values())


def general(error: str) -> str:
    """A peer's error in terms that do not vary between fixtures (indices out)."""
    return re.sub(r"\.\d+(?=[.:])", ".*", error.split("; ")[0])[:120]


def judge(peer: str, doc: Document, agui_wire: str | None, outcome: Outcome) -> list[Divergence]:
    """The divergences of a peer on a document the official protocol has."""

    def one(kind: str, detail: str, wire: str | None = None) -> Divergence:
        return Divergence(peer, doc.definition, doc.name, kind, detail, wire)

    if outcome.unsupported:
        return [one(f"has no schema for {doc.definition}", outcome.error or "")]
    if doc.valid:
        if not outcome.ok:
            error = outcome.error or "rejected"
            return [one(f"rejects a valid document: {general(error)}", error)]
        if agui_wire is None or outcome.wire is None:
            return []  # agui's own failure, reported as such
        return [
            one(d.kind, d.detail, outcome.wire) for d in wire_differences(agui_wire, outcome.wire)
        ]
    if outcome.ok:
        kind = doc.kind or "?"
        return [
            one(
                f"accepts an invalid document: {kind} ({KINDS.get(kind, kind)})",
                doc.expected,
                outcome.wire,
            )
        ]
    return []


def asked_as(doc: Document, extensions: Extensions) -> str:
    """The definition a peer is asked for: a fork's new event as `Event`, which is how a stream's
    reader meets it (the official SDKs have no schema of its own for it), else its own."""
    if doc.definition in extensions.unions or doc.definition not in extensions.objects:
        return doc.definition
    event = extensions.unions.get("Event")
    members = {member for _, member in event.tags} if event else set()
    official = doc.definition in members and not extensions.objects[doc.definition].extension
    return doc.definition if official or doc.definition not in members else "Event"


def verdict(
    peer: str, doc: Document, outcome: Outcome, extensions: Extensions, agui_wire: str | None
) -> Verdict:
    """accept / strip / reject, for a document that uses an extension."""
    if not outcome.ok:
        why = "has no schema" if outcome.unsupported else "rejects"
        return Verdict(
            peer, doc.name, doc.extensions, "reject", f"{why}: {clip(outcome.error, 120)}"
        )
    kept = extensions.touched(doc.definition, parse_or_none(outcome.wire or ""))
    used = extensions.touched(doc.definition, parse_or_none(doc.text))
    lost = [name for name in used if name not in kept]
    if lost:
        return Verdict(peer, doc.name, doc.extensions, "strip", f"drops {', '.join(lost)}")
    same = agui_wire is not None and outcome.wire == agui_wire
    note = "written back as agui writes it" if same else f"writes {clip(outcome.wire, 120)}"
    if not doc.valid:
        note = f"an invalid document ({doc.expected}); {note}"
    return Verdict(peer, doc.name, doc.extensions, "accept", note)


# ── --against: another SDK's events through agui ──────────────────────────────


def against(path: Path, definition: str, verbose: bool) -> int:
    """Each line of `path` one document (an event, by default) as another SDK wrote it: agui must
    decode it and write the same bytes back."""
    try:
        lines = path.read_bytes().decode("utf-8", "surrogateescape").splitlines()
    except OSError as err:
        print(f"crosscheck: cannot read {path}: {err}", file=sys.stderr)
        return 2
    rejected: list[tuple[int, str]] = []
    differing: list[tuple[int, list[Difference], str]] = []
    total = 0
    for number, line in enumerate(lines, 1):
        line = line.rstrip("\r")
        if not line.strip():
            continue
        total += 1
        outcome = run_agui(definition, line)
        if not outcome.ok or outcome.wire is None:
            rejected.append((number, outcome.error or "rejected"))
            continue
        found = wire_differences(line, outcome.wire)
        if found:
            differing.append((number, found, outcome.wire))
    same = total - len(rejected) - len(differing)
    print(
        f"crosscheck --against {path}: {total} documents ({definition}): {same} identical, "
        f"{len(differing)} written back differently, {len(rejected)} rejected by agui"
    )
    shown = 0
    for number, error in rejected:
        if verbose or shown < 20:
            print(f"  line {number}: agui rejects it: {clip(error)}")
        shown += 1
    for number, found, wire in differing:
        if verbose or shown < 20:
            print(f"  line {number}: agui writes {clip(wire)}")
            for d in found:
                print(f"      · agui {d.kind}: {clip(d.detail)}")
        shown += 1
    if shown > 20 and not verbose:
        print(f"  … {shown - 20} more (-v lists them all)")
    return 1 if rejected or differing else 0


# ── reporting ─────────────────────────────────────────────────────────────────


def clip(text: str | None, limit: int = SHOWN) -> str:
    if text is None:
        return "-"
    return text if len(text) <= limit else text[: limit - 1] + "…"


def print_divergence(d: Divergence, indent: str = "    ") -> None:
    print(f"{indent}{d.fixture}")
    print(f"{indent}  {clip(d.detail)}")
    if d.wire is not None and d.kind.startswith("accepts"):
        print(f"{indent}  → {clip(d.wire)}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__.splitlines()[0] if __doc__ else None,
        epilog="The peer protocol and the baseline: docs/cross-sdk.md.",
    )
    parser.add_argument(
        "--peer",
        action="append",
        default=[],
        metavar="NAME=COMMAND",
        help="another peer: a command speaking the protocol of tests/crosscheck/peers.py",
    )
    parser.add_argument(
        "--peers",
        metavar="NAMES",
        help="run only these peers (comma-separated; default: the built-in ones and --peer's)",
    )
    parser.add_argument(
        "--baseline",
        type=Path,
        default=baseline_file.PATH,
        help="the known divergences (default: tests/crosscheck/baseline.json)",
    )
    parser.add_argument(
        "--update-baseline",
        action="store_true",
        help="rewrite the baseline with this run's divergences (keeping their reasons)",
    )
    parser.add_argument(
        "--strict", action="store_true", help="a stale baseline entry fails the run too"
    )
    parser.add_argument(
        "-v", "--details", action="store_true", help="list every divergence and verdict"
    )
    parser.add_argument(
        "--report",
        type=Path,
        default=WORK / "report.json",
        help="where the full result goes (default: .crosscheck/report.json)",
    )
    parser.add_argument(
        "--definitions",
        metavar="NAMES",
        help="only the fixtures of these definitions (comma-separated): a quicker look",
    )
    parser.add_argument(
        "--against",
        type=Path,
        metavar="FILE.jsonl",
        help="check another SDK's captured documents (one per line) against agui instead",
    )
    parser.add_argument(
        "--definition",
        default="Event",
        help="what each line of --against is (default: Event, so one event per line)",
    )
    args = parser.parse_args(argv)
    sys.stdout.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]

    try:
        import agui  # noqa: F401
    except Exception as err:
        print(f"crosscheck: cannot import agui: {err}", file=sys.stderr)
        return 2
    if args.against is not None:
        return against(args.against, args.definition, args.details)

    try:
        added = [parse_peer(option) for option in args.peer]
    except ValueError as err:
        parser.error(str(err))
    peers = [*default_peers(), *added]
    names = [p.name for p in peers]
    if len(set(names)) != len(names):
        parser.error(f"two peers have the same name: {names}")
    if args.peers:
        wanted = [n.strip() for n in args.peers.split(",") if n.strip()]
        unknown = [n for n in wanted if n not in names]
        if unknown:
            parser.error(f"--peers: no peer {unknown}; the peers are {', '.join(names)}")
        peers = [p for p in peers if p.name in wanted]

    known: Baseline | None = None
    try:
        known = baseline_file.read(args.baseline)
    except BaselineError as err:
        if not args.update_baseline:
            print(f"crosscheck: {err}", file=sys.stderr)
            return 2

    WORK.mkdir(exist_ok=True)
    documents = collect()
    if args.definitions:
        only = {n.strip() for n in args.definitions.split(",") if n.strip()}
        absent = only - {d.definition for d in documents}
        if absent:
            parser.error(f"--definitions: no fixtures for {sorted(absent)}")
        documents = [d for d in documents if d.definition in only]
    valid = [d for d in documents if d.valid]
    try:
        from extensions import load as load_spec_model

        extensions = Extensions(load_spec_model())
    except Exception as err:
        print(f"crosscheck: cannot read the spec's extensions: {err}", file=sys.stderr)
        return 2
    for doc in documents:
        doc.extensions = extensions.touched(doc.definition, parse_or_none(doc.text), doc.pointer)

    # agui and the JSON Schema, on the fixtures
    ours = {d.name: run_agui(d.definition, d.text) for d in valid}
    try:
        check = schema_check()
    except Exception as err:
        print(f"crosscheck: cannot load the JSON Schema: {err}", file=sys.stderr)
        return 2
    failures: list[str] = []
    notes: list[str] = []
    for doc in documents:
        error = check(doc.definition, doc.text)
        if doc.valid and error is not None:
            failures.append(f"the JSON Schema rejects the valid fixture {doc.name}: {error}")
        if not doc.valid and error is None:
            failures.append(f"the JSON Schema accepts the invalid fixture {doc.name}")
    for doc in valid:
        outcome = ours[doc.name]
        if not outcome.ok:
            failures.append(f"agui rejects its own valid fixture {doc.name}: {outcome.error}")
        elif outcome.wire != doc.golden:
            notes.append(f"agui's output differs from the golden encoding: {doc.name}")

    # the peers
    found: list[Divergence] = []
    verdicts: list[Verdict] = []
    agreed: Counter[str] = Counter()
    asked: Counter[str] = Counter()
    broken: dict[str, str] = {}
    for peer in peers:
        subject = valid if peer.valid_only else documents
        try:
            if peer.prepare is not None:
                peer.prepare()
            outcomes = ask(peer, [(asked_as(d, extensions), d.text) for d in subject])
        except PeerFailure as err:
            broken[peer.name] = str(err)
            continue
        for doc, outcome in zip(subject, outcomes, strict=True):
            wire = ours[doc.name].wire if doc.valid else None
            if doc.extensions:
                verdicts.append(verdict(peer.name, doc, outcome, extensions, wire))
                continue
            asked[peer.name] += 1
            mine = judge(peer.name, doc, wire, outcome)
            found += mine
            if not mine:
                agreed[peer.name] += 1

    ran = {p.name for p in peers if p.name not in broken}
    collected = {d.definition for d in documents}
    if args.update_baseline:
        # a definition the peer lacks: one entry for all its documents
        keys = [
            Key(d.peer, d.definition, "*", d.kind) if d.kind.startswith("has no schema") else d.key
            for d in found
        ]
        count = baseline_file.write(
            args.baseline,
            dict.fromkeys(keys),
            known,
            lambda k: k.peer in ran and k.definition in collected,
        )
        print(f"crosscheck: wrote {count} divergences to {args.baseline}")
        known = baseline_file.read(args.baseline)
    assert known is not None

    new = []
    for d in found:
        d.reason = known.reason_of(d.key)
        if d.reason is None:
            new.append(d)
    seen = {d.key for d in found}
    stale = sorted(
        (
            k
            for k in known.entries
            if k.peer in ran and k.definition in collected and not any(k.matches(s) for s in seen)
        ),
        key=lambda k: (k.peer, k.fixture, k.kind),
    )

    # the summary first
    print(
        f"crosscheck: {len(valid)} valid and {len(documents) - len(valid)} invalid fixtures "
        f"under {FIXTURES.relative_to(ROOT)}; baseline {args.baseline.name} "
        f"({len(known.entries)} known divergences)"
    )
    print(f"\n  {'peer':<24} {'documents':>9} {'agreed':>7} {'known':>6} {'new':>5} {'stale':>6}")
    for peer in peers:
        if peer.name in broken:
            print(f"  {peer.name:<24} did not run: {clip(broken[peer.name], 100)}")
            continue
        known_n = sum(1 for d in found if d.peer == peer.name and d.reason is not None)
        new_n = sum(1 for d in new if d.peer == peer.name)
        stale_n = sum(1 for k in stale if k.peer == peer.name)
        print(
            f"  {peer.name:<24} {asked[peer.name]:>9} {agreed[peer.name]:>7} {known_n:>6} "
            f"{new_n:>5} {stale_n:>6}"
        )
    print(
        "  (divergences: known are in the baseline; new fail the run; stale entries no longer occur)"
    )

    # known, by reason
    by_reason: dict[tuple[str, str], list[Divergence]] = {}
    for d in found:
        if d.reason is not None:
            by_reason.setdefault((d.peer, d.reason), []).append(d)
    if by_reason:
        print("\n── known divergences, by reason (-v lists each)")
        for (peer_name, reason), items in sorted(by_reason.items(), key=lambda kv: -len(kv[1])):
            print(f"  {len(items):>4}  {peer_name:<24} {reason}: {clip(known.text(reason), 110)}")
            if args.details:
                for d in items:
                    print(f"          {d.fixture}: {d.kind}")

    if verdicts:
        print(
            "\n── extensions (extension: true in the spec): what each peer does with the "
            f"{len({v.fixture for v in verdicts})} fixtures that use them (reported, never a failure)"
        )
        print(f"  declared: {', '.join(extensions.declared())}")
        tally: dict[str, Counter[str]] = {}
        for v in verdicts:
            tally.setdefault(v.peer, Counter())[v.verdict] += 1
        for peer_name, counts in tally.items():
            shown = ", ".join(f"{counts[k]} {k}" for k in ("accept", "strip", "reject"))
            print(f"  {peer_name:<24} {shown}")
        if args.details:
            for v in verdicts:
                print(f"    {v.peer:<24} {v.verdict:<6} {v.fixture} ({', '.join(v.extensions)})")
                print(f"    {'':<24}        {clip(v.detail)}")
        else:
            print("  (-v: the verdict of each peer on each fixture)")

    if new:
        print(f"\n── NEW divergences ({len(new)}): not in {args.baseline.name}, by kind")
        groups: dict[tuple[str, str], list[Divergence]] = {}
        for d in new:
            groups.setdefault((d.peer, d.kind), []).append(d)
        for (peer_name, kind), items in groups.items():
            print(f"  {len(items):>4}  {peer_name}: {kind}")
            for d in items if args.details else items[:3]:
                print_divergence(d, "          ")
            if len(items) > 3 and not args.details:
                print(f"          … {len(items) - 3} more (-v lists them all)")
        print(
            "  Fix them, or, when expected, add them to the baseline with a reason "
            "(--update-baseline, then edit the reason)."
        )
    if stale:
        label = "FAIL (--strict)" if args.strict else "warning"
        print(f"\n── stale baseline entries ({len(stale)}, {label}): they no longer occur")
        for key in stale:
            print(f"    {key.peer}  {key.fixture}: {key.kind}")
        print("  Remove them with --update-baseline.")
    for note in notes:
        print(f"  NOTE {note}")
    for failure in failures:
        print(f"  FAIL {failure}")
    for name, why in broken.items():
        print(f"  FAIL peer {name} did not run: {why}", file=sys.stderr)

    report = {
        "peers": {p.name: p.argv for p in peers},
        "peer_failures": broken,
        "failures": failures,
        "notes": notes,
        "agreed": dict(agreed),
        "divergences": [asdict(d) for d in found],
        "new": [asdict(d) for d in new],
        "stale": [asdict(k) for k in stale],
        "extensions": {
            "declared": extensions.declared(),
            "verdicts": [asdict(v) for v in verdicts],
        },
    }
    out = args.report
    out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"\n  report: {out}")
    if broken:
        return 2
    if failures or new or (stale and args.strict):
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
