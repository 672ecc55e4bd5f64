"""Marks the notebook cells nbval collects `notebook` and `slow` when notebooks/ is run alone
(tests/conftest.py does it when the whole suite is collected): see tests/tiers.py."""

from __future__ import annotations

import pytest
from tiers import mark_tiers


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    mark_tiers(items)
