"""The protobuf number ledger (spec/proto-ledger.txt): its lines, and what a generation changed.

One line per slot (a field, a oneof arm or an enum value) the binary transport has ever had:
`Message.field = N TYPE`, `Enum.VALUE = N`, `Event.event.<arm> = N TYPE`, nested messages dotted
(`ToolCall.Function.name = 1 string`). TYPE is the slot's type as the .proto file declares it,
`repeated` kept and `optional` dropped (it changes nothing on the wire): `double`,
`repeated string`, `google.protobuf.Value`, a message or enum name (`ToolCall.Function`,
`EventType`); an enum value has none. A line without a TYPE (a ledger older than the types) takes
the type the spec gives it at the next generation. A shipped slot's type is permanent too:
generation fails when the spec retypes one (`retypes`), and an unshipped slot follows the
spec. A line ending in ` (unshipped)` is a slot added since the last
release: `python -m codegen --release-unshipped` may take its number back (a field renamed or
dropped before anyone deployed it), `python -m codegen --ship` marks every slot shipped. A slot
without the mark is permanent: its number stays taken even after its field leaves the spec (it is
`reserved` in the .proto files) and nothing gives it back.

`report` says what one generation changed, one line per slot, by comparing the layout the
previous generation wrote (the .proto files already in the output folder, or the ledger itself
when there are none) with the new one; `breaks` picks the changes that deployed peers would
misread: a number that moves, a type changed under a number, a reserved number revived, a number
reused by another field.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import attrs

from codegen.load import SpecError

UNSHIPPED = "(unshipped)"
MAX_FIELD = 2**29 - 1
RESERVED_RANGE = range(19000, 20000)
"""Field numbers protobuf keeps for itself."""

HEADER = (
    "# The protobuf number ledger of the AG-UI binary transport (package ag_ui), kept by\n"
    "# `python -m codegen`: every field, oneof arm and enum value ever shipped, with its number\n"
    "# and, for a field or arm, its type as the .proto file declares it (`Message.field = N TYPE`).\n"
    "# A slot keeps its number and its type forever (generation fails when the spec retypes a\n"
    "# shipped slot); a new one takes the next free number of its message or enum (an extension\n"
    "# in an official message or enum: from the spec's extensionNumbers) and is marked\n"
    "# (unshipped) until `python -m codegen --ship`; a slot whose field left the spec stays here\n"
    "# and is `reserved` in the .proto files. Only an (unshipped) slot can be given back, with\n"
    "# `python -m codegen --release-unshipped`; do not delete lines by hand.\n"
    "# Seeded from @ag-ui/proto 1.0.0, so the official slots have its numbers.\n"
)
_LINE = re.compile(
    r"^([A-Za-z_][A-Za-z0-9_.]*)\s*=\s*(-?[0-9]+)"
    r"(?:\s+((?:repeated\s+)?[A-Za-z_][A-Za-z0-9_.]*))?(\s+\(unshipped\))?$"
)
_ENUM_VALUE = re.compile(r"^[A-Z][A-Z0-9_]*$")


@attrs.frozen
class Entry:
    """One slot of the ledger: its number, whether it was added since the last release, and its
    wire type as the .proto file declares it ("" for an enum value, or a line without one)."""

    number: int
    unshipped: bool = False
    type: str = ""

    def line(self, slot: str) -> str:
        typed = f" {self.type}" if self.type else ""
        return f"{slot} = {self.number}{typed}{' ' + UNSHIPPED if self.unshipped else ''}\n"


def parse(text: str, name: str = "spec/proto-ledger.txt") -> dict[str, Entry]:
    """Ledger text -> {slot: entry}, in the file's order. Fails on a malformed line, a slot
    listed twice and two slots sharing a number in one message or enum."""
    problems: list[str] = []
    slots: dict[str, Entry] = {}
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        match = _LINE.match(line)
        if match is None:
            problems.append(
                f"{name}: line {lineno}: not 'Message.field = N TYPE' (TYPE as the .proto file "
                f"declares it, none for an enum value; optionally followed by {UNSHIPPED}): "
                f"{raw!r}"
            )
            continue
        slot, number, type_ = match.group(1), int(match.group(2)), match.group(3) or ""
        if slot in slots:
            problems.append(f"{name}: line {lineno}: {slot} is listed twice")
            continue
        if type_ and is_enum_slot(slot):
            problems.append(
                f"{name}: line {lineno}: {slot} is an enum value, which has no type: {raw!r}"
            )
            continue
        slots[slot] = Entry(number, bool(match.group(4)), " ".join(type_.split()))
    problems += conflicts(slots, name)
    if problems:
        raise SpecError(problems)
    return slots


def numbers(text: str, name: str = "spec/proto-ledger.txt") -> dict[str, int]:
    """Ledger text -> {slot: number}."""
    return {slot: entry.number for slot, entry in parse(text, name).items()}


def space_of(slot: str) -> str:
    """The message or enum whose numbers a slot uses: `ToolCall.Function.name` -> ToolCall.Function,
    `Event.event.raw` -> Event (a oneof arm numbers like a field), `EventType.RAW` -> EventType."""
    parts = slot.split(".")
    if _ENUM_VALUE.match(parts[-1]):
        return ".".join(parts[:-1])
    owner = []
    for part in parts[:-1]:
        if not part[:1].isupper():
            break
        owner.append(part)
    return ".".join(owner)


def is_enum_slot(slot: str) -> bool:
    return bool(_ENUM_VALUE.match(slot.rsplit(".", 1)[-1]))


def conflicts(slots: dict[str, Entry], name: str = "spec/proto-ledger.txt") -> list[str]:
    problems: list[str] = []
    seen: dict[tuple[str, int], str] = {}
    for slot, entry in slots.items():
        number = entry.number
        space = space_of(slot)
        if is_enum_slot(slot):
            if not 0 <= number <= 2**31 - 1:
                problems.append(f"{name}: {slot} = {number}: enum values run from 0")
        elif not 1 <= number <= MAX_FIELD or number in RESERVED_RANGE:
            problems.append(
                f"{name}: {slot} = {number}: not a usable field number "
                f"(1 to {MAX_FIELD}, without 19000-19999)"
            )
        other = seen.get((space, number))
        if other is not None:
            problems.append(
                f"{name}: number conflict in {space}: {other} and {slot} both use {number}"
            )
        else:
            seen[(space, number)] = slot
    return problems


def render(slots: dict[str, Entry], spaces: list[str], before: Iterable[str] = ()) -> str:
    """The ledger's text. Messages and enums keep the order they had in the ledger read
    (`before`, its slots in file order), so no line moves when a message leaves the spec; one
    that is new goes after the one that precedes it in `spaces` (the .proto files' order). Within
    a message or enum, slots are in number order."""
    order: list[str] = list(dict.fromkeys(space_of(s) for s in before))
    for i, space in enumerate(spaces):
        if space in order:
            continue
        earlier = next((s for s in reversed(spaces[:i]) if s in order), None)
        order.insert(order.index(earlier) + 1 if earlier is not None else 0, space)
    for space in sorted({space_of(s) for s in slots} - set(order)):
        order.append(space)
    rank = {s: i for i, s in enumerate(order)}
    lines = sorted(slots.items(), key=lambda kv: (rank[space_of(kv[0])], kv[1].number, kv[0]))
    return HEADER + "".join(e.line(slot) for slot, e in lines)


def release_unshipped(text: str, name: str = "spec/proto-ledger.txt") -> str:
    """The ledger without its (unshipped) slots: their numbers are free again, and the fields
    still in the spec are numbered afresh by the next generation."""
    slots = parse(text, name)
    kept = {s: e for s, e in slots.items() if not e.unshipped}
    return render(kept, [], slots)


def ship(text: str, name: str = "spec/proto-ledger.txt") -> str:
    """The ledger with every slot marked shipped: from now on their numbers are permanent."""
    slots = parse(text, name)
    return render({s: attrs.evolve(e, unshipped=False) for s, e in slots.items()}, [], slots)


# ── what a generation changed ───────────────────────────────────────────────────────────────────
@attrs.frozen
class Declared:
    """A slot as a .proto file declares it: its number and type (`repeated` kept, `optional`
    dropped: it changes nothing on the wire), or reserved (its field left the spec)."""

    number: int
    type: str
    reserved: bool = False


_MESSAGE = re.compile(r"^\s*(message|enum) (\w+) \{$")
_ONEOF = re.compile(r"^\s*oneof (\w+) \{$")
_FIELD = re.compile(
    r"^\s*(?:(optional|repeated) )?([\w.]+) (\w+) = (\d+)(?: \[[^\]]*\])?;$"
)  # options: [deprecated = true]
_VALUE = re.compile(r"^\s*([A-Z][A-Z0-9_]*) = (\d+);$")
_RESERVED_NUMBERS = re.compile(r"^\s*reserved ([0-9, ]+);$")
_RESERVED_NAMES = re.compile(r'^\s*reserved ("[^;]*");$')


def declared(protos: Iterable[str]) -> dict[str, Declared]:
    """Every slot the generated .proto files declare (live or reserved), keyed like the ledger."""
    out: dict[str, Declared] = {}
    for text in protos:
        stack: list[tuple[str, str]] = []  # (kind, name) of the open blocks
        oneofs: dict[str, str] = {}  # message -> its oneof (whose arms are keyed through it)
        reserved: dict[str, list[int]] = {}
        for line in text.splitlines():
            owner = ".".join(n for k, n in stack if k != "oneof")
            if m := _MESSAGE.match(line):
                stack.append((m.group(1), m.group(2)))
            elif m := _ONEOF.match(line):
                stack.append(("oneof", m.group(1)))
                oneofs[owner] = m.group(1)
            elif line.strip() == "}":
                if stack:
                    stack.pop()
            elif not stack or line.lstrip().startswith("//"):
                continue
            elif m := _RESERVED_NUMBERS.match(line):
                reserved[owner] = [int(n) for n in m.group(1).split(",")]
            elif m := _RESERVED_NAMES.match(line):
                names = re.findall(r'"([^"]*)"', m.group(1))
                via = f"{oneofs[owner]}." if owner in oneofs else ""
                for taken, gone in zip(reserved.pop(owner, []), names, strict=False):
                    out[f"{owner}.{via}{gone}"] = Declared(taken, "", reserved=True)
            elif stack[-1][0] == "enum" and (m := _VALUE.match(line)):
                out[f"{owner}.{m.group(1)}"] = Declared(int(m.group(2)), "")
            elif m := _FIELD.match(line):
                label, ptype, name, number = m.groups()
                oneof = stack[-1][1] if stack[-1][0] == "oneof" else ""
                key = f"{owner}.{oneof}.{name}" if oneof else f"{owner}.{name}"
                shown = f"repeated {ptype}" if label == "repeated" else ptype
                out[key] = Declared(int(number), shown)
    return out


@attrs.frozen
class Change:
    """One line of what a generation changed in the ledger. `breaks` says why deployed peers
    would misread the wire after it ("" when they would not)."""

    what: str  # added, reserved, released, moved, retyped, revived, reused, shipped
    slot: str
    text: str
    breaks: str = ""

    def __str__(self) -> str:
        line = f"{self.what:<9} {self.slot}{self.text}"
        return (
            f"{line}\n          BREAKS THE WIRE for deployed peers: {self.breaks}"
            if self.breaks
            else line
        )


def report(
    before_ledger: str,
    after_ledger: str,
    before_protos: Iterable[str],
    after_protos: Iterable[str],
) -> list[Change]:
    """What changed between two generations, one Change per slot. The layout before is what the
    .proto files of the previous generation declare; without them, every slot of the ledger read
    counts as live. A change breaks the wire when the slot it takes a number from had shipped."""
    old_ledger = parse(before_ledger)
    new_ledger = parse(after_ledger)
    old = declared(before_protos)
    new = declared(after_protos)
    if not old:
        old = {s: Declared(e.number, "") for s, e in old_ledger.items()}

    def shipped(slot: str) -> bool:
        entry = old_ledger.get(slot)
        return entry is None or not entry.unshipped

    changes: list[Change] = []
    by_number = {(space_of(s), d.number): s for s, d in old.items()}
    for slot, d in new.items():
        before = old.get(slot)
        mark = f" {UNSHIPPED}" if new_ledger.get(slot, Entry(0)).unshipped else ""
        if d.reserved:
            if before is not None and not before.reserved:
                never = (
                    "; it never shipped: --release-unshipped frees it"
                    if new_ledger.get(slot, Entry(0)).unshipped
                    else ""
                )
                changes.append(
                    Change(
                        "reserved",
                        slot,
                        f" = {d.number}: its field left the spec; the number stays taken{never}",
                    )
                )
            continue
        typed = f" ({d.type})" if d.type else ""
        if before is None:
            holder = by_number.get((space_of(slot), d.number))
            if holder is not None and holder != slot:
                was = old[holder]
                gone = "reserved" if was.reserved else "in use"
                changes.append(
                    Change(
                        "reused",
                        slot,
                        f" = {d.number}{typed}{mark}: the number was {holder}'s ({gone})",
                        f"{holder} was sent as {d.number}; peers built with it read {slot} as it"
                        if shipped(holder)
                        else "",
                    )
                )
            else:
                changes.append(Change("added", slot, f" = {d.number}{typed}{mark}"))
            continue
        if before.reserved:
            changes.append(
                Change(
                    "revived",
                    slot,
                    f" = {d.number}{typed}: the number was reserved since its field left the spec",
                    f"peers built while {slot} was reserved never expect it, and older ones may "
                    "hold another meaning for it"
                    if shipped(slot)
                    else "",
                )
            )
            continue
        if before.number != d.number:
            changes.append(
                Change(
                    "moved",
                    slot,
                    f": {before.number} -> {d.number}{mark}",
                    f"deployed peers send and read {slot} as {before.number} (put the line "
                    f"'{slot} = {before.number}' back in the ledger)"
                    if shipped(slot)
                    else "",
                )
            )
        elif before.type and d.type and before.type != d.type:
            changes.append(
                Change(
                    "retyped",
                    slot,
                    f" = {d.number}: {before.type} -> {d.type}",
                    f"deployed peers read number {d.number} as {before.type}"
                    if shipped(slot)
                    else "",
                )
            )
    for slot, d in old.items():
        if slot not in new and slot not in new_ledger:
            if shipped(slot):
                changes.append(
                    Change(
                        "released",
                        slot,
                        f" = {d.number}: its line left the ledger, so the number is free again",
                        f"{slot} shipped as {d.number}; a field that takes the number next would be "
                        "read as it (restore the line)",
                    )
                )
            else:
                changes.append(
                    Change(
                        "released", slot, f" = {d.number}: never shipped; the number is free again"
                    )
                )
    for slot, entry in new_ledger.items():
        listed = old_ledger.get(slot)
        if listed is not None and listed.unshipped and not entry.unshipped:
            changes.append(Change("shipped", slot, f" = {entry.number}: now permanent"))
    return changes
