"""The compiled constructor (_construct.c), where the build made it."""

from collections.abc import Callable
from typing import Any

def constructor(cls: type, names: tuple[str, ...], /) -> Callable[..., Any]: ...
def initializer(
    cls: type,
    names: tuple[str, ...],
    defaults: tuple[Any, ...],
    required: object,
    original: Callable[..., None],
    /,
) -> Callable[..., None]: ...
