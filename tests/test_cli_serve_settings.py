"""The settings of `agui serve` (agui.cli.main.SERVE_SETTINGS), each an option and an
environment variable:

- each one, given as its option or as its variable, reaches what it sets: the AgentApp's
  attribute, the store's Retention, uvicorn's setting (parse -> settings_of -> the app built);
- an option wins over its variable, the variable over the default; what is given neither way is
  the default, which for AgentApp's parameters and Retention's fields is their own;
- a bad value (not a number, negative, 0 where 1 is the least, none where a limit cannot be
  turned off) is refused with exit status 2 and a message naming the option or the variable;
- `agui serve --help` and docs/cli.md list every setting with its default and its variable;
- the workers get the settings the parent read (worker_app, from AGUI_SERVE_SETTINGS);
- AgentApp's durable default: max_run_seconds is 3600 with a store, None without;
- one real `agui serve` configured by environment variables alone: the served app answers a
  hung run with RUN_ERROR TIMEOUT after AGUI_MAX_RUN_SECONDS and a stalled body with 408 after
  AGUI_BODY_TIMEOUT, at AGUI_PATH, in AGUI_WORKERS worker processes, without the console.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import re
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import httpx
import pytest

import agui
from agui import AgentApp, SSEDecoder
from agui.cli import serve as serve_module
from agui.cli.main import SERVE_SETTINGS, Setting, main, parser
from agui.store import Retention, open_log

from .conftest import ROOT, run_input
from .test_cli_serve import Served

BY_NAME = {setting.name: setting for setting in SERVE_SETTINGS}
HOOKS = """
async def allow(headers, action, thread_id, run_id):
    return "someone"


async def other(headers, action, thread_id, run_id):
    return "someone else"
"""
BODY = agui.encode(attrs.evolve(run_input(), protocol_version=agui.PROTOCOL_VERSION))
HANG = 60.0
"""A hang bound: how long a test waits for what takes a second or two before failing."""


async def echo(run: agui.RunAgentInput) -> Any:
    yield agui.TextMessageChunkEvent(message_id="m", delta="hi")


@pytest.fixture
def built(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """settings(argv, env) -> (the settings, the AgentApp `agui serve` builds from them), with
    the hooks module importable and every store it opened closed at the end."""
    (tmp_path / "settings_hooks.py").write_text(HOOKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(serve_module, "_on_path", lambda app_dir: None)
    apps: list[AgentApp] = []

    def build(argv: list[str], env: dict[str, str]) -> tuple[dict[str, Any], AgentApp]:
        args = parser().parse_args(["serve", "tests.test_cli_serve_settings:echo", *argv])
        settings = serve_module.settings_of(args, env)
        app, _, _ = serve_module._build(settings)
        assert isinstance(app, AgentApp)
        apps.append(app)
        return settings, app

    yield build
    for app in apps:
        if app._durable is not None:
            asyncio.run(app._durable.log.aclose())


def kept_by(app: AgentApp) -> Retention:
    """The retention of the app's store (every backend keeps it as `retention`)."""
    assert app._durable is not None
    log: Any = app._durable.log
    retention: Retention = log.retention
    return retention


def observed(name: str, settings: dict[str, Any], app: AgentApp) -> Any:
    """What the setting `name` set: in the app, its store, or the settings uvicorn gets."""
    setting = BY_NAME[name]
    if setting.target == "retention":
        return getattr(kept_by(app), name)
    if name == "store":
        return None if app._durable is None else type(app._durable.log).__name__
    if name == "authorize":
        return None if app.authorize is None else app.authorize.__name__
    if name == "cors_origins":
        return list(app.cors_origins)
    if name in ("lease_seconds", "max_principal_bytes", "max_principal_threads"):
        assert app._durable is not None
        return getattr(app._durable, name)
    if name == "metrics":
        return app._meter is not None
    if setting.target == "app" or name in ("path", "console"):
        return getattr(app, name)
    return settings[name]  # for uvicorn and the socket: host, port, workers, log level, ...


# name: (the option's text, its value; the variable's text, its value); the store is given
# beside each (--store memory://) but its own.
SAMPLES: dict[str, tuple[list[str], Any, str, Any]] = {
    "host": (["--host", "127.0.0.2"], "127.0.0.2", "::1", "::1"),
    "port": (["--port", "8123"], 8123, "0", 0),
    "path": (["--path", "/x"], "/x", "/y/z", "/y/z"),
    "console": (["--no-console"], False, "0", False),
    "workers": (["--workers", "3"], 3, "2", 2),
    "log_level": (["--log-level", "info"], "info", "DEBUG", "debug"),
    "log_format": (["--log-format", "json"], "json", "JSON", "json"),
    "metrics": (["--no-metrics"], False, "0", False),
    "timeout_graceful_shutdown": (["--timeout-graceful-shutdown", "2.5"], 2.5, "0", 0.0),
    "store": (["--store", "memory://"], "MemoryLog", "sqlite:///{tmp}/runs.db", "SQLiteLog"),
    "authorize": (
        ["--authorize", "settings_hooks:allow"],
        "allow",
        "settings_hooks:other",
        "other",
    ),
    "cors_origins": (
        ["--cors-origin", "http://a.test:3000", "--cors-origin", "http://b.test"],
        ["http://a.test:3000", "http://b.test"],
        "http://c.test:1, http://d.test:2",
        ["http://c.test:1", "http://d.test:2"],
    ),
    "tracing": (["--otel"], True, "on", True),
    "compat": (["--compat", "0.0.59"], "0.0.59", " OFF", "off"),
    "max_run_seconds": (["--max-run-seconds", "2.5"], 2.5, "off", None),
    "max_active_runs": (["--max-active-runs", "7"], 7, "none", None),
    "body_timeout": (["--body-timeout", "none"], None, "4", 4.0),
    "max_body_bytes": (["--max-body-bytes", "1024"], 1024, "2048", 2048),
    "max_state_nodes": (["--max-state-nodes", "1000"], 1000, "off", None),
    "keepalive": (["--keepalive", "3"], 3.0, "OFF", None),
    "finish_grace": (["--finish-grace", "0"], 0.0, "None", None),
    "lease_seconds": (["--lease-seconds", "2"], 2.0, "0.5", 0.5),
    "detach": (["--detach", "always"], "always", "Requested", "requested"),
    "max_principal_bytes": (["--max-principal-bytes", "50MB"], 50_000_000, "64 MiB", 64 << 20),
    "max_principal_threads": (["--max-principal-threads", "3"], 3, "none", None),
    "run_ttl_seconds": (["--retention-days", "1"], 86400.0, "0.5", 43200.0),
    "max_events_per_run": (["--max-events-per-run", "50"], 50, "off", None),
    "max_runs_per_thread": (["--max-runs-per-thread", "5"], 5, "9", 9),
}
DEFAULTS_WITH_A_STORE = {"max_run_seconds": 3600.0, "cors_origins": [], "console": True}
"""What a setting given neither way is, with --store memory://, where it is not the table's (the
console's default depends on the host, here the default loopback one)."""


def test_every_setting_has_samples() -> None:
    assert set(SAMPLES) == set(BY_NAME)


def _store(name: str) -> list[str]:
    return [] if name == "store" else ["--store", "memory://"]


def _env_text(name: str, tmp_path: Path) -> str:
    return SAMPLES[name][2].replace("{tmp}", str(tmp_path))


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_option_reaches_what_it_sets(name: str, built: Any) -> None:
    argv, value, _, _ = SAMPLES[name]
    settings, app = built([*argv, *_store(name)], {})
    assert observed(name, settings, app) == value
    assert settings["given"][name] == BY_NAME[name].flag


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_variable_reaches_what_it_sets(name: str, built: Any, tmp_path: Path) -> None:
    setting = BY_NAME[name]
    settings, app = built(_store(name), {setting.env: _env_text(name, tmp_path)})
    assert observed(name, settings, app) == SAMPLES[name][3]
    assert settings["given"][name] == setting.env


@pytest.mark.parametrize("name", list(SAMPLES))
def test_the_option_wins_over_the_variable(name: str, built: Any, tmp_path: Path) -> None:
    argv, value, _, _ = SAMPLES[name]
    setting = BY_NAME[name]
    settings, app = built([*argv, *_store(name)], {setting.env: _env_text(name, tmp_path)})
    assert observed(name, settings, app) == value


@pytest.mark.parametrize("name", list(SAMPLES))
def test_given_neither_way_it_is_the_default(name: str, built: Any) -> None:
    """The default, for an AgentApp or Retention setting by not passing it at all; an empty
    variable counts as unset."""
    setting = BY_NAME[name]
    settings, app = built(_store(name), {setting.env: ""})
    expected = DEFAULTS_WITH_A_STORE.get(name, setting.default)
    assert observed(name, settings, app) == expected
    assert name not in settings["given"]
    assert name not in settings["app"] and name not in settings["retention"]


@pytest.mark.parametrize(
    ("host", "on"),
    [
        ("127.0.0.1", True),
        ("127.0.0.2", True),
        ("::1", True),
        ("localhost", True),
        ("0.0.0.0", False),
        ("::", False),
        ("192.168.1.10", False),
        ("agents.example", False),
    ],
)
def test_the_console_is_off_by_default_on_an_address_others_reach(
    host: str, on: bool, built: Any
) -> None:
    """The console talks to the agent with none of the application's checks: served unasked only
    where only this machine reaches it; --console (or AGUI_CONSOLE=1) turns it on anywhere."""
    settings, app = built(["--host", host], {})
    assert app.console is on and settings["console"] is on
    settings, app = built(["--host", host, "--console"], {})
    assert app.console is True
    settings, app = built(["--host", host], {"AGUI_CONSOLE": "1"})
    assert app.console is True


def test_the_tables_defaults_are_agentapps_and_retentions() -> None:
    """The defaults --help and docs/cli.md show for the app's and the store's settings are the
    ones AgentApp and Retention apply (the table does not pass them, so it cannot differ)."""
    parameters = inspect.signature(AgentApp).parameters
    kept = Retention()
    for setting in SERVE_SETTINGS:
        if setting.target == "app":
            assert parameters[setting.name].default == setting.default, setting.name
        elif setting.target == "retention":
            assert getattr(kept, setting.name) == setting.default, setting.name
    assert parameters["path"].default is None and BY_NAME["path"].default == "/agent"


# ── bad values ─────────────────────────────────────────────────────────────────────────────────

BAD: dict[str, list[str]] = {
    "host": [""],
    "port": ["x", "-1", "65536", "80.5", "none"],
    "path": ["agent", ""],
    "workers": ["0", "-2", "two", "none"],
    "log_level": ["loud", ""],
    "timeout_graceful_shutdown": ["-1", "soon", "off", "nan"],
    "store": [""],
    "authorize": [""],
    "compat": ["0.0.34", "0.0", "1.0", "0.1.0", "newest", ""],
    "max_run_seconds": ["x", "-1", "0", "inf"],
    "max_active_runs": ["0", "-5", "1.5", "many"],
    "body_timeout": ["-0.1", "0", "x"],
    "max_body_bytes": ["0", "-1", "8MiB", "none"],
    "max_state_nodes": ["0", "-1", "1e6", "many"],
    "keepalive": ["0", "-3", "x"],
    "finish_grace": ["-1", "x"],
    "lease_seconds": ["0", "-1", "none", "x"],
    "max_principal_bytes": ["0", "0MB", "-1", "1.5MB", "50XB", "MB", "5 0MB", "8iB"],
    "max_principal_threads": ["0", "-1", "x"],
    "run_ttl_seconds": ["0", "-1", "week"],
    "max_events_per_run": ["0", "-1", "1e6"],
    "max_runs_per_thread": ["0", "x"],
}


def _bad_cases() -> Iterator[tuple[str, str]]:
    for name, texts in BAD.items():
        for text in texts:
            yield name, text


@pytest.fixture
def not_served(monkeypatch: pytest.MonkeyPatch) -> None:
    """A value accepted by mistake would have the test serve: fail instead (exit status 1)."""

    def bind(host: str, port: int) -> socket.socket:
        raise OSError("this test serves nothing")

    monkeypatch.setattr(serve_module, "_bind", bind)
    for setting in SERVE_SETTINGS:
        monkeypatch.delenv(setting.env, raising=False)


@pytest.mark.parametrize(("name", "text"), list(_bad_cases()))
def test_a_bad_option_is_refused_with_exit_2(
    name: str, text: str, not_served: None, capsys: pytest.CaptureFixture[str]
) -> None:
    flag = BY_NAME[name].flag
    with pytest.raises(SystemExit) as exited:
        main(["serve", f"{flag}={text}"])
    assert exited.value.code == 2
    assert f"argument {flag}: " in capsys.readouterr().err


@pytest.mark.parametrize(("name", "text"), [c for c in _bad_cases() if c[1].strip()])
def test_a_bad_variable_is_refused_with_exit_2(
    name: str,
    text: str,
    not_served: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    env = BY_NAME[name].env
    monkeypatch.setenv(env, text)
    assert main(["serve"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"agui serve: {env}: ") and err.count("\n") == 1, err


def test_a_bad_console_variable_is_refused(
    not_served: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("AGUI_CONSOLE", "maybe")
    assert main(["serve"]) == 2
    assert capsys.readouterr().err.startswith("agui serve: AGUI_CONSOLE: not 0 or 1")


@pytest.mark.parametrize(
    "argv",
    [
        ["--lease-seconds", "3"],
        ["--retention-days", "1"],
        ["--max-events-per-run", "10"],
        ["--max-runs-per-thread", "10"],
        ["--max-principal-bytes", "50MB"],
        ["--max-principal-threads", "10"],
    ],
)
def test_the_stores_settings_need_a_store(
    argv: list[str], not_served: None, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["serve", *argv]) == 2
    assert capsys.readouterr().err == (
        f"agui serve: {argv[0]}: only with a store (durable runs): give --store URL\n"
    )


def test_the_apps_settings_are_refused_for_an_asgi_app(
    not_served: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """An ASGI app is served as it is: a limit for the AgentApp agui serve would build is
    refused, named by where it came from."""
    target = "tests.test_cli_serve_settings:ASGI"
    assert main(["serve", target, "--max-run-seconds", "5"]) == 2
    assert "--max-run-seconds is for an agent (give an AgentApp its max_run_seconds=...)" in (
        capsys.readouterr().err
    )
    monkeypatch.setenv("AGUI_PATH", "/x")
    assert main(["serve", target]) == 2
    assert "AGUI_PATH is for an agent" in capsys.readouterr().err
    monkeypatch.delenv("AGUI_PATH")
    assert main(["serve", target, "--compat", "0.0.59"]) == 2
    assert "--compat is for an agent (give an AgentApp its compat=...)" in capsys.readouterr().err
    monkeypatch.setenv("AGUI_COMPAT", "0.0.59")
    assert main(["serve", target]) == 2
    assert "AGUI_COMPAT is for an agent" in capsys.readouterr().err


def test_a_bad_compat_names_the_value_and_what_is_allowed(
    not_served: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--compat", "0.0.20"])
    assert exited.value.code == 2
    allowed = "auto, off or a 0.0.x release from 0.0.35 on such as 0.0.59"
    assert f"argument --compat: {allowed}, not '0.0.20'" in capsys.readouterr().err
    monkeypatch.setenv("AGUI_COMPAT", "1.0")
    assert main(["serve"]) == 2
    assert capsys.readouterr().err == f"agui serve: AGUI_COMPAT: {allowed}, not '1.0'\n"


def test_compat_reaches_every_agent_served_together(monkeypatch: pytest.MonkeyPatch) -> None:
    """Several agents (an AgentServer): each agent's AgentApp gets the setting."""
    monkeypatch.setattr(serve_module, "_on_path", lambda app_dir: None)
    agents = ["a=tests.test_cli_serve_settings:echo", "b=tests.test_cli_serve_settings:echo"]
    for argv, env, expected in [
        (["--compat", "0.0.45"], {}, "0.0.45"),
        ([], {"AGUI_COMPAT": "off"}, "off"),
        ([], {}, "auto"),
    ]:
        args = parser().parse_args(["serve", *agents, *argv])
        server, _, _ = serve_module._build(serve_module.settings_of(args, env))
        assert {name: app.compat for name, app in server.apps.items()} == {
            "a": expected,
            "b": expected,
        }


ASGI = AgentApp(echo)


# ── --help and docs/cli.md ─────────────────────────────────────────────────────────────────────


def _squeezed(text: str) -> str:
    """Without whitespace: argparse wraps the help anywhere, between words and after a hyphen."""
    return re.sub(r"\s+", "", text)


def test_help_lists_every_setting_with_its_default_and_variable(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["serve", "--help"])
    assert exited.value.code == 0
    shown = capsys.readouterr().out
    for setting in SERVE_SETTINGS:
        assert _squeezed(setting.help_text) in _squeezed(shown), setting.flag
        assert f"default: {setting.default_text}; env {setting.env})" in setting.help_text
    # and no variable but the table's (and the model's key and URL, which the model reads)
    variables = set(re.findall(r"AGUI_[A-Z_]+", shown)) - {"AGUI_MODEL_URL", "AGUI_MODEL_API_KEY"}
    assert variables == {setting.env for setting in SERVE_SETTINGS}


def _serve_section() -> str:
    page = (ROOT / "docs" / "cli.md").read_text()
    return page.split("\n## agui serve\n", 1)[1].split("\n## ", 1)[0]


def test_docs_list_every_setting_with_its_default_and_variable() -> None:
    """docs/cli.md's table of agui serve's settings: one row per setting, its option, its
    variable and its default as --help shows it."""
    rows: dict[str, list[str]] = {}
    for line in _serve_section().splitlines():
        found = re.match(r"\| `(--[a-z-]+)[ `]", line)
        if found:
            rows[found.group(1)] = [cell.strip() for cell in line.strip("|").split("|")]
    for setting in SERVE_SETTINGS:
        assert setting.flag in rows, setting.flag
        cells = rows[setting.flag]
        assert cells[1] == f"`{setting.env}`", setting.flag
        assert cells[2] == setting.default_text, setting.flag
    assert set(rows) == {setting.flag for setting in SERVE_SETTINGS}


def test_setting_is_a_table_row() -> None:
    """A setting is data: its help is what --help shows; its option leaves nothing when not
    given, so that a value turned off (None) is told apart from no value."""
    setting = Setting("x", "--x", "AGUI_X", str, "d", "the x")
    assert setting.help_text == "the x (default: d; env AGUI_X)"
    command = argparse.ArgumentParser()
    setting.add_to(command)
    assert not hasattr(command.parse_args([]), "x")
    assert command.parse_args(["--x", "y"]).x == "y"


# ── the workers ────────────────────────────────────────────────────────────────────────────────


def test_workers_build_the_app_from_the_same_settings(
    built: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """worker_app builds the app again from the settings the parent left as JSON, not from its
    own environment: every limit and retention the parent read, from an option or a variable."""
    argv = ["--store", "memory://", "--max-run-seconds", "5", "--retention-days", "2"]
    env = {"AGUI_BODY_TIMEOUT": "3", "AGUI_MAX_ACTIVE_RUNS": "9", "AGUI_KEEPALIVE": "off"}
    settings, parent = built(argv, env)
    monkeypatch.setenv(serve_module._SETTINGS, json.dumps(settings))
    monkeypatch.setenv("AGUI_MAX_RUN_SECONDS", "77")  # the worker's own: not read
    worker = serve_module.worker_app()
    try:
        for name in ("max_run_seconds", "body_timeout", "max_active_runs", "keepalive", "path"):
            assert getattr(worker, name) == getattr(parent, name), name
        assert (worker.max_run_seconds, worker.body_timeout, worker.keepalive) == (5.0, 3.0, None)
        assert worker._durable is not None and parent._durable is not None
        assert worker._durable.log.retention == parent._durable.log.retention
        assert worker._durable.log.retention.run_ttl_seconds == 2 * 86400.0
    finally:
        assert worker._durable is not None
        asyncio.run(worker._durable.log.aclose())


# ── AgentApp's durable defaults ────────────────────────────────────────────────────────────────


def test_max_run_seconds_is_bounded_with_a_store_only() -> None:
    assert AgentApp(echo).max_run_seconds is None
    assert AgentApp(echo, store="memory://").max_run_seconds == 3600.0
    assert AgentApp(echo, store="memory://", max_run_seconds=None).max_run_seconds is None
    assert AgentApp(echo, store="memory://", max_run_seconds=5).max_run_seconds == 5
    assert AgentApp(echo, max_run_seconds="auto").max_run_seconds is None
    log = open_log("memory://")
    assert AgentApp(echo, store=log).max_run_seconds == 3600.0
    with pytest.raises(ValueError, match="max_run_seconds"):
        AgentApp(echo, max_run_seconds="forever")  # type: ignore[arg-type]
    unchanged = AgentApp(echo, store="memory://")  # the other limits: as without a store
    assert (unchanged.max_active_runs, unchanged.body_timeout) == (1000, 30.0)


def test_retention_is_given_to_the_log_the_app_opens_and_closes(tmp_path: Path) -> None:
    kept = Retention(run_ttl_seconds=60.0, max_events_per_run=10, max_runs_per_thread=2)
    app = AgentApp(echo, store=f"sqlite:///{tmp_path}/runs.db", retention=kept)
    assert kept_by(app) == kept
    memory = AgentApp(echo, store="memory://", retention=kept)
    assert memory._durable is not None
    log: Any = memory._durable.log

    async def lifespan() -> None:
        async with memory.lifespan():
            pass

    asyncio.run(lifespan())
    assert log._closed  # the app opened it from its URL, so the app closed it
    assert app._durable is not None
    asyncio.run(app._durable.log.aclose())
    with pytest.raises(ValueError, match="retention is for a store URL"):
        AgentApp(echo, store=open_log("memory://"), retention=kept)
    with pytest.raises(ValueError, match="retention is for a store URL"):
        AgentApp(echo, retention=kept)


# ── a real agui serve, configured by its environment ────────────────────────────────────────────

HUNG = """
import asyncio

import agui


async def hung(run):
    yield agui.TextMessageStartEvent(message_id="m")
    await asyncio.sleep(3600)
"""


def _events(raw: bytes) -> list[dict[str, Any]]:
    decoder = SSEDecoder()
    return [json.loads(m.data) for m in decoder.feed(raw) + decoder.close()]


def test_agui_serve_takes_its_settings_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "hungmod.py").write_text(HUNG)
    for name, value in {
        "AGUI_PORT": "0",
        "AGUI_PATH": "/limited",
        "AGUI_WORKERS": "2",
        "AGUI_CONSOLE": "0",
        "AGUI_MAX_RUN_SECONDS": "1",
        "AGUI_BODY_TIMEOUT": "0.5",
    }.items():
        monkeypatch.setenv(name, value)
    one = Served("hungmod:hung", cwd=tmp_path)
    try:
        url = one.url()
        assert url.endswith("/limited") and "(2 workers)" in one.serving
        assert "console:" not in one.serving
        started = time.monotonic()
        with httpx.Client(timeout=HANG) as client:
            answer = client.post(url, content=BODY, headers={"content-type": "application/json"})
        events = _events(answer.content)
        assert events[-1]["type"] == "RUN_ERROR" and events[-1]["code"] == "TIMEOUT", events
        assert time.monotonic() - started >= 0.9  # after the second, not before
        host, port = url.removeprefix("http://").split("/")[0].split(":")
        with socket.create_connection((host, int(port)), timeout=HANG) as sock:
            sock.sendall(
                b"POST /limited HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
                b"content-length: 100\r\n\r\n{"  # and the rest never comes
            )
            reply = sock.recv(65536)
        assert reply.startswith(b"HTTP/1.1 408 "), reply
    finally:
        one.stop()
    assert "Traceback" not in "".join(one.stderr)
