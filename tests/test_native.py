"""The decoders' compiled constructor (generated/agui_generated/_construct.c, built by
codegen/build_hook.py where a C compiler is) and its pure-Python fallback: both make the same
instances, the compiled one is what this install uses when it could be built, it refuses classes
it cannot build safely, and it keeps reference counts right."""

from __future__ import annotations

import gc
import inspect
import json
import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import warnings
import weakref
from pathlib import Path
from typing import Any

import attrs
import pytest
from agui_generated import _runtime as rt, codec

import agui
from codegen.build_hook import compile_extension

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"

BUILT = [(name[3:], getattr(codec, name)) for name in dir(codec) if name.startswith("_B_")]
"""Every generated decoder's constructor, by class name."""


def compiler() -> str | None:
    """The compiler the build hook calls (sysconfig's LDSHARED), if it is installed."""
    linker = sysconfig.get_config_var("LDSHARED")
    include = Path(sysconfig.get_paths()["include"]) / "Python.h"
    if not linker or not include.is_file():
        return None
    return shutil.which(shlex.split(linker)[0])


def test_every_model_has_a_constructor() -> None:
    names = {cls.__name__ for cls in codec.ENCODERS if cls is not rt.UnknownEvent}
    assert names and names == {name for name, _ in BUILT}


def test_the_install_uses_the_compiled_constructor() -> None:
    if os.environ.get("AGUI_PURE_PYTHON"):
        pytest.skip("AGUI_PURE_PYTHON=1 leaves the extension unused")
    if compiler() is None:
        assert not os.environ.get("AGUI_REQUIRE_NATIVE"), "no C compiler, and CI requires one"
        pytest.skip("no C compiler for this Python (the build leaves the extension out)")
    # The build hook says why it could not build on stderr and goes on: this is what fails if it
    # stopped building here.
    assert rt.native_constructor is not None, "agui_generated._construct was not built"
    python = [name for name, built in BUILT if built is getattr(codec, f"_b_{name}")]
    assert not python, f"decoded in Python: {python}"


def slot_names(cls: type) -> list[str]:
    """The slots a decoder fills, in its constructor's order: the fields, then `extra` (the
    members an open definition keeps) where it is not a field."""
    names = [a.name for a in attrs.fields(cls)]
    return names + (["extra"] if "extra" in cls.__slots__ and "extra" not in names else [])


@pytest.mark.parametrize("name", [name for name, _ in BUILT])
def test_compiled_and_python_store_the_same_slots(name: str) -> None:
    cls = getattr(codec, name)
    names = slot_names(cls)
    values = [object() for _ in names]  # distinct, so a value stored in the wrong slot shows
    made = getattr(codec, f"_B_{name}")(*values)
    fallback = getattr(codec, f"_b_{name}")(*values)
    assert type(made) is cls and type(fallback) is cls
    for slot, value in zip(names, values, strict=True):
        assert getattr(made, slot) is value, slot
        assert getattr(fallback, slot) is value, slot


def fixture_documents() -> list[tuple[str, Any]]:
    return [
        (f"{path.parent.parent.name}/{path.name}", json.loads(path.read_text("utf-8")))
        for path in sorted(FIXTURES.glob("*/valid/*.json"))
    ]


def test_fixtures_decode_the_same_in_python(monkeypatch: pytest.MonkeyPatch) -> None:
    documents = fixture_documents()
    assert len(documents) > 100
    compiled = [decode_as(name, doc) for name, doc in documents]
    for name, _ in BUILT:
        monkeypatch.setattr(codec, f"_B_{name}", getattr(codec, f"_b_{name}"))
    python = [decode_as(name, doc) for name, doc in documents]
    assert compiled == python
    assert [repr(x) for x in compiled] == [repr(x) for x in python]


def decode_as(name: str, document: Any) -> Any:
    cls = getattr(agui, name.split("/")[0], None) or getattr(codec, name.split("/")[0])
    return agui.decode_json(document, cls, strict=True)


def test_refusals() -> None:
    native = rt.native_constructor
    if native is None:
        pytest.skip("the compiled constructor is not built here")
    built = codec._B_TextMessageContentEvent
    with pytest.raises(TypeError, match="takes 6 arguments, not 1"):
        built("x")
    with pytest.raises(TypeError, match="no keyword arguments"):
        built(*range(5), delta="x")

    class WithDict:
        pass

    class OwnNew:
        __slots__ = ("a",)

        def __new__(cls) -> OwnNew:
            return super().__new__(cls)

    class Slotted:
        __slots__ = ("a",)

        @property
        def b(self) -> int:
            return 1

    with pytest.raises(TypeError, match="not a plain slotted class"):
        native(WithDict, ())
    with pytest.raises(TypeError, match="not a plain slotted class"):
        native(OwnNew, ("a",))
    with pytest.raises(TypeError, match="'b' is not a slot of Slotted"):
        native(Slotted, ("a", "b"))
    with pytest.raises(TypeError, match="is not a slot"):
        native(agui.TextMessageContentEvent, ("message_id", "a"))
    with pytest.raises(TypeError, match="is not a slot of"):  # another class's slot
        native(agui.TextMessageContentEvent, (Slotted.__dict__["a"],))
    # A class it refuses is decoded by the fallback.
    assert rt.constructor(WithDict, (), len) is len


def test_reference_counts_and_collection() -> None:
    if rt.native_constructor is None:
        pytest.skip("the compiled constructor is not built here")
    built = codec._B_TextMessageContentEvent
    text = "".join(["a", "b"])  # not interned: its count is this test's
    before = sys.getrefcount(text)
    made = [built(None, None, None, None, text, text) for _ in range(1000)]
    assert sys.getrefcount(text) == before + 2000
    del made
    assert sys.getrefcount(text) == before
    # An instance in a cycle (its metadata holds it) is collected.
    metadata: dict[str, Any] = {}
    event = built(None, None, metadata, None, "m", "d")
    metadata["self"] = event
    gone = weakref.ref(event)
    del event, metadata
    gc.collect()
    assert gone() is None


def test_pure_python_when_asked() -> None:
    script = (
        "import agui\n"
        "from agui_generated import _runtime as rt, codec\n"
        "assert rt.native_constructor is None\n"
        "assert codec._B_TextMessageContentEvent is codec._b_TextMessageContentEvent\n"
        "import types\n"
        "assert type(agui.TextMessageContentEvent.__init__) is types.FunctionType\n"
        'e = agui.decode(b\'{"type":"TEXT_MESSAGE_CONTENT","messageId":"m","delta":"d"}\')\n'
        "print(e.delta)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "AGUI_PURE_PYTHON": "1"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == "d\n", done.stderr


def test_the_build_hook_goes_on_without_the_extension(tmp_path: Path) -> None:
    broken = tmp_path / "broken.c"
    broken.write_text("this is not C\n")
    target = tmp_path / f"broken{sysconfig.get_config_var('EXT_SUFFIX')}"
    why = compile_extension(broken, target)
    assert why is not None and not target.exists()
    if compiler() is not None:
        good = compile_extension(ROOT / "generated/agui_generated/_construct.c", target)
        assert good is None and target.is_file()


# ── the models' compiled __init__ ─────────────────────────────────────────────────────────────

MODELS = [cls for cls in codec.ENCODERS if cls is not rt.UnknownEvent]


def plain(cls: type) -> bool:
    """Whether attrs' __init__ does nothing but store the keywords (no converter, validator)."""
    return not any(f.converter or f.validator for f in attrs.fields(cls))


def attrs_init(cls: type) -> Any:
    init = cls.__dict__["__init__"]
    return getattr(init, "__wrapped__", init)


@pytest.mark.skipif(rt.native_constructor is None, reason="the extension is not built here")
def test_plain_models_use_the_compiled_init() -> None:
    compiled = {cls.__name__ for cls in MODELS if type(cls.__dict__["__init__"]).__name__ == "Init"}
    assert compiled == {cls.__name__ for cls in MODELS if plain(cls)}
    assert len(compiled) > 60
    # the ones with an enum member's converter keep attrs' (it converts a str to the enum)
    assert not hasattr(agui.TextMessageStartEvent.__init__, "__wrapped__")
    assert (
        agui.TextMessageStartEvent(message_id="m", role="assistant").role
        is agui.TextMessageRole.ASSISTANT
    )


@pytest.mark.parametrize("cls", MODELS, ids=lambda cls: cls.__name__)
def test_the_compiled_init_stores_what_attrs_does(cls: type) -> None:
    fields = attrs.fields(cls)
    given = {f.name: object() for f in fields}
    made, reference = object.__new__(cls), object.__new__(cls)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # a fork's deprecated member, set
        cls.__init__(made, **given)
        attrs_init(cls)(reference, **given)
    for f in fields:
        assert getattr(made, f.name) is getattr(reference, f.name) or f.converter, f.name
    required = {f.name: given[f.name] for f in fields if f.default is attrs.NOTHING}
    if not all(f.converter is None for f in fields):
        return
    defaults = cls(**required)
    for f in fields:
        expected = given[f.name] if f.name in required else f.default
        assert getattr(defaults, f.name) is expected, f.name
    assert inspect.signature(cls) == inspect.signature(attrs_init(cls)).replace(
        parameters=list(inspect.signature(attrs_init(cls)).parameters.values())[1:]
    )


def test_wrong_calls_are_type_errors() -> None:
    cls = agui.TextMessageContentEvent
    with pytest.raises(TypeError, match=r"missing (a|1) required keyword-only argument: 'delta'"):
        cls(message_id="m")
    with pytest.raises(TypeError, match="positional argument"):
        cls("m", "d")  # type: ignore[misc]
    with pytest.raises(TypeError, match="unexpected keyword argument 'deltas'"):
        cls(message_id="m", delta="d", deltas="x")  # type: ignore[call-arg]
    if rt.native_constructor is not None:
        with pytest.raises(TypeError, match="needs a TextMessageContentEvent, not object"):
            cls.__init__(object(), message_id="m", delta="d")  # type: ignore[arg-type]
        with pytest.raises(TypeError, match="needs the instance"):
            cls.__dict__["__init__"]()
    # __init__ again on a frozen instance, as attrs allows: the members are replaced.
    event = cls(message_id="m", delta="d")
    cls.__init__(event, message_id="n", delta="e")
    assert (event.message_id, event.delta) == ("n", "e")
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        event.delta = "f"  # type: ignore[misc]


def test_a_subclass_that_re_declares_a_slot_gets_attrs_init() -> None:
    """A subclass's own slot of a member lies at another offset than the base class's: the
    compiled __init__ it inherits leaves the instance to attrs' (which stores through the
    subclass's descriptors) instead of storing where the base class has it."""

    class Redeclared(agui.TextMessageContentEvent):
        __slots__ = ("delta",)

    class Plain(agui.TextMessageContentEvent):
        __slots__ = ()

    for cls in (Redeclared, Plain):
        event = cls(message_id="m", delta="d")
        assert (event.message_id, event.delta) == ("m", "d")
        with pytest.raises(TypeError, match=r"missing (a|1) required keyword-only argument"):
            cls(message_id="m")


def test_the_compiled_init_keeps_counts() -> None:
    text = "".join(["c", "d"])
    before = sys.getrefcount(text)
    made = [agui.TextMessageContentEvent(message_id=text, delta=text) for _ in range(1000)]
    assert sys.getrefcount(text) == before + 2000
    event = made[0]
    agui.TextMessageContentEvent.__init__(event, message_id="x", delta="y")  # replaces two refs
    assert sys.getrefcount(text) == before + 1998
    del made, event
    assert sys.getrefcount(text) == before
