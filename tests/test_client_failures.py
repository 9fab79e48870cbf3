"""HttpAgent's one table of httpx failures (agui.http.client._HTTPX), pinned entry by entry: what
each failure becomes (Timeout, ConnectError, TransportError), its message, and whether it is tried
again before a stream's first frame, the same for a stream (run_sync) and a small request
(capabilities_sync).

The real failures are exercised against real servers elsewhere (a refused connection, a silent
server, a connection closed before the answer: tests/test_client.py and
tests/test_client_production.py); here each httpx exception is raised by httpx's own
MockTransport, since most of them (a full pool, a write timeout, a proxy failure) cannot be
provoked on demand.
"""

from __future__ import annotations

import httpx
import pytest

import agui
from agui import HttpAgent

from .conftest import run_input

URL = "http://127.0.0.1:9/agent"
TALKING = "{name} while talking to {url}: boom"

CASES: list[tuple[type[Exception], type[agui.TransportError], bool, str]] = [
    (httpx.ConnectTimeout, agui.Timeout, True, "Timed out connecting to {url} (ConnectTimeout)"),
    (httpx.ReadTimeout, agui.Timeout, False, "Timed out waiting for data from {url} (ReadTimeout)"),
    (
        httpx.WriteTimeout,
        agui.Timeout,
        False,
        "Timed out sending the request to {url} (WriteTimeout)",
    ),
    (
        httpx.PoolTimeout,
        agui.Timeout,
        False,
        "Timed out waiting for a free connection to {url} (PoolTimeout)",
    ),
    (httpx.ConnectError, agui.ConnectError, True, "Cannot connect to {url}: boom"),
    (httpx.RemoteProtocolError, agui.TransportError, True, TALKING),
    (httpx.ReadError, agui.TransportError, True, TALKING),
    (httpx.WriteError, agui.TransportError, True, TALKING),
    (httpx.CloseError, agui.TransportError, False, TALKING),
    (httpx.ProxyError, agui.TransportError, False, TALKING),
    (httpx.LocalProtocolError, agui.TransportError, False, TALKING),
    (httpx.TooManyRedirects, agui.TransportError, False, "Too many redirects from {url}"),
    (httpx.UnsupportedProtocol, agui.TransportError, False, "Cannot request {url}: boom"),
    (httpx.InvalidURL, agui.TransportError, False, "Cannot request {url}: boom"),
]
"""Each httpx failure: the error it becomes (exactly that class), whether it is tried again
before the first frame, its message."""


def _failing(failure: type[Exception]) -> tuple[httpx.Client, list[str]]:
    """A client whose every request fails with `failure`, and the URLs it was asked."""
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        if failure is httpx.InvalidURL:  # raised before a request exists
            raise failure("boom")
        raise failure("boom", request=request)  # type: ignore[call-arg]

    return httpx.Client(transport=httpx.MockTransport(handler)), asked


@pytest.mark.parametrize(
    ("failure", "kind", "retried", "text"), CASES, ids=[case[0].__name__ for case in CASES]
)
@pytest.mark.parametrize("call", ["run_sync", "capabilities_sync"])
def test_each_httpx_failure_becomes_its_error(
    failure: type[Exception],
    kind: type[agui.TransportError],
    retried: bool,
    text: str,
    call: str,
) -> None:
    """The class (exactly), the message naming the URL, the httpx exception as the cause, and
    the attempts: two with max_retries=1 for a failure worth another try, else one."""
    client, asked = _failing(failure)
    with client:
        agent = HttpAgent(URL, sync_client=client, max_retries=1)
        with pytest.raises(agui.TransportError) as caught:
            if call == "run_sync":
                list(agent.run_sync(run_input()))
            else:
                agent.capabilities_sync()
    error = caught.value
    url = asked[0]
    assert type(error) is kind and isinstance(error, agui.AguiError)
    assert type(error.__cause__) is failure
    attempts = 2 if retried else 1
    assert (len(asked), error.attempts, error.url) == (attempts, attempts, url)
    said = text.format(url=url, name=failure.__name__)
    assert str(error) == (said if attempts == 1 else f"{said} (after {attempts} attempts)")
