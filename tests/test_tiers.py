"""The tiers as collected: no test in the quick tier drives a browser, runs a notebook, needs Ray
or vLLM, or loads the model; `slow` covers every heavy tier (see tiers.py)."""

from __future__ import annotations

from pathlib import Path

import pytest
from tiers import BROWSER_DIR, MODEL_FIXTURES, NOTEBOOK_DIR, RAY_FIXTURES, SLOW_TIERS


def _marks(item: pytest.Item) -> set[str]:
    return {marker.name for marker in item.iter_markers()}


def test_the_quick_tier_holds_no_heavy_test(request: pytest.FixtureRequest) -> None:
    """Over this session's items (the whole suite under plain `pytest`)."""
    items = request.session.items
    assert request.node in items
    heavy = []
    for item in items:
        marks, path = _marks(item), Path(item.path)
        fixtures = set(getattr(item, "fixturenames", ()))
        if "slow" in marks:
            continue
        if (
            marks & SLOW_TIERS
            or fixtures & (MODEL_FIXTURES | RAY_FIXTURES)
            or path.is_relative_to(BROWSER_DIR)
            or (path.is_relative_to(NOTEBOOK_DIR) and path.suffix == ".ipynb")
        ):
            heavy.append(item.nodeid)
    assert heavy == []


def test_the_tiers_say_what_they_select(request: pytest.FixtureRequest) -> None:
    """Each heavy tier's tests carry its marker and `slow`, whichever tier collected them."""
    for item in request.session.items:
        marks, path = _marks(item), Path(item.path)
        fixtures = set(getattr(item, "fixturenames", ()))
        if path.is_relative_to(BROWSER_DIR):
            assert {"browser", "slow"} <= marks, item.nodeid
        if path.suffix == ".ipynb":
            assert {"notebook", "slow"} <= marks, item.nodeid
        if fixtures & RAY_FIXTURES:
            assert {"ray", "slow"} <= marks, item.nodeid
