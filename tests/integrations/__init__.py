"""Integration tests against other SDKs' packages, installed by `nox -s integrations` at pinned
versions (see the session). Elsewhere a test module whose packages are missing is skipped, unless
AGUI_REQUIRE_INTEGRATIONS=1 (as the session sets): then a missing package is a failure."""

from __future__ import annotations

import importlib.util
import os

import pytest

REQUIRED = os.environ.get("AGUI_REQUIRE_INTEGRATIONS") == "1"
"""Set by `nox -s integrations`: nothing here may be skipped."""


def require(*modules: str) -> None:
    """Skip the calling test module (at import) when one of `modules` is not installed, or fail
    it when AGUI_REQUIRE_INTEGRATIONS=1."""
    missing = [name for name in modules if importlib.util.find_spec(name) is None]
    if not missing:
        return
    reason = (
        f"not installed: {', '.join(missing)} (`nox -s integrations` installs the pinned versions)"
    )
    if REQUIRED:
        pytest.fail(f"AGUI_REQUIRE_INTEGRATIONS=1, but {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)
