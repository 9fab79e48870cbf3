"""The generated package's hand-written support, as the modules they are: `python -m codegen`
copies each file here into agui_generated/ as it is, under the same name (a banner above it), so
ruff and mypy check them here, where they are written, and the generated tree holds no other copy
to edit.

- `_runtime.py`: what the generated decoders and encoders share (problem records, the decode
  context, the errors, the check of any-JSON values, the slow paths).
- `_formats.py`: the string formats' one implementation; the generator checks the spec's examples
  with it, the generated decoders and encoders and the pydantic binding test strings with it.
- `_construct.c` and its stub `_construct.pyi`: the decoders' compiled constructor, which the
  wheel's build hook (codegen/build_hook.py) compiles where a C compiler is.

They are a package because they import each other by the relative names they have in the
generated tree (`from . import _formats`, `from ._construct import constructor`).
"""

from ._formats import FORMATS, conforms, expression
from ._runtime import MAX_JSON_DEPTH

__all__ = ["FORMATS", "MAX_JSON_DEPTH", "conforms", "expression"]
