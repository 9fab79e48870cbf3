"""The wheel's build hook (pyproject.toml, [tool.hatch.build.targets.wheel.hooks.custom]): compile
generated/agui_generated/_construct.c, the decoders' instance constructor, where a C compiler is.

Optional by design: without a compiler, without Python's headers, with AGUI_PURE_PYTHON=1, or on
any compiler error the build says why on stderr and goes on, and the wheel is the pure-Python one
(py3-none-any); the generated code then stores the slots in Python (_runtime.constructor). With
the extension the wheel is tagged for this interpreter and platform. An editable install compiles
it in place, beside the generated code (the file is git-ignored, and `python -m codegen --check`
passes over compiled modules)."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = "generated/agui_generated/_construct.c"
MODULE = "agui_generated/_construct"


def compile_extension(source: Path, target: Path) -> str | None:
    """Compile `source` into the extension module `target`; None, or why it was not built."""
    include = sysconfig.get_paths().get("include")
    if not include or not (Path(include) / "Python.h").is_file():
        return f"Python's headers are not installed (no Python.h in {include})"
    linker = sysconfig.get_config_var("LDSHARED")
    if sys.platform == "win32" or not linker:
        return "no C compiler configured for this Python (sysconfig LDSHARED)"
    words = [
        *shlex.split(linker),
        "-O2",
        "-fPIC",
        f"-I{include}",
        source.name,  # relative, so the same source makes the same bytes wherever it is built
        "-o",
        str(target.resolve()),
    ]
    try:
        done = subprocess.run(words, cwd=source.parent, capture_output=True, text=True, timeout=300)
    except (OSError, subprocess.SubprocessError) as error:
        return f"{words[0]} could not run: {error}"
    if done.returncode != 0:
        return f"{shlex.join(words)} failed:\n{done.stderr.strip()}"
    return None


class NativeHook(BuildHookInterface[Any]):
    PLUGIN_NAME = "custom"
    scratch: str | None = None

    def finalize(self, version: str, build_data: dict[str, Any], artifact_path: str) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        if os.environ.get("AGUI_PURE_PYTHON"):
            return
        source = Path(self.root) / SOURCE
        suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
        if version == "editable":
            target = source.with_name(f"_construct{suffix}")
        else:
            self.scratch = tempfile.mkdtemp(prefix="agui-native-")
            target = Path(self.scratch) / f"_construct{suffix}"
        target.unlink(missing_ok=True)  # an earlier editable build's
        why = compile_extension(source, target)
        if why is not None:
            print(f"agui-spec: building without the compiled constructor: {why}", file=sys.stderr)
            return
        if version != "editable":
            build_data["force_include"][str(target)] = f"{MODULE}{suffix}"
            build_data["pure_python"] = False
            build_data["infer_tag"] = True
