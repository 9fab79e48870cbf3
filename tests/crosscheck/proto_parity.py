"""Protobuf parity with @ag-ui/proto 1.0.0, the official binary binding.

For every valid event fixture (``tests/fixtures/*Event/valid`` and ``Event/valid``):

* the bytes ``agui.encode_proto`` writes must equal the bytes @ag-ui/proto's ``encode`` writes
  for the same JSON document;
* agui must decode the official bytes back to the same event, except where the binary form
  cannot carry the document (the fixtures listed in LOSSY, each for a reason listed under
  "Known divergences" in docs/divergences.md);
* the official ``decode`` of those bytes is compared with agui's, as JSON (a finding only).

It also reads the field table of the package's generated code and checks that the generated
``.proto`` files declare the same messages, fields, numbers, types and labels, and that the
number ledger holds exactly the package's slots.

A fork's additions (`extension: true` in the spec) are listed as extensions and not compared: the
event fixtures that use one are not sent to @ag-ui/proto (which cannot know them), and the
messages, fields, arms, enum values and ledger slots that come from one are left out of the
layout comparison. The rest is compared as always.

Exit 0 when everything agrees, 1 on a byte or ledger mismatch or an unexplained round-trip
difference, 2 if the peer could not run. Needs ``.crosscheck/`` installed (``nox -s
crosscheck``).
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(HERE))
from extensions import Extensions, load  # noqa: E402

FIXTURES = ROOT / "tests" / "fixtures"
WORK = ROOT / ".crosscheck"
PACKAGE = WORK / "node_modules" / "@ag-ui" / "proto" / "dist" / "index.js"

LOSSY = {
    "RunStartedEvent/valid/input-state-falsy.json": "empty optional arrays come back absent",
    "SubagentFinishedEvent/valid/outcome-suspended-empty-ids.json": (
        "an empty optional array comes back absent"
    ),
    "StateDeltaEvent/valid/operation-extra-member.json": (
        "patch members other than op/path/from/value have no field"
    ),
}


def fixtures() -> list[Path]:
    return sorted(
        p
        for d in FIXTURES.iterdir()
        if d.name == "Event" or d.name.endswith("Event")
        for p in (d / "valid").glob("*.json")
    )


def official(paths: list[Path]) -> list[dict[str, Any]] | None:
    docs = [p.read_text("utf-8") for p in paths]
    # run from .crosscheck/, where node resolves the installed packages
    shutil.copy(HERE / "proto_parity.mjs", WORK / "proto_parity.mjs")
    proc = subprocess.run(
        ["node", str(WORK / "proto_parity.mjs")],
        input=json.dumps(docs),
        capture_output=True,
        text=True,
        cwd=WORK,
        check=False,
    )
    if proc.returncode != 0:
        print(f"proto parity: the @ag-ui/proto peer failed:\n{proc.stderr}", file=sys.stderr)
        return None
    result: list[dict[str, Any]] = json.loads(proc.stdout)
    return result


# ── the package's field table, read from its generated (ts-proto) code ─────────────────────────
_CONST = re.compile(r"^const (\w+) = \{$")
_WRITE = re.compile(r"writer\.uint32\((\d+)\)")
_KIND = re.compile(r"\)\.(string|int32|int64|bool|double)\(")
_NESTED = re.compile(r"(\w+)\.encode\((?:\w+\.wrap\()?(?:message\.\w+|v)")
ONEOFS = {"Event": "event", "InputContent": "part", "InputContentSource": "source"}
WELL_KNOWN = {"Value": "google.protobuf.Value", "Struct": "google.protobuf.Struct"}


def package_fields() -> dict[str, dict[str, tuple[int, str, str]]]:
    """message -> field -> (number, type, label) as ts-proto's encode() writes them."""
    lines = PACKAGE.read_text("utf-8").splitlines()
    out: dict[str, dict[str, tuple[int, str, str]]] = {}
    i = 0
    while i < len(lines):
        match = _CONST.match(lines[i])
        if (
            match
            and match.group(1) != "Struct"  # its encode() walks a map, not fields
            and lines[i + 1].strip().startswith("encode(message")
        ):
            name = match.group(1).replace("_", ".")
            fields: dict[str, tuple[int, str, str]] = {}
            i += 2
            while not lines[i].strip().startswith("return writer"):
                line = lines[i].strip()
                tag = int(_WRITE.search(line).group(1))  # type: ignore[union-attr]
                field = re.search(r"message\.(\w+)", line).group(1)  # type: ignore[union-attr]
                nested = _NESTED.search(line)
                kind = nested.group(1) if nested else _KIND.search(line).group(1)  # type: ignore[union-attr]
                label = (
                    "repeated"
                    if line.startswith("for (")
                    else "optional"
                    if "!== void 0" in line
                    else ""
                )
                snake = re.sub(r"([A-Z])", lambda m: "_" + m.group(1).lower(), field)
                kind = WELL_KNOWN.get(kind, kind.replace("_", "."))
                fields[snake] = (tag >> 3, kind, label)
                i += 1
            if name not in ("Struct.FieldsEntry", "Value", "ListValue"):
                out[name] = fields
        i += 1
    return out


def package_enums() -> dict[str, dict[str, int]]:
    text = PACKAGE.read_text("utf-8")
    out = {}
    for match in re.finditer(
        r"let (\w+?)(?:\$1)? = /\* @__PURE__ \*/ function\(\w+\) \{\n(.*?)return", text, re.S
    ):
        values = re.findall(r'\["(\w+)"\] = (-?\d+)\] =', match.group(2))
        if match.group(1) != "NullValue":
            out[match.group(1)] = {k: int(v) for k, v in values if k != "UNRECOGNIZED"}
    return out


def extension_slots(schema: Any, spec: Any) -> tuple[set[str], set[str]]:
    """(messages, slots) of the protobuf layout that come from the fork's extensions: a message
    of an extension definition (or a wrapper only extensions use), a field of an extension
    member, an arm of an extension member, an enum value marked as one."""
    objects = {o.name: o for o in spec.objects}
    unions = {u.name: u for u in spec.unions}
    enums = {e.name: e for e in spec.enums}

    def member_fields(names: Any, wire: str) -> list[Any]:
        return [f for n in names for f in objects[n].fields if f.wire == wire]

    def field_extension(m: Any, f: Any) -> bool:
        if f.source == "arm":
            return objects[dict(unions[m.source].tags)[f.tag]].extension
        if m.shape == "base":  # the members every event has
            uses = member_fields(unions["Event"].members, f.wire)
            return bool(uses) and all(u.extension for u in uses)
        if m.shape == "merged":
            union = unions[m.source]
            uses = member_fields(union.members, f.wire)
            return bool(uses) and all(
                u.extension or objects[n].extension
                for n in union.members
                for u in objects[n].fields
                if u.wire == f.wire
            )
        if m.source in objects:
            obj = objects[m.source]
            own = next((x for x in obj.fields if x.wire == f.wire), None)
            return obj.extension or (own is not None and own.extension)
        return False

    messages: set[str] = set()
    slots: set[str] = set()
    for m in schema.messages:
        definition = objects.get(m.source) or unions.get(m.source)
        if definition is not None and definition.extension:
            messages.add(m.name)
        for f in m.fields:
            if m.name in messages or field_extension(m, f):
                slots.add(f"{m.name}.{m.oneof}.{f.name}" if m.oneof else f"{m.name}.{f.name}")
    # a wrapper message (list[list[str]]) that only extension fields refer to
    for m in schema.messages:
        if m.shape == "wrapper":
            users = [
                f"{o.name}.{o.oneof}.{f.name}" if o.oneof else f"{o.name}.{f.name}"
                for o in schema.messages
                for f in o.fields
                if f.ref == m.name
            ]
            if users and all(u in slots for u in users):
                messages.add(m.name)
                slots |= {f"{m.name}.{f.name}" for f in m.fields}
    for e in schema.enums:
        marked = (
            {v.value for v in enums[e.name].values if v.extension} if e.name in enums else set()
        )
        slots |= {f"{e.name}.{name}" for name, _, wire in e.values if wire in marked}
    return messages, slots


def check_layout() -> tuple[list[str], list[str]]:
    """(problems, the extension slots left out) of the layout against the package's table."""
    from codegen.load import load_ledger, load_spec
    from codegen.model import build
    from codegen.proto import build_proto, parse_ledger

    spec = build(load_spec())
    schema = build_proto(spec, load_ledger())
    own_messages, own_slots = extension_slots(schema, spec)
    theirs = package_fields()
    enums = package_enums()
    problems = []
    slots: dict[str, int] = {}
    for name, fields in theirs.items():
        for field, (number, _, _) in fields.items():
            key = f"{name}.{ONEOFS[name]}.{field}" if name in ONEOFS else f"{name}.{field}"
            slots[key] = number
    for enum, values in enums.items():
        slots.update({f"{enum}.{k}": v for k, v in values.items()})
    ledger = {s: n for s, n in parse_ledger(load_ledger()).items() if s not in own_slots}
    for slot in sorted(set(slots) | set(ledger)):
        if slots.get(slot) != ledger.get(slot):
            problems.append(
                f"ledger: {slot}: ours {ledger.get(slot)}, @ag-ui/proto {slots.get(slot)}"
            )
    ours = {m.name: m for m in schema.messages if m.name not in own_messages}
    for name in sorted(set(ours) | set(theirs)):
        if name not in ours or name not in theirs:
            problems.append(
                f"message {name}: only in {'@ag-ui/proto' if name in theirs else 'ours'}"
            )
            continue
        for f in ours[name].fields:
            if (f"{name}.{ONEOFS[name]}.{f.name}" if name in ONEOFS else f"{name}.{f.name}") in (
                own_slots
            ):
                continue
            mine_type = f.type if f.kind != "enum" else "int32"
            label = (
                "optional" if f.kind in ("message", "value", "struct") and not f.label else f.label
            )
            if name in ONEOFS:
                label = "optional"
            if theirs[name].get(f.name) != (f.number, mine_type, label):
                problems.append(
                    f"{name}.{f.name}: ours {(f.number, mine_type, label)}, "
                    f"@ag-ui/proto {theirs[name].get(f.name)}"
                )
        for extra in set(theirs[name]) - {f.name for f in ours[name].fields}:
            problems.append(f"{name}.{extra}: only in @ag-ui/proto")
    for e in schema.enums:
        values = {n: v for n, v, _ in e.values if f"{e.name}.{n}" not in own_slots}
        if values != enums.get(e.name):
            problems.append(f"enum {e.name} differs")
    return problems, sorted(own_slots)


def main() -> int:
    import agui

    extensions = Extensions(load())
    every = fixtures()
    used = {
        p: extensions.touched(p.parent.parent.name, json.loads(p.read_text("utf-8"))) for p in every
    }
    paths = [p for p in every if not used[p]]
    print(
        f"proto parity: {len(paths)} valid event fixtures, against @ag-ui/proto 1.0.0", flush=True
    )
    peer = official(paths)
    if peer is None:
        return 2
    identical = 0
    failures: list[str] = []
    lossy: list[str] = []
    decoded_differs: list[str] = []
    for path, theirs in zip(paths, peer, strict=True):
        name = f"{path.parent.parent.name}/{path.parent.name}/{path.name}"
        event = agui.decode(path.read_bytes(), strict=True)
        ours = agui.encode_proto(event).hex()
        if theirs["bytes"] is None:
            failures.append(f"{name}: @ag-ui/proto could not encode it: {theirs['error']}")
            continue
        if ours == theirs["bytes"]:
            identical += 1
        else:
            failures.append(
                f"{name}: bytes differ\n    ours   {ours}\n    theirs {theirs['bytes']}"
            )
        try:
            back = agui.decode_proto(bytes.fromhex(theirs["bytes"]), strict=True)
        except agui.DecodeError as err:
            failures.append(f"{name}: agui cannot read @ag-ui/proto's bytes: {err}")
            continue
        if back != event:
            if name in LOSSY:
                lossy.append(f"{name}: {LOSSY[name]}")
            else:
                failures.append(f"{name}: decodes to another event: {agui.to_json(back)}")
        elif name in LOSSY:
            failures.append(f"{name}: listed as lossy but round-trips; update LOSSY")
        if theirs["decoded"] != agui.to_json(back):
            mine = json.dumps(agui.to_json(back), ensure_ascii=False)
            other = json.dumps(theirs["decoded"], ensure_ascii=False)
            decoded_differs.append(
                f"{name}\n      agui         {mine[:150]}\n      @ag-ui/proto {other[:150]}"
            )
    print(f"\n  {identical}/{len(paths)} fixtures byte-identical with @ag-ui/proto 1.0.0")
    print(f"  {len(paths) - len(lossy)}/{len(paths)} decode back to the same event")
    for line in lossy:
        print(f"    lossy (known): {line}")
    print(
        f"  {len(paths) - len(decoded_differs)}/{len(paths)} decode to the same JSON as "
        "@ag-ui/proto's decode (a finding, not a failure)"
    )
    for name in decoded_differs:
        print(f"    differs: {name}")
    layout, own = check_layout()
    print(
        "  generated .proto files and ledger vs the package's field table: "
        + ("identical" if not layout else f"{len(layout)} differences")
        + (f" (leaving out {len(own)} extension slots)" if own else "")
    )
    skipped = {p: names for p, names in used.items() if names}
    if skipped or own:
        print(
            f"\n  extensions (extension: true in the spec), not compared: {len(skipped)} event "
            f"fixtures, {len(own)} slots of the layout"
        )
        for path, names in skipped.items():
            print(
                f"    {path.parent.parent.name}/{path.parent.name}/{path.name}: {', '.join(names)}"
            )
        for slot in own:
            print(f"    slot {slot}")
    for line in failures + layout:
        print(f"  FAIL {line}")
    return 1 if failures or layout else 0


if __name__ == "__main__":
    sys.exit(main())
