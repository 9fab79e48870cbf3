"""`agui serve` prints the dev console's URL only where the console answers: each printed URL is
GET and answers 200 with the page, for an agent (at `{--path}/console`), an AgentApp with a path
of its own (at `{path}/console`, not `/console`) and one without (any path ending in /console);
an ASGI app of another kind, which decides its own routes, gets no console line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from .test_cli_serve import Served, served  # noqa: F401  (the fixture)

MODULE = """
from fastapi import FastAPI

import agui


async def echo(run):
    yield agui.TextMessageChunkEvent(message_id="m", delta="hello")


at_run = agui.AgentApp(echo, path="/run", console=True)
anywhere = agui.AgentApp(echo, console=True)
api = FastAPI()
agui.AgentApp(echo, console=True).include_in(api, "/agent")
"""


@pytest.fixture
def app_dir(tmp_path: Path) -> Path:
    (tmp_path / "consoles.py").write_text(MODULE)
    return tmp_path


def console_line(one: Served) -> str | None:
    """The URL of the "console:" line that follows the "serving" line (None: there is none)."""
    one.url()
    following = one.line()
    if following is None or not following.startswith("console: "):
        return None
    return following.removeprefix("console: ").strip()


@pytest.mark.parametrize(
    ("target", "path"),
    [
        (["consoles:echo", "--path", "/x"], "/x/console"),
        (["consoles:at_run"], "/run/console"),
        (["consoles:anywhere"], "/console"),
    ],
    ids=["an agent", "an AgentApp with a path", "an AgentApp without"],
)
def test_the_printed_console_url_answers(
    served: Any,  # noqa: F811
    app_dir: Path,
    target: list[str],
    path: str,
) -> None:
    one = served(*target, "--port", "0", cwd=app_dir)
    url = console_line(one)
    assert url is not None, "".join(one.stderr)
    assert url.endswith(path), url
    page = httpx.get(url)
    assert page.status_code == 200, (url, page.status_code)
    assert '<script type="module" src="console/main.js"></script>' in page.text


def test_an_asgi_app_of_another_kind_gets_no_console_line(
    served: Any,  # noqa: F811
    app_dir: Path,
) -> None:
    """A FastAPI app's console is where its routes put it (here /agent/console, which answers);
    agui serve prints no URL it cannot know."""
    one = served("consoles:api", "--port", "0", cwd=app_dir)
    base = one.url()
    assert httpx.get(base + "/agent/console").status_code == 200
    one.stop()
    assert not any(line.startswith("console:") for line in one.stderr), one.stderr
