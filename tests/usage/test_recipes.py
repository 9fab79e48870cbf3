"""Every fenced block of README.md, CONTRIBUTING.md and docs/**/*.md is either a recipe some test
runs, or says why it is not one.

The marker of a block that is not a recipe (an output, a synopsis, a fragment of prose, a spec
excerpt, a development command) is an HTML comment on the line right before its opening fence,
invisible on the site, on GitHub and on PyPI:

    <!-- not a recipe: output of agui demo (the port varies) -->
    ```text
    ...

The words `not a recipe:` and a reason are both required. Every other block is a recipe: it has
an entry in RECIPES below, found by its page and a text only that block of the page contains,
naming the tests that run it as written from a temporary folder ("tests/PATH.py::NAME"; each must
exist, and its module must name the page). An entry with `venv` is also run by `nox -s wheel`
(tests/wheel/check.py) as a script, with the `python` of a fresh virtualenv holding only what that
install line brings (the locally built wheel, offered by `--find-links`), and its `print(...)  #
text` lines must print that text. An install block (`pip install ...`) is a recipe too: each of its
lines is installed in a fresh virtualenv by the session its entry names (`nox -s wheel`, or `nox -s
integrations` for a line naming packages of other projects).

So a new block fails here until it is run by a test or marked, an entry whose block changed or went
away fails, and so does an entry naming a test that does not exist. The tests below read the pages
when they run (README and DOCS are looked up at call time), so a modified copy of a page shows it,
as tests/usage/support.py describes.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

from ..conftest import ROOT

MARKER = re.compile(r"^<!-- not a recipe: (?P<reason>\S.*?) -->$")
"""The line right before the fence of a block that is not a recipe."""

LOOSE_MARKER = re.compile(r"<!--\s*not\s+a\s+recipe", re.I)
"""Anything that looks like a marker, to catch a misspelt one."""

FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>```|~~~)(?P<info>.*)$")


@dataclass(frozen=True)
class Recipe:
    """A block some test runs: on `page`, the one block containing `needle`."""

    page: str
    needle: str
    tests: tuple[str, ...]
    venv: str | None = None
    """The install line in whose fresh virtualenv `nox -s wheel` runs this block as a script;
    None: not run as a script."""


BASE = "python3 -m pip install ."
"""The base install, from a clone (docs/getting-started.md): what a page's Python needs unless it
says otherwise."""
PYDANTIC = "pip install 'agui-spec[pydantic]'"
"""The pydantic binding's install line (docs/bindings.md says it in prose)."""
MAF_RECIPE = (
    "tests/integrations/test_microsoft_agent_framework_recipe.py::test_the_recipe_runs_as_written"
)
"""The test that runs docs/integrations/microsoft_agent_framework.md's recipe as written."""

WHEEL_INSTALL = "tests/wheel/check.py::check_install_lines"
"""Installs each line of an install block in a fresh virtualenv, from the locally built wheel."""
WHEEL_SCRIPTS = "tests/wheel/check.py::check_scripts"
"""Runs the entries with a `venv` as scripts in the virtualenv of their install line."""

COPILOTKIT_RECIPE = (
    "tests/interop/copilotkit/test_copilotkit_recipe.py::"
    "test_the_recipe_serves_the_demo_agent_through_copilotkit"
)
"""docs/integrations/copilotkit.md's blocks, run together (under `nox -s interop`)."""

RECIPES: tuple[Recipe, ...] = (
    # ── README.md ──
    Recipe("README.md", "python3 -m pip install '.[", (WHEEL_INSTALL,)),
    Recipe(
        "README.md",
        "agui.decode(b'{",
        ("tests/test_docs.py::test_the_readme_examples_run", WHEEL_SCRIPTS),
        venv=BASE,
    ),
    Recipe(
        "README.md",
        "# echo.py: run it with",
        (
            "tests/usage/test_readme_usage.py::test_the_call_example_runs_as_written",
            "tests/usage/test_readme_usage.py::test_agui_run_prints_the_reply",
            "tests/test_docs.py::test_the_readme_examples_run",
        ),
    ),
    Recipe(
        "README.md",
        "agui.HttpAgent(",
        ("tests/usage/test_readme_usage.py::test_the_call_example_runs_as_written",),
    ),
    # ── docs/getting-started.md ──
    Recipe("docs/getting-started.md", "python3 -m pip install . ", (WHEEL_INSTALL,)),
    Recipe(
        "docs/getting-started.md",
        "demo agent at http://",
        ("tests/usage/test_getting_started_usage.py::test_agui_demo_prints_what_the_page_shows",),
    ),
    Recipe(
        "docs/getting-started.md",
        "# echo.py",
        ("tests/usage/test_getting_started_usage.py::test_the_agui_run_lines",),
    ),
    Recipe(
        "docs/getting-started.md",
        "uvicorn echo:app",
        ("tests/usage/test_getting_started_usage.py::test_the_agui_run_lines",),
    ),
    Recipe(
        "docs/getting-started.md",
        "agui run http://127.0.0.1:8000/agent --message Hi ",
        ("tests/usage/test_getting_started_usage.py::test_the_agui_run_lines",),
    ),
    Recipe(
        "docs/getting-started.md",
        "agui.HttpAgent(",
        ("tests/usage/test_getting_started_usage.py::test_the_first_client_runs_as_written",),
    ),
    # ── docs/calling.md ──
    Recipe(
        "docs/calling.md",
        "capabilities_sync()",
        ("tests/test_capabilities.py::test_the_docs_examples_declare_and_read",),
    ),
    Recipe(
        "docs/calling.md",
        "agui.Pipeline()",
        ("tests/test_docs.py::test_the_pipeline_example_runs", WHEEL_SCRIPTS),
        venv=BASE,
    ),
    # ── docs/wire.md ──
    Recipe("docs/wire.md", "make_converter()", (WHEEL_SCRIPTS,), venv=BASE),
    Recipe(
        "docs/wire.md",
        "agui.SSEDecoder()",
        ("tests/test_docs.py::test_the_sse_example_runs", WHEEL_SCRIPTS),
        venv=BASE,
    ),
    # ── docs/binary-transport.md ──
    Recipe(
        "docs/binary-transport.md",
        "ProtoFrameDecoder()",
        ("tests/test_proto.py::test_the_readme_example_shows_the_real_frame", WHEEL_SCRIPTS),
        venv=BASE,
    ),
    # ── docs/bindings.md ──
    Recipe(
        "docs/bindings.md",
        "Draft202012Validator",
        ("tests/test_docs.py::test_the_binding_examples_run",),
    ),
    Recipe(
        "docs/bindings.md",
        "TypeAdapter(",
        ("tests/test_docs.py::test_the_binding_examples_run", WHEEL_SCRIPTS),
        venv=PYDANTIC,
    ),
    Recipe(
        "docs/bindings.md",
        "StreamingResponse(",
        ("tests/test_pydantic_binding.py::test_the_readme_fastapi_example_serves_a_run",),
    ),
    # ── docs/model-agent.md ──
    Recipe(
        "docs/model-agent.md",
        "OpenAIChatModel(",
        ("tests/test_model_agent.py::test_the_readme_example_runs",),
    ),
    Recipe(
        "docs/model-agent.md",
        "model = ScriptedModel(",
        ("tests/test_docs.py::test_the_scripted_model_example_runs",),
    ),
    # ── docs/operations.md ──
    Recipe(
        "docs/operations.md",
        "make_asgi_app()",
        ("tests/usage/test_operations_usage.py::test_the_metrics_recipe_counts_its_runs",),
    ),
    # ── docs/serving.md ──
    Recipe(
        "docs/serving.md",
        "async def echo(",
        (
            "tests/usage/test_fastapi_usage.py",
            "tests/usage/test_serving_usage.py::test_the_deployment_lines_serve_the_agent",
        ),
    ),
    Recipe(
        "docs/integrations/microsoft_agent_framework.md",
        "# and ag-ui-protocol 0.1 (below)",
        (MAF_RECIPE,),
    ),
    Recipe(
        "docs/integrations/microsoft_agent_framework.md",
        "class ScriptedChatClient(",
        (
            MAF_RECIPE,
            "tests/integrations/test_microsoft_agent_framework.py::test_the_page_holds_the_example",
        ),
    ),
    Recipe(
        "docs/integrations/microsoft_agent_framework.md",
        "--app-dir examples  # on 127.0.0.1:8000",
        (MAF_RECIPE,),
    ),
    Recipe(
        "docs/serving.md",
        "class Echo:",
        ("tests/test_capabilities.py::test_the_docs_examples_declare_and_read",),
    ),
    Recipe(
        "docs/serving.md",
        "uvicorn mymodule:app --host",
        (
            WHEEL_INSTALL,
            "tests/usage/test_serving_usage.py::test_the_deployment_lines_serve_the_agent",
        ),
    ),
    Recipe(
        "docs/serving.md",
        "api = FastAPI()",
        ("tests/usage/test_fastapi_usage.py",),
    ),
    Recipe(
        "docs/serving.md",
        "agui serve --cors-origin",
        ("tests/usage/test_serving_usage.py::test_the_cors_line_allows_the_origin",),
    ),
    # ── docs/integrations/crewai.md ──
    Recipe(
        "docs/integrations/crewai.md",
        "ag-ui-crewai==",
        ("tests/integrations/test_crewai_recipe.py::test_the_recipe_runs_as_written",),
    ),
    Recipe(
        "docs/integrations/crewai.md",
        "class WeatherFlow(",
        (
            "tests/integrations/test_crewai_recipe.py::test_the_recipe_runs_as_written",
            "tests/integrations/test_crewai.py::test_the_page_holds_the_example",
        ),
    ),
    Recipe(
        "docs/integrations/crewai.md",
        "crewai_example:agent --app-dir examples  # on",
        ("tests/integrations/test_crewai_recipe.py::test_the_recipe_runs_as_written",),
    ),
    # ── docs/integrations/llama_index.md ──
    Recipe(
        "docs/integrations/llama_index.md",
        "llama-index-protocols-ag-ui==",
        ("tests/integrations/test_llama_index_recipe.py::test_the_recipe_runs_as_written",),
    ),
    Recipe(
        "docs/integrations/llama_index.md",
        "def reply(",
        (
            "tests/integrations/test_llama_index_recipe.py::test_the_recipe_runs_as_written",
            "tests/integrations/test_llama_index.py::test_the_page_holds_the_example",
        ),
    ),
    Recipe(
        "docs/integrations/llama_index.md",
        "llama_index_example:agent --app-dir examples  # on",
        ("tests/integrations/test_llama_index_recipe.py::test_the_recipe_runs_as_written",),
    ),
    # ── docs/integrations/adk.md ──
    Recipe(
        "docs/integrations/adk.md",
        "ag-ui-adk==",
        ("tests/integrations/test_adk_recipe.py::test_the_recipe_runs_as_written",),
    ),
    Recipe(
        "docs/integrations/adk.md",
        "ADKAgent.from_app(",
        (
            "tests/integrations/test_adk_recipe.py::test_the_recipe_runs_as_written",
            "tests/integrations/test_adk_recipe.py::test_the_page_holds_the_example",
        ),
    ),
    Recipe(
        "docs/integrations/adk.md",
        "adk_example:agent  # serves",
        ("tests/integrations/test_adk_recipe.py::test_the_recipe_runs_as_written",),
    ),
    # ── docs/integrations/langgraph.md ──
    Recipe(
        "docs/integrations/langgraph.md",
        "ag-ui-langgraph[fastapi]==",
        ("tests/integrations/test_langgraph_recipe.py::test_the_recipe_runs_as_written",),
    ),
    Recipe(
        "docs/integrations/langgraph.md",
        "class ScriptedChatModel(",
        (
            "tests/integrations/test_langgraph_recipe.py::test_the_recipe_runs_as_written",
            "tests/integrations/test_langgraph_recipe.py::test_the_page_holds_the_example",
        ),
    ),
    Recipe(
        "docs/integrations/langgraph.md",
        "agui serve langgraph_agent:agent  #",
        ("tests/integrations/test_langgraph_recipe.py::test_the_recipe_runs_as_written",),
    ),
    # ── docs/integrations/pydantic_ai.md ──
    Recipe(
        "docs/integrations/pydantic_ai.md",
        "pydantic-ai-slim[ag-ui]==",
        ("tests/integrations/test_pydantic_ai_recipe.py::test_the_recipe_runs_as_written",),
    ),
    Recipe(
        "docs/integrations/pydantic_ai.md",
        "PydanticAIAgent(pydantic_agent",
        (
            "tests/integrations/test_pydantic_ai_recipe.py::test_the_recipe_runs_as_written",
            "tests/integrations/test_pydantic_ai_recipe.py::test_the_page_holds_the_example",
        ),
    ),
    Recipe(
        "docs/integrations/pydantic_ai.md",
        "pydantic_ai_example:agent  # serves",
        ("tests/integrations/test_pydantic_ai_recipe.py::test_the_recipe_runs_as_written",),
    ),
    # ── docs/integrations/agno.md ──
    Recipe(
        "docs/integrations/agno.md",
        "agno[agui,os]==",
        ("tests/integrations/test_agno_recipe.py::test_the_recipe_runs_as_written",),
    ),
    Recipe(
        "docs/integrations/agno.md",
        "agent = AgnoAgent(agno_agent)",
        (
            "tests/integrations/test_agno_recipe.py::test_the_recipe_runs_as_written",
            "tests/integrations/test_agno_recipe.py::test_the_page_holds_the_example",
        ),
    ),
    Recipe(
        "docs/integrations/agno.md",
        "agno_example:agent  # serves",
        ("tests/integrations/test_agno_recipe.py::test_the_recipe_runs_as_written",),
    ),
    # ── docs/integrations/strands.md ──
    Recipe(
        "docs/integrations/strands.md",
        "ag-ui-strands==",
        ("tests/integrations/test_strands_recipe.py::test_the_recipe_runs_as_written",),
    ),
    Recipe(
        "docs/integrations/strands.md",
        "strands_agui = StrandsAgent(",
        (
            "tests/integrations/test_strands_recipe.py::test_the_recipe_runs_as_written",
            "tests/integrations/test_strands_recipe.py::test_the_page_holds_the_example",
        ),
    ),
    Recipe(
        "docs/integrations/strands.md",
        "strands_example:agent  # serves",
        ("tests/integrations/test_strands_recipe.py::test_the_recipe_runs_as_written",),
    ),
    # ── docs/agents.md ──
    Recipe(
        "docs/agents.md",
        "# agents.py",
        ("tests/usage/test_agents_usage.py::test_each_line_serves_both_agents",),
    ),
    Recipe(
        "docs/agents.md",
        "agui serve greet=",
        ("tests/usage/test_agents_usage.py::test_each_line_serves_both_agents",),
    ),
    Recipe(
        "docs/agents.md",
        "# api.py",
        ("tests/usage/test_agents_usage.py::test_each_line_serves_both_agents",),
    ),
    # ── docs/durable-runs.md ──
    Recipe(
        "docs/durable-runs.md",
        "# mymodule.py",
        ("tests/usage/test_durable_usage.py::test_the_serve_lines_keep_the_run",),
    ),
    Recipe(
        "docs/durable-runs.md",
        "--store sqlite:///runs.db",
        ("tests/usage/test_durable_usage.py::test_the_serve_lines_keep_the_run",),
    ),
    Recipe(
        "docs/durable-runs.md",
        "async def authorize(",
        ("tests/durable/test_serve_store.py::test_the_authorize_example_runs",),
    ),
    Recipe(
        "docs/durable-runs.md",
        "Retention(",
        ("tests/durable/test_serve_store.py::test_the_retention_example_runs",),
    ),
    Recipe(
        "docs/durable-runs.md",
        "pip install 'agui-spec[server,redis]'",
        (WHEEL_INSTALL, "tests/usage/test_durable_usage.py::test_the_workers_line_on_redis"),
    ),
    # ── docs/deployment.md ──
    Recipe(
        "docs/deployment.md",
        "upstream agui {",
        (
            "tests/durable/test_deployment.py::"
            "test_a_run_streams_frame_by_frame_and_outlasts_the_proxys_read_timeout",
            "tests/durable/test_deployment.py::test_a_long_conversation_passes_the_proxy",
            "tests/durable/test_deployment.py::"
            "test_a_rollout_ends_the_run_cleanly_and_the_other_worker_goes_on",
        ),
    ),
    # ── docs/threads.md ──
    Recipe(
        "docs/threads.md",
        "# threads_example.py",
        ("tests/usage/test_threads_usage.py::test_the_threads_example_runs",),
    ),
    # ── docs/integrations/copilotkit.md ──
    Recipe(
        "docs/integrations/copilotkit.md",
        "AgentApp(DemoAgent()",
        (COPILOTKIT_RECIPE,),
    ),
    Recipe("docs/integrations/copilotkit.md", "agui serve agent:app --port", (COPILOTKIT_RECIPE,)),
    Recipe("docs/integrations/copilotkit.md", "createCopilotNodeListener", (COPILOTKIT_RECIPE,)),
    Recipe("docs/integrations/copilotkit.md", "node runtime.mjs\n", (COPILOTKIT_RECIPE,)),
    # ── docs/extending.md ──
    Recipe(
        "docs/extending.md",
        "  Latitude:",
        ("tests/test_codegen_grammar.py::test_the_example_of_docs_extending_loads",),
    ),
)


# ── the pages and their blocks ────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    """Where its opening fence is (1-based)."""
    info: str
    text: str
    reason: str | None
    """Why it is not a recipe (its marker's reason), or None."""

    def __str__(self) -> str:
        first = self.text.splitlines()[0] if self.text.strip() else ""
        return f"{self.page}:{self.line} ({self.info or 'no language'}: {first[:60]!r})"


def pages() -> list[Path]:
    """README.md, CONTRIBUTING.md and every page under docs/ (looked up when called)."""
    return [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").rglob("*.md"))]


def name_of(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def blocks_of(path: Path) -> list[Block]:
    """The fenced blocks of a page, with the reason of each one's marker. A fence this reader
    does not take (indented, or of tildes) is an error, so no block escapes the check."""
    lines = path.read_text("utf-8").splitlines()
    found: list[Block] = []
    for number, line in enumerate(lines):
        if LOOSE_MARKER.search(line):
            following = lines[number + 1] if number + 1 < len(lines) else ""
            assert following.startswith("```"), (
                f"{name_of(path)}:{number + 1}: a marker belongs on the line right before a fence"
            )
    at = 0
    while at < len(lines):
        fence = FENCE.match(lines[at])
        if fence is None:
            at += 1
            continue
        where = f"{name_of(path)}:{at + 1}"
        assert fence["indent"] == "" and fence["fence"] == "```", (
            f"{where}: write fences as ``` at the start of the line (this check reads no other)"
        )
        assert fence["info"].strip() == fence["info"] and "`" not in fence["info"], (
            f"{where}: an opening fence is ``` and a language ({lines[at]!r})"
        )
        end = next((i for i in range(at + 1, len(lines)) if lines[i] == "```"), None)
        assert end is not None, f"{where}: the block is never closed"
        before = lines[at - 1] if at else ""
        marker = MARKER.match(before)
        if marker is None:
            assert not LOOSE_MARKER.search(before), (
                f"{where}: write the marker as `<!-- not a recipe: REASON -->`, not {before!r}"
            )
        text = "".join(line + "\n" for line in lines[at + 1 : end])
        found.append(Block(name_of(path), at + 1, fence["info"], text, marker and marker["reason"]))
        at = end + 1
    return found


def all_blocks() -> list[Block]:
    return [block for path in pages() for block in blocks_of(path)]


def blocks_of_recipe(recipe: Recipe, blocks: list[Block]) -> list[Block]:
    return [b for b in blocks if b.page == recipe.page and recipe.needle in b.text]


def recipe_block(recipe: Recipe) -> Block:
    """The one block a recipe entry names (for the scripts of `nox -s wheel`)."""
    (block,) = blocks_of_recipe(recipe, blocks_of(ROOT / recipe.page))
    return block


def defined_tests(path: Path) -> set[str]:
    """The test functions a module defines at its top level."""
    tree = ast.parse(path.read_text("utf-8"))
    return {
        node.name for node in tree.body if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
    }


# ── the checks ────────────────────────────────────────────────────────────────────────────────


def test_every_block_is_run_by_a_test_or_says_why_not() -> None:
    blocks = all_blocks()
    assert blocks, "no fenced block found: is the reader broken?"
    claimed: dict[Block, list[Recipe]] = {}
    for recipe in RECIPES:
        for block in blocks_of_recipe(recipe, blocks):
            claimed.setdefault(block, []).append(recipe)
    problems = []
    for block in blocks:
        recipes = claimed.get(block, [])
        if block.reason is not None and recipes:
            problems.append(f"{block}: marked not a recipe ({block.reason}), yet RECIPES runs it")
        elif block.reason is None and not recipes:
            problems.append(
                f"{block}: neither run by a test (an entry in RECIPES, {__name__}) nor marked "
                "`<!-- not a recipe: REASON -->` on the line before its fence"
            )
        elif len(recipes) > 1:
            problems.append(f"{block}: {len(recipes)} entries of RECIPES name it")
    assert not problems, "\n".join(problems)


def test_every_entry_names_one_block() -> None:
    blocks = all_blocks()
    problems = []
    for recipe in RECIPES:
        found = blocks_of_recipe(recipe, blocks)
        if len(found) != 1:
            where = ", ".join(map(str, found)) or "none"
            problems.append(
                f"RECIPES: {len(found)} blocks of {recipe.page} contain {recipe.needle!r} "
                f"({where}); the block changed or went away: update the entry"
            )
    assert not problems, "\n".join(problems)


def test_every_entry_names_tests_that_exist() -> None:
    problems = []
    for recipe in RECIPES:
        assert recipe.tests, f"{recipe}: names no test"
        page = Path(recipe.page).name
        for test in recipe.tests:
            path, _, name = test.partition("::")
            module = ROOT / path
            if not module.is_file():
                problems.append(f"{recipe.page} {recipe.needle!r}: {path} does not exist")
                continue
            if name and name not in defined_tests(module):
                problems.append(f"{recipe.page} {recipe.needle!r}: {path} defines no {name}")
            source = module.read_text("utf-8")
            if test in (WHEEL_INSTALL, WHEEL_SCRIPTS):
                continue  # tests/wheel/check.py reads RECIPES itself
            if page not in source and Path(page).stem not in source:
                problems.append(f"{recipe.page} {recipe.needle!r}: {path} never names {page}")
        if (WHEEL_SCRIPTS in recipe.tests) != (recipe.venv is not None):
            problems.append(
                f"{recipe.page} {recipe.needle!r}: a venv goes with {WHEEL_SCRIPTS}, and back"
            )
    assert not problems, "\n".join(problems)


def test_the_scripts_are_python() -> None:
    for recipe in RECIPES:
        if recipe.venv is not None:
            block = recipe_block(recipe)
            assert block.info == "python", f"{block}: only a python block runs as a script"
            compile(block.text, str(block), "exec")


@pytest.mark.parametrize(
    "text, expected",
    [
        ("<!-- not a recipe: output -->\n```text\nx\n```\n", "output"),
        ("```sh\nx\n```\n", None),
        ("<!-- not a recipe:output -->\n```text\nx\n```\n", "misspelt"),
        ("<!-- not a recipe: output -->\n\n```text\nx\n```\n", "misspelt"),
        ("  ```python\nx\n  ```\n", "fence"),
    ],
)
def test_the_reader_takes_the_marker_only_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, text: str, expected: str | None
) -> None:
    """The marker right before the fence counts; a misspelt or detached one is an error, and so
    is a fence this reader would miss."""
    monkeypatch.setattr(f"{__name__}.ROOT", tmp_path)
    page = tmp_path / "README.md"
    page.write_text(text)
    if expected in ("misspelt", "fence"):
        with pytest.raises(AssertionError):
            blocks_of(page)
    else:
        (block,) = blocks_of(page)
        assert block.reason == expected
