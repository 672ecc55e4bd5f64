"""Policy specs: how agents choose their guess (a language model, uniform random, level-k).

`PolicySpec` is the discriminated union over `kind`; `POLICY_SPECS` and `POLICY_KINDS` are read
off it, so a new policy is added in one place and both validation and error messages follow.
"""

from __future__ import annotations

import math
from typing import Annotated, Any, Literal, get_args

from pydantic import Field, field_validator, model_validator

from workbench.config.base import SHARE_TOLERANCE, StrictModel, category_key, parse_number

ExtractNumber = Literal["never", "fallback", "always"]
"""When the paper's second call (which number did this answer choose?) decides a guess."""

EXTRACT_NUMBER_CHOICES: tuple[str, ...] = get_args(ExtractNumber)


def extract_mode(value: bool | str) -> ExtractNumber:
    """`extract_number` as a mode; the old booleans read as true: fallback, false: never."""
    if isinstance(value, bool):
        return "fallback" if value else "never"
    if value not in EXTRACT_NUMBER_CHOICES:
        raise ValueError(
            f"extract_number must be one of {', '.join(EXTRACT_NUMBER_CHOICES)} "
            f"(or true/false), got {value!r}"
        )
    return value  # type: ignore[return-value]


class LLMPolicySpec(StrictModel):
    """Agents ask a language model (the `model` section) for their guess."""

    kind: Literal["llm"] = Field(
        "llm", description="llm: each agent's guess is a language model's answer to its prompt"
    )
    extract_number: ExtractNumber = Field(
        "never",
        description="the paper's second call, constrained to the range, asking which number an "
        "answer chose: never; fallback: only for answers that state no answer (no 'ANSWER: n', "
        "not a plain number); always: for every answer, and it decides the guess (the paper's "
        "protocol). true/false read as fallback/never",
    )

    @field_validator("extract_number", mode="before")
    @classmethod
    def _old_booleans(cls, value: Any) -> Any:
        """Configs written before the modes said true/false; keep them loading."""
        return extract_mode(value) if isinstance(value, bool) else value


class RandomPolicySpec(StrictModel):
    """The paper's dummy agent: wait `latency_s` (really awaited), then guess uniformly."""

    kind: Literal["random"] = Field(
        "random", description="random: uniform guesses in the game's range, no model involved"
    )
    latency_s: float = Field(
        0.0,
        ge=0,
        le=3600,
        description="seconds (0-3600) each simulated model call waits, to mimic a model's latency",
    )
    integer: bool = Field(True, description="guess whole numbers; false: any real in the range")
    per_agent: bool = Field(
        False,
        description="one coroutine per agent (the paper's semantics, ~20 us each) instead of "
        "one awaited call per shard; same answers, for comparison only",
    )


MAX_DEPTH = 20
"""The deepest reasoning level a level-k population may hold."""


def poisson_depth_shares(tau: float, max_depth: int = MAX_DEPTH) -> dict[int, float]:
    """Poisson(tau) shares of depths 0..max_depth, normalised over them: the cognitive
    hierarchy's population (Camerer, Ho & Chong 2004), tau being its mean depth."""
    if not 0 <= tau < math.inf:
        raise ValueError(f"tau must be a finite number >= 0, got {tau}")
    if max_depth < 0:
        raise ValueError(f"max_depth must be >= 0, got {max_depth}")
    if tau == 0:
        return {k: float(k == 0) for k in range(max_depth + 1)}
    pmf = [math.exp(k * math.log(tau) - tau - math.lgamma(k + 1)) for k in range(max_depth + 1)]
    total = sum(pmf)
    return {k: value / total for k, value in enumerate(pmf)}


class LevelKPolicySpec(StrictModel):
    """Cognitive-hierarchy baseline: level 0 guesses uniformly, level k responds to lower levels.

    ``depth_shares`` gives the share of agents at each depth, or ``tau`` makes them Poisson(tau)
    (e.g. a tau fitted to human or LLM guesses with ``viz.fit_tau``); ``by_attribute``
    overrides them for agents whose persona column ``attribute`` has a given value.
    """

    kind: Literal["level_k"] = Field(
        "level_k", description="level_k: the cognitive-hierarchy baseline, no model involved"
    )
    depth_shares: dict[int, float] = Field(
        default_factory=lambda: {0: 0.2, 1: 0.4, 2: 0.3, 3: 0.1},
        description="share of agents at each reasoning depth 0..20 (0 = uniform random), "
        "summing to 1; fractions like 1/3 are accepted",
    )
    tau: float | None = Field(
        None,
        ge=0,
        le=MAX_DEPTH,
        allow_inf_nan=False,
        description="Poisson cognitive-hierarchy tau, the mean depth (humans: about 1.5; a "
        "fitted one from viz.fit_tau): depth_shares become Poisson(tau) over depths 0..20; "
        "give tau or depth_shares, not both",
    )
    model: Literal["level_k", "cognitive_hierarchy"] = Field(
        "level_k",
        title="Hierarchy model",
        description="level_k: best reply to depth k-1; cognitive_hierarchy: to depths 0..k-1",
    )
    attribute: str | None = Field(
        None,
        description="persona column (e.g. education) whose value selects a by_attribute table; "
        "none: every agent uses depth_shares",
    )
    by_attribute: dict[str, dict[int, float]] = Field(
        default_factory=dict,
        description="attribute value: {depth: share} overriding depth_shares for agents with "
        "that value (needs attribute); other agents use depth_shares",
    )
    noise_sd: float = Field(
        0.0,
        ge=0,
        allow_inf_nan=False,
        description="standard deviation of normal noise added to each guess, in guess units "
        "(0: none)",
    )

    @model_validator(mode="before")
    @classmethod
    def _tau_shares(cls, data: Any) -> Any:
        """With `tau`, the depth shares are Poisson(tau)'s (a stored config, holding both,
        reloads when they agree)."""
        if not isinstance(data, dict) or data.get("tau") is None:
            return data
        try:
            tau = parse_number(data["tau"])
            tau = float(tau) if isinstance(tau, str) else tau
        except ValueError:
            return data  # the field's own validation names the problem
        if not isinstance(tau, int | float) or isinstance(tau, bool) or not 0 <= tau <= MAX_DEPTH:
            return data  # the field's own validation names the problem
        shares = poisson_depth_shares(float(tau))
        given = data.get("depth_shares")
        if given is not None:
            table = {int(k): float(parse_number(v)) for k, v in dict(given).items()}
            if set(table) != set(shares) or any(abs(table[k] - shares[k]) > 1e-9 for k in shares):
                raise ValueError("give tau or depth_shares, not both")
        return {**data, "tau": tau, "depth_shares": shares}

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
            text = category_key(key, "by_attribute")
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
            if not table or any(d < 0 or d > MAX_DEPTH for d in table):
                raise ValueError(f"{where}: depths must be integers in 0..20, got {sorted(table)}")
            if any(s < 0 for s in table.values()) or abs(sum(table.values()) - 1) > SHARE_TOLERANCE:
                raise ValueError(f"{where}: shares must be >= 0 and sum to 1, got {table}")
        if self.by_attribute and self.attribute is None:
            raise ValueError("by_attribute needs 'attribute: <persona column>'")
        return self


PolicySpec = Annotated[
    LLMPolicySpec | RandomPolicySpec | LevelKPolicySpec, Field(discriminator="kind")
]


POLICY_SPECS: tuple[type[StrictModel], ...] = get_args(get_args(PolicySpec)[0])
"""The policy spec classes, in the union's order."""

POLICY_KINDS: tuple[str, ...] = tuple(spec.model_fields["kind"].default for spec in POLICY_SPECS)
"""The policy kinds a config may name (`policy.kind`), in the union's order."""
