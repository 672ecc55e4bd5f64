"""The RunLauncher's settings: game, prompt variant, policy, model or endpoint, backend.

`LaunchSettings` holds them as documented params named after the config fields they set and
turns them into one `RunConfig` (`config()`), validated as the CLI validates a file, so a bad
value gives the CLI's one-line ConfigError. `settings_view()` is their form; the RunLauncher
(its subclass) adds Run, Cancel and the run's progress.
"""

from __future__ import annotations

import re
from functools import cache
from typing import Any, Self

import panel as pn
import param

from workbench._examples import example_path
from workbench.config import (
    EXTRACT_NUMBER_CHOICES,
    MAX_AGENTS,
    POLICY_KINDS,
    PopulationSpec,
    RunConfig,
    load_run_config,
    validate,
)
from workbench.errors import ConfigError
from workbench.ui.workspace import inside, workspace_param

__all__ = ["MODEL_KINDS", "LaunchSettings", "quickstart_population"]

MODEL_KINDS = ("embedded", "openai", "replay", "vllm")
"""The model kinds offered (config.model.ModelSpec.kind)."""


@cache
def quickstart_population() -> PopulationSpec:
    """The quickstart example's population (the paper's education population)."""
    population = load_run_config(example_path("quickstart")).population
    assert isinstance(population, PopulationSpec)
    return population


def _urls(text: str) -> list[str]:
    """Endpoint URLs from text separated by commas, spaces or new lines."""
    return [u for u in re.split(r"[\s,]+", text.strip()) if u]


class LaunchSettings(param.Parameterized):
    """Everything a run is configured with; `config()` is the RunConfig they describe."""

    @classmethod
    def for_editor(cls, editor: Any, **params: Any) -> Self:
        """Settings (a RunLauncher, called on it) following a PopulationEditor: its spec, its
        message (an invalid spec starts nothing), its N and seed (the run plays the agents
        the preview shows)."""
        return cls(
            population=editor.param.spec,
            population_problem=editor.param.message,
            n_agents=editor.param.n,
            seed=editor.param.seed,
            **params,
        )

    # ---- where runs go ----------------------------------------------------------------------
    results_dir = param.String(
        "results", doc="the results folder: bundles go here, launch records in its .launches/"
    )
    ray_address = param.String(
        None,
        allow_None=True,
        doc="Ray cluster address for backend ray (backend.address): the dashboard's --ray, "
        "never typed in the page; None: the run's process starts a local Ray cluster",
    )
    workspace = workspace_param()

    # ---- who plays -------------------------------------------------------------------------
    population = param.ClassSelector(
        class_=PopulationSpec,
        default=None,
        allow_None=True,
        allow_refs=True,
        doc="the population (bind it to PopulationEditor.param.spec); None: the quickstart "
        "example's education population, unless population_problem says why there is none",
    )
    population_problem = param.String(
        "",
        allow_refs=True,
        doc="why there is no population (bind it to PopulationEditor.param.message): while "
        "set, config() raises it and nothing starts",
    )
    run_name = param.String(
        "dashboard", label="Run name", doc="the run's name: it starts the bundle's folder name"
    )
    n_agents = param.Integer(
        50,
        bounds=(0, MAX_AGENTS),
        allow_refs=True,
        label="Agents",
        doc="agents in the game (0 is refused by config() with the CLI's message)",
    )
    seed = param.Integer(
        42, bounds=(0, None), allow_refs=True, label="Seed", doc="the run's seed (personas too)"
    )

    # ---- the game (GameSpec, PromptSpec) ------------------------------------------------------
    ratio = param.Number(2 / 3, bounds=(0, 1), label="Ratio p", doc="game.ratio, in (0, 1]")
    offset = param.Number(0.0, label="Offset", doc="game.offset: target = offset + p * mean")
    low = param.Number(0.0, label="Lowest guess", doc="game.low, inclusive")
    high = param.Number(100.0, label="Highest guess", doc="game.high, inclusive, > low")
    rounds = param.Integer(2, bounds=(1, 1000), label="Rounds", doc="game.rounds, 1-1000")
    prompt_style = param.Selector(
        default="direct",
        objects=["direct", "step_by_step"],
        label="Prompt",
        doc="game.prompt.style: direct (the paper's prompt 1) or step_by_step (prompts 2-4)",
    )
    rational_note = param.Boolean(
        False, label="All players are rational", doc="game.prompt.rational_note (prompt 3)"
    )
    strategy_note = param.Boolean(
        False, label="Players guess strategies", doc="game.prompt.strategy_note (prompt 4)"
    )
    famous_game_note = param.Boolean(
        False, label="Famous game note", doc="game.prompt.famous_game_note"
    )
    persona = param.Boolean(True, label="Persona in prompt", doc="game.prompt.persona")
    population_note = param.Boolean(
        False, label="Population note", doc="game.prompt.population_note"
    )

    # ---- the policy -----------------------------------------------------------------------
    policy = param.Selector(
        default="llm", objects=list(POLICY_KINDS), label="Policy", doc="policy.kind"
    )
    extract_number = param.Selector(
        default="never",
        objects=list(EXTRACT_NUMBER_CHOICES),
        label="Extract number",
        doc="policy.extract_number (llm): the paper's second call",
    )
    level_k_tau = param.Number(
        None,
        allow_None=True,
        bounds=(0, 20),
        label="tau",
        doc="policy.tau (level_k): Poisson depths; None: the default depth shares",
    )
    random_latency_s = param.Number(
        0.0, bounds=(0, 3600), label="Latency (s)", doc="policy.latency_s (random)"
    )

    # ---- the model (ModelSpec) --------------------------------------------------------------
    model_kind = param.Selector(
        default="embedded", objects=list(MODEL_KINDS), label="Model", doc="model.kind"
    )
    base_urls = param.String(
        "",
        label="Endpoint URL(s)",
        doc="model.base_urls (openai), separated by commas or spaces: http://host:8000/v1",
    )
    model_name = param.String(
        "", label="Model name", doc="model.name: what the server serves (openai), or loads (vllm)"
    )
    api_key_env = param.String(
        "", label="API key variable", doc="model.api_key_env (openai); the key is never stored"
    )
    replay_bundle = param.String(
        "", label="Replay bundle", doc="model.bundle (replay), inside `workspace` when set"
    )
    temperature = param.Number(0.7, bounds=(0, 2), label="Temperature", doc="model.temperature")
    max_tokens = param.Integer(4, bounds=(1, 4096), label="Max tokens", doc="model.max_tokens")
    n_threads = param.Integer(
        None, allow_None=True, bounds=(1, None), label="Threads", doc="model.n_threads (embedded)"
    )

    # ---- the backend ------------------------------------------------------------------------
    backend = param.Selector(
        default="local", objects=["local", "ray"], label="Backend", doc="backend.kind"
    )
    agents_per_actor = param.Integer(
        None,
        allow_None=True,
        bounds=(1, None),
        label="Agents per actor",
        doc="backend.agents_per_actor (a shard's size); None: the backend's default",
    )

    def config(self) -> RunConfig:
        """The RunConfig the settings describe; ConfigError (the CLI's message) otherwise."""
        if self.population_problem:
            raise ConfigError(self.population_problem)
        population = self.population if self.population is not None else quickstart_population()
        policy: dict[str, Any] = {"kind": self.policy}
        if self.policy == "llm":
            policy["extract_number"] = self.extract_number
        elif self.policy == "level_k" and self.level_k_tau is not None:
            policy["tau"] = self.level_k_tau
        elif self.policy == "random":
            policy["latency_s"] = self.random_latency_s
        backend: dict[str, Any] = {"kind": self.backend}
        if self.agents_per_actor is not None:
            backend["agents_per_actor"] = self.agents_per_actor
        if self.backend == "ray" and self.ray_address:
            backend["address"] = self.ray_address
        data: dict[str, Any] = {
            "name": self.run_name,
            "seed": self.seed,
            "n_agents": self.n_agents,
            "population": population.model_dump(mode="json"),
            "game": {
                "ratio": self.ratio,
                "offset": self.offset,
                "low": self.low,
                "high": self.high,
                "rounds": self.rounds,
                "prompt": {
                    "style": self.prompt_style,
                    "rational_note": self.rational_note,
                    "strategy_note": self.strategy_note,
                    "famous_game_note": self.famous_game_note,
                    "persona": self.persona,
                    "population_note": self.population_note,
                },
            },
            "policy": policy,
            "backend": backend,
        }
        if self.policy == "llm":
            data["model"] = self._model_data()
        return validate(RunConfig, data, "run config")

    def _model_data(self) -> dict[str, Any]:
        model: dict[str, Any] = {
            "kind": self.model_kind,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        if self.model_kind == "openai":
            model["base_urls"] = _urls(self.base_urls)
            model["name"] = self.model_name or None
            model["api_key_env"] = self.api_key_env or None
        elif self.model_kind == "vllm":
            model["name"] = self.model_name or None
        elif self.model_kind == "replay":
            bundle = self.replay_bundle.strip()
            model["bundle"] = (
                str(inside(self.workspace, bundle, "model.bundle")) if bundle else None
            )
        elif self.n_threads is not None:
            model["n_threads"] = self.n_threads
        return model

    def settings_view(self) -> pn.viewable.Viewable:
        """The settings form (built on call, from the params)."""
        w = pn.widgets
        game = pn.Column(
            pn.pane.Markdown("**Game**"),
            w.TextInput.from_param(self.param.run_name),
            w.IntInput.from_param(self.param.n_agents),
            w.IntInput.from_param(self.param.seed),
            w.FloatInput.from_param(self.param.ratio, step=0.01),
            w.FloatInput.from_param(self.param.offset),
            w.FloatInput.from_param(self.param.low),
            w.FloatInput.from_param(self.param.high),
            w.IntInput.from_param(self.param.rounds),
        )
        prompt = pn.Column(
            pn.pane.Markdown("**Prompt**"),
            w.Select.from_param(self.param.prompt_style),
            w.Checkbox.from_param(self.param.rational_note),
            w.Checkbox.from_param(self.param.strategy_note),
            w.Checkbox.from_param(self.param.famous_game_note),
            w.Checkbox.from_param(self.param.persona),
            w.Checkbox.from_param(self.param.population_note),
        )
        policy = pn.Column(
            pn.pane.Markdown("**Policy**"),
            w.Select.from_param(self.param.policy),
            w.Select.from_param(self.param.extract_number),
            w.FloatInput.from_param(self.param.level_k_tau),
            w.FloatInput.from_param(self.param.random_latency_s),
        )
        model = pn.Column(
            pn.pane.Markdown("**Model**"),
            w.Select.from_param(self.param.model_kind),
            w.TextInput.from_param(self.param.base_urls),
            w.TextInput.from_param(self.param.model_name),
            w.TextInput.from_param(self.param.api_key_env),
            w.TextInput.from_param(self.param.replay_bundle),
            w.FloatInput.from_param(self.param.temperature, step=0.1),
            w.IntInput.from_param(self.param.max_tokens),
            w.IntInput.from_param(self.param.n_threads),
        )
        backend = pn.Column(
            pn.pane.Markdown("**Backend**"),
            w.Select.from_param(self.param.backend),
            w.IntInput.from_param(self.param.agents_per_actor),
        )
        return pn.FlexBox(game, prompt, policy, model, backend)
