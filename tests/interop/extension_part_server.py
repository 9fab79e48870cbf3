"""An AgentApp whose run sends a MESSAGES_SNAPSHOT with an extension content part, for
tests/interop/test_compat_extensions.py.

Run with PYTHONPATH putting a generated fork first (tests/fork/overlay.yaml's LocationPart):

    python tests/interop/extension_part_server.py COMPAT

It serves POST /agent on a free loopback port with `compat=COMPAT` and prints {"port": N} on its
first line once it listens (as tests/interop/test_interop.node_server expects). The run: a
snapshot holding the user's message (a text part and a location part), the assistant's reply and
the user's answer to it (the fork's `replyTo`, and an image part with the fork's `altText`), then
a reply streamed as a text message.
"""

from __future__ import annotations

import json
import socket
import sys
from collections.abc import AsyncIterator
from typing import Any

import uvicorn
from agui_generated.models import LocationPart  # the fork's: an extension content part

import agui
from agui.http.server import AgentApp


async def agent(run: agui.RunAgentInput) -> AsyncIterator[Any]:
    user = agui.UserMessage(
        id="user-1",
        content=[
            agui.TextPart(text="Meet me here"),
            LocationPart(lat=40.6892, lon=-74.0445, label="Liberty Island"),
        ],
    )
    reply = agui.AssistantMessage(id="reply-1", content="On my way")
    # extension members of an official message and an official content part
    answer = agui.UserMessage(
        id="user-2",
        content=[
            agui.TextPart(text="This one"),
            agui.ImagePart(
                source=agui.UrlSource(value="https://example.com/bike.jpg", mime_type="image/jpeg"),
                alt_text="A red bicycle",
            ),
        ],
        reply_to="reply-1",
    )
    yield agui.MessagesSnapshotEvent(messages=[user, reply, answer])
    yield agui.TextMessageStartEvent(message_id="reply-2")
    yield agui.TextMessageContentEvent(message_id="reply-2", delta="See you there")
    yield agui.TextMessageEndEvent(message_id="reply-2")


def main() -> None:
    app = AgentApp(agent, path="/agent", compat=sys.argv[1])
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    print(json.dumps({"port": port}), flush=True)  # uvicorn listens on the bound socket at once
    server.run(sockets=[sock])


if __name__ == "__main__":
    main()
