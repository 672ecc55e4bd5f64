"""The cost of a run before it runs: `workbench run CONFIG --estimate`, `Simulation.estimate()`.

Distribution mode knows round 1's distinct prompts before anything is evaluated. The estimate
groups the agents as the run would, tokenizes each distinct prompt with the model's tokenizer
and walks each one's whole answer trie once (`distribution.whole_walk`), which gives every answer's
exact probability, the chance each trie node is reached, and the model's rates measured here
(seconds per prompt token evaluated, per node scored below a root). From those:

- round 1: the distinct prompts and their tokens, counted; the nodes its agents are expected
  to reach (an exact expectation); the seconds at the measured rates;
- later rounds: each round-1 prompt's agents draw their histories from its round-1
  distribution (as if they answered alike every round: real agents adapt, so this is an
  estimate, not a bound), giving the distinct prompts, the nodes they reach, the tokens each
  adds (its persona's text under the new question, then its last number and the answer
  header) and the seconds; beside it the bound, no more distinct prompts than agents, nor than
  each round-1 prompt's agents times its answers to the power of the rounds before.

A mixed population (`models`) is estimated share by share: each model's agents on that model,
with its own settings, in the whole population's game (its distinct prompts are the run's for
that model, as the run groups prompts by model too); the rounds are summed.

One generation per agent (`sampling: server`, free text) costs one request per agent and round
(two with the extraction call always made), at the rate of two requests timed here. The walk
costs about what round 1 costs, and its scored nodes stay in the model's memo (the same logits
a run would compute).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import LLMPolicySpec, RunConfig
from workbench.llm import sampling_params
from workbench.llm.base import SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.llm.distribution.scorer import NodeScorer
from workbench.llm.distribution.whole_walk import ExactWalk
from workbench.llm.mix import ModelMix
from workbench.runtime.prompt_walks import common_prefix, distinct_prefix_tokens, walk_prompts

HISTORY_SEED = 0x357
"""Salt of the estimate's own random stream (histories drawn from round-1 distributions)."""


@dataclass(frozen=True)
class RoundEstimate:
    """One round's expected cost: distinct prompts (requests, one generation per agent), their
    bound, prompt tokens evaluated, trie nodes scored, seconds."""

    round: int
    prompts: int
    prompts_bound: int
    tokens: int
    nodes: int
    seconds: float


@dataclass(frozen=True)
class RunEstimate:
    """A run's estimated cost, round by round, with the rates it was computed from."""

    mode: str
    n_agents: int
    rates: dict[str, float]
    rounds: tuple[RoundEstimate, ...]

    @property
    def seconds(self) -> float:
        """The estimated seconds of every round together."""
        return float(sum(r.seconds for r in self.rounds))

    def table(self) -> pd.DataFrame:
        """One row per round."""
        return pd.DataFrame([asdict(r) for r in self.rounds])

    def to_dict(self) -> dict[str, Any]:
        """As plain data (what `--estimate --json` prints)."""
        data = asdict(self)
        data["seconds"] = self.seconds
        return data

    def text(self) -> str:
        """A few lines for a terminal: the mode and rates, the round table, the total."""
        rates = ", ".join(f"{k} {v:.4g}" for k, v in self.rates.items()) or "none"
        table = self.table().to_string(index=False, float_format=lambda x: f"{x:.1f}")
        return (
            f"estimate: {self.n_agents:,} agents, {self.mode}; rates measured here: {rates}\n"
            f"{table}\n"
            f"about {self.seconds:.0f} s in all (later rounds assume agents answer as in round "
            "1; prompts_bound is the most distinct prompts a round can have)"
        )


async def estimate_run(
    config: RunConfig, model: ChatModel | None, personas: pd.DataFrame
) -> RunEstimate:
    """The run's estimated cost (see the module): `config` resolved and checked, `model` the
    one its LLM agents use (a `ModelMix` for a mixed population), `personas` its agents."""
    cfg = config
    n, rounds = cfg.n_agents, cfg.game.rounds
    if not isinstance(cfg.policy, LLMPolicySpec):
        zero = tuple(RoundEstimate(r, 0, 0, 0, 0, 0.0) for r in range(1, rounds + 1))
        return RunEstimate("no model (a baseline policy)", n, {}, zero)
    assert model is not None
    await model.check()
    model.load()  # loading is not part of any rate
    first = RoundContext.of(cfg)
    if not cfg.models:
        return await _estimate(cfg, model, personas, first)
    assert isinstance(model, ModelMix)
    shares = {}
    for name, spec in cfg.models.items():
        mine = personas[personas["model"] == name].reset_index(drop=True)
        if len(mine):  # the run asks this model with its own settings (`ModelMix`)
            own = spec.model_copy(update={"constrained": cfg.model.constrained})
            alone = cfg.model_copy(update={"model": own, "models": {}, "model_shares": {}})
            shares[name] = await _estimate(alone, model.models[name][0], mine, first)
    return _summed(shares, n)


@dataclass(frozen=True)
class _Asked:
    """What the estimated agents are asked and of which model, with its sampling params."""

    prompts: Prompts
    model: ChatModel
    params: SamplingParams


async def _estimate(
    cfg: RunConfig, model: ChatModel, personas: pd.DataFrame, first: RoundContext
) -> RunEstimate:
    """The estimate of `personas` (all agents, or one model's share) asking `model` in a game
    of `first.n_players`."""
    model.load()
    asked = _Asked(Prompts.of(cfg), model, sampling_params(cfg.model))
    shard = AgentShard(0, personas, cfg.game.rounds)
    if not (asked.prompts.constrained and model.draws_answers()):
        return await _per_agent(asked, shard, first)
    return await _distribution(asked, shard, first)


def _summed(shares: dict[str, RunEstimate], n: int) -> RunEstimate:
    """A mixed population's estimate: each model's share estimated on its own model (its
    agents' distinct prompts are the run's for that model: prompts are grouped by model too),
    summed per round. The seconds add up as the shares' costs on one machine; models served
    from their own servers answer at once, so there the total is an upper estimate."""
    modes = sorted({e.mode for e in shares.values()})
    how = modes[0] if len(modes) == 1 else "; ".join(f"{k} {e.mode}" for k, e in shares.items())
    mode = f"{len(shares)} models ({', '.join(shares)}): {how}"
    rates = {f"{name} {k}": v for name, e in shares.items() for k, v in e.rates.items()}
    rows = tuple(
        RoundEstimate(
            same[0].round,
            sum(r.prompts for r in same),
            sum(r.prompts_bound for r in same),
            sum(r.tokens for r in same),
            sum(r.nodes for r in same),
            sum(r.seconds for r in same),
        )
        for same in zip(*(e.rounds for e in shares.values()), strict=True)
    )
    return RunEstimate(mode, n, rates, rows)


async def _per_agent(asked: _Asked, shard: AgentShard, first: RoundContext) -> RunEstimate:
    """One request per agent and round, at the rate of two requests timed here."""
    n, rounds = len(shard), shard.rounds
    sample = asked.prompts.chats(shard, first, rows=np.arange(min(2, len(shard.agent_ids))))
    start = time.perf_counter()
    await asked.model.generate(sample, asked.params)
    per_request = (time.perf_counter() - start) / len(sample)
    calls = 2 if asked.prompts.extract_number == "always" else 1
    rows = tuple(
        RoundEstimate(r, n * calls, n * calls, 0, 0, n * calls * per_request)
        for r in range(1, rounds + 1)
    )
    return RunEstimate("one generation per agent", n, {"s_per_request": per_request}, rows)


async def _distribution(asked: _Asked, shard: AgentShard, first: RoundContext) -> RunEstimate:
    """Round 1 counted and walked exactly; later rounds from histories drawn as in round 1."""
    n, rounds = len(shard), shard.rounds
    scorer = asked.model.node_scorer()
    found = await walk_prompts(asked.prompts, shard, first, scorer, asked.params)
    firsts, sizes, tokens, walks = found.firsts, found.sizes, found.tokens, found.walks
    order = found.order
    evaluated = distinct_prefix_tokens(tokens)
    below = sum(len(w.node_mass) - 1 for w in walks)
    rates = {
        "s_per_token": _token_rate(tokens, walks, order),
        "s_per_node": sum(w.node_seconds for w in walks) / max(1, below),
    }

    def seconds(tokens_: int, nodes: float, prompts: int) -> float:
        return tokens_ * rates["s_per_token"] + max(0.0, nodes - prompts) * rates["s_per_node"]

    nodes1 = float(sum(w.expected_nodes(m)[0] for w, m in zip(walks, sizes, strict=True)))
    out = [RoundEstimate(1, len(firsts), len(firsts), evaluated, round(nodes1), 0.0)]
    out[0] = _with_seconds(out[0], seconds(evaluated, nodes1, len(firsts)))
    if rounds > 1:
        assert scorer is not None  # walk_prompts refuses a model without one
        persona, tail = await _later_tokens(asked.prompts, scorer, shard, first, firsts)
        drawn = _histories(walks, sizes, rounds - 1, first.seed)
        for number in range(2, rounds + 1):
            prompts, nodes = 0, 0.0
            bound = 0
            for walk, history, m in zip(walks, drawn, sizes, strict=True):
                _, counts = np.unique(history[:, : number - 1], axis=0, return_counts=True)
                prompts += len(counts)
                nodes += float(walk.expected_nodes(counts).sum())
                bound += int(min(m, len(walk.answers) ** (number - 1)))
            cost = len(firsts) * persona[number] + prompts * tail[number]
            row = RoundEstimate(number, prompts, min(n, bound), cost, round(nodes), 0.0)
            out.append(_with_seconds(row, seconds(cost, nodes, prompts)))
    return RunEstimate("distribution mode", n, rates, tuple(out))


def _token_rate(
    tokens: Sequence[Sequence[int]], walks: Sequence[ExactWalk], order: list[int]
) -> float:
    """Seconds per prompt token evaluated: the roots after the first (whose time holds the
    shared prefix's first evaluation) over the tokens each adds to the one walked before."""
    if len(order) == 1:
        return walks[order[0]].root_seconds / max(1, len(tokens[order[0]]))
    seconds, added = 0.0, 0
    for before, index in zip(order, order[1:], strict=False):
        seconds += walks[index].root_seconds
        added += len(tokens[index]) - common_prefix(tokens[before], tokens[index])
    return seconds / max(1, added)


def _with_seconds(row: RoundEstimate, seconds: float) -> RoundEstimate:
    return RoundEstimate(row.round, row.prompts, row.prompts_bound, row.tokens, row.nodes, seconds)


def _histories(
    walks: Sequence[ExactWalk], sizes: np.ndarray, length: int, seed: int
) -> list[np.ndarray]:
    """Each round-1 prompt's agents' histories (answer indices), drawn from its distribution."""
    rng = np.random.default_rng([seed, HISTORY_SEED])
    drawn = []
    for walk, m in zip(walks, sizes, strict=True):
        probs = np.array(list(walk.answers.values()), dtype=np.float64)
        drawn.append(rng.choice(len(probs), size=(int(m), length), p=probs / probs.sum()))
    return drawn


async def _later_tokens(
    prompts: Prompts,
    scorer: NodeScorer,
    shard: AgentShard,
    first: RoundContext,
    firsts: np.ndarray,
) -> tuple[dict[int, int], dict[int, int]]:
    """Per later round: the tokens a persona's text costs under the round's new question, and
    the tokens a distinct history adds (its last number and the answer header), measured on
    prompts built as the run builds them."""
    picked = shard.personas.iloc[firsts[:2]] if len(firsts) > 1 else shard.personas.iloc[[0, 0]]
    persona: dict[int, int] = {}
    tail: dict[int, int] = {}
    for number in range(2, shard.rounds + 1):
        pair = AgentShard(0, picked.reset_index(drop=True), shard.rounds)
        pair.guesses[:, :] = 33.0
        other = AgentShard(0, picked.reset_index(drop=True), shard.rounds)
        other.guesses[:, :] = 33.0
        other.guesses[:, number - 2] = 41.0  # the last number differs
        targets = (22.0,) * (number - 1)
        ctx = replace(first, round=number, previous_targets=targets)
        a, b = await scorer.prompt_tokens(prompts.chats(pair, ctx))
        (c, _) = await scorer.prompt_tokens(prompts.chats(other, ctx))
        tail[number] = len(c) - common_prefix(a, c)
        persona[number] = len(a) - common_prefix(a, b) if len(firsts) > 1 else tail[number]
    return persona, tail
