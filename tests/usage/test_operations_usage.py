"""docs/operations.md's FastAPI recipe ("Metrics"), used as written, from a fresh folder.

The recipe is one module whose first line names its file and the command that runs it (`#
metrics_app.py: run it with `uvicorn metrics_app:api``): it is written to that file and served by
that command (on a free port). Two runs through HttpAgent, then `GET /metrics` (redirected to the
mount's `/metrics/`, which a scraper follows) parses with prometheus-client's parser and counts
them under the recipe's agent name.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import httpx
from prometheus_client.parser import text_string_to_metric_families

from .support import docs_block, module_name, python_view, servers

PAGE = "operations.md"


def recipe() -> str:
    return docs_block(PAGE, "make_asgi_app()")


def test_the_metrics_recipe_counts_its_runs(tmp_path: Path) -> None:
    """Two runs of the recipe's agent: agui_runs_ended_total{outcome="success"} is 2."""
    folder = tmp_path
    name = module_name(recipe())
    (folder / f"{name}.py").write_text(recipe())
    found = re.search(r"run it with `([^`]+)`", recipe().splitlines()[0])
    assert found, "the recipe no longer says how to run it"
    words = shlex.split(found.group(1))
    assert words == ["uvicorn", f"{name}:api"], words
    agent = re.search(r'name="(\w+)"', recipe())
    assert agent, "the recipe no longer names its agent"
    with servers(
        folder,
        {
            "uvicorn": (
                [*words, "--port", "{port}"],
                ["Uvicorn running on http://127.0.0.1:{port} "],
            )
        },
    ) as running:
        base = running["uvicorn"].base
        for _ in range(2):
            outcome, messages = python_view(f"{base}/agent", "hi")
            assert outcome == "success" and messages[-1]["content"] == "hello", messages
        answer = httpx.get(f"{base}/metrics", follow_redirects=True)
    assert answer.status_code == 200
    samples = {
        (sample.name, tuple(sorted(sample.labels.items()))): sample.value
        for family in text_string_to_metric_families(answer.text)
        for sample in family.samples
    }
    ended = ("agui_runs_ended_total", (("agent", agent.group(1)), ("outcome", "success")))
    assert samples[ended] == 2
