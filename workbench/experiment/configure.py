"""One config from a base and dotted-key overrides: how notebooks and scripts vary a run.

    config = wb.configure("quickstart", {"n_agents": 50, "game.ratio": "1/2"})
    config = wb.configure("quickstart", wb.model_overrides(base_url="http://127.0.0.1:8000/v1"))

The overrides are the keys a sweep grid and `workbench run --set` take, applied by the one
function (`config.overrides.apply_overrides`), so a notebook's parameters, a sweep's cells and a
command line mean the same thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from workbench._examples import example_names, example_path
from workbench.config import RunConfig, apply_overrides, load_run_config, resolve_population


def base_config(base: RunConfig | str | Path) -> tuple[RunConfig, Path | None]:
    """A config from itself, a packaged example's name ("quickstart") or a YAML file, and the
    folder its relative paths start in."""
    if isinstance(base, RunConfig):
        return resolve_population(base), None
    path = Path(base)
    if not path.is_file() and str(base).removesuffix(".yaml") in example_names():
        path = example_path(str(base))
    return load_run_config(path), path.parent


def configure(
    base: RunConfig | str | Path, overrides: Mapping[str, Any] | None = None
) -> RunConfig:
    """`base` (a config, an example name or a YAML file) with each dotted key of `overrides`
    replaced, validated: one ConfigError naming the key and the fix for a bad value."""
    config, folder = base_config(base)
    return apply_overrides(config, overrides or {}, "overrides", base=folder)


def model_overrides(
    model: str = "embedded", base_url: str | None = None, name: str | None = None
) -> dict[str, Any]:
    """Overrides that choose the model from notebook parameters: the embedded default, or the
    OpenAI-compatible server at `base_url` (vLLM in production) serving model `name`."""
    if base_url is None:
        return {"model.kind": model}
    overrides: dict[str, Any] = {"model.kind": "openai", "model.base_urls": [base_url]}
    if name is not None:
        overrides["model.name"] = name
    return overrides
