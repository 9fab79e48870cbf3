"""agui: the AG-UI protocol for Python, generated from one canonical spec.

Every model class, enum and union of the spec is available here (`agui.RunAgentInput`,
`agui.TextMessageContentEvent`, `agui.Role`, `agui.Event`, `agui.Message`, ...), with `encode`
and `decode` for the wire form.
"""

from agui_generated import *  # noqa: F403 - the generated models are the public API
from agui_generated import __all__ as _models

from agui.codec import EncodeError, UnknownEvent, decode, decode_json, encode, to_json

__all__ = sorted(
    [*_models, "EncodeError", "UnknownEvent", "decode", "decode_json", "encode", "to_json"]
)
