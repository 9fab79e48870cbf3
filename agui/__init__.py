"""agui: the AG-UI protocol for Python, generated from one canonical spec.

Every model class, enum and union of the spec is available here (`agui.RunAgentInput`,
`agui.TextMessageContentEvent`, `agui.Role`, `agui.Event`, `agui.Message`, ...), with `encode`
and `decode` for the wire form.
"""

import agui_generated as _generated
from agui_generated import *  # noqa: F403 - the generated models are the public API

from agui.codec import EncodeError, UnknownEvent, decode, decode_json, encode, to_json

__all__ = ["EncodeError", "UnknownEvent", "decode", "decode_json", "encode", "to_json"]
__all__ += _generated.__all__
