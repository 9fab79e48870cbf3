"""Sessions: generate, demo, tests, ci, docs, interop, integrations, crosscheck, fork, workflows,
busy, wheel, bench, redis_versions. Each one builds its own environment, on the Python that runs
nox (3.11 or newer; `python3.13 -m nox ...` picks another). `nox -s tests` is the quick loop,
`nox -s ci` the whole chain .ci/run runs; CONTRIBUTING.md says which to run when."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import nox

nox.needs_version = ">=2024.4.15"
nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = True
nox.options.error_on_missing_interpreters = True
nox.options.sessions = ["tests"]

MINIMUM_PYTHON = (3, 11)
"""The oldest Python the package supports (pyproject.toml's requires-python says the same)."""

if sys.version_info < MINIMUM_PYTHON:
    # Say it plainly instead of letting every session skip or fail obscurely.
    raise SystemExit(
        f"agui needs Python {'.'.join(map(str, MINIMUM_PYTHON))} or newer; nox is running on "
        f"{sys.version.split()[0]} ({sys.executable}). Run nox with a newer Python, e.g. "
        "`python3.13 -m pip install nox && python3.13 -m nox -s tests`."
    )

# None: every session runs on the interpreter nox runs under, so the README's commands work on
# whatever supported Python the user has and never skip for want of a pinned version.
PYTHON = None


@nox.session(python=PYTHON)
def generate(session: nox.Session) -> None:
    """Regenerate generated/ from the spec, then check every fixture against the three bindings.

    Regenerate generated/ from spec/agui.yaml (the attrs binding, the JSON Schema and, from the
    schema by datamodel-code-generator, the pydantic binding), then verify that every golden
    fixture round-trips and that the three bindings agree on each one."""
    # The dev extra: the binding tests type-check the generated code (mypy) and serve the pydantic
    # models under FastAPI and uvicorn, so they need what `nox -s tests` has.
    session.install("-e", ".[dev]")
    session.run("python", "-m", "codegen")
    session.run(
        "pytest",
        "-q",
        "tests/test_fixtures.py",
        "tests/test_jsonschema.py",
        "tests/test_pydantic_binding.py",
        *session.posargs,
    )


@nox.session(python=PYTHON)
def demo(session: nox.Session) -> None:
    """Run the end-to-end demo: the demo agent on a loopback port, the client talking to it."""
    session.install("-e", ".[server]")
    session.run("agui", "demo")


@nox.session(python=PYTHON)
def tests(session: nox.Session) -> None:
    """Run the freshness check, ruff, mypy --strict and pytest; nothing is queued after them.

    `nox -s tests -- PATH...` runs pytest on exactly what it is given and nothing else (no
    freshness check, ruff or mypy): the loop while changing one part. `nox -s ci` is the whole
    chain CI runs.
    """
    session.install("-e", ".[dev]")
    if shutil.which("node"):  # tests/test_crosscheck.py's zod peer (a skip without it, or a
        # failure under AGUI_REQUIRE_INTEROP=1)
        _npm_ci(session, Path("tests/crosscheck"), Path(".crosscheck"))
    if session.posargs:
        session.run("pytest", *session.posargs)
        return
    _checks(session)
    session.run("pytest")


CI_CHAIN = (
    "docs",
    "fork",
    "busy",
    "workflows",
    "wheel",
    # each parametrization by name: notifying "redis_versions" runs only the first
    "redis_versions(redis='5.0.2')",
    "redis_versions(redis='latest')",
)
"""The sessions `ci` queues after its own checks and pytest, in order (`interop` and each
`integrations` are queued first, when node is on the PATH)."""


@nox.session(python=PYTHON)
def ci(session: nox.Session) -> None:
    """Run the whole chain CI runs: what `tests` runs, then every session queued after it.

    First `interop` and `integrations`, which need node: without it they are left out with a
    warning, or, when AGUI_REQUIRE_INTEROP=1 (as .ci/run sets), this session fails. Then the
    freshness check, ruff, mypy --strict and pytest (posargs go to pytest and to every queued
    session, as nox passes them), and last `docs`, `fork` (the fork proof), `busy`
    (tests/browser and tests/durable again while two CPU-bound processes keep the cores busy),
    `workflows` (generate, demo and crosscheck on a fresh clone), `wheel` (the built wheel,
    installed as the docs say) and `redis_versions` (the Redis tests on the oldest and the
    newest redis-py the redis extra allows). .ci/run runs it; about 50 minutes on 2 cores.
    """
    if shutil.which("node"):
        session.notify("interop")
        for framework in FRAMEWORKS:  # each parametrization by name (see CI_CHAIN)
            session.notify(f"integrations(framework={framework!r})")
    elif os.environ.get("AGUI_REQUIRE_INTEROP") == "1":
        session.error("node is not on PATH, and AGUI_REQUIRE_INTEROP=1 requires the interop tests")
    else:
        session.warn(
            "node is not on PATH: the interop and integrations sessions (nox -s interop, "
            "nox -s integrations) are not run"
        )
    session.install("-e", ".[dev]")
    if shutil.which("node"):
        _npm_ci(session, Path("tests/crosscheck"), Path(".crosscheck"))
    _checks(session)
    session.run("pytest", *session.posargs)
    for name in CI_CHAIN:
        session.notify(name)


def _checks(session: nox.Session) -> None:
    """The generated code's freshness check, ruff (lint and format) and mypy --strict."""
    session.run("python", "-m", "codegen", "--check")
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")
    session.run("mypy")


BUSY_LOOPS = 2
"""CPU-bound processes the `busy` session runs beside pytest (this project's CI machine has 2 cores)."""


@nox.session(python=PYTHON)
def busy(session: nox.Session) -> None:
    """Run tests/browser and tests/durable while two CPU-bound processes keep the cores busy.

    tests/browser and tests/durable (pytest, the `tests` session's install and environment:
    AGUI_REQUIRE_BROWSER, AGUI_REQUIRE_REDIS pass through) while BUSY_LOOPS processes spin
    (`while True: pass`), started before pytest and killed after it, also when it fails. A test
    that passes only on an idle machine fails here: tests assert no wall-clock figure, what a
    test waits for is bounded generously (a hang bound), and the figures are the benchmarks'
    (`nox -s bench`). `nox -s ci` runs it."""
    session.install("-e", ".[dev]")
    loops = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(BUSY_LOOPS)
    ]
    try:
        session.run("pytest", "tests/browser", "tests/durable", *session.posargs)
    finally:
        for loop in loops:
            loop.kill()
        for loop in loops:
            loop.wait()


@nox.session(python=PYTHON)
def docs(session: nox.Session) -> None:
    """Build the documentation site strictly into site/ (`nox -s docs -- serve` serves it).

    Build the documentation site (mkdocs-material, API reference by mkdocstrings) into
    site/, strictly: a broken link, a missing page or a docstring mkdocstrings cannot read fails.
    `nox -s docs -- serve` serves it on 127.0.0.1:8000 instead."""
    session.install("-e", ".[docs]")
    if session.posargs[:1] == ["serve"]:
        session.run("mkdocs", "serve", "--strict", *session.posargs[1:])
    else:
        session.run("mkdocs", "build", "--strict", "--site-dir", "site", *session.posargs)


@nox.session(python=PYTHON)
def interop(session: nox.Session) -> None:
    """Run the official TypeScript client and ag-ui-validate against this server over HTTP.

    Over real HTTP: the official TypeScript client against this server, this client against an
    @ag-ui/encoder server, and ag-ui-validate against this server. With them, the pre-1.0 matrix
    (tests/interop/test_compat_matrix.py): releases 0.0.35 - 0.0.59 of the official client (npm
    aliases in tests/interop/package.json) against this server, and this client against servers
    of the earlier eras (@ag-ui/encoder 0.0.35 and 0.0.45; ag-ui-protocol 1.0.0 under FastAPI,
    pinned here)."""
    session.install(
        "-e", ".[dev]", "ag-ui-validate[transport]==0.4.0", "ag-ui-protocol==1.0.0", "fastapi"
    )
    _npm_ci(session, Path("tests/interop"), Path(".interop"))
    session.run(
        "pytest", "tests/interop", "tests/usage", "-q", *session.posargs, env={"AGUI_INTEROP": "1"}
    )


FRAMEWORKS: dict[str, tuple[str, ...]] = {
    "adk": (
        "ag-ui-protocol==1.0.0",
        "ag-ui-adk==0.11.0",
        "google-adk==2.13.0",
        "google-genai==2.34.0",
    ),
    "langgraph": (
        "ag-ui-protocol==1.0.0",
        "ag-ui-langgraph[fastapi]==0.0.47",
        "ag-ui-a2ui-toolkit==0.0.5",
        "langgraph==1.2.24",
        "langgraph-prebuilt==1.1.3",
        "langgraph-checkpoint==4.3.2",
        "langchain-core==1.8.3",
        "langchain==1.5.2",
    ),
    "agno": ("ag-ui-protocol==1.0.0", "agno[agui,os]==3.1.10"),
    "crewai": ("ag-ui-crewai==1.0.0", "crewai==1.15.30", "litellm==1.110.2"),
    "llama_index": (
        "llama-index-protocols-ag-ui==0.6.0",
        "llama-index-core==0.14.25",
        "llama-index-workflows==2.26.1",
    ),
    "microsoft_agent_framework": ("agent-framework-ag-ui==1.7.0", "agent-framework-core==1.23.0"),
    "pydantic_ai": ("ag-ui-protocol==1.0.0", "pydantic-ai-slim[ag-ui]==2.68.0"),
    "strands": ("ag-ui-protocol==1.0.0", "ag-ui-strands==1.0.2", "strands-agents==1.62.0"),
}
"""The frameworks of the integration matrix (tests/integrations/test_KEY*.py, examples/KEY.py),
each with the releases its `integrations` session installs, pinned (their own dependencies
float), in a virtualenv of its own: frameworks whose pins conflict (Microsoft Agent Framework's
on ag-ui-protocol) never meet. docs/dependencies.md says why each is there."""

AGUI_FOR_INTEGRATIONS: dict[str, tuple[str, ...]] = {
    # crewai requires pydantic<2.13 and agui's dev extra pydantic>=2.14 (its pydantic binding's
    # tests), so no environment holds both: this session installs agui with the server extra
    # and what the integration tests themselves import (pytest; pyyaml, for tests/test_docs.py).
    "crewai": (".[server]", "pytest", "pyyaml"),
}
"""What each framework's `integrations` session installs of agui (editable, the first) and
for its tests, when not `.[dev,server]`."""

CORE_INTEGRATION_TESTS = ("tests/integrations/test_ag_ui_protocol.py",)
"""Tests of agui.adapters itself against ag-ui-protocol, run in the langgraph session (its
virtualenv has ag-ui-protocol 1.0.0)."""


@nox.session(python=PYTHON)
@nox.parametrize("framework", list(FRAMEWORKS))
def integrations(session: nox.Session, framework: str) -> None:
    """Run one framework's integration tests: its example served, read by two clients.

    The integration matrix, one framework per session: its example (examples/FRAMEWORK.py)
    served by `agui serve` and read by agui.Conversation and the official TypeScript client
    (1.0.0 and 0.0.59), two turns with a store, a resume, capabilities, a failing tool, and
    what only some frameworks have (an approval, their native endpoint's events); each recipe
    of docs/integrations/ run as written. The outcomes go to .integrations/FRAMEWORK.json and
    the table of docs/integrations.md (python -m tests.integrations.matrix).
    AGUI_REQUIRE_INTEGRATIONS=1: a missing package or node fails the session instead of
    skipping its tests."""
    # build: the recipe tests build the wheel their fresh virtualenvs install from.
    agui, *for_tests = AGUI_FOR_INTEGRATIONS.get(framework, (".[dev,server]",))
    session.install("-e", agui, *for_tests, *FRAMEWORKS[framework], "build")
    _npm_ci(session, Path("tests/interop"), Path(".interop"))
    tests = sorted(str(p) for p in Path("tests/integrations").glob(f"test_{framework}*.py"))
    if framework == "langgraph":
        tests = [*CORE_INTEGRATION_TESTS, *tests]
    out = Path(".integrations") / f"{framework}.json"
    session.run(
        "pytest",
        *tests,
        "-q",
        *session.posargs,
        env={"AGUI_REQUIRE_INTEGRATIONS": "1", "AGUI_MATRIX_OUT": str(out)},
    )
    session.run("python", "-m", "tests.integrations.matrix")


@nox.session(python=PYTHON)
def crosscheck(session: nox.Session) -> None:
    """Check every fixture through agui and each peer SDK against the committed baseline.

    Every fixture, valid and invalid, through agui and each peer (@ag-ui/core 1.0.0 under node,
    ag-ui-protocol 1.0.0, and any `-- --peer NAME=COMMAND`), against the committed baseline of
    known divergences (tests/crosscheck/baseline.json): fails on a new divergence and, with
    `--strict` as here, on a stale entry; the fixtures against the generated JSON Schema too.
    Posargs go to tests/crosscheck/run.py (`-v`, `--peer`, `--update-baseline`, `--against`).
    Then protobuf parity with @ag-ui/proto 1.0.0: every valid event fixture must encode to the
    same bytes and decode back (tests/crosscheck/proto_parity.py; fails on a mismatch)."""
    session.install("-e", ".[codegen]", "ag-ui-protocol==1.0.0", "jsonschema>=4.23")
    _npm_ci(session, Path("tests/crosscheck"), Path(".crosscheck"))
    session.run("python", "tests/crosscheck/run.py", "--strict", *session.posargs)
    session.run("python", "tests/crosscheck/proto_parity.py")


@nox.session(python=PYTHON)
def fork(session: nox.Session) -> None:
    """Prove that a fork of the spec needs no edit outside spec/ and its fixtures.

    The fork proof (tests/fork/run.py): a copy of the repository plus tests/fork/overlay.yaml
    (members added to an event, a content part and a message: TEXT_MESSAGE_START.language,
    ImagePart.altText, UserMessage.replyTo; a LocationPart content part; a LOCATION_SHARED event;
    all `extension: true`) and its fixtures goes through `python -m codegen`, mypy, the test suite
    and the cross-SDK checks, with nothing else changed. `nox -s ci` runs it after the rest.
    Without node the cross-SDK step is left out with a warning (AGUI_REQUIRE_INTEROP=1, as in CI,
    makes that a failure). Posargs go to tests/fork/run.py (`--keep`, `--only`, `-- PYTEST ARGS`).
    """
    session.install("-e", ".[dev]", "ag-ui-protocol==1.0.0")
    args = list(session.posargs)
    if shutil.which("node"):
        _npm_ci(session, Path("tests/crosscheck"), Path(".crosscheck"))
    elif os.environ.get("AGUI_REQUIRE_INTEROP") == "1":
        session.error(
            "node is not on PATH, and AGUI_REQUIRE_INTEROP=1 requires the fork's crosscheck"
        )
    else:
        session.warn("node is not on PATH: the fork's cross-SDK step is left out")
        if not any(a.startswith("--only") for a in args):
            args = ["--only", "generate,mypy,pytest", *args]
    session.run("python", "tests/fork/run.py", *args)


WORKFLOWS = ("generate", "demo", "crosscheck")
"""The workflow commands `workflows` runs on a fresh clone; `ci` itself (with `docs` and `fork`)
is what CI's own fresh clone runs."""


@nox.session(python=PYTHON)
def workflows(session: nox.Session) -> None:
    """Run generate, demo and crosscheck on a fresh clone, which must stay unchanged.

    The documented workflow commands on an untouched clone of this checkout's HEAD (committed
    work only, as a newcomer gets it): `nox -s generate`, `nox -s demo` and `nox -s crosscheck`,
    each in the clone with environments of its own, must exit 0, and generating must leave the
    clone unchanged (the generated code that is checked in is what the spec gives). Posargs name
    other sessions to run there instead."""
    import tempfile

    root = Path(__file__).resolve().parent
    wanted = list(session.posargs) or list(WORKFLOWS)
    with tempfile.TemporaryDirectory(prefix="agui-clone-") as folder:
        clone = Path(folder) / "agui"
        session.run("git", "clone", "--quiet", "--no-local", str(root), str(clone), external=True)
        with session.chdir(clone):
            for name in wanted:
                session.run(sys.executable, "-m", "nox", "-s", name, external=True)
            changed = session.run("git", "status", "--porcelain", external=True, silent=True)
            if changed and changed.strip():
                session.error(f"the workflow commands changed the clone:\n{changed}")


@nox.session(python=PYTHON)
def wheel(session: nox.Session) -> None:
    """Build the sdist and the wheel, and run every documented install line in a fresh venv.

    The wheel is the product (tests/wheel/check.py): `python -m build` writes the sdist and,
    from it, the wheel into dist/; their metadata and files are checked; every install line of
    the README and the docs is run as written in a fresh virtualenv outside the checkout (the
    wheel offered by `--find-links dist/`, or a copy of the checkout for `pip install .`); and
    from a temporary folder the installed `agui --version`, `agui demo`, the console of `agui
    serve`, the pages' scripts and the usage tests run with only what each line installs. This
    session's own environment only drives the checks. `--keep` keeps the temporary folder."""
    session.install(
        "build", "trove-classifiers", "virtualenv", "pytest", "pyyaml", "-e", ".[server]"
    )
    session.run("python", "tests/wheel/check.py", *session.posargs)


@nox.session(python=PYTHON)
def bench(session: nox.Session) -> None:
    """Run the benchmarks: codecs, transport, client, memory, durable runs and the console.

    Decode/encode/SSE benchmarks, then the transport benchmark (a 100,000-event run through
    uvicorn over loopback: the 1.0 path, the era path of a client without protocolVersion,
    metrics and tracing on), side by side with ag-ui-protocol 1.0.0 and with a node:http server
    on @ag-ui/encoder 1.0.0 (tests/crosscheck's npm packages, installed into .crosscheck; left
    out without node); prints ratios; and its client
    side (`--client`: Conversation.run and HttpAgent.run against an httpx + pydantic peer, from a
    server that coalesces its writes and from one that writes each event on its own). Then 50
    sequential short runs with a default HttpAgent against an explicit shared httpx client
    (benchmarks/client.py), and the binary transport against JSON (benchmarks/proto.py): speed
    both ways and bytes on the wire.
    First the import time of `agui` against `ag_ui.core` + `ag_ui.encoder` and the command line's
    start-up, warm and cold (benchmarks/imports.py),
    then the peak memory of a long run through Conversation.run (benchmarks/memory.py), the
    durable runs (benchmarks/durable.py): a 100,000-event run through each event log (memory,
    SQLite, Redis) against no store and the official path, resume latency, and the server's
    memory over a 1,000,000-event run. That script starts and stops its own redis-server (on a
    free loopback port, in a temporary folder); without redis-server on PATH it leaves Redis out.
    So does benchmarks/threads.py: the thread API's store side (a page of threads among 20,000,
    deleting one) on each event log.
    Last the dev console (benchmarks/console.py): a 100,000-event run shown in headless Chromium,
    seconds to its final text, ms per 1,000 events and the longest main-thread task (no peer);
    without Chromium or Playwright it says so and is skipped. benchmarks/sse_large.py, after the
    memory benchmark: one 8 MiB SSE frame in 64 KiB chunks, decoded against reading its bytes
    over loopback (target: at most 2x).

    Posargs go to the codec benchmarks; `--quick` also shortens the transport, memory, durable
    and console runs.
    """
    session.install(
        "-e",
        ".[server,proto,redis,otel,metrics]",
        "ag-ui-protocol==1.0.0",
        "fastapi",
        "playwright>=1.49",
    )
    if shutil.which("node"):
        # the transport benchmark's Node peer (@ag-ui/encoder 1.0.0, tests/crosscheck's pins)
        _npm_ci(session, Path("tests/crosscheck"), Path(".crosscheck"))
    else:
        session.warn("node is not on PATH: the transport benchmark leaves its Node peer out")
    session.run("python", "benchmarks/imports.py")
    session.run("python", "benchmarks/run.py", *session.posargs)
    quick = ["--quick"] if "--quick" in session.posargs else []
    session.run("python", "benchmarks/transport.py", "--metrics", "--tracing", *quick)
    session.run("python", "benchmarks/transport.py", "--client", *quick)
    session.run("python", "benchmarks/client.py", *quick)
    session.run("python", "benchmarks/proto.py", *quick)
    session.run("python", "benchmarks/memory.py", *quick)
    session.run("python", "benchmarks/sse_large.py", *quick)
    session.run("python", "benchmarks/durable.py", *quick)
    session.run("python", "benchmarks/threads.py", *quick)  # the thread API's store side
    session.run("python", "benchmarks/console.py", *quick)


@nox.session(python=PYTHON)
@nox.parametrize("redis", ["5.0.2", "latest"])
def redis_versions(session: nox.Session, redis: str) -> None:
    """Run the Redis tests on the oldest and the newest redis-py the redis extra allows.

    The Redis backend on the oldest redis-py the redis extra allows (`redis>=5.0.2`) and on the
    newest: their defaults differ (no socket timeout before 8.0, 5 s since), and RedisLog must set
    every timeout itself. Installs the dev extra, then that redis-py, and runs the Redis tests:
    tests/store on Redis and the silent-agent tests (tests/durable/test_redis_silence.py), with
    AGUI_REQUIRE_REDIS=1 (a missing redis-server fails instead of skipping)."""
    session.install("-e", ".[dev]")
    if redis == "latest":
        session.install("--upgrade", "redis")
    else:
        session.install(f"redis=={redis}")
    session.run("python", "-c", "import redis; print('redis-py', redis.__version__)")
    session.run(
        "pytest",
        "-q",
        "tests/store",
        "tests/durable/test_redis_silence.py",
        "-k",
        "redis",
        *session.posargs,
        env={"AGUI_REQUIRE_REDIS": "1"},
    )


def _npm_ci(session: nox.Session, source: Path, work: Path) -> None:
    """Install the npm packages pinned by source/package-lock.json into the git-ignored `work`,
    unless the last install there was of this very lockfile and finished: `ci` runs nine
    sessions that need .interop, and `npm ci` deletes and refetches it each time (half a minute
    or more each)."""
    import hashlib

    lock = (source / "package-lock.json").read_bytes()
    stamp = work / ".installed-lock.sha256"
    digest = hashlib.sha256(lock).hexdigest()
    if stamp.is_file() and stamp.read_text() == digest and (work / "node_modules").is_dir():
        session.log(f"{work}: the npm packages of {source}/package-lock.json are installed")
        return
    work.mkdir(exist_ok=True)
    stamp.unlink(missing_ok=True)  # written again only once this install has finished
    for name in ("package.json", "package-lock.json"):
        shutil.copy(source / name, work / name)
    session.run(
        "npm", "ci", "--prefix", str(work), "--no-audit", "--no-fund", external=True, silent=True
    )
    stamp.write_text(digest)
