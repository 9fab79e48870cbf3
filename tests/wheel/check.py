"""`nox -s wheel`: the wheel is the product, so check the wheel, not the checkout.

1. `python -m build` writes the sdist and, from the sdist (build's default), the wheel into dist/.
2. The wheel's metadata is pyproject.toml's: Name agui-spec, Version, License-Expression,
   Requires-Python, Keywords, Classifiers (each a real trove classifier, no `License ::` one), the
   extras, the `agui` console script, the Project-URLs. Its files are every file of agui/ (the
   console's HTML, JS and CSS included) and of the two generated packages, with py.typed, and no
   tests; the sdist holds what a build needs.
3. Every install line of the pages (the blocks tests/usage/test_recipes.py's RECIPES gives to
   `check_install_lines`, and the lines the RECIPES scripts need) is run as written in a fresh
   virtualenv made in a temporary folder outside the checkout: `pip install 'agui-spec[...]'`
   with the wheel offered by `--find-links dist/` (there is no release), `python3 -m pip install
   '.[server]'` in a fresh copy of the checkout's files (a clone). One virtualenv per distinct
   line. Each must have installed this wheel's files, and `import agui` must come from it.
4. From a temporary folder outside the checkout, with the `agui-spec[server]` virtualenv:
   `agui --version` prints the pyproject version, `agui demo` holds its conversation, `agui serve`
   answers the console page and its JS and CSS (the files of the wheel), and the installed
   package has py.typed. `import agui_generated, agui_pydantic` works with the pydantic extra.
5. The RECIPES blocks with a `venv` run as scripts in the virtualenv of their line and print what
   their `print(...)  # text` comments say; then the usage tests of tests/usage (the README's and
   the pages' modules served by `uvicorn` and `agui serve`, called by their clients) run again with
   the commands of the virtualenv of their page's install line (AGUI_USAGE_BIN).

Every broken expectation is printed as `FAILED <check>: <what>`, the checks go on, and the exit
status is 1 if any failed. `--keep` leaves the temporary folder (its path is printed).
"""

from __future__ import annotations

import csv
import email.parser
import importlib.machinery
import importlib.util
import io
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import time
import tomllib
import traceback
import urllib.error
import urllib.request
import zipfile
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
sys.path.insert(0, str(ROOT))

from tests.test_docs import expected_prints  # noqa: E402
from tests.usage.test_recipes import (  # noqa: E402
    PYDANTIC,
    RECIPES,
    WHEEL_INSTALL,
    WHEEL_SCRIPTS,
    Recipe,
    recipe_block,
)

DIST = ROOT / "dist"
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text("utf-8"))
PROJECT = PYPROJECT["project"]
NAME = PROJECT["name"]
VERSION = PROJECT["version"]
WHEEL_STEM = f"{NAME.replace('-', '_')}-{VERSION}"

NATIVE = "agui_generated/_construct" + str(sysconfig.get_config_var("EXT_SUFFIX"))
"""The compiled constructor (codegen/build_hook.py builds it where a compiler is)."""
COMPILER = bool(
    sysconfig.get_config_var("LDSHARED")
    and shutil.which(shlex.split(sysconfig.get_config_var("LDSHARED"))[0])
    and (Path(sysconfig.get_paths()["include"]) / "Python.h").is_file()
)
"""Whether this Python can build it (so the wheel must have it)."""
_INTERPRETER = f"cp{sys.version_info.major}{sys.version_info.minor}"
WHEEL_TAG = (
    f"{_INTERPRETER}-{_INTERPRETER}-{sysconfig.get_platform().replace('-', '_').replace('.', '_')}"
    if COMPILER
    else "py3-none-any"
)

TIMEOUT = 300.0
"""Seconds a pip install or a build may take (10 to 30 with a warm cache)."""
COMMAND_TIMEOUT = 60.0
"""Seconds any other command may take."""

SERVER = "pip install 'agui-spec[server]'"
"""The install line of A: the wheel with its server extra (docs/serving.md writes it)."""

USAGE = {
    "python3 -m pip install '.[server]'": (
        "tests/usage/test_readme_usage.py",
        "tests/usage/test_getting_started_usage.py",
    ),
    SERVER: ("tests/usage/test_serving_usage.py",),
    "pip install 'agui-spec[server,redis]'": ("tests/usage/test_durable_usage.py",),
}
"""The usage tests run again with the commands of each install line's virtualenv: a page's
modules, served and called as the page says, with only what its install line brings."""

VIRTUALENV = (
    [sys.executable, "-m", "virtualenv", "--quiet"]
    if importlib.util.find_spec("virtualenv")
    else [sys.executable, "-m", "venv"]
)
"""How a fresh virtualenv (with pip) is made: virtualenv when the session has it (a second, from
its cached seed wheels), else the standard library's venv (ensurepip: about 6 s each)."""

INSTALL = re.compile(r"^(?:python3? -m )?pip install ")


# ── reporting ─────────────────────────────────────────────────────────────────────────────────


@dataclass
class Report:
    failures: list[str] = field(default_factory=list)
    passed: int = 0
    times: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def check(self, name: str) -> Iterator[None]:
        """A check: an AssertionError (or any error) in it is a failure, said plainly; the next
        check runs all the same."""
        start = time.monotonic()
        try:
            yield
        except AssertionError as error:
            self.fail(name, str(error) or traceback.format_exc())
        except Exception:
            self.fail(name, traceback.format_exc())
        else:
            self.passed += 1
            print(f"ok      {name}", flush=True)
        finally:
            self.times[name] = time.monotonic() - start

    def fail(self, name: str, message: str) -> None:
        self.failures.append(f"FAILED {name}: {message}")
        print(f"FAILED  {name}:\n{indent(message)}", flush=True)


def indent(text: str) -> str:
    return "".join(f"        {line}\n" for line in text.rstrip().splitlines())


def run(
    words: Sequence[str | Path],
    cwd: Path,
    timeout: float = COMMAND_TIMEOUT,
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(w) for w in words],
        cwd=cwd,
        env=env or user_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def user_env() -> dict[str, str]:
    """A user's shell: nothing that points Python at the checkout."""
    drop = ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME", "AGUI_USAGE_BIN")
    return {k: v for k, v in os.environ.items() if k not in drop}


def said(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"


# ── 1. build ──────────────────────────────────────────────────────────────────────────────────


def build(report: Report) -> tuple[Path, Path] | None:
    """`python -m build` (the sdist, then the wheel from it) into dist/."""
    for old in DIST.glob(f"{WHEEL_STEM}*"):
        old.unlink()
    sdist = DIST / f"{WHEEL_STEM}.tar.gz"
    wheel = DIST / f"{WHEEL_STEM}-{WHEEL_TAG}.whl"
    installer = ["--installer", "uv"] if shutil.which("uv") else []
    with report.check("python -m build: the sdist, and the wheel built from it"):
        # uv, when there is one, only makes the two build environments faster to set up.
        words = [sys.executable, "-m", "build", *installer, "--outdir", DIST, ROOT]
        done = run(words, ROOT, TIMEOUT, env=None)
        assert done.returncode == 0, said(done)
        assert "Building wheel from sdist" in done.stderr, said(done)
        assert sdist.is_file() and wheel.is_file(), f"dist/ holds {sorted(os.listdir(DIST))}"
        print(f"        {sdist.relative_to(ROOT)}, {wheel.relative_to(ROOT)}")
    if not (sdist.is_file() and wheel.is_file()):
        return None
    with report.check(f"the wheel {'has' if COMPILER else 'lacks'} the compiled constructor"):
        with zipfile.ZipFile(wheel) as archive:
            native = [n for n in archive.namelist() if compiled(n)]
        assert native == ([NATIVE] if COMPILER else []), native
    with report.check("AGUI_PURE_PYTHON=1 python -m build: the pure-Python wheel"):
        # What a platform without a compiler gets, and a release's fallback wheel.
        pure = Path(tempfile.mkdtemp(prefix="agui-pure-"))
        try:
            words = [sys.executable, "-m", "build", *installer, "--wheel", "--outdir", pure]
            done = run([*words, ROOT], ROOT, TIMEOUT, env={**user_env(), "AGUI_PURE_PYTHON": "1"})
            assert done.returncode == 0, said(done)
            built = sorted(p.name for p in pure.iterdir())
            assert built == [f"{WHEEL_STEM}-py3-none-any.whl"], built
            with zipfile.ZipFile(pure / built[0]) as archive:
                assert not [n for n in archive.namelist() if compiled(n)]
        finally:
            shutil.rmtree(pure, ignore_errors=True)
    return sdist, wheel


def compiled(name: str) -> bool:
    """Whether a file of a wheel is an extension module."""
    return name.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))


# ── 2. metadata and files ─────────────────────────────────────────────────────────────────────


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as archive:
        text = archive.read(f"{WHEEL_STEM}.dist-info/METADATA").decode("utf-8")
    return email.parser.Parser().parsestr(text)


def check_metadata(report: Report, wheel: Path) -> None:
    meta = wheel_metadata(wheel)
    with report.check("metadata: Name, Version, License-Expression, Requires-Python"):
        expected = {
            "Name": NAME,
            "Version": VERSION,
            "License-Expression": PROJECT["license"],
            "Requires-Python": PROJECT["requires-python"],
            "Summary": PROJECT["description"],
            "Description-Content-Type": "text/markdown",
        }
        wrong = {k: (meta.get(k), v) for k, v in expected.items() if meta.get(k) != v}
        assert not wrong, f"(in the wheel, in pyproject.toml): {wrong}"
        assert NAME == "agui-spec", f"the distribution is {NAME!r}, not agui-spec"
        assert meta.get_payload().startswith("# agui"), "the long description is not the README"
    with report.check("metadata: Classifiers, real ones, and no License :: classifier"):
        classifiers = meta.get_all("Classifier") or []
        licence = [c for c in classifiers if c.startswith("License ::")]
        assert not licence, (
            f"{licence}: PyPI refuses a License :: classifier with License-Expression"
        )
        assert sorted(classifiers) == sorted(PROJECT["classifiers"]), (
            f"the wheel's {classifiers} are not pyproject.toml's {PROJECT['classifiers']}"
        )
        for wanted in ("Development Status ::", "Framework :: AsyncIO", "Intended Audience ::"):
            assert any(c.startswith(wanted) for c in classifiers), f"no {wanted} classifier"
        assert any(c.startswith("Topic ::") for c in classifiers), "no Topic classifier"
        from trove_classifiers import classifiers as known

        unknown = [c for c in classifiers if c not in known]
        assert not unknown, f"not trove classifiers (PyPI refuses them): {unknown}"
    with report.check("metadata: Keywords, Project-URLs, extras, dependencies"):
        assert meta.get("Keywords") == ",".join(PROJECT["keywords"]), meta.get("Keywords")
        urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL") or [])
        assert urls == PROJECT["urls"] and urls, f"Project-URL: {urls}"
        extras = set(meta.get_all("Provides-Extra") or [])
        assert extras == set(PROJECT["optional-dependencies"]), f"Provides-Extra: {extras}"
        requires = [r for r in meta.get_all("Requires-Dist") or [] if "extra ==" not in r]
        assert sorted(requires) == sorted(PROJECT["dependencies"]), requires
    with report.check("metadata: the agui console script"):
        with zipfile.ZipFile(wheel) as archive:
            points = archive.read(f"{WHEEL_STEM}.dist-info/entry_points.txt").decode()
        assert "[console_scripts]\nagui = agui.__main__:main\n" in points, points


def tracked(folder: str) -> list[str]:
    """The files of a folder of the checkout that a clone has (tracked, or new and not ignored)."""
    done = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "--", folder],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return [p for p in done.stdout.splitlines() if (ROOT / p).is_file()]


def check_files(report: Report, sdist: Path, wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        names = set(archive.namelist())
    with report.check("wheel: every file of agui/ and of the generated packages, py.typed"):
        wanted = {p for p in tracked("agui") if "__pycache__" not in p}
        wanted |= {
            p.removeprefix("generated/")
            for p in tracked("generated/agui_generated") + tracked("generated/agui_pydantic")
        }
        missing = sorted(wanted - names)
        assert not missing, f"files of the checkout that are not in the wheel: {missing}"
        for name in ("agui/py.typed", "agui_generated/py.typed", "agui_pydantic/py.typed"):
            assert name in names, f"{name} is not in the wheel"
        console = sorted(n for n in names if n.startswith("agui/console/"))
        for suffix in (".html", ".js", ".css"):
            assert any(n.endswith(suffix) for n in console), f"no console {suffix}: {console}"
    with report.check("wheel: nothing but the three packages and the dist-info"):
        tops = {n.split("/", 1)[0] for n in names}
        assert tops == {"agui", "agui_generated", "agui_pydantic", f"{WHEEL_STEM}.dist-info"}, tops
    with report.check("sdist: what a build needs"):
        with tarfile.open(sdist) as archive:
            members = {m.name.split("/", 1)[1] for m in archive.getmembers() if "/" in m.name}
        for name in ("pyproject.toml", "README.md", "PKG-INFO", "agui/__init__.py"):
            assert name in members, f"{name} is not in the sdist"
        assert "generated/agui_generated/__init__.py" in members, "generated/ is not in the sdist"


# ── 3. the install lines, each in a fresh virtualenv ──────────────────────────────────────────


@dataclass
class Venv:
    line: str
    """The install line as the page writes it (its comment left out)."""
    folder: Path
    ready: bool = False

    @property
    def bin(self) -> Path:
        return self.folder / "bin"

    @property
    def python(self) -> Path:
        return self.bin / "python"


def line_of(text: str) -> str:
    """An install line without its comment and extra spaces."""
    return " ".join(text.partition(" #")[0].split())


def install_lines() -> dict[str, list[Recipe]]:
    """Every install line `nox -s wheel` runs, with the entries that bring it: those of the
    install blocks RECIPES gives to check_install_lines, and the lines the scripts need."""
    lines: dict[str, list[Recipe]] = {}
    for recipe in RECIPES:
        if WHEEL_INSTALL in recipe.tests:
            block = recipe_block(recipe)
            found = [line_of(t) for t in block.text.splitlines() if INSTALL.match(t)]
            assert found, f"{block}: no install line, yet RECIPES has {WHEEL_INSTALL} install it"
            for line in found:
                lines.setdefault(line, []).append(recipe)
        if recipe.venv is not None:
            lines.setdefault(line_of(recipe.venv), []).append(recipe)
    return lines


def pip_words(line: str, venv: Venv, clone: Path) -> tuple[list[str], Path]:
    """The pip command of an install line in a virtualenv, and where it runs: a line naming the
    checkout (`.`) in a fresh copy of it; one naming agui-spec with the wheel offered by
    --find-links (no release exists)."""
    words = shlex.split(line)
    args = words[words.index("install") + 1 :]
    command = [str(venv.python), "-m", "pip", "install", "--quiet", *args]
    if any(a == "." or a.startswith(".[") for a in args):
        return command, clone
    assert any(a.startswith(NAME) for a in args), f"{line!r} installs neither . nor {NAME}"
    return [*command, "--find-links", str(DIST)], venv.folder.parent


def make_clone(work: Path) -> Path:
    """A copy of the checkout's files, as a clone has them."""
    clone = work / "clone"
    for name in tracked("."):
        target = clone / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    return clone


def make_venv(line: str, number: int, work: Path, clone: Path) -> tuple[Venv, str | None]:
    venv = Venv(line, work / f"venv{number}")
    done = run([*VIRTUALENV, venv.folder], work)
    if done.returncode != 0:
        return venv, said(done)
    words, cwd = pip_words(line, venv, clone)
    done = run(words, cwd, TIMEOUT)
    if done.returncode != 0:
        return venv, f"`{line}` in {cwd}: {said(done)}"
    venv.ready = True
    return venv, None


def record_of(archive_record: str) -> dict[str, str]:
    """path -> hash of a RECORD's files under the three packages."""
    rows = csv.reader(io.StringIO(archive_record))
    return {
        path: digest
        for path, digest, *_ in rows
        if path.split("/", 1)[0] in ("agui", "agui_generated", "agui_pydantic") and digest
    }


def check_install_lines(report: Report, wheel: Path, work: Path) -> dict[str, Venv]:
    """Each install line in its own fresh virtualenv (made at once: pip mostly waits), then:
    the installed files are the wheel's, and `import agui` comes from the virtualenv."""
    lines = install_lines()
    print(f"        {len(lines)} install lines: " + "; ".join(lines), flush=True)
    clone = make_clone(work)
    venvs: dict[str, Venv] = {}
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=2) as pool:
        futures = {
            line: pool.submit(make_venv, line, n, work, clone) for n, line in enumerate(lines)
        }
    report.times["the virtualenvs, pip install"] = time.monotonic() - start
    with zipfile.ZipFile(wheel) as archive:
        built = record_of(archive.read(f"{WHEEL_STEM}.dist-info/RECORD").decode())
    for line, future in futures.items():
        venv, error = future.result()
        venvs[line] = venv
        pages = sorted({r.page for r in lines[line]})
        with report.check(f"`{line}` ({', '.join(pages)}) in a fresh virtualenv"):
            assert error is None, error
            probe = (
                "import importlib.metadata as m, json, agui; "
                f"d = m.distribution({NAME!r}); "
                "print(json.dumps([d.version, agui.__file__, d.read_text('RECORD')]))"
            )
            done = run([venv.python, "-c", probe], work)
            assert done.returncode == 0, said(done)
            version, location, record = json.loads(done.stdout)
            assert version == VERSION, f"{NAME} {version} is installed, not {VERSION}"
            assert Path(location).is_relative_to(venv.folder), (
                f"agui was imported from {location}, not from the virtualenv"
            )
            installed = record_of(record)
            differ = sorted(p for p in built if installed.get(p) != built[p])
            assert not differ, f"installed files that are not the wheel's: {differ[:10]}"
    return venvs


# ── 4. the commands of the installed package ──────────────────────────────────────────────────


def check_commands(report: Report, venv: Venv, wheel: Path, work: Path) -> None:
    folder = Path(tempfile.mkdtemp(prefix="commands-", dir=work))
    with report.check(f"agui --version prints {VERSION}"):
        done = run([venv.bin / "agui", "--version"], folder)
        assert done.returncode == 0 and done.stdout == f"agui {VERSION}\n", said(done)
    with report.check("agui demo"):
        done = run([venv.bin / "agui", "demo"], folder)
        assert done.returncode == 0, said(done)
        assert "assistant: You said: Hello from the agui demo" in done.stdout, said(done)
        assert done.stderr == "", said(done)
    with report.check("py.typed is in the installed agui package"):
        code = "import agui, pathlib; print(pathlib.Path(agui.__file__).parent)"
        done = run([venv.python, "-c", code], folder)
        assert done.returncode == 0, said(done)
        package = Path(done.stdout.strip())
        assert package.is_relative_to(venv.folder), f"agui is imported from {package}"
        assert (package / "py.typed").is_file(), f"no py.typed in {package}"
    with report.check("agui serve: the console page and its JS and CSS, the wheel's files"):
        check_console(venv, wheel, folder)


def get(url: str) -> tuple[bytes, str]:
    """GET url: its body and Content-Type; anything but a 200 is a failure naming the URL."""
    try:
        with urllib.request.urlopen(url, timeout=10) as answer:
            return answer.read(), answer.headers.get("content-type", "")
    except urllib.error.HTTPError as error:
        raise AssertionError(f"GET {url}: HTTP {error.code}") from None
    except OSError as error:
        raise AssertionError(f"GET {url}: {error}") from None


def check_console(venv: Venv, wheel: Path, folder: Path) -> None:
    proc = subprocess.Popen(
        [str(venv.bin / "agui"), "serve", "--port", "0"],
        cwd=folder,
        env=user_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    lines: list[str] = []
    try:
        assert proc.stderr is not None
        console = None
        deadline = time.monotonic() + COMMAND_TIMEOUT
        while console is None and time.monotonic() < deadline:
            line = proc.stderr.readline()
            if not line:
                break
            lines.append(line)
            if line.startswith("console: "):
                console = line.split(" ", 1)[1].strip()
        assert console, "agui serve printed no console URL:\n" + "".join(lines)
        body, kind = get(console)
        page = body.decode()
        assert kind.startswith("text/html"), f"{console}: Content-Type {kind}"
        assets = re.findall(r'(?:href|src)="(console/[^"]+\.(?:js|css))"', page)
        assert {a.rsplit(".", 1)[1] for a in assets} == {"js", "css"}, f"the page links {assets}"
        base = console.rsplit("/", 1)[0]
        with zipfile.ZipFile(wheel) as archive:
            for asset in assets:
                body, kind = get(f"{base}/{asset}")
                expected = "text/css" if asset.endswith(".css") else "javascript"
                assert expected in kind, f"{asset}: Content-Type {kind}"
                assert body == archive.read(f"agui/{asset}"), f"{asset} is not the wheel's file"
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGINT)
        try:
            proc.wait(COMMAND_TIMEOUT)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def check_generated(report: Report, venv: Venv, work: Path) -> None:
    with report.check(f"import agui_generated, agui_pydantic (`{venv.line}`)"):
        code = (
            "import pathlib, agui_generated, agui_pydantic; "
            "print(pathlib.Path(agui_pydantic.__file__).parent)"
        )
        done = run([venv.python, "-c", code], work)
        assert done.returncode == 0, said(done)
        assert Path(done.stdout.strip()).is_relative_to(venv.folder), done.stdout


# ── 5. the pages' recipes in the virtualenvs ──────────────────────────────────────────────────


def check_scripts(report: Report, venvs: dict[str, Venv], work: Path) -> None:
    """Each RECIPES entry with a venv, written to a file in a fresh folder and run by the
    virtualenv's python: exit 0, and what its `print(...)  # text` lines say."""
    for recipe in RECIPES:
        if recipe.venv is None:
            continue
        block = recipe_block(recipe)
        venv = venvs[line_of(recipe.venv)]
        with report.check(f"{block} as a script after `{venv.line}`"):
            assert WHEEL_SCRIPTS in recipe.tests
            folder = Path(tempfile.mkdtemp(prefix="script-", dir=work))
            (folder / "example.py").write_text(block.text, "utf-8")
            done = run([venv.python, "example.py"], folder)
            assert done.returncode == 0, said(done)
            expected = expected_prints(block.text)
            if expected:
                assert done.stdout.splitlines() == expected, said(done)


def check_usage(report: Report, venvs: dict[str, Venv], work: Path) -> None:
    """The usage tests of each install line, with the commands of its virtualenv."""
    for line, modules in USAGE.items():
        with report.check(f"{', '.join(m.rsplit('/', 1)[1] for m in modules)} after `{line}`"):
            assert line in venvs, f"no page has the install line `{line}` any more"
            env = dict(os.environ, AGUI_USAGE_BIN=str(venvs[line].bin))
            done = run(
                [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *modules],
                ROOT,
                TIMEOUT,
                env=env,
            )
            assert done.returncode == 0, said(done)
            print(indent(done.stdout.strip().splitlines()[-1]), end="")


def main(argv: Sequence[str]) -> int:
    keep = "--keep" in argv
    work = Path(tempfile.mkdtemp(prefix="agui-wheel-"))
    assert not work.is_relative_to(ROOT), f"{work} is inside the checkout"
    report = Report()
    start = time.monotonic()
    try:
        built = build(report)
        if built is None:
            return finish(report, start)
        sdist, wheel = built
        check_metadata(report, wheel)
        check_files(report, sdist, wheel)
        venvs = check_install_lines(report, wheel, work)

        def ready(line: str) -> Venv | None:
            return venvs[line] if line in venvs and venvs[line].ready else None

        server = ready(SERVER)
        if server is None:
            report.fail("the commands", f"no virtualenv of `{SERVER}`")
        else:
            check_commands(report, server, wheel, work)
        pydantic = ready(PYDANTIC)
        if pydantic is None:
            report.fail("agui_pydantic", f"no virtualenv of `{PYDANTIC}`")
        else:
            check_generated(report, pydantic, work)
        check_scripts(report, venvs, work)
        check_usage(report, venvs, work)
    finally:
        if keep:
            print(f"kept {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    return finish(report, start)


def finish(report: Report, start: float) -> int:
    slow = sorted(report.times.items(), key=lambda item: -item[1])[:6]
    print("slowest: " + ", ".join(f"{name} {seconds:.1f} s" for name, seconds in slow))
    total = time.monotonic() - start
    if report.failures:
        print(f"\n{len(report.failures)} failed, {report.passed} passed in {total:.0f} s")
        for failure in report.failures:
            print(failure.splitlines()[0])
        return 1
    print(f"\n{report.passed} passed in {total:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
