"""The package's layering, checked: what `import agui` loads, that every module imports on its
own, that imports go one way between the layers of agui/ and never in a cycle, and that the public
names and the exceptions keep their rules.

The layers, from the top: cli -> model | http | adapters -> store | stream -> agent -> wire ->
base (agui/errors.py); the store (the durable event log) sees only wire and base, the adapters
(agents of other SDKs) only stream (the lifecycle's error codes), wire and base, and the console
(the dev console's page, which http serves) nothing of agui
-> nothing of agui (the generated package and third-party libraries only). A layer may import the
layers listed in LAYERS for it and its own modules; agui/__init__.py imports nothing of agui at
module level (it is lazy, PEP 562). Within http, the modules every endpoint shares import no
endpoint, and AgentApp (server) and its durable endpoints (durable) do not import each other at
module level (HTTP_SHARED, HTTP_APART).

Every check that runs code does it in a fresh interpreter (sys.executable), with this checkout's
agui/ and generated/ first on sys.path, so the tree next to this file is the one checked.
"""

from __future__ import annotations

import ast
import itertools
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "agui"

# ── the rules ───────────────────────────────────────────────────────────────────────────────────

HEAVY = ("httpx", "uvicorn", "jsonpatch", "regress", "google.protobuf", "pydantic")
"""Third-party packages `import agui` must not load."""

LAYERS: dict[str, frozenset[str]] = {
    "cli": frozenset(
        {"cli", "model", "http", "store", "stream", "agent", "wire", "observe", "base", "api"}
    ),
    "model": frozenset({"agent", "wire", "observe", "base"}),
    "adapters": frozenset({"stream", "wire", "observe", "base"}),
    "http": frozenset({"console", "store", "stream", "agent", "wire", "observe", "base"}),
    "store": frozenset({"wire", "base"}),
    "stream": frozenset({"agent", "wire", "observe", "base"}),
    "observe": frozenset({"base"}),
    "agent": frozenset({"wire", "base"}),
    "wire": frozenset({"base"}),
    "console": frozenset(),
    "base": frozenset(),
    "api": frozenset(),
}
"""For each layer, the other layers its modules may import at module level (its own layer is
always allowed, without cycles). "api" is agui/__init__.py, the lazy facade: it imports nothing of
agui, and only the command line may import it at module level."""

HTTP_SHARED = ("agui.http.asgi", "agui.http.cors", "agui.http.response", "agui.http.lifetime")
"""The modules of agui/http every endpoint shares (the ASGI primitives, CORS, the streaming
response, a run's lifetime): they import no endpoint module at module level."""
HTTP_ENDPOINTS = ("agui.http.server", "agui.http.durable", "agui.http.agents", "agui.http.threads")
"""The endpoints of agui/http: AgentApp, its durable routes, AgentServer, the thread API."""
HTTP_APART = (("agui.http.durable", "agui.http.server"), ("agui.http.server", "agui.http.durable"))
"""Pairs (a, b) of agui/http where a does not import b at module level: AgentApp and its durable
endpoints share the modules of HTTP_SHARED instead (AgentApp imports durable when given a store)."""

MAX_HAND_WRITTEN = 30
"""At most this many names in agui.__all__ that are not generated models."""


def layer(module: str) -> str:
    """The layer of an agui module: its subpackage, "base" for agui.errors, "api" for agui."""
    if module == "agui":
        return "api"
    if module == "agui.errors":
        return "base"
    if module == "agui.__main__":
        return "cli"  # `python -m agui` is the command line
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in LAYERS and parts[1] not in ("base", "api"):
        return parts[1]
    raise AssertionError(
        f"{module} belongs to no layer: put it in a layer's subpackage, or give it a layer in "
        "tests/test_layout.py (LAYERS and layer())"
    )


# ── helpers ─────────────────────────────────────────────────────────────────────────────────────


def _modules() -> dict[str, Path]:
    """Every module under agui/, by dotted name (packages by their own name)."""
    found: dict[str, Path] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if "__pycache__" in parts:
            continue
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


MODULES = _modules()


def python(code: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter that imports agui from this checkout."""
    env = dict(os.environ)
    paths = [str(ROOT), str(ROOT / "generated")]
    if env.get("PYTHONPATH"):
        paths.append(env["PYTHONPATH"])
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def python_json(code: str) -> Any:
    """Run `code`, which prints one JSON document last; return it (fail on an error)."""
    done = python(code)
    assert done.returncode == 0, f"the subprocess failed:\n{done.stderr}"
    return json.loads(done.stdout.splitlines()[-1])


def _is_heavy(module: str) -> bool:
    return any(module == name or module.startswith(name + ".") for name in HEAVY)


def _is_agui(module: str) -> bool:
    return module == "agui" or module.startswith("agui.")


# ── what `import agui` loads ────────────────────────────────────────────────────────────────────

LOADED = """
import json, sys
{before}
print(json.dumps(sorted(sys.modules)))
"""


def test_import_agui_loads_nothing_heavy() -> None:
    loaded = python_json(LOADED.format(before="import agui"))
    assert "agui" in loaded
    unwanted = [
        m
        for m in loaded
        if _is_heavy(m) or (_is_agui(m) and m != "agui") or m.startswith("agui_generated.")
    ]
    assert not unwanted, (
        f"`import agui` loaded {unwanted}; it should load agui and the agui_generated package "
        f"only. Everything it loaded:\n{loaded}"
    )


def test_first_model_access_loads_the_models_only() -> None:
    loaded = python_json(LOADED.format(before="import agui\nagui.RunAgentInput"))
    assert "agui_generated.models" in loaded, "agui.RunAgentInput did not load the models"
    unwanted = [m for m in loaded if _is_heavy(m) or (_is_agui(m) and m != "agui")]
    assert not unwanted, f"`agui.RunAgentInput` loaded {unwanted}. Everything it loaded:\n{loaded}"


# ── every module imports on its own ─────────────────────────────────────────────────────────────


@pytest.mark.parametrize("module", sorted(MODULES))
def test_module_imports_on_its_own(module: str) -> None:
    done = python(f"import importlib; importlib.import_module({module!r})")
    assert done.returncode == 0, f"`import {module}` fails in a fresh interpreter:\n{done.stderr}"


# ── the import graph ────────────────────────────────────────────────────────────────────────────


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _module_level_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """The import statements run when the module is imported: not those in functions, nor under
    `if TYPE_CHECKING:` (its else branch does run). Class bodies run, so they count."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
            continue
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _module_level_imports(ast.Module(body=[child], type_ignores=[]))
        else:
            yield from _module_level_imports(node)


def _targets(module: str, node: ast.Import | ast.ImportFrom) -> Iterator[str]:
    """The agui modules an import statement in `module` imports (the most specific name: the
    submodule when `from package import submodule`)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")
            if MODULES[module].name != "__init__.py":
                package.pop()  # a module's own package is level 1
            package = package[: len(package) - (node.level - 1)]
            base = ".".join([*package, *([base] if base else [])])
        names = []
        for alias in node.names:
            candidate = f"{base}.{alias.name}"
            names.append(candidate if candidate in MODULES else base)
    for name in names:
        if _is_agui(name):
            yield name


def import_graph() -> dict[str, set[str]]:
    """For each agui module, the agui modules it imports at module level."""
    graph: dict[str, set[str]] = {}
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        graph[module] = {
            target
            for node in _module_level_imports(tree)
            for target in _targets(module, node)
            if target != module
        }
    return graph


def _edge(source: str, target: str) -> str:
    return f"{source} ({layer(source)}) -> {target} ({layer(target)})  [{MODULES[source]}]"


def test_agui_init_imports_nothing_of_agui() -> None:
    edges = import_graph()["agui"]
    assert not edges, (
        f"agui/__init__.py imports {sorted(edges)} at module level; it must stay lazy (import "
        "them under `if TYPE_CHECKING:` and load them in __getattr__)"
    )


def test_imports_go_one_way_between_layers() -> None:
    wrong = [
        _edge(source, target)
        for source, targets in sorted(import_graph().items())
        for target in sorted(targets)
        if layer(target) != layer(source) and layer(target) not in LAYERS[layer(source)]
    ]
    assert not wrong, "imports against the layering:\n" + "\n".join(wrong)


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of the graph as a path [a, b, ..., a], or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for target in sorted(graph.get(node, ())):
            if state.get(target) == 1:
                return [*path[path.index(target) :], target]
            if target not in state and (found := visit(target)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)) is not None:
            return found
    return None


def test_no_import_cycle() -> None:
    cycle = _cycle(import_graph())
    assert cycle is None, "an import cycle among agui modules:\n" + "\n".join(
        _edge(a, b) for a, b in itertools.pairwise(cycle)
    )


def test_http_imports_go_one_way() -> None:
    graph = {
        source: {target for target in targets if target.startswith("agui.http.")}
        for source, targets in import_graph().items()
        if source.startswith("agui.http.")
    }
    cycle = _cycle(graph)
    assert cycle is None, "an import cycle within agui/http:\n" + "\n".join(
        _edge(a, b) for a, b in itertools.pairwise(cycle)
    )
    wrong = [
        _edge(source, target)
        for source in HTTP_SHARED
        for target in sorted(graph[source])
        if target in HTTP_ENDPOINTS
    ]
    wrong += [_edge(a, b) for a, b in HTTP_APART if b in graph[a]]
    assert not wrong, "imports against the layout of agui/http (docs/layout.md):\n" + "\n".join(
        wrong
    )


# ── the public names and the exceptions ─────────────────────────────────────────────────────────


def test_all_is_sorted_and_small() -> None:
    names = python_json(
        """
        import json, agui, agui_generated
        print(json.dumps([agui.__all__, agui_generated.__all__]))
        """
    )
    public, generated = names
    assert public == sorted(public), "agui.__all__ is not sorted"
    assert len(public) == len(set(public)), "agui.__all__ names something twice"
    hand_written = sorted(set(public) - set(generated))
    assert len(hand_written) <= MAX_HAND_WRITTEN, (
        f"{len(hand_written)} hand-written names in agui.__all__ (at most {MAX_HAND_WRITTEN}): "
        f"{hand_written}"
    )


def test_every_public_name_resolves_and_every_public_exception_is_an_agui_error() -> None:
    found = python_json(
        """
        import json, agui
        missing, foreign = [], []
        for name in agui.__all__:
            try:
                value = getattr(agui, name)
            except Exception as exc:
                missing.append(f"{name}: {type(exc).__name__}: {exc}")
                continue
            if (isinstance(value, type) and issubclass(value, BaseException)
                    and not issubclass(value, agui.AguiError)):
                foreign.append(f"{name} ({value.__module__}.{value.__qualname__})")
        print(json.dumps([missing, foreign]))
        """
    )
    missing, foreign = found
    assert not missing, "names in agui.__all__ that do not resolve:\n" + "\n".join(missing)
    assert not foreign, "exceptions in agui.__all__ that are not agui.AguiError:\n" + "\n".join(
        foreign
    )


SIGNALS = frozenset({"agui.http.asgi.BadRequest", "agui.http.access.Refused"})
"""The exceptions agui raises and catches inside itself that are shared between the modules of a
layer (so not named with a "_"): like every internal signal, no AguiError, never met by a
caller."""

ROOTS = ("agui.errors", "agui_generated._runtime")
"""Where the public exceptions are defined: agui.errors, and the generated runtime for AguiError,
DecodeError and EncodeError (re-exported by agui.errors)."""


def _exceptions_found() -> dict[str, Any]:
    """Every exception class of agui's modules (at module level), imported in a fresh
    interpreter: {"public": the AguiErrors, as module.Class of the module holding them and the
    class's own module, "internal": the others defined in agui, "errors": agui.errors's exception
    classes as name -> [names of its AguiError bases]}."""
    found: dict[str, Any] = python_json(
        f"""
        import importlib, inspect, json
        import agui.errors
        from agui.errors import AguiError
        public, internal = [], []
        for name in {sorted(MODULES)!r}:
            module = importlib.import_module(name)
            for attr, value in vars(module).items():
                if not (inspect.isclass(value) and issubclass(value, BaseException)):
                    continue
                if issubclass(value, AguiError):
                    public.append([name, attr, value.__module__, value.__qualname__,
                                   getattr(agui.errors, value.__qualname__, None) is value])
                elif value.__module__ == name:
                    internal.append(f"{{name}}.{{value.__qualname__}}")
        errors = {{
            name: [base.__name__ for base in value.__bases__ if issubclass(base, AguiError)]
            for name in agui.errors.__all__
            if inspect.isclass(value := getattr(agui.errors, name))
            and issubclass(value, BaseException)
        }}
        print(json.dumps({{"public": public, "internal": sorted(internal), "errors": errors}}))
        """
    )
    return found


def test_every_agui_error_is_defined_in_agui_errors() -> None:
    """A class a caller catches with `except AguiError` is defined in agui.errors (or the
    generated runtime it re-exports), exported by agui.errors under its own name, and public;
    other modules only re-export it. Nested classes are checked in the source (by base name)."""
    found = _exceptions_found()
    exported = set(found["errors"])
    wrong = []
    for module, attr, home, qualname, same in found["public"]:
        if home not in ROOTS:
            wrong.append(f"{module}.{attr}: defined in {home}, not in agui.errors")
        elif qualname.startswith("_") or attr.startswith("_"):
            wrong.append(f"{module}.{attr}: an AguiError with a private name (a signal?)")
        elif not same or qualname not in exported:
            wrong.append(f"{module}.{attr}: not exported by agui.errors (__all__)")
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "errors.py" and path.parent == PACKAGE:
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {
                    base.id if isinstance(base, ast.Name) else getattr(base, "attr", "")
                    for base in node.bases
                }
                if bases & (exported | {"AguiError"}):
                    where = path.relative_to(ROOT)
                    wrong.append(f"{where}:{node.lineno}: class {node.name} derives from AguiError")
    assert not wrong, "AguiErrors outside agui.errors:\n" + "\n".join(sorted(set(wrong)))


def test_internal_exceptions_are_signals() -> None:
    """What agui defines outside agui.errors is an internal signal: no AguiError (checked
    above), named with a "_" or listed in SIGNALS, so that a public exception is never defined
    elsewhere without being an AguiError."""
    internal = _exceptions_found()["internal"]
    public = [name for name in internal if not name.rsplit(".", 1)[1].startswith("_")]
    assert sorted(set(public) - SIGNALS) == [], (
        "exception classes outside agui.errors that are neither private nor SIGNALS: define a "
        "public one in agui.errors (an AguiError), name an internal one with a '_'"
    )
    assert SIGNALS <= set(internal), (
        f"SIGNALS names what is gone: {sorted(SIGNALS - set(internal))}"
    )


def _tree(text: str, where: str) -> dict[str, str]:
    """The diagram of the exception classes in `text` (a line "AguiError ..." and its branches
    "├── Name", "└── Name", four columns a level): {class: its parent's name}."""
    lines = text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.lstrip().startswith("AguiError "))
    column = lines[start].index("AguiError")
    parents: dict[str, str] = {}
    path = ["AguiError"]
    for line in lines[start + 1 :]:
        if not line.strip() or line.strip() == "```":
            break
        at = max(line.find("├── "), line.find("└── "))
        if at < 0:
            continue  # a description's next line
        depth, off = divmod(at - column, 4)
        assert off == 0 and 0 <= depth < len(path), f"{where}: a branch out of place: {line!r}"
        name = line[at + 4 :].split()[0]
        del path[depth + 1 :]
        parents[name] = path[depth]
        path.append(name)
    return parents


def test_every_exception_of_agui_errors_is_in_its_trees() -> None:
    """The diagrams of agui/errors.py's docstring and docs/errors.md hold every exception class
    agui.errors exports, each under the class it derives from, and nothing else."""
    errors = _exceptions_found()["errors"]
    expected = {name: bases[0] for name, bases in errors.items() if name != "AguiError"}
    assert all(len(bases) == 1 for name, bases in errors.items() if name != "AguiError"), errors
    source = ast.get_docstring(ast.parse((PACKAGE / "errors.py").read_text(encoding="utf-8")))
    assert source is not None
    docs = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    for where, text in (("agui/errors.py", source), ("docs/errors.md", docs)):
        tree = _tree(text, where)
        assert sorted(set(expected) - set(tree)) == [], f"{where}: missing from the tree"
        assert sorted(set(tree) - set(expected)) == [], f"{where}: in the tree, not agui.errors"
        wrong = {
            name: (tree[name], expected[name]) for name in tree if tree[name] != expected[name]
        }
        assert not wrong, f"{where}: under the wrong parent (tree, class): {wrong}"
