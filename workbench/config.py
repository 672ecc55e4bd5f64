"""Pydantic models for every spec the workbench reads, with safe YAML in and out.

A `RunConfig` names a population, a game, a policy, a model and a backend. Every model forbids
unknown keys and validates its own ranges, so a bad file fails with one message that names the
field, what is allowed and what came (`load_run_config`, `load_population_spec`).
"""

from __future__ import annotations

import math
import string
from fractions import Fraction
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import (
    AliasChoices,
    BaseModel,
    ConfigDict,
    Discriminator,
    Field,
    Tag,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from workbench.errors import ConfigError

SHARE_TOLERANCE = 1e-6


class StrictModel(BaseModel):
    """Base for specs: unknown keys are errors, values are validated on assignment too."""

    model_config = ConfigDict(extra="forbid", validate_assignment=True, frozen=False)


def parse_number(value: Any) -> Any:
    """Accept a fraction written as text ("2/3") wherever a number is expected.

    Other text must read as a number ("0.5"); ValueError naming what came otherwise.
    """
    if isinstance(value, str):
        try:
            if "/" in value:
                return float(Fraction(value.replace(" ", "")))
            float(value)
        except (ValueError, ZeroDivisionError):
            raise ValueError(f"expected a number or a fraction like 2/3, got {value!r}") from None
    return value


def _category_key(key: Any, where: str) -> str:
    """A share-table key as text: YAML reads `18:` as an int and `yes:` as a bool."""
    if key is None:
        raise ValueError(f"{where}: a category name is missing (null key)")
    if isinstance(key, str | int | float | bool):
        return str(key)
    raise ValueError(f"{where}: category names must be text, got {key!r}")


def _share_value(value: Any, where: str) -> float:
    """A share as a float: a number, a numeric text or a fraction like "1/6"."""
    if isinstance(value, bool) or value is None or isinstance(value, dict | list):
        raise ValueError(f"{where} must be a number or a fraction like 1/6, got {value!r}")
    try:
        number = parse_number(value)
        return float(number)
    except (TypeError, ValueError):
        raise ValueError(
            f"{where} must be a number or a fraction like 1/6, got {value!r}"
        ) from None


def _share_table(table: dict, where: str) -> dict[str, float]:
    """{category: share} with text keys and float shares; ValueError naming the bad entry."""
    out: dict[str, float] = {}
    for key, value in table.items():
        category = _category_key(key, where)
        if category in out:
            raise ValueError(f"{where}: category {category!r} is listed twice")
        out[category] = _share_value(value, f"{where}: share of {category!r}")
    return out


def template_fields(template: str) -> list[str]:
    """The names a `str.format` template fills, in order: "{job.title}" -> "job".

    ValueError for a malformed template or a positional placeholder ("{}", "{0}").
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(
            f"not a valid template ({exc}); write literal braces as {{{{ and }}}}"
        ) from None
    names: list[str] = []
    for _, field, _, _ in parsed:
        if field is None:
            continue
        name = field.split(".", 1)[0].split("[", 1)[0]
        if not name or name.isdigit():
            raise ValueError(
                f"positional placeholder {{{field}}} is not allowed; name a dimension, "
                "e.g. {gender}"
            )
        if name not in names:
            names.append(name)
    return names


# --------------------------------------------------------------------------- game


class PromptSpec(StrictModel):
    """Which prompt variant the agents see (the paper's prompts 1-4 and its extra notes)."""

    style: Literal["direct", "step_by_step"] = Field(
        "direct", description="direct: answer with a number only; step_by_step: think first"
    )
    rational_note: bool = Field(False, description="tell agents that all players are rational")
    strategy_note: bool = Field(
        False, description="tell agents that players guess each other's strategies"
    )
    famous_game_note: bool = Field(
        False, description='note that this is a variant of the famous "2/3 of the average" game'
    )
    persona: bool = Field(True, description="include the agent's persona background")
    population_note: bool = Field(
        False, description="tell agents how the population is composed (its dimensions' shares)"
    )

    @classmethod
    def paper(cls, number: int) -> PromptSpec:
        """The paper's prompt 1-4: direct, step by step, + rational players, + strategies."""
        if number not in (1, 2, 3, 4):
            raise ConfigError(f"paper prompt must be 1, 2, 3 or 4, got {number}")
        return cls(
            style="direct" if number == 1 else "step_by_step",
            rational_note=number >= 3,
            strategy_note=number >= 4,
        )


class GameSpec(StrictModel):
    """The "guess p of the average" game: target = offset + ratio * mean(valid guesses)."""

    ratio: Annotated[float, Field(description="p in (0, 1]; fractions like 2/3 are accepted")] = (
        2 / 3
    )
    offset: float = Field(
        0.0,
        allow_inf_nan=False,
        description="added to ratio * mean; 5 with ratio 1/2 -> equilibrium 10",
    )
    low: float = Field(0.0, allow_inf_nan=False, description="smallest allowed guess")
    high: float = Field(100.0, allow_inf_nan=False, description="largest allowed guess")
    rounds: int = Field(1, ge=1, le=1000, description="rounds to play")
    prompt: PromptSpec = Field(default_factory=PromptSpec)
    group_by: str | None = Field(
        None,
        description="a persona column (e.g. model, city) whose groups are sub-environments: "
        "each group's statistics are kept per round in groups.parquet",
    )

    @field_validator("ratio", "offset", "low", "high", mode="before")
    @classmethod
    def _fractions(cls, value: Any) -> Any:
        return parse_number(value)

    @field_validator("ratio")
    @classmethod
    def _ratio_in_range(cls, value: float) -> float:
        if not (0 < value <= 1) or math.isnan(value):
            raise ValueError(f"must be in (0, 1], got {value}")
        return value

    @model_validator(mode="after")
    def _range_ordered(self) -> GameSpec:
        if not self.low < self.high:
            raise ValueError(f"low must be < high, got low={self.low}, high={self.high}")
        return self


# --------------------------------------------------------------------------- population


class DimensionSpec(StrictModel):
    """One demographic dimension: categories and their shares, optionally given another dimension.

    Unconditional: ``shares: {male: 0.5, female: 0.5}``.
    Conditional (``given: education``): ``shares: {bachelor: {engineer: 0.6, teacher: 0.4}, ...}``
    with one share table per category of the parent dimension.
    """

    name: str = Field(min_length=1, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$")
    given: str | None = Field(None, description="name of an earlier dimension this one depends on")
    shares: dict[str, float] | dict[str, dict[str, float]]

    @field_validator("shares", mode="before")
    @classmethod
    def _normalise_shares(cls, value: Any, info: ValidationInfo) -> Any:
        """Text keys, float shares (fractions like "1/6" allowed), one message for a bad value."""
        name = info.data.get("name")
        where = f"dimension {name!r}" if name else "dimension"
        if not isinstance(value, dict):
            raise ValueError(
                f"{where}: shares must be a mapping of category: share (or, with 'given', "
                f"parent category: {{category: share}}), got {value!r}"
            )
        nested = [isinstance(v, dict) for v in value.values()]
        if any(nested) and not all(nested):
            raise ValueError(
                f"{where}: shares mix numbers and nested tables; use category: share, or "
                "(with 'given') parent category: {category: share}"
            )
        if not any(nested):
            return _share_table(value, where)
        given = info.data.get("given")
        tables: dict[str, dict[str, float]] = {}
        for parent, table in value.items():
            key = _category_key(parent, where)
            if key in tables:
                raise ValueError(f"{where}: parent category {key!r} is listed twice")
            tables[key] = _share_table(table, f"{where} given {given or 'parent'}={key!r}")
        return tables

    @model_validator(mode="after")
    def _check_shares(self) -> DimensionSpec:
        if not self.shares:
            raise ValueError(f"dimension {self.name!r}: shares must list at least one category")
        tables: dict[str, dict[str, float]]
        nested = all(isinstance(v, dict) for v in self.shares.values())
        if self.given is None:
            if nested:
                raise ValueError(
                    f"dimension {self.name!r}: nested shares need 'given: <parent dimension>'"
                )
            tables = {"": self.shares}  # type: ignore[dict-item]
        else:
            if not nested:
                raise ValueError(
                    f"dimension {self.name!r} is given {self.given!r}: shares must map each "
                    f"{self.given} category to a table of shares"
                )
            tables = self.shares  # type: ignore[assignment]
        for parent, table in tables.items():
            where = f"dimension {self.name!r}" + (
                f" given {self.given}={parent!r}" if parent else ""
            )
            if not table:
                raise ValueError(f"{where}: shares must list at least one category")
            for category, share in table.items():
                if not category.strip():
                    raise ValueError(f"{where}: category names must not be empty")
                if not (0 <= share <= 1) or math.isnan(share):
                    raise ValueError(
                        f"{where}: share of {category!r} must be in [0, 1], got {share}"
                    )
            total = sum(table.values())
            if abs(total - 1) > SHARE_TOLERANCE:
                raise ValueError(
                    f"{where}: shares must sum to 1, got {total:.6g}; fix the shares "
                    f"(e.g. {len(table)} equal shares of {1 / len(table):.6g})"
                )
        return self

    def categories(self) -> list[str]:
        """All categories this dimension can take, in first-seen order."""
        if self.given is None:
            return list(self.shares)
        seen: dict[str, None] = {}
        for table in self.shares.values():
            seen.update(dict.fromkeys(table))  # type: ignore[union-attr]
        return list(seen)


class PopulationSpec(StrictModel):
    """A population described by demographic dimensions, sampled into one persona per agent."""

    name: str = Field("population", min_length=1)
    description: str = ""
    dimensions: list[DimensionSpec] = Field(min_length=1)
    sampling: Literal["quota", "iid"] = Field(
        "quota", description="quota: exact counts (largest remainder); iid: independent draws"
    )
    persona_template: str | None = Field(
        None,
        description="persona text with {dimension} placeholders; a generic sentence when absent",
    )

    @model_validator(mode="after")
    def _check_dimensions(self) -> PopulationSpec:
        seen: dict[str, DimensionSpec] = {}
        for dim in self.dimensions:
            if dim.name in seen:
                raise ValueError(f"dimension {dim.name!r} is listed twice")
            if dim.name in ("agent_id", "persona", "model"):
                raise ValueError(f"dimension name {dim.name!r} is reserved; choose another name")
            if dim.given is not None:
                if dim.given not in seen:
                    raise ValueError(
                        f"dimension {dim.name!r} is given {dim.given!r}, which is not an earlier "
                        f"dimension; known: {sorted(seen)}"
                    )
                missing = set(seen[dim.given].categories()) - set(dim.shares)
                extra = set(dim.shares) - set(seen[dim.given].categories())
                if missing or extra:
                    found = [f"missing {sorted(missing)}"] if missing else []
                    found += [f"unknown {sorted(extra)}"] if extra else []
                    raise ValueError(
                        f"dimension {dim.name!r} must give one share table per {dim.given} "
                        f"category: {', '.join(found)}"
                    )
            seen[dim.name] = dim
        if self.persona_template is not None:
            try:
                fields = template_fields(self.persona_template)
            except ValueError as exc:
                raise ValueError(f"persona_template: {exc}") from None
            unknown = [f for f in fields if f not in seen]
            if unknown:
                raise ValueError(
                    f"persona_template uses unknown dimensions {unknown}; known: {sorted(seen)}"
                )
        return self

    def dimension(self, name: str) -> DimensionSpec:
        """The dimension called `name`; ConfigError naming the known ones otherwise."""
        for dim in self.dimensions:
            if dim.name == name:
                return dim
        raise ConfigError(f"unknown dimension {name!r}; known: {[d.name for d in self.dimensions]}")


# --------------------------------------------------------------------------- policies


class LLMPolicySpec(StrictModel):
    """Agents ask a language model (the `model` section) for their guess."""

    kind: Literal["llm"] = "llm"
    extract_number: bool = Field(
        False,
        description="the paper's second call: when an answer holds no number (free-form "
        "reasoning), ask the model to extract the chosen number, constrained to the range",
    )


class RandomPolicySpec(StrictModel):
    """The paper's dummy agent: wait `latency_s` (really awaited), then guess uniformly."""

    kind: Literal["random"] = "random"
    latency_s: float = Field(0.0, ge=0, le=3600, description="seconds each model call waits")
    integer: bool = Field(True, description="guess whole numbers")
    per_agent: bool = Field(
        False,
        description="one coroutine per agent (the paper's semantics, ~20 us each) instead of "
        "one awaited call per shard; same answers, for comparison only",
    )


class LevelKPolicySpec(StrictModel):
    """Cognitive-hierarchy baseline: level 0 guesses uniformly, level k responds to lower levels.

    ``depth_shares`` gives the share of agents at each depth; ``by_attribute`` overrides it for
    agents whose persona column ``attribute`` has a given value.
    """

    kind: Literal["level_k"] = "level_k"
    depth_shares: dict[int, float] = Field(
        default_factory=lambda: {0: 0.2, 1: 0.4, 2: 0.3, 3: 0.1},
        description="share of agents at each reasoning depth (0 = uniform random)",
    )
    model: Literal["level_k", "cognitive_hierarchy"] = Field(
        "level_k",
        description="level_k: best reply to depth k-1; cognitive_hierarchy: to depths 0..k-1",
    )
    attribute: str | None = Field(None, description="persona column that selects the depth shares")
    by_attribute: dict[str, dict[int, float]] = Field(default_factory=dict)
    noise_sd: float = Field(
        0.0, ge=0, allow_inf_nan=False, description="sd of normal noise added to each guess"
    )

    @field_validator("depth_shares", mode="before")
    @classmethod
    def _depth_fractions(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {k: parse_number(v) for k, v in value.items()}
        return value

    @field_validator("by_attribute", mode="before")
    @classmethod
    def _attribute_keys(cls, value: Any) -> Any:
        """Attribute values as text (YAML reads `18:` as an int), fractions allowed."""
        if not isinstance(value, dict):
            return value
        out: dict[Any, Any] = {}
        for key, table in value.items():
            text = _category_key(key, "by_attribute")
            if isinstance(table, dict):
                table = {k: parse_number(v) for k, v in table.items()}
            out[text] = table
        return out

    @model_validator(mode="after")
    def _check(self) -> LevelKPolicySpec:
        tables = {"depth_shares": self.depth_shares} | {
            f"by_attribute.{k}": v for k, v in self.by_attribute.items()
        }
        for where, table in tables.items():
            if not table or any(d < 0 or d > 20 for d in table):
                raise ValueError(f"{where}: depths must be integers in 0..20, got {sorted(table)}")
            if any(s < 0 for s in table.values()) or abs(sum(table.values()) - 1) > SHARE_TOLERANCE:
                raise ValueError(f"{where}: shares must be >= 0 and sum to 1, got {table}")
        if self.by_attribute and self.attribute is None:
            raise ValueError("by_attribute needs 'attribute: <persona column>'")
        return self


PolicySpec = Annotated[
    LLMPolicySpec | RandomPolicySpec | LevelKPolicySpec, Field(discriminator="kind")
]


# --------------------------------------------------------------------------- model & backend


PARALLEL_SIZES = ("tensor_parallel_size", "pipeline_parallel_size")
"""vLLM engine arguments whose product is the GPUs one engine holds."""


class ModelSpec(StrictModel):
    """The language model behind LLM agents.

    `embedded`: llama.cpp in process with the shipped SmolLM2 (or `path`). `openai`: any
    OpenAI-compatible chat server (vLLM, llama.cpp's server, ...) at one or more `base_urls`,
    serving model `name`; the API key, when one is needed, is read from the environment
    variable `api_key_env` and never stored.
    """

    kind: Literal["embedded", "openai", "vllm", "replay"] = "embedded"
    bundle: str | None = Field(None, description="kind replay: the bundle whose answers to replay")
    path: str | None = Field(None, description="a GGUF file; the shipped SmolLM2-135M when absent")
    temperature: float = Field(0.7, ge=0, le=2)
    top_p: float = Field(0.95, gt=0, le=1)
    max_tokens: int = Field(8, ge=1, le=4096, description="most tokens generated per answer")
    n_ctx: int = Field(2048, ge=256, le=131072)
    n_threads: int | None = Field(
        None, ge=1, description="CPU threads; the machine's cores when absent"
    )
    constrained: bool = Field(True, description="force a number in range (grammar / regex)")
    base_urls: list[str] = Field(
        default_factory=list, description="OpenAI-compatible endpoints, e.g. http://host:8000/v1"
    )
    name: str | None = Field(None, description="the model name the server serves")
    api_key_env: str | None = Field(
        None, description="environment variable holding the API key (the key is never stored)"
    )
    structured_output: Literal[
        "grammar", "structured_outputs", "guided_regex", "json_schema", "none"
    ] = Field(
        "grammar",
        description="how a constraint reaches the server: llama.cpp's grammar, vLLM's "
        "structured_outputs regex (vLLM >= 0.12) or guided_regex (older), a JSON schema, or "
        "none (plain text, then parsing)",
    )
    max_concurrency: int = Field(32, ge=1, le=10_000, description="requests in flight per endpoint")
    timeout_s: float = Field(60.0, gt=0, le=3600, description="seconds before a request times out")
    max_retries: int = Field(3, ge=0, le=20, description="retries on connection errors, 429, 5xx")
    cache: str | None = Field(
        None,
        description="a SQLite response cache file: identical requests are answered from it",
    )
    engine_args: dict[str, int | float | bool | str] = Field(
        default_factory=dict,
        description="kind vllm: arguments of vllm.LLM, e.g. tensor_parallel_size: 2, "
        "max_model_len: 4096, gpu_memory_utilization: 0.85 (an engine holds "
        "tensor_parallel_size x pipeline_parallel_size GPUs)",
    )

    def gpus_per_engine(self) -> int:
        """GPUs one in-process engine of this model holds (1 unless vLLM parallelism says);
        the validator has made both sizes whole numbers >= 1."""
        sizes = [self.engine_args.get(key, 1) for key in PARALLEL_SIZES]
        return int(sizes[0]) * int(sizes[1])

    @model_validator(mode="after")
    def _endpoint(self) -> ModelSpec:
        if self.kind == "openai":
            if not self.base_urls:
                raise ValueError("kind openai needs base_urls, e.g. [http://127.0.0.1:8000/v1]")
            if not self.name:
                raise ValueError("kind openai needs name: the model name the server serves")
            bad = [u for u in self.base_urls if not u.startswith(("http://", "https://"))]
            if bad:
                raise ValueError(f"base_urls must start with http:// or https://, got {bad}")
        if self.kind == "vllm" and not self.name:
            raise ValueError("kind vllm needs name: the model to load, e.g. Qwen/Qwen2-7B-Instruct")
        if self.engine_args and self.kind != "vllm":
            raise ValueError("engine_args is for kind vllm; remove it or set kind: vllm")
        for key in PARALLEL_SIZES:
            value = self.engine_args.get(key, 1)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"engine_args.{key} must be a whole number >= 1, got {value!r}")
        if self.kind == "replay" and not self.bundle:
            raise ValueError("kind replay needs bundle: the path of the bundle to replay")
        return self


class BackendSpec(StrictModel):
    """Where shards run: `local` (one asyncio loop in this process) or `ray` (an actor per shard).

    Shard size: `agents_per_shard` (alias `agents_per_actor`; 1 is the paper's one-to-one mode)
    or `shards_per_node`; at most one of them. Neither: 100,000 agents a shard locally, two
    shards per node on Ray.
    """

    model_config = ConfigDict(extra="forbid", validate_assignment=True, populate_by_name=True)

    kind: Literal["local", "ray"] = "local"
    agents_per_shard: int | None = Field(
        None,
        ge=1,
        validation_alias=AliasChoices("agents_per_shard", "agents_per_actor"),
        description="agents held (as columns) by one shard / Ray actor",
    )
    shards_per_node: int | None = Field(None, ge=1, description="shards (actors) per node")
    address: str | None = Field(
        None, description="Ray cluster: 'auto', 'host:port', or empty for a local cluster"
    )
    max_restarts: int = Field(
        3, ge=0, le=100, description="respawns of a dead shard (or model actor) per round"
    )
    model_placement: Literal["auto", "shard", "node", "gpu", "cluster"] = Field(
        "auto",
        description="where LLM agents' models live on Ray: in every shard actor, one model "
        "actor per node, one per GPU (each shard asks one on its node), or one for the "
        "cluster; auto: gpu for vllm, cluster for openai (max_concurrency then holds "
        "cluster-wide) and for a model object given to Simulation, node for replay, shard "
        "for embedded",
    )

    @model_validator(mode="after")
    def _one_size(self) -> BackendSpec:
        if self.agents_per_shard is not None and self.shards_per_node is not None:
            raise ValueError("give agents_per_shard (or agents_per_actor) or shards_per_node")
        if self.kind == "local" and self.address is not None:
            raise ValueError("address is for kind: ray; remove it or set kind: ray")
        if self.kind == "local" and self.model_placement != "auto":
            raise ValueError("model_placement is for kind: ray; remove it or set kind: ray")
        return self

    def shard_size(self, n_agents: int, n_nodes: int = 1) -> int:
        """Agents per shard for `n_agents` on `n_nodes`; ConfigError if shards would be empty."""
        if self.agents_per_shard is not None:
            size = self.agents_per_shard
        elif self.shards_per_node is not None or self.kind == "ray":
            shards = (self.shards_per_node or 2) * n_nodes
            if shards > n_agents:
                raise ConfigError(
                    f"backend.shards_per_node: {shards} shards for {n_agents} agents would leave "
                    "shards empty; use fewer shards or more agents"
                )
            size = -(-n_agents // shards)
        else:
            size = 100_000
        return size


class OutputSpec(StrictModel):
    """Where bundles go."""

    dir: str = Field("results", description="directory that holds result bundles")


def _population_form(value: Any) -> str | None:
    """Which form a `population` value takes: an inline spec or a path (None: neither)."""
    if isinstance(value, dict | PopulationSpec):
        return "spec"
    if isinstance(value, str | Path):
        return "path"
    return None


PopulationField = Annotated[
    Annotated[PopulationSpec, Tag("spec")] | Annotated[str, Tag("path")],
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

_UNION_TAGS = {("population", "spec"), ("population", "path")} | {
    ("policy", kind) for kind in ("llm", "random", "level_k")
}
"""(parent, tag) location pairs that pydantic adds for tagged unions; not field names."""


class RunConfig(StrictModel):
    """Everything one run needs; saved resolved into every bundle as config.yaml."""

    name: str = Field("run", min_length=1, pattern=r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
    seed: int = Field(0, ge=0, lt=2**63)
    n_agents: int = Field(100, ge=1, le=100_000_000)
    population: PopulationField = Field(
        description="a population spec inline, or a path to one (relative to the config file)"
    )
    game: GameSpec = Field(default_factory=GameSpec)
    policy: PolicySpec = Field(default_factory=LLMPolicySpec)
    model: ModelSpec = Field(default_factory=ModelSpec)
    models: dict[str, ModelSpec] = Field(
        default_factory=dict,
        description="named models for a mixed population (the paper's 500 agents each of three "
        "models); model_shares assigns them to agents as a persona column `model`",
    )
    model_shares: dict[str, float] = Field(
        default_factory=dict, description="share of agents per named model (exact quota)"
    )
    backend: BackendSpec = Field(default_factory=BackendSpec)
    output: OutputSpec = Field(default_factory=OutputSpec)

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

    @field_validator("population", mode="before")
    @classmethod
    def _path_as_text(cls, value: Any) -> Any:
        return str(value) if isinstance(value, Path) else value

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


# --------------------------------------------------------------------------- YAML in and out

M = TypeVar("M", bound=BaseModel)


def _location(loc: tuple[int | str, ...]) -> str:
    """A pydantic error location as `a.b.0.c`, without validator and union-tag entries."""
    parts: list[str] = []
    previous: int | str | None = None
    for part in loc:
        if not str(part).startswith("function-") and (previous, part) not in _UNION_TAGS:
            parts.append(str(part))
        previous = part
    return ".".join(parts)


def format_validation_error(source: str, error: ValidationError) -> str:
    """One problem per `;`-separated part: `source: field.path: message, got value`."""
    lines = []
    for item in error.errors():
        loc = _location(item["loc"])
        msg = item["msg"].removeprefix("Value error, ")
        if item["type"] == "extra_forbidden":
            msg = "unknown key; remove it or check its spelling"
        elif item["type"] == "missing":
            msg = "required field is missing"
        elif "input" in item and not isinstance(item["input"], dict | list):
            msg = f"{msg}, got {item['input']!r}" if "got" not in msg else msg
        where = f"{source}: {loc}: " if loc else f"{source}: "
        lines.append(where + msg)
    return "; ".join(dict.fromkeys(lines))


class _ConfigLoader(yaml.SafeLoader):
    """SafeLoader that keeps mapping keys as written and refuses duplicate keys.

    Plain YAML turns the key `18:` into an int and `yes:` / `no:` into booleans, and lets a
    second `game:` silently replace the first; here keys stay the text that was typed (pydantic
    still reads "0" as the int 0 where a number is expected) and a duplicate is an error.
    """

    def construct_mapping(self, node: yaml.Node, deep: bool = False) -> dict[Any, Any]:
        if not isinstance(node, yaml.MappingNode):
            return super().construct_mapping(node, deep=deep)
        own: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self._key(key_node, deep)
            if key in own:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping",
                    node.start_mark,
                    f"found duplicate key {key!r}",
                    key_node.start_mark,
                )
            own.add(key)
        self.flatten_mapping(node)
        return {self._key(k, deep): self.construct_object(v, deep=deep) for k, v in node.value}

    def _key(self, node: yaml.Node, deep: bool) -> Any:
        if isinstance(node, yaml.ScalarNode):
            return node.value
        key = self.construct_object(node, deep=deep)
        try:
            hash(key)
        except TypeError:
            raise yaml.constructor.ConstructorError(
                "while constructing a mapping", None, "found an unhashable key", node.start_mark
            ) from None
        return key


def parse_yaml(text: str) -> Any:
    """Load YAML text as config data: keys kept as written, duplicate keys refused."""
    return yaml.load(text, Loader=_ConfigLoader)  # a SafeLoader subclass: safe


def read_yaml(path: str | Path) -> Any:
    """Safe-load a YAML file; ConfigError for a missing or unparsable file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"{path}: file not found; check the path")
    try:
        return parse_yaml(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ConfigError(
            f"{path}: not valid YAML{where}: {getattr(exc, 'problem', exc)}"
        ) from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None


def validate(model: type[M], data: Any, source: str) -> M:
    """Build `model` from plain data; ConfigError naming each bad field otherwise."""
    if data is None:
        raise ConfigError(f"{source}: empty; expected a mapping of keys (key: value lines)")
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: expected a mapping of keys (key: value lines), got a {type(data).__name__}"
        )
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(source, exc)) from None


def load_population_spec(path: str | Path) -> PopulationSpec:
    """Read a population spec YAML file."""
    return validate(PopulationSpec, read_yaml(path), str(path))


def load_run_config(path: str | Path) -> RunConfig:
    """Read a run config; a population given as a path is loaded relative to the config file."""
    path = Path(path)
    config = validate(RunConfig, read_yaml(path), str(path))
    return resolve_population(config, base=path.parent, source=str(path))


def resolve_population(
    config: RunConfig, base: Path | None = None, *, source: str | None = None
) -> RunConfig:
    """Replace a population path by the spec it names (relative paths against `base`, then cwd).

    `source` (the config file's name) prefixes the message when the file is not found.
    """
    if isinstance(config.population, PopulationSpec):
        return config
    candidate = Path(config.population)
    if not candidate.is_absolute() and base is not None and (base / candidate).is_file():
        candidate = base / candidate
    if not candidate.is_file():
        if candidate.is_absolute():
            looked = "checked that path"
        else:
            looked = f"looked relative to {base or '.'} and the current directory"
        prefix = f"{source}: " if source else ""
        raise ConfigError(f"{prefix}population: file {config.population!r} not found ({looked})")
    return config.model_copy(update={"population": load_population_spec(candidate)})


def to_yaml(model: BaseModel) -> str:
    """A spec as YAML text that loads back into an equal spec."""
    return yaml.safe_dump(model.model_dump(mode="json"), sort_keys=False, allow_unicode=True)


def save_yaml(model: BaseModel, path: str | Path) -> Path:
    """Write a spec as YAML (atomically: a temp file, then rename)."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(to_yaml(model), encoding="utf-8")
    tmp.replace(path)
    return path
