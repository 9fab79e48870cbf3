"""An option that needs an extra of agui-spec is refused when it is asked for, naming the install
line, when the extra is missing or only partly installed.

Before, with `opentelemetry-api` installed (other packages pull it in) but not the rest of the
otel extra, `AgentApp(tracing=True)` was built and its first run failed with a traceback, and
`agui serve --otel` exited 1 with a ModuleNotFoundError traceback. Each case runs in a fresh
interpreter where the modules are really missing: a finder first on sys.meta_path makes their
import fail as an uninstalled module's does (ModuleNotFoundError), before agui is imported.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

from agui.errors import EXTRAS

ROOT = Path(__file__).resolve().parent.parent
WAIT = 120.0  # seconds; a hang bound (a command that is not refused would serve forever)

HIDE = """
import sys


class NotInstalled:
    def find_spec(self, name, path=None, target=None):
        if any(name == gone or name.startswith(gone + ".") for gone in GONE):
            raise ModuleNotFoundError("No module named " + repr(name), name=name)
        return None


GONE = GONE_LIST
sys.meta_path.insert(0, NotInstalled())
"""


def python(gone: list[str], code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter where the modules `gone` (and their submodules) are
    not installed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "generated")])
    program = HIDE.replace("GONE_LIST", repr(sorted(gone))) + textwrap.dedent(code)
    return subprocess.run(
        [sys.executable, "-c", program, *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=WAIT,
    )


AGENT = """
import agui
from agui.errors import MissingExtraError


async def agent(run):
    yield agui.TextMessageChunkEvent(message_id="m", delta="hi")


def refused(make):
    try:
        make()
    except MissingExtraError as error:
        assert isinstance(error, ImportError) and isinstance(error, agui.AguiError)
        print("REFUSED", error.extra, error)
    else:
        print("BUILT")
"""

API_ONLY = ["opentelemetry.sdk", "opentelemetry.exporter"]
"""What is left of the otel extra where opentelemetry-api alone is installed."""


def test_tracing_with_the_api_alone_is_refused_at_construction() -> None:
    done = python(API_ONLY, AGENT + "refused(lambda: agui.AgentApp(agent, tracing=True))")
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("REFUSED otel "), done.stdout
    assert "pip install 'agui-spec[otel]'" in done.stdout
    assert "opentelemetry.sdk.trace" in done.stdout


def test_a_provider_given_needs_the_api_alone() -> None:
    code = AGENT + (
        "from opentelemetry import trace\n"
        "refused(lambda: agui.AgentApp(agent, tracing=trace.NoOpTracerProvider()))\n"
    )
    done = python(API_ONLY, code)
    assert done.stdout.strip() == "BUILT", (done.stdout, done.stderr)


def test_tracing_without_the_otlp_exporter_is_refused() -> None:
    done = python(
        ["opentelemetry.exporter"], AGENT + "refused(lambda: agui.AgentApp(agent, tracing=True))"
    )
    assert done.stdout.startswith("REFUSED otel "), (done.stdout, done.stderr)
    assert "opentelemetry.exporter.otlp.proto.http.trace_exporter" in done.stdout


def test_metrics_without_prometheus_client_are_refused() -> None:
    done = python(
        ["prometheus_client"], AGENT + "refused(lambda: agui.AgentApp(agent, metrics=True))"
    )
    assert done.stdout.startswith("REFUSED metrics "), (done.stdout, done.stderr)
    assert "pip install 'agui-spec[metrics]'" in done.stdout


def test_cors_without_starlette_is_refused() -> None:
    code = AGENT + "refused(lambda: agui.AgentApp(agent, cors_origins=['http://localhost:3000']))"
    done = python(["starlette"], code)
    assert done.stdout.startswith("REFUSED server "), (done.stdout, done.stderr)
    assert "pip install 'agui-spec[server]'" in done.stdout


def test_a_redis_store_without_redis_is_refused_at_construction() -> None:
    code = (
        AGENT
        + """
from agui.store import StoreError
try:
    agui.AgentApp(agent, store="redis://127.0.0.1:1/0")
except StoreError as error:
    print("REFUSED", error)
"""
    )
    done = python(["redis"], code)
    assert done.stdout.startswith("REFUSED "), (done.stdout, done.stderr)
    assert "pip install 'agui-spec[redis]'" in done.stdout and "redis.asyncio" in done.stdout


def test_a_redis_store_without_hiredis_is_built_with_a_warning() -> None:
    """hiredis only speeds redis-py up: its absence is said, not refused."""
    code = (
        AGENT
        + """
import logging
logging.basicConfig(level=logging.WARNING, format="%(name)s %(message)s")
refused(lambda: agui.AgentApp(agent, store="redis://127.0.0.1:1/0"))
"""
    )
    done = python(["hiredis"], code)
    assert done.stdout.strip() == "BUILT", (done.stdout, done.stderr)
    assert "agui.store redis:// without hiredis" in done.stderr


def test_to_message_without_protobuf_is_refused() -> None:
    code = (
        AGENT
        + "from agui.wire.proto import to_message\nrefused(lambda: to_message(agui.RunStartedEvent(thread_id='t', run_id='r')))"
    )
    done = python(["google.protobuf"], code)
    assert done.stdout.startswith("REFUSED proto "), (done.stdout, done.stderr)
    assert "pip install 'agui-spec[proto]'" in done.stdout


def test_to_pydantic_without_pydantic_is_refused() -> None:
    code = (
        AGENT + "refused(lambda: agui.to_pydantic(agui.RunStartedEvent(thread_id='t', run_id='r')))"
    )
    done = python(["pydantic"], code)
    assert done.stdout.startswith("REFUSED pydantic "), (done.stdout, done.stderr)
    assert "pip install 'agui-spec[pydantic]'" in done.stdout


SERVE = """
import runpy
sys.argv = ["agui", *sys.argv[1:]]
runpy.run_module("agui", run_name="__main__")
"""


@pytest.mark.parametrize(
    ("gone", "args", "extra"),
    [
        (API_ONLY, ["--otel"], "otel"),
        (["opentelemetry"], ["--otel"], "otel"),
        (["prometheus_client"], ["--metrics"], "metrics"),
        (["starlette"], ["--cors-origin", "http://localhost:3000"], "server"),
        (["uvicorn"], [], "server"),
    ],
    ids=["--otel, the API alone", "--otel, none", "--metrics", "--cors-origin", "no uvicorn"],
)
def test_agui_serve_refuses_in_one_line(gone: list[str], args: list[str], extra: str) -> None:
    done = python(gone, SERVE, "serve", "--port", "0", *args)
    assert done.returncode == 2, (done.returncode, done.stderr)
    assert "Traceback" not in done.stderr, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agui serve: "), lines
    assert f"pip install 'agui-spec[{extra}]'" in lines[0]


def test_every_extra_checked_is_one_of_pyproject_and_its_modules_exist() -> None:
    """EXTRAS names the project's extras, and modules that are there where they are installed
    (the dev environment installs them all)."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    done = python(
        [],
        "from agui.errors import require_extra, EXTRAS\n"
        "for extra in EXTRAS: require_extra(extra, extra)\nprint('ALL')",
    )
    assert done.stdout.strip() == "ALL", done.stderr
    for extra in EXTRAS:
        assert extra in extras, extra
