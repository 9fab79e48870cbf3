"""A framework's module, imported when an adapter is made, with an error saying what to install.

Every adapter imports its framework lazily (`import agui.adapters` loads none), so a missing
distribution shows when the adapter is built: as ModuleNotFoundError naming the install line,
not as the framework's own import chain."""

from __future__ import annotations

import importlib
from collections.abc import Collection
from typing import Any


def framework_module(name: str, needs: str, missing: Collection[str] = ()) -> Any:
    """The module `name`, imported now. When the module not found is `name` itself, one of its
    packages or one of `missing` (the distributions `name` imports in turn): ModuleNotFoundError
    with the message `needs`; any other import error as it is. Some frameworks raise ImportError
    from the ModuleNotFoundError (an extra that is not installed): read the same way."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        cause = exc if isinstance(exc, ModuleNotFoundError) else exc.__cause__
        found = getattr(cause, "name", None) if isinstance(cause, ModuleNotFoundError) else None
        if found is None or not (f"{name}.".startswith(f"{found}.") or found in missing):
            raise
        raise ModuleNotFoundError(needs, name=found) from None
