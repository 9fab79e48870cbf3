"""What a JSON Patch may build (agui.stream.patch): the copy bomb, each `{"op": "copy", "from": "",
"path": "/cN"}` doubling the document, is refused before it builds the operation that would take
the document past max_state_nodes, by the one applier the client's Reducer (STATE_DELTA,
ACTIVITY_DELTA) and the server's run lifecycle share: the Reducer raises ProtocolError naming
the operation (a Conversation's run fails with it), the server ends the run in RUN_ERROR
INVALID_EVENT and logs why. Every valid patch within the limit keeps jsonpatch's semantics, and
the node count the applier keeps is the document's (a property test against jsonpatch).
"""

from __future__ import annotations

import asyncio
import copy
import logging
import tracemalloc
from collections.abc import AsyncIterator, Iterator
from typing import Any

import attrs
import httpx
import jsonpatch
import pytest
from hypothesis import example, given, settings, strategies as st
from jsonpointer import JsonPointerException

import agui
from agui import AgentApp
from agui.errors import ProtocolError
from agui.stream.patch import (
    DEFAULT_MAX_STATE_NODES,
    PatchLimitError,
    apply_patch,
    count_nodes,
)
from agui.stream.reducer import Reducer
from agui.wire.codec import decode_json

from .conftest import live_server, run_input

MiB = 1024 * 1024
BOMB = [{"op": "copy", "from": "", "path": f"/c{n}"} for n in range(24)]
"""24 operations, 1,000 bytes: each doubles the document, 2**24 times its size in all."""
REFUSED_AT = "/delta/18"
"""From {}, the document holds 2**(n+1) nodes after operation n: operation 18 would take it to
524,288 nodes, past the default 500,000."""
MEMORY_BOUND = 64 * MiB


def state_delta(delta: list[Any]) -> agui.StateDeltaEvent:
    event: agui.StateDeltaEvent = decode_json(
        {"type": "STATE_DELTA", "delta": delta}, agui.StateDeltaEvent
    )
    return event


def peak_while(call: Any) -> tuple[Any, int]:
    """What `call()` returned or raised, and the peak of memory traced while it ran."""
    tracemalloc.start()
    try:
        try:
            outcome: Any = call()
        except Exception as exc:
            outcome = exc
        return outcome, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


# ── the applier ──────────────────────────────────────────────────────────────────────────────


def test_the_copy_bomb_is_refused_before_it_builds_past_the_limit() -> None:
    """The 24-operation bomb: PatchLimitError at the operation that would cross the limit,
    naming it, with less than 64 MiB ever traced (unbounded, it asks for gigabytes)."""
    refused, peak = peak_while(lambda: apply_patch({}, BOMB, pointer="/delta"))
    assert isinstance(refused, PatchLimitError)
    assert refused.pointer == REFUSED_AT
    assert refused.limit == DEFAULT_MAX_STATE_NODES
    assert str(refused) == (
        f"{REFUSED_AT}: copy would take the document past 500000 nodes (the limit, max_state_nodes)"
    )
    assert peak < MEMORY_BOUND


def test_a_copy_of_a_member_is_capped_while_it_is_made() -> None:
    """A copy whose source is not the whole document is counted as it is made, and stops at the
    room left: the bomb copying the last copy (`/cN-1`) is refused too, within the bound."""
    bomb = [{"op": "add", "path": "/c", "value": {}}] + [
        {"op": "copy", "from": "/c", "path": f"/c/c{n}"} for n in range(24)
    ]
    doubling = [{"op": "add", "path": "/a", "value": [0]}] + [
        {"op": "copy", "from": "/a", "path": f"/a/{n}"} for n in range(24)
    ]
    for patch in (bomb, doubling):
        refused, peak = peak_while(lambda p=patch: apply_patch({}, p, max_nodes=100_000))
        assert isinstance(refused, PatchLimitError), patch[:3]
        assert peak < MEMORY_BOUND


def test_a_large_patch_within_the_limit_applies() -> None:
    """Legitimate size under the default limit: a 198,001-node table added and copied whole
    (nearly 400,000 nodes) applies as jsonpatch applies it, its node count kept exactly."""
    rows = [{"id": n, "name": f"row {n}", "tags": ["a", "b"]} for n in range(33_000)]
    patch: list[Any] = [
        {"op": "add", "path": "/rows", "value": rows},  # 198,001 nodes
        {"op": "copy", "from": "/rows", "path": "/backup"},
        {"op": "move", "from": "/rows/1", "path": "/second"},
        {"op": "remove", "path": "/rows/2"},
    ]
    patched = apply_patch({"title": "t"}, patch)
    assert patched.document == jsonpatch.apply_patch({"title": "t"}, patch)
    assert patched.nodes == count_nodes(patched.document) == 395_998


def test_the_limit_is_the_callers() -> None:
    """max_nodes: a small limit refuses a small patch, one node past it; None counts nothing."""
    value = {"a": [1, 2, 3], "b": {"c": None}}  # 7 nodes: {} + the 7 is 8
    with pytest.raises(PatchLimitError) as refused:
        apply_patch({}, [{"op": "add", "path": "/v", "value": value}], max_nodes=7, pointer="/p")
    assert refused.value.pointer == "/p/0"
    assert apply_patch({}, [{"op": "add", "path": "/v", "value": value}], max_nodes=8).nodes == 8
    assert apply_patch({}, BOMB[:3], max_nodes=None) == agui.stream.patch.Patched(
        jsonpatch.apply_patch({}, BOMB[:3]), None
    )


def test_what_a_patch_builds_in_all_is_bounded() -> None:
    """A patch that copies and removes again and again keeps the document small but builds
    without end: refused once what it built in all passes the limit (the work of one patch)."""
    document = {"a": list(range(40))}  # 42 nodes
    patch = [
        {"op": "copy", "from": "/a", "path": "/b"},  # builds 41
        {"op": "remove", "path": "/b"},
    ] * 3
    assert apply_patch(document, patch[:4], max_nodes=100).nodes == 42
    with pytest.raises(PatchLimitError, match="what the patch builds past 100") as refused:
        apply_patch(document, patch, max_nodes=100)
    assert refused.value.pointer == "/4"


def test_a_document_past_the_limit_may_still_shrink() -> None:
    """A document already past the limit (a snapshot, the run's input) may be patched by what
    does not grow it; what grows it is refused."""
    document = {"list": list(range(10))}  # 12 nodes
    shrunk = apply_patch(
        document,
        [
            {"op": "remove", "path": "/list/0"},
            {"op": "replace", "path": "/list/1", "value": "x"},
            {"op": "test", "path": "/list/0", "value": 1},
        ],
        max_nodes=5,
    )
    assert shrunk.nodes == 11
    with pytest.raises(PatchLimitError, match="the document past 5 nodes"):
        apply_patch(document, [{"op": "add", "path": "/n", "value": 1}], max_nodes=5)


def test_a_patch_that_does_not_apply_says_what_jsonpatch_says() -> None:
    """Errors of patches that cannot be applied are jsonpatch's (as ValueError), and a copy
    never changes the document."""
    document = {"a": 1}
    patches: list[list[Any]] = [
        [{"op": "copy", "from": "/missing", "path": "/b"}],
        [{"op": "copy", "from": "/a", "path": "/x/y"}],
        [{"op": "add", "path": "/b", "value": 1}, {"op": "nope", "path": "/a"}],
        [{"op": "move", "from": "/a", "path": "/a/b"}],
    ]
    for patch in patches:
        with pytest.raises(ValueError) as ours:
            apply_patch(document, patch)
        with pytest.raises((jsonpatch.JsonPatchException, JsonPointerException)) as theirs:
            jsonpatch.apply_patch(document, patch)
        assert str(ours.value) == str(theirs.value)
    assert document == {"a": 1}


# Random documents and patches whose paths mostly exist: every result (or failure) is
# jsonpatch's, and the count kept is the document's.
_SCALAR = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from(["x", "y"]))
_JSON = st.recursive(
    _SCALAR,
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["a", "b", "c"]), inner, max_size=3)
    ),
    max_leaves=12,
)


def _pointers(value: Any, at: str = "") -> Iterator[str]:
    yield at
    if isinstance(value, dict):
        for key, member in value.items():
            yield from _pointers(member, f"{at}/{key}")
    elif isinstance(value, list):
        for index, member in enumerate(value):
            yield from _pointers(member, f"{at}/{index}")
        yield f"{at}/-"


@st.composite
def _cases(draw: st.DrawFn) -> tuple[Any, list[dict[str, Any]]]:
    document = draw(st.dictionaries(st.sampled_from(["a", "b", "c"]), _JSON, max_size=3))
    places = [*_pointers(document), "/a/0", "/b/c", "/c/1"]
    patch = []
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["add", "remove", "replace", "move", "copy", "test"]))
        op: dict[str, Any] = {"op": kind, "path": draw(st.sampled_from(places))}
        if kind in ("move", "copy"):
            op["from"] = draw(st.sampled_from(places))
        if kind in ("add", "replace", "test"):
            op["value"] = draw(_JSON)
        patch.append(op)
    return document, patch


@settings(max_examples=600, deadline=None)
@given(_cases())
# a move out of an array onto a member reached through a later sibling (one index on, once
# the moved element is gone); a member moved onto its ancestor
@example(
    ({"l": [1, {"k": 9}, {"k": [1, 2, 3, 4]}]}, [{"op": "move", "from": "/l/0", "path": "/l/1/k"}])
)
@example(({"a": {"b": [1, 2], "c": 3}}, [{"op": "move", "from": "/a/b", "path": "/a"}]))
def test_every_patch_is_jsonpatchs_and_the_count_is_exact(
    case: tuple[Any, list[dict[str, Any]]],
) -> None:
    document, patch = case
    try:
        expected: Any = jsonpatch.apply_patch(document, patch)
    except (jsonpatch.JsonPatchException, JsonPointerException) as exc:
        expected = str(exc)
    for in_place in (False, True):
        target = copy.deepcopy(document)
        try:
            patched = apply_patch(target, patch, max_nodes=10**6, in_place=in_place)
        except ValueError as exc:
            assert str(exc) == expected, patch
            continue
        assert patched.document == expected, patch
        assert patched.nodes == count_nodes(patched.document), patch


# ── the client's Reducer and Conversation ────────────────────────────────────────────────────


def test_the_reducer_refuses_the_bomb_and_keeps_its_state() -> None:
    """STATE_DELTA: ProtocolError naming the event and the operation, the state as it was,
    within the memory bound."""
    reducer = Reducer()
    reducer.feed(agui.RunStartedEvent(thread_id="t", run_id="r"))
    reducer.feed(state_delta([{"op": "add", "path": "/kept", "value": True}]))
    reducer.feed(state_delta([{"op": "remove", "path": "/kept"}]))  # {} again: 1 node
    refused, peak = peak_while(lambda: reducer.feed(state_delta(BOMB)))
    assert isinstance(refused, ProtocolError)
    assert refused.event == 4
    assert str(refused).startswith(f"STATE_DELTA {REFUSED_AT}: copy would take the document")
    assert peak < MEMORY_BOUND
    assert reducer.state == {}


def test_the_reducer_bounds_activity_content_the_same_way() -> None:
    """ACTIVITY_DELTA: the same bound on an activity's content, named at /patch."""
    reducer = Reducer()
    reducer.feed(agui.RunStartedEvent(thread_id="t", run_id="r"))
    reducer.feed(agui.ActivitySnapshotEvent(message_id="a1", activity_type="plan", content={}))
    delta = decode_json(
        {"type": "ACTIVITY_DELTA", "messageId": "a1", "activityType": "plan", "patch": BOMB},
        agui.ActivityDeltaEvent,
    )
    refused, peak = peak_while(lambda: reducer.feed(delta))
    assert isinstance(refused, ProtocolError)
    assert str(refused).startswith("ACTIVITY_DELTA /patch/18: copy would take the document")
    assert peak < MEMORY_BOUND
    assert reducer.messages_json()[0]["content"] == {}


def test_the_reducers_limit_is_a_setting_and_its_count_follows_the_state() -> None:
    """max_state_nodes on the Reducer: a small limit refuses a small delta; the count it keeps
    between deltas follows snapshots and removals (a delta that fits after a removal applies)."""
    reducer = Reducer(max_state_nodes=4)
    reducer.feed(agui.RunStartedEvent(thread_id="t", run_id="r"))
    reducer.feed(state_delta([{"op": "add", "path": "/a", "value": [1, 2]}]))  # 4 nodes
    with pytest.raises(ProtocolError, match="/delta/0: add would take the document past 4"):
        reducer.feed(state_delta([{"op": "add", "path": "/b", "value": 1}]))
    reducer.feed(state_delta([{"op": "remove", "path": "/a/0"}]))
    reducer.feed(state_delta([{"op": "add", "path": "/b", "value": 1}]))
    assert reducer.state == {"a": [2], "b": 1}
    reducer.feed(agui.StateSnapshotEvent(snapshot={}))
    reducer.feed(state_delta([{"op": "add", "path": "/c", "value": [1, 2]}]))
    assert reducer.state == {"c": [1, 2]}


def test_a_conversations_run_fails_with_the_error() -> None:
    """Through Conversation: the stream is rejected, the run recorded as truncated and rolled
    back, and the outcome is failed with the error that names the operation."""
    conversation = agui.Conversation(state={"kept": True})
    stream = [
        {"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
        {"type": "STATE_DELTA", "delta": [{"op": "add", "path": "/partial", "value": 1}]},
        {"type": "STATE_DELTA", "delta": BOMB},
        {"type": "RUN_FINISHED", "threadId": "t", "runId": "r"},
    ]
    refused_at = "/delta/17"  # the state holds 3 nodes by then, not 1
    with pytest.raises(ProtocolError, match=refused_at):
        conversation.consume(stream)
    outcome, error = conversation.outcome()
    assert outcome == "failed"
    assert error is not None and error.startswith(f"STATE_DELTA {refused_at}: copy would")
    assert conversation.runs[-1].outcome == "truncated"
    assert conversation.state == {"kept": True}
    small = agui.Conversation(max_state_nodes=2)
    with pytest.raises(ProtocolError, match="/delta/1"):
        small.consume([stream[0], state_delta(BOMB[:2]), stream[3]])


def test_a_local_agents_bomb_is_refused_by_the_lifecycle() -> None:
    """A local agent runs inside the run lifecycle: its bomb ends the run in RUN_ERROR
    INVALID_EVENT (the conversation's own limit), as behind a server."""

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield state_delta(BOMB[:4])

    conversation = agui.Conversation(max_state_nodes=10)
    result = asyncio.run(conversation.run(agent, "hi"))
    assert result.outcome == "error" and result.error_code == "INVALID_EVENT"
    assert result.error_message is not None and "/delta/3" in result.error_message


# ── the server ───────────────────────────────────────────────────────────────────────────────


async def bomber(input: agui.RunAgentInput) -> AsyncIterator[Any]:
    """Yields the bomb (when the user says so), then what would follow."""
    if input.messages[-1].content == "bomb":
        yield state_delta(BOMB)
    yield agui.TextMessageStartEvent(message_id="m")
    yield agui.TextMessageContentEvent(message_id="m", delta="after")
    yield agui.TextMessageEndEvent(message_id="m")


def _run(url: str, text: str) -> list[Any]:
    """The events of a run of the agent at `url`, the user saying `text`, the state {}."""
    input = attrs.evolve(run_input(run_id=text, text=text), state={})

    async def collect() -> list[Any]:
        return [e async for e in agui.HttpAgent(url).run(input)]

    return asyncio.run(collect())


@pytest.mark.parametrize("store", [None, "memory://"], ids=["plain", "durable"])
def test_the_server_refuses_the_bomb_with_invalid_event(
    store: str | None, caplog: pytest.LogCaptureFixture
) -> None:
    """A live AgentApp under uvicorn whose agent yields the bomb: the client reads RUN_ERROR
    INVALID_EVENT naming the operation, nothing after the delta is sent, the reason is logged,
    and the server goes on answering."""
    caplog.set_level(logging.INFO, logger="agui.agent")
    with live_server(AgentApp(bomber, path="/agent", store=store)) as base:
        events = _run(f"{base}/agent", "bomb")
        assert [type(e) for e in events] == [agui.RunStartedEvent, agui.RunErrorEvent]
        assert events[-1].code == "INVALID_EVENT"
        assert f"STATE_DELTA {REFUSED_AT}: copy would take the document" in events[-1].message
        assert f"a client must reject (STATE_DELTA): STATE_DELTA {REFUSED_AT}" in caplog.text
        after = _run(f"{base}/agent", "fine")
        assert type(after[-1]) is agui.RunFinishedEvent
        assert httpx.get(f"{base}/healthz", timeout=10).status_code == 200


@pytest.mark.parametrize("store", [None, "memory://"], ids=["plain", "durable"])
def test_the_servers_limit_is_a_setting(store: str | None) -> None:
    """AgentApp(max_state_nodes=...): a small limit refuses a small delta, with a store too (a
    durable run's own check); 0 is refused."""

    async def agent(input: agui.RunAgentInput) -> AsyncIterator[Any]:
        yield state_delta([{"op": "add", "path": "/v", "value": [1, 2, 3]}])

    with live_server(AgentApp(agent, max_state_nodes=4, store=store)) as base:
        events = _run(base, "small")
    assert events[-1].code == "INVALID_EVENT" and "/delta/0: add" in events[-1].message
    with live_server(AgentApp(agent, max_state_nodes=5, store=store)) as base:
        assert type(_run(base, "small")[-1]) is agui.RunFinishedEvent
    with pytest.raises(ValueError, match="max_state_nodes"):
        AgentApp(agent, max_state_nodes=0)
