"""The README and the documentation site, checked against the tree and run.

* README.md stays short (at most README_MAX_LINES lines) and its relative links lead to files
  that exist.
* mkdocs.yml's nav and the pages under docs/ are the same set.
* docs/layout.md lists every module of agui/ and every top-level folder, and nothing that does not
  exist.
* The README's Python examples run as written (the client example against the server example,
  served by uvicorn on 127.0.0.1), and so do the standalone examples of the docs pages; a
  `print(...)  # text` line must print that text.

The examples other tests run: the binary transport frame (tests/test_proto.py), the FastAPI
endpoint (tests/test_pydantic_binding.py) and the model agent (tests/test_model_agent.py).
The site itself is built strictly by `nox -s docs`.
"""

from __future__ import annotations

import asyncio
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import ROOT

README = ROOT / "README.md"
DOCS = ROOT / "docs"
LAYOUT = DOCS / "layout.md"

README_MAX_LINES = 250
"""A newcomer reads the README in five minutes; everything else belongs in docs/."""

TOP_LEVEL_FOLDERS = ("agui", "benchmarks", "codegen", "docs", "generated", "spec", "tests")
"""The folders the layout page must describe (plus any other tracked top-level folder)."""

EXAMPLE_URL = "http://127.0.0.1:8000"
"""Where the README's client example expects the server example."""

PRINTED = "__printed__"
"""The key under which run_example returns what an example printed."""

_LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
_BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
_ENTRY = re.compile(r"^\* `([^`]+)`", re.M)


def python_blocks(text: str) -> list[str]:
    """The ```python blocks of a Markdown text, in order."""
    return _BLOCK.findall(text)


def block_containing(path: Path, needle: str) -> str:
    """The one ```python block of the page at `path` that contains `needle`."""
    found = [b for b in python_blocks(path.read_text("utf-8")) if needle in b]
    assert len(found) == 1, f"{path.name}: {len(found)} python blocks contain {needle!r}"
    return found[0]


def expected_prints(code: str) -> list[str]:
    """What the block says it prints: the comment of every `print(...)  # text` line."""
    return [
        line.split("  # ", 1)[1].strip()
        for line in code.splitlines()
        if line.strip().startswith("print(") and "  # " in line
    ]


def run_example(
    code: str,
    name: str,
    capsys: pytest.CaptureFixture[str],
    *,
    check_prints: bool = True,
    **names: Any,
) -> dict[str, Any]:
    """Exec `code`; check the lines it prints against its `# text` comments (unless
    check_prints is false); return its names, and what it printed as PRINTED."""
    namespace: dict[str, Any] = {"__name__": f"example_{name}", **names}
    capsys.readouterr()
    exec(compile(code, name, "exec"), namespace)
    printed = capsys.readouterr().out.splitlines()
    expected = expected_prints(code)
    if expected and check_prints:
        assert printed == expected, f"{name} printed {printed}, its comments say {expected}"
    namespace[PRINTED] = printed
    return namespace


# ── the README ──────────────────────────────────────────────────────────────────────────────────


def test_readme_is_short() -> None:
    lines = README.read_text("utf-8").splitlines()
    assert len(lines) <= README_MAX_LINES, (
        f"README.md has {len(lines)} lines (at most {README_MAX_LINES}): move detail into docs/"
    )


def test_readme_keeps_the_quick_start_commands() -> None:
    readme = README.read_text("utf-8")
    for command in (
        "python3 -m pip install --quiet nox && python3 -m nox -s demo",
        "python3 -m pip install --quiet nox && python3 -m nox -s tests",
    ):
        assert command in readme


def relative_links(path: Path) -> list[str]:
    """The relative link targets of a Markdown file (no scheme, no bare #anchor)."""
    return [
        target
        for target in _LINK.findall(path.read_text("utf-8"))
        if not re.match(r"^[a-z][a-z0-9+.-]*:", target) and not target.startswith("#")
    ]


def test_readme_links_lead_to_files_that_exist() -> None:
    links = relative_links(README)
    assert any(link.startswith("docs/") for link in links), "README.md links to no docs page"
    missing = [link for link in links if not (ROOT / link.split("#", 1)[0]).resolve().is_file()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_every_docs_page_is_in_the_nav_and_every_nav_entry_exists() -> None:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text("utf-8"))
    assert config["docs_dir"] == "docs" and config["strict"] is True

    def pages(entry: Any) -> list[str]:
        if isinstance(entry, str):
            return [entry]
        if isinstance(entry, list):
            return [page for item in entry for page in pages(item)]
        if isinstance(entry, dict):
            return [page for value in entry.values() for page in pages(value)]
        raise AssertionError(f"unexpected nav entry {entry!r}")

    in_nav = pages(config["nav"])
    assert len(in_nav) == len(set(in_nav)), "a page is listed twice in the nav"
    on_disk = sorted(p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md"))
    assert sorted(in_nav) == on_disk, (
        f"not in the nav: {sorted(set(on_disk) - set(in_nav))}; "
        f"in the nav but missing: {sorted(set(in_nav) - set(on_disk))}"
    )


# ── the layout page ─────────────────────────────────────────────────────────────────────────────


def layout_entries() -> list[str]:
    """The paths the layout page lists, one per bullet: `agui/x/y.py` or `folder/`."""
    return _ENTRY.findall(LAYOUT.read_text("utf-8"))


def test_layout_lists_every_module_of_agui_and_nothing_else() -> None:
    listed = [e for e in layout_entries() if e.startswith("agui/") and e.endswith(".py")]
    assert len(listed) == len(set(listed)), "docs/layout.md lists a module twice"
    tree = {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / "agui").rglob("*.py")
        if "__pycache__" not in p.parts
    }
    missing = sorted(tree - set(listed))
    gone = sorted(set(listed) - tree)
    assert not missing, f"modules of agui/ that docs/layout.md does not list: {missing}"
    assert not gone, f"docs/layout.md lists modules that do not exist: {gone}"


def tracked_top_level_folders() -> set[str]:
    """Top-level folders holding files git tracks (empty outside a git checkout)."""
    try:
        done = subprocess.run(
            ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
        )
    except (OSError, subprocess.CalledProcessError):
        return set()
    return {
        line.split("/", 1)[0]
        for line in done.stdout.splitlines()
        if "/" in line and not line.startswith(".")
    }


def test_layout_lists_every_top_level_folder() -> None:
    listed = {e.rstrip("/") for e in layout_entries() if e.endswith("/") and "/" not in e[:-1]}
    expected = set(TOP_LEVEL_FOLDERS) | tracked_top_level_folders()
    missing = sorted(expected - listed)
    gone = sorted(f for f in listed if not (ROOT / f).is_dir())
    assert not missing, f"top-level folders docs/layout.md does not describe: {missing}"
    assert not gone, f"docs/layout.md describes folders that do not exist: {gone}"


# ── the examples run ────────────────────────────────────────────────────────────────────────────


def test_the_readme_examples_run(
    serve: Callable[[Any], str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Every Python block of the README: the server example is served by uvicorn on 127.0.0.1,
    the client example talks to it there, and any other block runs on its own."""
    blocks = python_blocks(README.read_text("utf-8"))
    servers = [b for b in blocks if "AgentApp(" in b]
    clients = [b for b in blocks if EXAMPLE_URL in b]
    assert len(servers) == 1 and len(clients) == 1, "expected one server and one client example"
    for number, block in enumerate(blocks):
        if block not in servers and block not in clients:
            run_example(block, f"README.md block {number + 1}", capsys)
    app = run_example(servers[0], "README.md server", capsys)["app"]
    base = serve(app)
    run_example(clients[0].replace(EXAMPLE_URL, base), "README.md client", capsys)


def test_the_getting_started_client_talks_to_its_agent(
    serve: Callable[[Any], str], capsys: pytest.CaptureFixture[str]
) -> None:
    page = DOCS / "getting-started.md"
    server = run_example(block_containing(page, "AgentApp("), "first agent", capsys)
    base = serve(server["app"])
    client = block_containing(page, EXAMPLE_URL).replace(EXAMPLE_URL, base)
    printed = run_example(client, "first client", capsys, check_prints=False)[PRINTED]
    assert printed == ["success", "user Hi", "assistant hello"]  # what its comments say


def test_the_pipeline_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    run_example(block_containing(DOCS / "calling.md", "agui.Pipeline()"), "pipeline", capsys)


def test_the_sse_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import agui

    code = block_containing(DOCS / "wire.md", "agui.SSEDecoder()")
    namespace = run_example(code, "sse", capsys, agui=agui)
    assert namespace["event"] == agui.TextMessageEndEvent(message_id="m1")


def test_the_binding_examples_run(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(ROOT)  # the schema example opens generated/ by a relative path
    page = DOCS / "bindings.md"
    run_example(block_containing(page, "Draft202012Validator"), "json schema", capsys)
    namespace = run_example(block_containing(page, "TypeAdapter"), "pydantic", capsys)
    assert namespace["event"].message_id == "m1"


def test_the_scripted_model_example_runs(capsys: pytest.CaptureFixture[str]) -> None:
    import agui

    page = DOCS / "model-agent.md"
    weather = block_containing(page, "OpenAIChatModel(")
    weather = weather.split("@tool(", 1)[0]  # get_weather, without the OpenAI model
    get_weather = run_example(weather, "get_weather", capsys)["get_weather"]
    namespace = run_example(
        block_containing(page, "model = ScriptedModel("),
        "scripted",
        capsys,
        get_weather=get_weather,
    )
    conversation = agui.Conversation()
    result = asyncio.run(conversation.run(namespace["agent"], "Weather in Paris?"))
    assert result is not None and result.outcome == "success"
    assert conversation.messages[-1].content == "It is sunny in Paris."
