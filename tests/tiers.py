"""The test tiers: which markers each collected test gets, from its path and its fixtures.

`pytest -m "not slow"` is the quick tier for development; `pytest` runs everything. A test is
`slow` when it is `browser`, `notebook` (executed), `ray` or `vllm`, or when it loads the embedded
model or starts a model server (the fixtures in `MODEL_FIXTURES`); tests that are slow for other
reasons (subprocess runs of the CLI, the wheel build, the kill tests) carry `slow` by hand.
Marking here, by path and fixture, keeps a new test in the right tier without anyone
remembering to mark it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
BROWSER_DIR = REPO / "tests" / "browser"
NOTEBOOK_DIR = REPO / "notebooks"
NOTEBOOK_CHECKS = REPO / "tests" / "test_notebooks.py"

MODEL_FIXTURES = frozenset({"embedded_model", "llm_server", "own_llm_server", "start_llm_server"})
"""Fixtures that load the embedded SmolLM2 on llama.cpp, in this process or a server's."""

RAY_FIXTURES = frozenset({"ray_cluster"})
BROWSER_FIXTURES = frozenset({"browser", "page", "watched"})
SLOW_TIERS = frozenset({"browser", "ray", "vllm"})
"""Markers that imply `slow` (an executed notebook is `slow` too; the storage checks are not)."""


def tiers_of(item: pytest.Item) -> set[str]:
    """The markers `item` should carry: what its path and fixtures say, plus `slow` for the
    heavy tiers (its own markers count too, so a hand-marked `ray` test is also `slow`)."""
    path = Path(item.path)
    fixtures = set(getattr(item, "fixturenames", ()))
    tiers = {marker.name for marker in item.iter_markers()}
    if path.is_relative_to(BROWSER_DIR) or fixtures & BROWSER_FIXTURES:
        tiers.add("browser")
    if fixtures & RAY_FIXTURES:
        tiers.add("ray")
    if path.suffix == ".ipynb" and path.is_relative_to(NOTEBOOK_DIR):
        tiers |= {"notebook", "slow"}  # a cell nbval executes
    if path == NOTEBOOK_CHECKS:
        tiers.add("notebook")  # how the notebooks are stored
    if fixtures & MODEL_FIXTURES or tiers & SLOW_TIERS:
        tiers.add("slow")
    return tiers


def mark_tiers(items: list[pytest.Item]) -> None:
    """Add to each item the tier markers it lacks (idempotent: conftests may both call it)."""
    for item in items:
        present = {marker.name for marker in item.iter_markers()}
        for name in sorted(tiers_of(item) - present):
            item.add_marker(name)
