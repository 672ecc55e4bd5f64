"""wb.configure: a base config with dotted-key overrides, as notebooks vary their runs."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.config import PopulationSpec
from workbench.errors import ConfigError


def test_an_example_name_with_overrides_gives_a_validated_config() -> None:
    config = wb.configure("quickstart", {"n_agents": 7, "game.ratio": "1/2", "seed": 3})
    assert (config.n_agents, config.seed) == (7, 3)
    assert config.game.ratio == pytest.approx(0.5)
    assert isinstance(config.population, PopulationSpec)  # the example's relative path resolved
    assert wb.configure(config).n_agents == 7  # a config passes through


def test_a_bad_value_names_the_key() -> None:
    with pytest.raises(ConfigError, match="n_agents"):
        wb.configure("quickstart", {"n_agents": 0})
    with pytest.raises(ConfigError, match="not a dotted config key"):
        wb.configure("quickstart", {"game ratio": 1})


def test_model_overrides_pick_a_served_model_from_notebook_parameters() -> None:
    assert wb.model_overrides() == {"model.kind": "embedded"}
    served = wb.model_overrides(base_url="http://127.0.0.1:9/v1", name="qwen")
    config = wb.configure("quickstart", served)
    assert (config.model.kind, config.model.base_urls, config.model.name) == (
        "openai",
        ["http://127.0.0.1:9/v1"],
        "qwen",
    )


def test_a_mixed_population_added_by_an_override_keeps_its_per_model_statistics() -> None:
    models = {"cold": {"kind": "embedded", "temperature": 0.0}, "warm": {"kind": "embedded"}}
    mixed = {"models": models, "model_shares": {"cold": 0.5, "warm": 0.5}}
    assert wb.configure("quickstart", mixed).game.group_by == "model"
    assert wb.configure("quickstart", {**mixed, "game.group_by": None}).game.group_by is None
