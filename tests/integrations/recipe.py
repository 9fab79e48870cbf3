"""What the recipe tests of the integration pages share: a page's install line run as written in a
fresh virtualenv made in a temporary folder, with the wheel of this checkout (built there) offered
by `--find-links`, since agui-spec has no release; so the versions are whatever pip picks for a
user today, not the pins of `nox -s integrations`."""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
import venv
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from tests.test_docs import block_containing
from tests.usage import support

ROOT = Path(__file__).resolve().parent.parent.parent
INSTALL_SECONDS = 600.0
"""How long building the wheel or the install may take (a minute or two with a cold cache)."""


def run(words: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        words,
        cwd=cwd,
        env=support.user_env(),
        capture_output=True,
        text=True,
        timeout=INSTALL_SECONDS,  # hang bound
        check=False,
    )
    assert done.returncode == 0, f"{shlex.join(words)}: exit {done.returncode}\n{done.stderr}"
    return done


def install(line: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh virtualenv holding what the install line `line` ("pip install ...") brings, with
    this checkout's wheel: its bin folder.

    With uv on PATH (nox's backend here and in CI) the line's arguments go to `uv pip install`,
    which takes pip's, resolves from the same index and reuses the download cache the session's
    own install filled: a framework's install is seconds instead of a minute or two of pip, each
    time, for each of the matrix's frameworks. Without uv, pip as written."""
    assert line.startswith("pip install "), line
    args = shlex.split(line)[2:]
    dist = tmp_path_factory.mktemp("dist")
    folder = tmp_path_factory.mktemp("venv") / "venv"
    uv = shutil.which("uv")
    if uv is not None:
        run([uv, "build", "--wheel", "--out-dir", str(dist), str(ROOT)], ROOT)
        run([uv, "venv", "--quiet", "--seed", "--python", sys.executable, str(folder)], dist)
        python = folder / "bin" / "python"
        run(
            [
                uv,
                "pip",
                "install",
                "--quiet",
                "--python",
                str(python),
                *args,
                "--find-links",
                str(dist),
            ],
            dist,
        )
        return folder / "bin"
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], ROOT)
    venv.create(folder, with_pip=True)
    python = folder / "bin" / "python"
    run([str(python), "-m", "pip", "install", "--quiet", *args, "--find-links", str(dist)], dist)
    return folder / "bin"


def command(page: str, needle: str) -> str:
    """The one command of page's ```sh block containing `needle` (docs/`page`)."""
    ((line, _),) = support.shell_lines(support.docs_text(page, needle))
    return line


def module_block(page: str, needle: str) -> str:
    """The one ```python block of docs/`page` containing `needle`: the page's module."""
    return block_containing(support.DOCS / page, needle)


@contextmanager
def served(
    page: str,
    needle: str,
    tmp_path_factory: pytest.TempPathFactory,
    monkeypatch: pytest.MonkeyPatch,
    startup: float = support.STARTUP,
) -> Iterator[str]:
    """The recipe of docs/`page` as a user follows it: its install line in a fresh virtualenv
    (`install`), its module (the python block containing `needle`) written to the file its
    `agui serve MODULE:agent [--app-dir DIR]` command names, in a fresh folder, and that command
    run there from the virtualenv on 127.0.0.1 and a free port: the agent's URL. On exit it is
    stopped with Ctrl-C and must exit cleanly having logged nothing worse than INFO (the
    operator's console). `startup` bounds its start (a fresh virtualenv compiles the
    framework's modules on their first import)."""
    bin = install(command(page, "pip install"), tmp_path_factory)
    serve = shlex.split(command(page, "agui serve"))
    assert serve[:2] == ["agui", "serve"] and serve[2].endswith(":agent"), serve
    folder = serve[serve.index("--app-dir") + 1] if "--app-dir" in serve else "."
    project = tmp_path_factory.mktemp("project")
    (project / folder).mkdir(exist_ok=True)
    (project / folder / f"{serve[2].split(':')[0]}.py").write_text(module_block(page, needle))
    monkeypatch.setitem(support.COMMANDS, "agui", bin / "agui")
    ready = ["serving ", "at http://127.0.0.1:{port}/agent"]
    server = support.Server([*serve, "--port", "{port}"], project, ready, startup=startup)
    try:
        server.wait_ready()
        yield f"{server.base}/agent"
    finally:
        code, stderr = server.stop()
    assert code in (0, 130), f"agui serve exited {code} on Ctrl-C:\n{stderr}"
    for bad in ("Traceback", "ERROR", "WARNING", "Exception"):
        assert bad not in stderr, f"agui serve logged {bad}:\n{stderr}"
