"""docs/durable-runs.md, used as written, from a fresh folder.

The page's module (the block whose first comment names it, mymodule.py) is written to a fresh
folder, and served by each command the page gives it: `uvicorn mymodule:app` (its comment), the
two `agui serve mymodule:agent --store ...` lines (SQLite, and Redis with 4 workers) and the
"Deploying N workers on Redis" line after its install line. Each runs as written but on
127.0.0.1, a free port, and a redis-server this module starts (for the page's
`redis://127.0.0.1:6379/0` and `redis://redis.internal:6379/0`). Against each, `agui run URL
--summary` completes a run, and `agui run URL --rejoin RUN_ID` reads the stored run again.
`nox -s wheel` runs this module with the commands of a fresh virtualenv holding only the page's
install line, `pip install 'agui-spec[server,redis]'`.

Needs redis-server (skipped without it, unless AGUI_REQUIRE_REDIS=1, as .ci/run sets).
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..store.support import redis_server
from .support import Server, docs_block, docs_text, module_name, run_all, servers, shell_lines

PAGE = "durable-runs.md"
PAGE_REDIS = ("redis://127.0.0.1:6379/0", "redis://redis.internal:6379/0")
"""The Redis URLs the page writes; this module's redis-server stands in for both."""


def module_block() -> str:
    return docs_block(PAGE, "# mymodule.py")


def store_lines() -> list[str]:
    lines = [c for c, _ in shell_lines(docs_text(PAGE, "--store sqlite:///runs.db"))]
    assert [line.split("--store ")[1].split(":")[0] for line in lines] == ["sqlite", "redis"]
    return lines


def workers_line() -> str:
    """The deployment line after the install line (one command over two lines)."""
    block = docs_text(PAGE, "pip install 'agui-spec[server,redis]'").replace("\\\n", " ")
    install, deploy = [c for c, _ in shell_lines(block)]
    assert install == "pip install 'agui-spec[server,redis]'", install
    return deploy


def with_redis(text: str, url: str) -> str:
    for page_url in PAGE_REDIS:
        text = text.replace(page_url, url)
    return text


def on_a_free_port(line: str, url: str) -> list[str]:
    """A command as written, on 127.0.0.1, a free port (`{port}`) and this module's Redis."""
    words = shlex.split(with_redis(line, url))
    if "--host" in words:
        words[words.index("--host") + 1] = "127.0.0.1"
    if "--port" in words:
        words[words.index("--port") + 1] = "{port}"
    else:
        words += ["--port", "{port}"]
    return words


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if shutil.which("redis-server") is None:
        reason = "redis-server is not on PATH (apt-get install redis-server)"
        if os.environ.get("AGUI_REQUIRE_REDIS") == "1":
            pytest.fail(f"AGUI_REQUIRE_REDIS=1 but {reason}")
        pytest.skip(reason)
    with redis_server(tmp_path_factory.mktemp("redis")) as url:
        yield url


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, redis_url: str) -> Path:
    """A fresh folder holding the page's module, on this module's Redis."""
    folder = tmp_path_factory.mktemp("durable")
    block = module_block()
    assert PAGE_REDIS[0] in block, "the module no longer names the page's Redis"
    (folder / f"{module_name(block)}.py").write_text(with_redis(block, redis_url))
    return folder


@pytest.fixture(scope="module")
def served(project: Path, redis_url: str) -> Iterator[dict[str, Server]]:
    found = re.search(r"# (uvicorn \w+:app)", module_block())
    assert found, "the module no longer says how uvicorn serves it"
    lines = [found.group(1), *store_lines(), workers_line()]
    commands = {}
    for line in lines:
        words = on_a_free_port(line, redis_url)
        ready = ["Uvicorn running on http://127.0.0.1:{port} "]
        if words[0] == "agui":
            ready = ["serving ", "127.0.0.1:{port}/agent"]
        commands[line] = (words, ready)
    with servers(project, commands) as running:
        yield running


def check_kept(served: dict[str, Server], project: Path, lines: list[str]) -> None:
    """Against each server: a run completes, and `agui run --rejoin` reads it back."""
    url = {line: f"{served[line].base}/agent" for line in lines}
    ran = run_all({line: (["agui", "run", url[line], "--summary"], project) for line in lines})
    ids = {}
    for line in lines:
        done = ran[line]
        assert done.returncode == 0, f"{line}: {done.stderr}"
        summary = json.loads(done.stdout)
        assert summary["outcome"] == "completed", (line, summary)
        assert summary["messages"][-1]["content"] == "hello", (line, summary)
        ids[line] = summary["events"][0]["runId"]
    rejoined = run_all(
        {line: (["agui", "run", url[line], "--rejoin", ids[line]], project) for line in lines}
    )
    for line in lines:
        done = rejoined[line]
        assert (done.returncode, done.stdout) == (0, "hello\n"), f"{line}: {done.stderr}"


def test_the_serve_lines_keep_the_run(served: dict[str, Server], project: Path) -> None:
    """`uvicorn mymodule:app` and the two `agui serve mymodule:agent --store` lines."""
    lines = [line for line in served if line != workers_line()]
    check_kept(served, project, lines)
    assert (project / "runs.db").is_file(), "the SQLite line left no runs.db in its folder"


def test_the_workers_line_on_redis(served: dict[str, Server], project: Path) -> None:
    """The "Deploying N workers on Redis" line: 4 workers sharing the log."""
    assert "--workers 4" in workers_line()
    check_kept(served, project, [workers_line()])
