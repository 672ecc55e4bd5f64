"""The CPU features a llama.cpp build reports it uses, read from its one line of system info
("CPU : SSE3 = 1 | AVX2 = 1 | ..."): the engine's build record (`llm.embedded.build`) and the
comparison of two bundles' builds (`results.reproduction`) both read it here."""

from __future__ import annotations

BEYOND_PORTABLE: tuple[str, ...] = ("AVX512", "AMX", "AVX_VNNI", "SVE", "SME")
"""Feature name prefixes no portable baseline here includes (x86-64-v3, armv8.2-a): a library
reporting one was built for a wider CPU than its baseline."""


def enabled_features(reported: str) -> set[str]:
    """The feature names the line sets to 1 ("CPU : AVX2 = 1 | SSE3 = 1" -> {AVX2, SSE3})."""
    names = set()
    for part in reported.split("|"):
        name, _, value = part.partition("=")
        if value.strip() == "1":
            names.add(name.rsplit(":", 1)[-1].strip())
    return names
