"""Two agents for the tests of several agents on one server (`agui serve a=two_agents:alpha
b=two_agents:beta`, this folder being the --app-dir): each is the `paced` agent of agents.py,
told by forwardedProps what to stream, with a declaration of its own (its identity's name), and
the `server` of the FastAPI app below serves both on the store of AGUI_TEST_STORE."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from typing import Any

import agui

if __package__:  # imported by the tests as tests.durable.two_agents
    from .agents import paced
else:  # by agui serve, this folder being the --app-dir
    from agents import paced  # type: ignore[import-not-found, no-redef]


class Paced:
    """`paced`, declaring `name` as its identity."""

    def __init__(self, name: str) -> None:
        self.capabilities = agui.AgentCapabilities(identity=agui.IdentityCapabilities(name=name))

    def __call__(self, run: agui.RunAgentInput) -> AsyncIterator[Any]:
        return paced(run)


alpha = Paced("alpha")
beta = Paced("beta")


def _api() -> Any:
    store = os.environ.get("AGUI_TEST_STORE")
    if not store:
        return None
    from fastapi import FastAPI

    api = FastAPI()
    agui.AgentServer({"a": alpha, "b": beta}, store=store).include_in(api)
    return api


api = _api()
