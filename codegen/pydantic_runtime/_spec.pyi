# The shape of the generated agui_pydantic/_spec.py (codegen/templates/pydantic_spec.py.jinja),
# which _base.py imports: for mypy here only, never copied.
from typing import Any

CONSTANTS: dict[str, tuple[tuple[str, str, str], ...]]
DEFAULTS: dict[str, dict[str, Any]]
