"""The viz package face: lazy, and every public name resolves to its module's object."""

from __future__ import annotations

import pytest

import workbench.viz
from workbench.bench.startup import heavy_modules_loaded


def test_every_public_name_resolves() -> None:
    for name in workbench.viz.__all__:
        assert getattr(workbench.viz, name) is not None, name
    assert set(workbench.viz.__all__) <= set(dir(workbench.viz))
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        workbench.viz.nope  # noqa: B018


def test_importing_the_face_loads_no_heavy_library() -> None:
    assert heavy_modules_loaded("import workbench.viz") == []
