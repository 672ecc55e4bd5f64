"""Which llama.cpp build answers: its record from the set-up, and the CPU features it uses.

llama.cpp's logits, so its answers, follow the instructions its build compiled in. `.ci/setup`
builds one of two ways and writes what it did to `llama-build.json` in the environment:
`portable` (one fixed instruction-set baseline, x86-64-v3 on x86-64: the same answers on every
machine of that baseline) or `native` (this CPU's own features: the same answers only where the
features are the same). `engine_build` reads that record and checks it against what the loaded
library reports (`built_for`), so a record that does not match its library is never trusted.
"""

from __future__ import annotations

import json
import sys
from functools import lru_cache
from pathlib import Path
from typing import Any

from workbench._cpu_features import BEYOND_PORTABLE, enabled_features

BUILD_RECORD = "llama-build.json"
"""The set-up's record of the llama.cpp build, in the environment's prefix (`sys.prefix`)."""


def built_for() -> str:
    """The CPU features this llama.cpp build uses, as it reports them ("AVX2 = 1 | ...")."""
    import llama_cpp

    info = llama_cpp.llama_print_system_info().decode("utf-8", "replace")
    return " | ".join(part.strip() for part in info.split("|") if part.strip())


@lru_cache(maxsize=1)
def engine_build() -> dict[str, Any]:
    """The build's record: `build` (portable, native or unknown), `baseline`, the compiler and
    CMake flags from the set-up's record, and `built_for` from the library itself. `unknown`
    (with a `note` saying why) when there is no record, or the record claims a portable
    baseline the library's features exceed."""
    reported = built_for()
    path = Path(sys.prefix) / BUILD_RECORD
    try:
        record = json.loads(path.read_text())
        if not isinstance(record, dict):
            raise ValueError("not a JSON object")
    except FileNotFoundError:
        return {
            "build": "unknown",
            "built_for": reported,
            "note": f"no {BUILD_RECORD} in {sys.prefix}: llama-cpp-python was not installed by "
            "`bash .ci/setup`, so its flags are not known",
        }
    except ValueError as exc:
        return {"build": "unknown", "built_for": reported, "note": f"{path}: {exc}"}
    build = {**record, "built_for": reported}
    wider = sorted(f for f in enabled_features(reported) if f.startswith(BEYOND_PORTABLE))
    if record.get("build") == "portable" and wider:
        build["build"] = "unknown"
        build["note"] = (
            f"{path} says portable ({record.get('baseline')}) but the library uses "
            f"{', '.join(wider)}: it was installed otherwise; run `bash .ci/setup` again"
        )
    return build
