"""What an agent of another SDK declares it can do, read for `GET /capabilities`
(`agui.adapters.ag_ui_protocol._declared_capabilities`, which `AgUiProtocolAgent.capabilities()`
answers): every way such an agent declares them (ag-ui-adk's `get_capabilities()` returning a
dict, a `capabilities` attribute or method, sync or async, a pydantic model or a dict), without
any other SDK, so these run in the tests session. The adapter itself, built on ag-ui-protocol, is
checked in test_ag_ui_protocol.py, and with ADK's own agent in test_adk.py."""

from __future__ import annotations

import asyncio
import logging
from typing import Any, ClassVar

import pytest
from agui_pydantic import AgentCapabilities as PydanticCapabilities

import agui
from agui.adapters.ag_ui_protocol import _declared_capabilities

WIRE = {
    "identity": {"name": "weather", "type": "google-adk"},
    "humanInTheLoop": {"approvals": True},
}


def read(agent: object) -> Any:
    return agui.to_json(asyncio.run(_declared_capabilities(agent)))


class GetCapabilities:
    """ag-ui-adk's ADKAgent's way: get_capabilities() returns a dict of wire JSON, or None."""

    def __init__(self, value: Any) -> None:
        self.value = value
        self.asked = 0

    def get_capabilities(self) -> Any:
        self.asked += 1
        return self.value


class AsyncMethod:
    async def capabilities(self) -> Any:
        return PydanticCapabilities.model_validate(WIRE)


class Attribute:
    capabilities = agui.AgentCapabilities(
        identity=agui.IdentityCapabilities(name="weather", type="google-adk")
    )


def test_a_dict_of_wire_json_is_read_each_time() -> None:
    agent = GetCapabilities(WIRE)
    assert read(agent) == WIRE
    agent.value = {"custom": {"predictiveChips": True}}
    assert read(agent) == {"custom": {"predictiveChips": True}}
    assert agent.asked == 2


def test_nothing_declared_is_an_empty_declaration() -> None:
    assert read(GetCapabilities(None)) == {}
    assert read(object()) == {}


def test_a_pydantic_model_from_an_async_method() -> None:
    """A pydantic model (as ag_ui.core.AgentCapabilities is) is read as its JSON by alias."""
    assert read(AsyncMethod()) == WIRE


def test_an_agui_declaration_is_taken_as_it_is() -> None:
    assert asyncio.run(_declared_capabilities(Attribute())) is Attribute.capabilities


def test_get_capabilities_comes_first() -> None:
    class Both(GetCapabilities):
        capabilities: ClassVar[dict[str, Any]] = {"custom": {"not": "this"}}

    assert read(Both(WIRE)) == WIRE


def test_an_async_get_capabilities() -> None:
    class Async:
        async def get_capabilities(self) -> Any:
            return WIRE

    assert read(Async()) == WIRE


def test_unknown_members_are_removed_and_logged(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="agui.adapters"):
        assert read(GetCapabilities(WIRE | {"http_binary": True})) == WIRE
    (logged,) = [r.getMessage() for r in caplog.records if r.name == "agui.adapters"]
    assert "GetCapabilities's capabilities" in logged and "http_binary" in logged, logged


def test_what_is_not_a_declaration_is_refused() -> None:
    with pytest.raises(TypeError, match="GetCapabilities's capabilities are a list: expected"):
        read(GetCapabilities(["streaming"]))
    with pytest.raises(ValueError, match="GetCapabilities's capabilities are not an Agent"):
        read(GetCapabilities({"identity": {"name": 3}}))
