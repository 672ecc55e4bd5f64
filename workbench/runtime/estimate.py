"""The cost of a run before it runs: `workbench run CONFIG --estimate`, `Simulation.estimate()`.

Distribution mode knows round 1's distinct prompts before anything is evaluated. The estimate
groups the agents as the run would, tokenizes each distinct prompt with the model's tokenizer
and walks each one's whole answer trie once (`distribution.whole_walk`), which gives every answer's
exact probability, the chance each trie node is reached, and the model's rates measured here
(seconds per prompt token evaluated, per node scored below a root). From those:

- round 1: the distinct prompts and their tokens, counted; the nodes its agents are expected
  to reach (an exact expectation); the seconds at the measured rates;
- later rounds: every agent's answer to the round before is drawn from that round's
  distribution of its prompt, and the round's target from those answers; the round's prompts
  are then built, grouped and tokenized as the run builds them, giving the distinct prompts,
  their tokens (each shared prefix once) and the nodes their agents reach. Those two or more
  agents ask are walked for the next round's draws (one agent's prompt stays one agent's,
  whatever it draws); the rest draw from the walk of their agents' prompt before, and the
  last round walks none (its nodes are its prompts' parents'). Real agents draw other numbers,
  so this is an estimate, not a bound; beside it the bound, no more distinct prompts than
  agents, nor than each round-1 prompt's agents times its answers to the power of the rounds
  before. Drawing every round from round
  1's distributions instead (`later="first"`, the former estimate) comes out high once agents
  converge.

On a Ray cluster whose model runs in K model actors (`estimate_cluster`), each round's prompts
are divided over the engines by the run's own plan (`cluster_plan.plan_round`) over the shards'
reports, and the round takes its largest engine's share at the measured rates.

A mixed population (`models`) is estimated share by share: each model's agents on that model,
with its own settings, in the whole population's game (its distinct prompts are the run's for
that model, as the run groups prompts by model too); the rounds are summed.

One generation per agent (`sampling: server`, free text) costs one request per agent and round
(two with the extraction call always made), at the rate of one batch of the model's
`max_concurrency` requests (times its endpoints) sent at once, as the run keeps that many in
flight. The walks cost about what the run's rounds but the last cost (less their prompts of one
agent), and their scored nodes stay in the model's memo (the same logits a run would compute).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Literal

import numpy as np
import pandas as pd

from workbench.agents.prompts import Prompts, ShardPrompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import GameSpec, LLMPolicySpec, RunConfig
from workbench.game.parse import Status, parse_answer
from workbench.game.rules import target
from workbench.llm import sampling_params
from workbench.llm.base import SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.llm.distribution.scorer import NodeScorer
from workbench.llm.distribution.whole_walk import ExactWalk, answer_walk
from workbench.llm.mix import ModelMix
from workbench.runtime.estimate_cluster import (
    ClusterShape,
    EngineShare,
    engine_shares,
    shard_engine_agents,
)
from workbench.runtime.prompt_walks import common_prefix, distinct_prefix_tokens, walk_prompts

HISTORY_SEED = 0x357
"""Salt of the estimate's own random stream (the answers drawn for later rounds' histories)."""

ROUND_COLUMNS = ("round", "prompts", "prompts_bound", "tokens", "nodes", "seconds")
"""`RunEstimate.table()`'s columns: the whole round's counts, and its seconds (on K engines,
its largest engine's)."""


Later = Literal["chained", "first"]
"""How later rounds draw their agents' earlier answers: `chained` from the distributions of the
round just before (its prompts that two or more agents ask walked), `first` from round 1's
distributions every round (the former estimate: 1.5x high by round 3, as agents converge)."""


@dataclass(frozen=True)
class RoundEstimate:
    """One round's expected cost: distinct prompts (requests, one generation per agent), their
    bound, prompt tokens evaluated, trie nodes scored, seconds (on several engines the largest
    engine's), and each engine's share (empty with one engine)."""

    round: int
    prompts: int
    prompts_bound: int
    tokens: int
    nodes: int
    seconds: float
    engines: tuple[EngineShare, ...] = ()


@dataclass(frozen=True)
class RunEstimate:
    """A run's estimated cost, round by round, with the rates it was computed from, the engines
    its rounds are divided over and how that count was found (`cluster`: empty off a cluster)."""

    mode: str
    n_agents: int
    rates: dict[str, float]
    rounds: tuple[RoundEstimate, ...]
    engines: int = 1
    cluster: str = field(default="")

    @property
    def seconds(self) -> float:
        """The estimated seconds of every round together."""
        return float(sum(r.seconds for r in self.rounds))

    def table(self) -> pd.DataFrame:
        """One row per round (`ROUND_COLUMNS`)."""
        return pd.DataFrame([{c: getattr(r, c) for c in ROUND_COLUMNS} for r in self.rounds])

    def engine_table(self) -> pd.DataFrame:
        """One row per round and engine: its prompts, prompt tokens and seconds (empty with
        one engine)."""
        rows = [{"round": r.round, **asdict(e)} for r in self.rounds for e in r.engines]
        return pd.DataFrame(rows, columns=["round", "engine", "prompts", "tokens", "seconds"])

    def to_dict(self) -> dict[str, Any]:
        """As plain data (what `--estimate --json` prints)."""
        data = asdict(self)
        data["seconds"] = self.seconds
        return data

    def text(self) -> str:
        """A few lines for a terminal: the mode and rates, the cluster, the round table, each
        engine's share, the total."""
        rates = ", ".join(f"{k} {v:.4g}" for k, v in self.rates.items()) or "none"
        table = self.table().to_string(index=False, float_format=lambda x: f"{x:.1f}")
        lines = [f"estimate: {self.n_agents:,} agents, {self.mode}; rates measured here: {rates}"]
        if self.cluster:
            lines.append(self.cluster)
        lines.append(table)
        engines = self.engine_table()
        if len(engines):
            lines.append("each engine's share (seconds: the round's are its largest engine's):")
            lines.append(engines.to_string(index=False, float_format=lambda x: f"{x:.1f}"))
        lines.append(
            f"about {self.seconds:.0f} s in all (later rounds draw agents' answers from the "
            "round before's distributions; prompts_bound is the most distinct prompts a round "
            "can have)"
        )
        return "\n".join(lines)


async def estimate_run(
    config: RunConfig,
    model: ChatModel | None,
    personas: pd.DataFrame,
    cluster: ClusterShape | None = None,
    later: Later = "chained",
) -> RunEstimate:
    """The run's estimated cost (see the module): `config` resolved and checked, `model` the
    one its LLM agents use (a `ModelMix` for a mixed population), `personas` its agents,
    `cluster` its engines and shards (`estimate_cluster.cluster_shape`; None: one engine)."""
    cfg = config
    n, rounds = cfg.n_agents, cfg.game.rounds
    cluster = cluster if cluster is not None else ClusterShape()
    if not isinstance(cfg.policy, LLMPolicySpec):
        zero = tuple(RoundEstimate(r, 0, 0, 0, 0, 0.0) for r in range(1, rounds + 1))
        return RunEstimate("no model (a baseline policy)", n, {}, zero)
    assert model is not None
    await model.check()
    model.load()  # loading is not part of any rate
    first = RoundContext.of(cfg)
    if not cfg.models:
        where = np.arange(len(personas), dtype=np.int64)
        return await _estimate(cfg, model, personas, first, _How(cluster, later, where))
    assert isinstance(model, ModelMix)
    shares = {}
    for name, spec in cfg.models.items():
        picked = (personas["model"] == name).to_numpy()
        mine = personas[picked].reset_index(drop=True)
        if len(mine):  # the run asks this model with its own settings (`ModelMix`)
            own = spec.model_copy(update={"constrained": cfg.model.constrained})
            alone = cfg.model_copy(update={"model": own, "models": {}, "model_shares": {}})
            how = _How(cluster, later, np.flatnonzero(picked))
            shares[name] = await _estimate(alone, model.models[name][0], mine, first, how)
    return _summed(shares, n)


@dataclass(frozen=True)
class _Asked:
    """What the estimated agents are asked and of which model, with its sampling params."""

    prompts: Prompts
    model: ChatModel
    params: SamplingParams


@dataclass(frozen=True)
class _How:
    """How the estimate divides and chains the rounds: the cluster's engines and shards, how
    later rounds draw their histories, and the estimated agents' positions in the run's whole
    population (what the shards are cut from)."""

    cluster: ClusterShape
    later: Later
    positions: np.ndarray


async def _estimate(
    cfg: RunConfig, model: ChatModel, personas: pd.DataFrame, first: RoundContext, how: _How
) -> RunEstimate:
    """The estimate of `personas` (all agents, or one model's share) asking `model` in a game
    of `first.n_players`."""
    model.load()
    asked = _Asked(Prompts.of(cfg), model, sampling_params(cfg.model))
    shard = AgentShard(0, personas, cfg.game.rounds)
    if not (asked.prompts.constrained and model.draws_answers()):
        return await _per_agent(asked, shard, first, how, _concurrency(cfg, model))
    return await _distribution(asked, shard, first, how)


def _summed(shares: dict[str, RunEstimate], n: int) -> RunEstimate:
    """A mixed population's estimate: each model's share estimated on its own model (its
    agents' distinct prompts are the run's for that model: prompts are grouped by model too),
    summed per round, engine by engine. The seconds add up as the shares' costs on one machine;
    models served from their own servers answer at once, so there the total is an upper
    estimate."""
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
            _summed_engines([r.engines for r in same]),
        )
        for same in zip(*(e.rounds for e in shares.values()), strict=True)
    )
    some = next(iter(shares.values()))
    return RunEstimate(mode, n, rates, rows, some.engines, some.cluster)


def _summed_engines(parts: Sequence[tuple[EngineShare, ...]]) -> tuple[EngineShare, ...]:
    """The shares' engines added engine by engine."""
    if not any(parts):
        return ()
    k = max(len(p) for p in parts)
    return tuple(
        EngineShare(
            e,
            sum(p[e].prompts for p in parts if p),
            sum(p[e].tokens for p in parts if p),
            sum(p[e].seconds for p in parts if p),
        )
        for e in range(k)
    )


def _concurrency(cfg: RunConfig, model: ChatModel) -> int:
    """Requests the run has in flight at once: the model's `max_concurrency` per endpoint
    (the config's, where the model keeps none of its own) times its endpoints."""
    per_endpoint = int(getattr(model, "max_concurrency", cfg.model.max_concurrency))
    return per_endpoint * max(1, len(getattr(model, "base_urls", None) or [None]))


async def _per_agent(
    asked: _Asked, shard: AgentShard, first: RoundContext, how: _How, batch: int
) -> RunEstimate:
    """One request per agent and round, at the rate of one batch of `batch` requests sent at
    once (as the run keeps `max_concurrency` in flight). On K engines each shard asks its own
    node's engine (nothing to plan), so the round takes the busiest engine's agents."""
    n, rounds = len(shard), shard.rounds
    sample = asked.prompts.chats(shard, first, rows=np.arange(min(batch, n)))
    start = time.perf_counter()
    await asked.model.generate(sample, asked.params)
    per_request = (time.perf_counter() - start) / len(sample)
    calls = 2 if asked.prompts.extract_number == "always" else 1
    engines = _shard_engines(how.cluster, how.positions, calls, per_request)
    seconds = max((e.seconds for e in engines), default=n * calls * per_request)
    rows = tuple(
        RoundEstimate(r, n * calls, n * calls, 0, 0, seconds, engines) for r in range(1, rounds + 1)
    )
    mode = f"one generation per agent (rate of a batch of {len(sample)} at once)"
    cluster = how.cluster
    rates = {"s_per_request": per_request}
    return RunEstimate(mode, n, rates, rows, cluster.engines, cluster.note)


def _shard_engines(
    cluster: ClusterShape, positions: np.ndarray, calls: int, per_request: float
) -> tuple[EngineShare, ...]:
    """One generation per agent on K engines: each engine answers its shards' agents."""
    if not cluster.planned:
        return ()
    agents = shard_engine_agents(cluster, positions)
    return tuple(
        EngineShare(e, int(a) * calls, 0, int(a) * calls * per_request)
        for e, a in enumerate(agents)
    )


async def _distribution(
    asked: _Asked, shard: AgentShard, first: RoundContext, how: _How
) -> RunEstimate:
    """Round 1 counted and walked exactly; each later round's prompts built from answers drawn
    from the distributions of the round before (see the module)."""
    n, rounds = len(shard), shard.rounds
    scorer = asked.model.node_scorer()
    found = await walk_prompts(asked.prompts, shard, first, scorer, asked.params)
    assert scorer is not None  # walk_prompts refuses a model without one
    below = sum(len(w.node_mass) - 1 for w in found.walks)
    rates = {
        "s_per_token": _token_rate(found.tokens, found.walks, found.order),
        "s_per_node": sum(w.node_seconds for w in found.walks) / max(1, below),
    }
    walks = list(found.walks)
    lineage = found.codes  # each agent's walk, its next answer's distribution (into `walks`)
    draws = _Draws(np.random.default_rng([first.seed, HISTORY_SEED]), first.game)
    ctx, out = first, []
    for number in range(1, rounds + 1):
        if number > 1:
            ctx = draws.next_round(ctx, shard, walks, lineage)
        grouped = asked.prompts.grouped(shard, ctx)
        if number == 1:
            tokens, group_walk = found.tokens, np.arange(len(walks), dtype=np.int64)
        else:
            tokens = list(await scorer.prompt_tokens(grouped.chats))
            group_walk = lineage[[int(m[0]) for m in grouped.members]]
            chained = how.later == "chained" and number < rounds
            picked = _shared(grouped.sizes) if chained else np.zeros(0, dtype=np.int64)
            group_walk[picked] = np.arange(len(walks), len(walks) + len(picked))
            walks.extend(await _walk(scorer, grouped, tokens, picked, asked.params))
        lineage = group_walk[grouped.codes]
        nodes = np.array(
            [walks[w].expected_nodes(m)[0] for w, m in zip(group_walk, grouped.sizes, strict=True)]
        )
        price = _Price(rates, tokens, nodes)
        whole = np.arange(len(tokens), dtype=np.int64)
        shares = engine_shares(how.cluster, how.positions, shard, grouped, ctx, tokens, price)
        bound = sum(
            min(int(m), len(w.answers) ** (number - 1))
            for w, m in zip(found.walks, found.sizes, strict=True)
        )
        out.append(
            RoundEstimate(
                number,
                len(tokens),
                min(n, bound),
                distinct_prefix_tokens(tokens),
                round(float(nodes.sum())),
                max((s.seconds for s in shares), default=price(whole)),
                shares,
            )
        )
    cluster = how.cluster
    return RunEstimate("distribution mode", n, rates, tuple(out), cluster.engines, cluster.note)


@dataclass(frozen=True)
class _Price:
    """Seconds of some of a round's prompts at the measured rates: their tokens evaluated (each
    shared prefix once) and the nodes their agents are expected to reach below the roots."""

    rates: dict[str, float]
    tokens: Sequence[Sequence[int]]
    nodes: np.ndarray

    def __call__(self, groups: np.ndarray) -> float:
        evaluated = distinct_prefix_tokens([self.tokens[g] for g in groups])
        below = max(0.0, float(self.nodes[groups].sum()) - len(groups))
        return evaluated * self.rates["s_per_token"] + below * self.rates["s_per_node"]


@dataclass(frozen=True)
class _Draws:
    """The estimate's draws of its agents' answers (its own random stream) and the targets
    they make."""

    rng: np.random.Generator
    game: GameSpec

    def next_round(
        self, ctx: RoundContext, shard: AgentShard, walks: Sequence[ExactWalk], lineage: np.ndarray
    ) -> RoundContext:
        """Round `ctx.round`'s answers drawn into `shard`'s memory (each agent from its walk in
        `walks`, `lineage`), and the next round's context with their target."""
        guesses = np.full(len(lineage), np.nan)
        order = np.argsort(lineage, kind="stable")
        starts = np.flatnonzero(np.diff(lineage[order], prepend=-1))
        for members in np.split(order, starts[1:]):
            walk = walks[int(lineage[members[0]])]
            values, probs = self._law(walk)
            guesses[members] = self.rng.choice(values, size=len(members), p=probs)
        shard.guesses[:, ctx.round - 1] = guesses
        valid = guesses[np.isfinite(guesses)]
        mean = float(valid.mean()) if len(valid) else float("nan")
        targets = (*ctx.previous_targets, target(mean, self.game))
        return replace(ctx, round=ctx.round + 1, previous_targets=targets)

    def _law(self, walk: ExactWalk) -> tuple[np.ndarray, np.ndarray]:
        """A walk's answers as guesses (nan where the run would not count one) and their
        probabilities."""
        values = []
        for text in walk.answers:
            value, status = parse_answer(text, self.game.low, self.game.high)
            values.append(value if status == Status.OK else np.nan)
        probs = np.array(list(walk.answers.values()), dtype=np.float64)
        return np.array(values, dtype=np.float64), probs / probs.sum()


def _shared(sizes: np.ndarray) -> np.ndarray:
    """Positions of the prompts two or more agents ask: the ones whose agents' next prompts can
    be fewer than their agents (one agent's prompt stays one agent's next round, whatever it
    draws), so the ones walked for the next round's draws."""
    return np.flatnonzero(np.asarray(sizes) >= 2).astype(np.int64)


async def _walk(
    scorer: NodeScorer,
    grouped: ShardPrompts,
    tokens: Sequence[Sequence[int]],
    picked: np.ndarray,
    params: SamplingParams,
) -> list[ExactWalk]:
    """The whole walks of the prompts at `picked`, in `picked`'s order (walked sorted by
    tokens, so each shares the most with the one before)."""
    if not len(picked):
        return []
    constraint = grouped.chats[0].constraint
    assert constraint is not None and constraint.integer_range is not None
    vocab = await scorer.vocabulary(*constraint.integer_range)
    walked: dict[int, ExactWalk] = {}
    for g in sorted((int(g) for g in picked), key=lambda g: tuple(tokens[g])):
        walked[g] = await answer_walk(scorer, tokens[g], vocab, params)
    return [walked[int(g)] for g in picked]


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
