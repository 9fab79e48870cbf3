"""What the recipe tests of tests/integrations share: a page's install line run as written in a
fresh virtualenv, with the wheel of this checkout (built once) offered by --find-links, since
agui-spec has no release."""

from __future__ import annotations

import shlex
import subprocess
import sys
import venv
from pathlib import Path

import pytest

from tests.usage import support

ROOT = Path(__file__).resolve().parent.parent.parent
INSTALL_SECONDS = 600.0
"""How long building the wheel or the install may take (about a minute with a cold cache)."""


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


def installed(line: str, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`line` (`pip install ...`) run in a fresh virtualenv with this checkout's wheel offered:
    the virtualenv's bin/."""
    assert line.startswith("pip install "), line
    dist = tmp_path_factory.mktemp("dist")
    run([sys.executable, "-m", "build", "--wheel", "--outdir", str(dist), str(ROOT)], ROOT)
    folder = tmp_path_factory.mktemp("venv") / "venv"
    venv.create(folder, with_pip=True)
    args = shlex.split(line)[2:]
    run(
        [
            str(folder / "bin" / "python"),
            "-m",
            "pip",
            "install",
            "--quiet",
            *args,
            "--find-links",
            str(dist),
        ],
        dist,
    )
    return folder / "bin"
