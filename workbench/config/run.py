"""The run config: everything one run needs, from population to output folder."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated, Any

from pydantic import Discriminator, Field, Tag, field_validator, model_validator

from workbench._files import results_dir
from workbench.config.backend import BackendSpec
from workbench.config.base import (
    RUN_NAME_PATTERN,
    SHARE_TOLERANCE,
    StrictModel,
    UnionTags,
    parse_number,
)
from workbench.config.game import GameSpec
from workbench.config.html import fields, share, spec_summary, title
from workbench.config.model import ModelSpec
from workbench.config.policy import POLICY_KINDS, LLMPolicySpec, PolicySpec
from workbench.config.population import PopulationSpec, population_summary
from workbench.errors import ConfigError

MAX_AGENTS = 100_000_000
"""Most agents one run (or one sampled persona set) may have."""

MAX_NAME_LENGTH = 200
"""Longest run name: the bundle folder adds 21 characters and file names stop at 255 bytes."""

SPEC_FORM = "spec"
PATH_FORM = "path"
"""The two forms a `population` value takes: an inline spec, or the path of a spec file."""


class OutputSpec(StrictModel):
    """Where bundles go, and what they keep beside the answers."""

    dir: str | None = Field(
        None,
        description="directory that holds result bundles (a relative one is read from the "
        "current directory); unset: the workbench's results folder ($WORKBENCH_RESULTS_DIR, "
        "else results/ at the project root, the nearest folder up with a pyproject.toml or "
        ".git, else ./results); each run adds a folder <name>-<yyyymmdd-HHMMSS>-<4 hex>",
    )
    exact_distributions: bool = Field(
        False,
        description="distribution mode: after each round, walk its distinct prompts whole and "
        "keep every prompt's exact answer distribution in the bundle (exact/round-<k>/), so "
        "group means and spreads are known exactly beside the sampled ones; costs up to about "
        "a round's work again (nodes the run scored are reused); local backend, one model",
    )

    def folder(self, out: str | Path | None = None) -> Path:
        """Where this run's bundle goes: `out` (a command's --out) when given, else `dir`,
        else the workbench's results folder (`results_dir`)."""
        return results_dir(out if out is not None else self.dir)


def _population_form(value: Any) -> str | None:
    """Which form a `population` value takes: an inline spec or a path (None: neither)."""
    if isinstance(value, dict | PopulationSpec):
        return SPEC_FORM
    if isinstance(value, str | Path):
        return PATH_FORM
    return None


PopulationField = Annotated[
    Annotated[PopulationSpec, Tag(SPEC_FORM)] | Annotated[str, Tag(PATH_FORM)],
    Discriminator(
        _population_form,
        custom_error_type="population_form",
        custom_error_message=(
            "expected a population spec (a mapping with 'dimensions') or the path of a "
            "population YAML file"
        ),
    ),
]
"""An inline population spec or a path to one; a bad value reports only the form it took."""

UNION_TAGS: UnionTags = frozenset(
    {("population", form) for form in (SPEC_FORM, PATH_FORM)}
    | {("policy", kind) for kind in POLICY_KINDS}
)
"""(field, tag) location pairs that pydantic adds for RunConfig's tagged unions."""


class RunConfig(StrictModel):
    """Everything one run needs; saved resolved into every bundle as config.yaml."""

    union_tags = UNION_TAGS

    name: str = Field(
        "run",
        title="Run name",
        min_length=1,
        pattern=RUN_NAME_PATTERN,
        description=f"the run's name, at most {MAX_NAME_LENGTH} characters (letters, digits, "
        "_ . -, starting with a letter or digit); it starts the bundle's folder name",
    )
    seed: int = Field(
        0,
        ge=0,
        lt=2**63,
        description="seed for sampling personas and for random policies; the same seed and "
        "config give the same agents",
    )
    n_agents: int = Field(
        100,
        title="Agents",
        ge=1,
        le=MAX_AGENTS,
        description=f"agents in the game, 1 to {MAX_AGENTS:,}",
    )
    population: PopulationField = Field(
        description="a population spec inline, or a path to one (relative to the config file)"
    )
    game: GameSpec = Field(
        default_factory=GameSpec, description="the game's rules, rounds and prompt variant"
    )
    policy: PolicySpec = Field(
        default_factory=LLMPolicySpec,
        description=f"how agents choose their guess, by kind: {', '.join(POLICY_KINDS)}",
    )
    model: ModelSpec = Field(
        default_factory=ModelSpec,
        description="the language model behind LLM agents (unused by other policies)",
    )
    models: dict[str, ModelSpec] = Field(
        default_factory=dict,
        description="named models for a mixed population (the paper's 500 agents each of three "
        "models); model_shares assigns them to agents as a persona column `model`",
    )
    model_shares: dict[str, float] = Field(
        default_factory=dict, description="share of agents per named model (exact quota)"
    )
    backend: BackendSpec = Field(
        default_factory=BackendSpec, description="where shards of agents run: local or ray"
    )
    output: OutputSpec = Field(default_factory=OutputSpec, description="where bundles go")
    max_estimated_seconds: float | None = Field(
        None,
        gt=0,
        description="refuse to start when the run's estimated seconds (workbench run "
        "--estimate: round 1 counted and walked, later rounds estimated) exceed this; the "
        "estimate costs about what round 1 costs; none: no limit",
    )
    max_failed_share: float = Field(
        0.5,
        ge=0,
        le=1,
        description="the run stops as failed (resumable) when more than this share of a "
        "round's answers failed (model_error or timeout), before the round is stored; "
        "0: any failure stops it, 1: never stop",
    )

    @model_validator(mode="before")
    @classmethod
    def _group_by_model(cls, data: Any) -> Any:
        """A mixed population keeps per-model statistics unless told to group otherwise."""
        if isinstance(data, dict) and data.get("models"):
            game = data.get("game")
            game = dict(game) if isinstance(game, dict) else {}
            game.setdefault("group_by", "model")
            data = {**data, "game": game}
        return data

    @field_validator("model_shares", mode="before")
    @classmethod
    def _share_fractions(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {str(k): parse_number(v) for k, v in value.items()}
        return value

    @field_validator("max_failed_share", mode="before")
    @classmethod
    def _failed_share_fraction(cls, value: Any) -> Any:
        return parse_number(value)

    @field_validator("name")
    @classmethod
    def _name_fits_a_folder(cls, value: str) -> str:
        """The bundle folder `<name>-<timestamp>-<hex>` must fit NAME_MAX (255 bytes)."""
        if len(value) > MAX_NAME_LENGTH:
            raise ValueError(
                f"at most {MAX_NAME_LENGTH} characters (it starts the bundle's folder name, and "
                f"file systems allow 255), got {len(value)}; use a shorter name"
            )
        return value

    @field_validator("population", mode="before")
    @classmethod
    def _path_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

    def _repr_html_(self) -> str:
        """A few lines for notebooks: name, N, population, game, policy, model, backend."""
        return run_config_html(self)

    def as_written(self) -> dict[str, Any]:
        """The config as JSON data with numbers as a researcher writes them (`ratio: 2/3`):
        for people to read (tables, printed YAML); it loads back into an equal config."""
        return self.model_dump(mode="json") | {"game": self.game.as_written()}

    def with_base_urls(self, urls: Sequence[str], where: str = "base_urls") -> RunConfig:
        """This config with its model reached at `urls` (a restarted server on a new port).

        Where the model answers, not what answers: a resumed run may change it. ConfigError,
        starting with `where`, unless the run has one model of kind openai and the URLs are valid.
        """
        if self.models:
            raise ConfigError(
                f"{where}: this run names several models (models: {sorted(self.models)}); "
                "set each one's base_urls in the config instead"
            )
        if self.model.kind != "openai":
            raise ConfigError(
                f"{where}: the run's model is kind {self.model.kind!r}; base URLs are for "
                "kind openai"
            )
        data = self.model_dump(mode="json")
        data["model"]["base_urls"] = list(urls)
        return type(self).validate_data(data, where)

    @model_validator(mode="after")
    def _consistent(self) -> RunConfig:
        llm = isinstance(self.policy, LLMPolicySpec)
        if llm and self.model.constrained and math.ceil(self.game.low) > math.floor(self.game.high):
            raise ValueError(
                f"game: the range [{self.game.low}, {self.game.high}] holds no whole number, "
                "but constrained models answer whole numbers; widen the range or set "
                "model.constrained: false"
            )
        if self.models or self.model_shares:
            if set(self.model_shares) != set(self.models):
                raise ValueError(
                    f"model_shares must give a share for each of models {sorted(self.models)}, "
                    f"got {sorted(self.model_shares)}"
                )
            total = sum(self.model_shares.values())
            if any(v < 0 for v in self.model_shares.values()) or abs(total - 1) > SHARE_TOLERANCE:
                raise ValueError(f"model_shares must be >= 0 and sum to 1, got {total:.6g}")
            if not llm:
                raise ValueError("models are for policy kind llm; remove them or use kind: llm")
        return self


def model_summary(config: RunConfig) -> str:
    """Which model answers: kind and name/path/endpoint count; "unused" for baseline policies."""
    if config.policy.kind != "llm":
        return f"unused (policy {config.policy.kind})"
    if config.models:
        return "mixed: " + ", ".join(f"{k} {share(v)}" for k, v in config.model_shares.items())
    model = config.model
    what = (
        model.name
        or model.path
        or model.bundle
        or ("shipped SmolLM2-135M" if model.kind == "embedded" else "")
    )
    where = f", {len(model.base_urls)} endpoint(s)" if model.base_urls else ""
    return f"{model.kind}: {what}{where}, temperature {model.temperature:g}"


def run_config_html(config: RunConfig) -> str:
    """A run config in a few lines: name, seed, N, population, game, policy, model, backend."""
    game = config.game
    prompt = game.prompt
    notes = [
        n for n in ("rational_note", "strategy_note", "famous_game_note") if getattr(prompt, n)
    ]
    game_line = (
        f"{game.offset:g} + {game.ratio:.4g} x mean, range [{game.low:g}, {game.high:g}], "
        f"{game.rounds} round{'s' if game.rounds != 1 else ''}, prompt {prompt.style}"
        + (f" + {', '.join(notes)}" if notes else "")
    )
    backend = config.backend.model_dump(mode="json", exclude_defaults=True)
    policy = config.policy.model_dump(mode="json", exclude_defaults=True)
    lines = [
        ("agents", f"{config.n_agents:,} (seed {config.seed})"),
        ("population", population_summary(config.population)),
        ("game", game_line),
        ("policy", " ".join(filter(None, (config.policy.kind, spec_summary(policy))))),
        ("model", model_summary(config)),
        ("backend", " ".join(filter(None, (config.backend.kind, spec_summary(backend))))),
        ("output", config.output.dir or "the results folder"),
    ]
    return "<div>" + title("RunConfig", config.name) + fields(lines) + "</div>"
