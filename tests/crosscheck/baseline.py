"""The crosscheck's baseline: the divergences between agui and each peer that are known, each with
the reason it is expected (tests/crosscheck/baseline.json).

A divergence is keyed by (peer, definition, fixture, kind); `fixture` "*" stands for every
document of the definition (what `--update-baseline` writes for a peer that has no schema for a
definition at all). The file holds the reasons once, by name, and one line per divergence naming
its reason, so that a change reads as one line in a diff.

`--update-baseline` rewrites the file from a run: an entry that still occurs keeps the reason it
had (edit them by hand, they are yours); a new one gets the reason the first rule of RULES that
matches gives, else `unexplained`, whose text says to write one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

PATH = Path(__file__).resolve().parent / "baseline.json"

UNEXPLAINED = "unexplained"

REASONS = {
    "zod-loose-objects": (
        "@ag-ui/core's zod objects are loose (z.looseObject): a member the definition does not "
        "have is accepted and written back; @ag-ui/client strips it later, with a warning "
        "(enforce/strip.ts), which a schema cannot say"
    ),
    "zod-state-null": (
        "zod reads a null state as absent (StateSchema.nullable().transform(v => v ?? "
        "undefined)), the only optional member of @ag-ui/core that tolerates null"
    ),
    "zod-default-lists": (
        "zod fills RunAgentInput.tools and .context with [] when absent (.default(() => [])); "
        "agui keeps them absent"
    ),
    "pydantic-optional-null": (
        "ag-ui-protocol's optional members are Optional[...] = None: null is accepted (and left "
        "out when written back) where the schema says absent, never null"
    ),
    "pydantic-extra-allow": (
        "ag-ui-protocol's models have extra='allow': a member the definition does not have is "
        "accepted and written back after the known ones"
    ),
    "pydantic-lax-mode": (
        "pydantic validates in lax mode: a value of another JSON type is coerced ('12' to 12, "
        "1 to True) instead of refused"
    ),
    "pydantic-literal-default": (
        "ag-ui-protocol's discriminators are Literal[...] = value: a missing type or role is "
        "filled in instead of refused"
    ),
    "pydantic-exclude-none": (
        "model_dump(exclude_none=True) drops every null, also those the protocol keeps (a null "
        "inside open JSON: a patch value, a snapshot, a raw event, an unknown member's value)"
    ),
    "peer-lacks-definition": "the SDK has no such definition (yet): it answers `unsupported`",
    UNEXPLAINED: "no reason written yet: explain it in tests/crosscheck/baseline.json",
}
"""The reasons `--update-baseline` gives new entries (a baseline file may add its own)."""

RULES: list[tuple[str, str, str]] = [
    # (peer pattern, kind pattern, reason): re.search on each
    (r"", r"^has no schema for ", "peer-lacks-definition"),
    (r"^zod$", r"unknown_property", "zod-loose-objects"),
    (r"^zod$", r"adds `(tools|context)` = \[\]", "zod-default-lists"),
    (r"^zod$", r": null ", "zod-state-null"),
    (r"^pydantic\[exclude_none\]$", r"drops null", "pydantic-exclude-none"),
    (r"^pydantic$", r": null ", "pydantic-optional-null"),
    (r"^pydantic$", r"unknown_property", "pydantic-extra-allow"),
    (r"^pydantic$", r": type ", "pydantic-lax-mode"),
    (r"^pydantic$", r": missing ", "pydantic-literal-default"),
]


@dataclass(frozen=True)
class Key:
    peer: str
    definition: str
    fixture: str
    kind: str

    def matches(self, other: Key) -> bool:
        """Whether this entry (possibly with fixture "*") covers the divergence `other`."""
        return (
            self.peer == other.peer
            and self.definition == other.definition
            and self.kind == other.kind
            and self.fixture in ("*", other.fixture)
        )


@dataclass
class Baseline:
    reasons: dict[str, str]
    entries: dict[Key, str]  # → the name of its reason

    def reason_of(self, key: Key) -> str | None:
        """The name of the reason of the entry covering `key`, if one does."""
        if key in self.entries:
            return self.entries[key]
        wild = Key(key.peer, key.definition, "*", key.kind)
        return self.entries.get(wild)

    def text(self, reason: str) -> str:
        return self.reasons.get(reason) or REASONS.get(reason) or reason


class BaselineError(Exception):
    pass


def read(path: Path) -> Baseline:
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise BaselineError(
            f"{path}: no baseline; write one from this run with --update-baseline"
        ) from None
    except ValueError as err:
        raise BaselineError(f"{path}: not JSON: {err}") from err
    if not isinstance(data, dict) or not isinstance(data.get("divergences"), list):
        raise BaselineError(f'{path}: expected {{"reasons": {{...}}, "divergences": [...]}}')
    reasons = dict(data.get("reasons") or {})
    entries: dict[Key, str] = {}
    for n, item in enumerate(data["divergences"]):
        try:
            key = Key(item["peer"], item["definition"], item["fixture"], item["kind"])
            reason = item["reason"]
        except (KeyError, TypeError) as err:
            raise BaselineError(
                f"{path}: divergences[{n}] lacks {err} (each has peer, definition, fixture, "
                "kind, reason)"
            ) from None
        if reason not in reasons and reason not in REASONS:
            raise BaselineError(f"{path}: divergences[{n}] names the unknown reason {reason!r}")
        entries[key] = reason
    return Baseline(reasons, entries)


def classify(key: Key) -> str:
    for peer, kind, reason in RULES:
        if re.search(peer, key.peer) and re.search(kind, key.kind):
            return reason
    return UNEXPLAINED


def write(
    path: Path, keys: Iterable[Key], old: Baseline | None, covered: Callable[[Key], bool]
) -> int:
    """Rewrite the baseline with `keys` (this run's divergences), keeping each old entry's
    reason, and the old entries this run did not cover (a peer that did not run, a definition
    left out). Returns the number of entries."""
    entries: dict[Key, str] = {}
    if old is not None:
        entries.update({k: r for k, r in old.entries.items() if not covered(k)})
    for key in keys:
        entries[key] = (old.reason_of(key) if old else None) or classify(key)
    used = sorted(set(entries.values()))
    known = {**REASONS, **(old.reasons if old else {})}
    lines = [
        "{",
        ' "about": "Known divergences of tests/crosscheck/run.py (docs/cross-sdk.md#the-baseline);'
        ' rewrite with --update-baseline, then edit the reasons",',
        ' "reasons": {',
        ",\n".join(f"  {json.dumps(r)}: {json.dumps(known[r], ensure_ascii=False)}" for r in used),
        " },",
        ' "divergences": [',
        ",\n".join(
            "  "
            + json.dumps(
                {
                    "peer": k.peer,
                    "definition": k.definition,
                    "fixture": k.fixture,
                    "kind": k.kind,
                    "reason": r,
                },
                ensure_ascii=False,
            )
            for k, r in sorted(
                entries.items(), key=lambda kv: (kv[1], kv[0].peer, kv[0].fixture, kv[0].kind)
            )
        ),
        " ]",
        "}",
    ]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return len(entries)
