"""Conversion between the attrs models of `agui` and the generated pydantic models of `agui_pydantic`.

Both directions go through the wire form, so a conversion is exactly what sending the document
from one binding to the other would do. The pydantic class is the one with the same name as the
attrs class. pydantic and agui_pydantic are imported on the first call only: `import agui` never
needs them (`pip install 'agui-spec[pydantic]'` brings them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agui.errors import require_extra
from agui.wire.codec import decode_json, to_json

if TYPE_CHECKING:
    from pydantic import BaseModel


def _binding() -> Any:
    require_extra("pydantic", "the pydantic binding (to_pydantic, from_pydantic)")
    import agui_pydantic

    return agui_pydantic


def to_pydantic(model: Any) -> BaseModel:
    """The pydantic model (from `agui_pydantic`) equal on the wire to the attrs `model`.

    Raises TypeError for an object that has no pydantic counterpart (such as `agui.UnknownEvent`)
    and pydantic.ValidationError if the model breaks the contract (which the attrs constructors
    do not fully check: `agui.encode` writes what it is given)."""
    binding = _binding()
    name = type(model).__name__
    cls = getattr(binding, name, None)
    if not (isinstance(cls, type) and issubclass(cls, binding.WireModel)):
        raise TypeError(f"{name} has no counterpart in the pydantic binding")
    model_class: type[BaseModel] = cls
    return model_class.model_validate(to_json(model), by_alias=True, by_name=False)


def from_pydantic(obj: BaseModel) -> Any:
    """The attrs model (from `agui`) equal on the wire to the pydantic model `obj`.

    Members left unset are absent; the document is decoded strictly, so it raises
    agui.DecodeError when `obj` does not satisfy the contract (for instance a model built with
    `model_construct`)."""
    import agui

    name = type(obj).__name__
    cls = getattr(agui, name, None)
    if not isinstance(cls, type) or cls.__module__ != "agui_generated.models":
        raise TypeError(f"{name} has no counterpart among the attrs models")
    value = obj.model_dump(mode="json", by_alias=True, exclude_unset=True)
    return decode_json(value, cls, strict=True)
