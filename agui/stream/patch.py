"""JSON Patch (RFC 6902) applied with a bound on what it may build: the one applier of the client's
Reducer (STATE_DELTA, ACTIVITY_DELTA) and of the server's run lifecycle (the STATE_DELTA check).

A patch is tiny on the wire and need not be in memory: each `copy` of the whole document doubles
it (`{"op": "copy", "from": "", "path": "/c1"}`, 40 bytes), so two dozen operations ask for
gigabytes. So `apply_patch` applies the patch operation by operation, keeping the document's
node count (`count_nodes`: every object, array, string, number, boolean and null counts one),
and checks each operation before it builds anything: an operation that would take the document
past `max_nodes`, or a patch whose operations would build more than `max_nodes` in all (copies
and values; this bounds the work of a patch that copies and removes again and again), is refused
with PatchLimitError, naming the operation (`/delta/19`). Counting costs no more than what it
checks: a copy is counted as it is made and stops at the room left (a copy of the whole document
is refused from its known size before it starts); a value is counted up to the limit at most.

The default, DEFAULT_MAX_STATE_NODES, is 500,000 nodes: several MiB of typical JSON (about 15
bytes a node), about what the 8 MiB request body a server accepts by default
(max_body_bytes) can carry back as the next run's state, and at most some 60 MiB of Python
objects (a document of nested objects, the costliest shape, takes about 120 bytes a node). A
document already past the limit (a snapshot, the run's input) may still be patched by what does
not grow it.

Every valid patch keeps jsonpatch's semantics. The patch is validated as a whole (jsonpatch)
before any operation applies; add, remove, replace, move and test are jsonpatch's own, applied
one at a time; copy is made here as jsonpatch makes it (the source's value copied, then added at
`path`), so that it can be capped while it is made, and a copy that cannot be made is left to
jsonpatch, which says why. tests/test_patch_bound.py checks results and counts against jsonpatch.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, MutableMapping, MutableSequence
from typing import Any

import attrs

from agui.errors import PatchLimitError

__all__ = ["DEFAULT_MAX_STATE_NODES", "PatchLimitError", "Patched", "apply_patch", "count_nodes"]

DEFAULT_MAX_STATE_NODES = 500_000
"""The most nodes a patched document may hold, and a patch may build (see the module)."""


@attrs.frozen
class Patched:
    """What `apply_patch` returns: the patched document and its node count (None when it was
    applied without a limit, so not counted)."""

    document: Any
    nodes: int | None


def count_nodes(value: Any, limit: int | None = None) -> int:
    """The nodes of a JSON value: each object, array and scalar once (object keys are not nodes:
    a copy shares them). With `limit`, counting stops past it (the result is then limit + 1).
    Iterative, so a deep document cannot exhaust the stack."""
    count = 0
    pending = [value]
    while pending:
        item = pending.pop()
        count += 1
        if limit is not None and count > limit:
            return count
        if isinstance(item, dict):
            pending.extend(item.values())
        elif isinstance(item, list | tuple):
            pending.extend(item)
    return count


class _Unresolved(Exception):
    """A location this module cannot resolve (the operation itself will fail in jsonpatch)."""


def _at(document: Any, path: Any) -> tuple[Any, Any]:
    """The container holding `path` and its last part, as jsonpatch resolves it (part None: the
    document itself)."""
    import jsonpointer

    try:
        parent, part = jsonpointer.JsonPointer(path).to_last(document)
    except (jsonpointer.JsonPointerException, TypeError, ValueError, LookupError) as exc:
        raise _Unresolved from exc
    return parent, part


def _value(document: Any, path: Any) -> Any:
    """The value at `path` (raises _Unresolved when there is none)."""
    parent, part = _at(document, path)
    if part is None:
        return parent
    try:
        return parent[part]
    except (TypeError, LookupError) as exc:
        raise _Unresolved from exc


def _replaced(document: Any, path: Any, total: int) -> int:
    """The nodes an add (or a copy, a move) at `path` replaces: the whole document for the root,
    an object's existing member; nothing for an array (an add inserts)."""
    try:
        parent, part = _at(document, path)
    except _Unresolved:
        return 0  # the add fails
    if part is None:
        return total
    if isinstance(parent, dict) and part in parent:
        return count_nodes(parent[part])
    return 0


def _moved_onto(document: Any, origin: Any, path: Any, total: int) -> int:
    """The nodes a move from `origin` to `path` replaces. jsonpatch removes the value first, then
    adds it at `path`: an array element removed shifts its later siblings, so a path through them
    is resolved one index further on; a member moved onto its ancestor keeps its own nodes."""
    import jsonpointer

    if origin == path:
        return 0  # a no-op
    try:
        source = jsonpointer.JsonPointer(origin).parts
        target = jsonpointer.JsonPointer(path).parts
    except (jsonpointer.JsonPointerException, TypeError):
        return 0  # the move fails
    depth = len(source) - 1
    if depth >= 0 and len(target) > depth + 1 and target[:depth] == source[:depth]:
        try:
            shifted = isinstance(
                _value(document, jsonpointer.JsonPointer.from_parts(source[:depth]).path), list
            )
            removed_at, through = int(source[depth]), int(target[depth])
        except (_Unresolved, ValueError):
            shifted = False
        if shifted and through > removed_at:
            target = [*target[:depth], str(through + 1), *target[depth + 1 :]]
    replaced = _replaced(document, jsonpointer.JsonPointer.from_parts(target).path, total)
    if replaced and source[: len(target)] == target:
        # a member moved onto its ancestor: the part of the ancestor moved stays
        try:
            replaced -= count_nodes(_value(document, origin))
        except _Unresolved:
            return 0
    return replaced


def _effect(document: Any, op: Any, total: int, cap: int) -> tuple[int, int]:
    """(nodes the operation adds, nodes it removes), counted before it is applied; what is
    added is counted up to `cap` at most. Not for copy (`_copy`)."""
    kind = op.get("op")
    path = op.get("path")
    if kind == "add":
        return count_nodes(op.get("value"), cap), _replaced(document, path, total)
    if kind == "replace":
        try:
            return count_nodes(op.get("value"), cap), count_nodes(_value(document, path))
        except _Unresolved:
            return count_nodes(op.get("value"), cap), 0  # the replace fails
    if kind == "remove":
        try:
            return 0, count_nodes(_value(document, path))
        except _Unresolved:
            return 0, 0
    if kind == "move":
        return 0, _moved_onto(document, op.get("from"), path, total)
    return 0, 0  # test


class _Over(Exception):
    """A copy passed its cap."""


_SCALARS = frozenset((str, int, float, bool, type(None)))


def _copied(value: Any, cap: int | None = None) -> tuple[Any, int]:
    """A copy of a JSON value, as copy.deepcopy makes it (new objects and arrays, scalars
    shared) in half the time, and its node count; raises _Over as soon as it passes `cap`
    nodes, having built no more than that."""
    count = 0

    def walk(item: Any) -> Any:
        nonlocal count
        count += 1
        if cap is not None and count > cap:
            raise _Over
        kind = type(item)
        if kind is dict:
            return {key: walk(member) for key, member in item.items()}
        if kind is list:
            return [walk(member) for member in item]
        if kind in _SCALARS:
            return item
        count += count_nodes(item) - 1  # not plain JSON (a tuple, a subclass): deepcopy's own
        if cap is not None and count > cap:
            raise _Over
        return copy.deepcopy(item)

    return walk(value), count


def _refused(where: str, op: Any, limit: int, document: bool) -> PatchLimitError:
    what = "the document" if document else "what the patch builds"
    return PatchLimitError(
        f"{where}: {op.get('op')} would take {what} past {limit} nodes (the limit, "
        "max_state_nodes)",
        pointer=where,
        limit=limit,
    )


def _copy(
    document: Any, op: Any, total: int, built: int, limit: int, where: str
) -> tuple[Any, int, int] | None:
    """jsonpatch's copy (the source's value copied, then added at `path`), with the copy capped
    so that it never builds past the limit: (the document, its nodes, the nodes the patch built).
    None when the copy cannot be made here (jsonpatch then makes it, or tells why not)."""
    try:
        source = _value(document, op.get("from"))
        parent, part = _at(document, op.get("path"))
    except _Unresolved:
        return None
    if part is None:
        removed = total
    elif isinstance(parent, MutableSequence):
        if not (part == "-" or (isinstance(part, int) and 0 <= part <= len(parent))):
            return None
        removed = 0
    elif isinstance(parent, MutableMapping):
        removed = count_nodes(parent[part]) if part in parent else 0
    else:
        return None
    room = max(limit - total + removed, removed)  # more grows the document past the limit
    cap = min(room, limit - built)
    if source is document and total > cap:  # the whole document: its size is known
        raise _refused(where, op, limit, total > room)
    try:
        value, added = _copied(source, cap)
    except _Over:
        raise _refused(where, op, limit, room <= limit - built) from None
    if part is None:
        document = value
    elif isinstance(parent, MutableMapping):
        parent[part] = value
    elif part == "-":
        parent.append(value)
    else:
        parent.insert(part, value)
    return document, total - removed + added, built + added


def apply_patch(
    document: Any,
    patch: Iterable[Any],
    *,
    max_nodes: int | None = DEFAULT_MAX_STATE_NODES,
    nodes: int | None = None,
    in_place: bool = False,
    pointer: str = "",
) -> Patched:
    """Apply `patch` to `document` (a copy of it unless in_place), refusing with PatchLimitError
    an operation that would take the document past `max_nodes` nodes, or the patch past building
    that many in all (None: no limit, nothing counted). `nodes`: with in_place, the document's
    node count when the caller keeps it (else it is counted; a copy is counted as it is made).
    `pointer`: where the patch is in its event
    (`/delta`), for the operation's pointer in the error.

    A patch that does not apply raises ValueError with jsonpatch's (or jsonpointer's) message,
    or TypeError, LookupError, AttributeError for a document it cannot walk. With in_place, the
    document may be left partly patched by an error; a copy never changes it."""
    import jsonpatch
    import jsonpointer

    try:
        checked = jsonpatch.JsonPatch(patch)  # every operation is valid before any applies
        if not in_place:
            document, counted = _copied(document)
            nodes = counted
        if max_nodes is None:
            return Patched(checked.apply(document, in_place=True), None)
        total = count_nodes(document) if nodes is None else nodes
        built = 0
        for index, op in enumerate(checked):
            where = f"{pointer}/{index}"
            if op.get("op") == "copy":
                copied = _copy(document, op, total, built, max_nodes, where)
                if copied is not None:
                    document, total, built = copied
                    continue
                # jsonpatch tells why the copy cannot be made; should it make it after all,
                # it is counted after (at worst a copy of a document within the limit)
                document = jsonpatch.JsonPatch([op]).apply(document, in_place=True)
                total = count_nodes(document)
                if total > max_nodes:
                    raise _refused(where, op, max_nodes, True)
                continue
            added, removed = _effect(document, op, total, max_nodes)
            built += added
            if added > removed and total - removed + added > max_nodes:
                raise _refused(where, op, max_nodes, True)
            if built > max_nodes:
                raise _refused(where, op, max_nodes, False)
            document = jsonpatch.JsonPatch([op]).apply(document, in_place=True)
            total += added - removed
    except (jsonpatch.JsonPatchException, jsonpointer.JsonPointerException) as exc:
        raise ValueError(str(exc)) from exc
    return Patched(document, total)
