"""`workbench bench cluster`: what one plan per round would save K engines, counted from a real run.

A config (the quickstart by default, 2,000 agents, 3 rounds) is played once on the local backend
with the embedded model in distribution mode. Then each round's prompts are rebuilt from the
bundle (memory of the earlier rounds restored, the bundle's targets and game:
`runtime.prompt_walks.bundle_round`, as the exact distributions rebuild it), grouped as the
run groups them (`agents.prompts.Prompts.grouped`, no model), and each distinct prompt
tokenized by the model.

For each K (`--nodes`, 32 always added), the agents are cut into shards as the Ray backend cuts
them for K nodes (`backend.shard_size(n, K)`: the config's agents_per_shard, else its
shards_per_node, else two shards a node), each shard reports its distinct prompts
(`runtime.cluster_plan.REPORT_COLUMNS`), and two divisions are counted:

- by shard: engine i % K walks every distinct prompt of shards i, i + K, ... (`shard_division`:
  `model_placement: node`, shard actors round-robin over the nodes, one engine a node);
- plan: each distinct prompt on exactly one engine (`plan_round`).

Per engine: the distinct prompts it walks, their prompt tokens summed (each prompt whole, what the
plan balances) and their distinct-prefix tokens (`runtime.prompt_walks.distinct_prefix_tokens`:
each prefix shared by the engine's prompts once, what an engine with a prefix cache evaluates),
and the agents whose answers they give. Trie nodes per engine are not measured (`nodes`: None):
the local run counts a round's nodes, not each prompt's. Per division: the prompts walked over
all engines (x the distinct prompts), the largest engine's share of the distinct prompts and of
their tokens (ideal 1/K), and a projected round time: the round's measured seconds x the largest
engine's distinct-prefix tokens / the round's. That is a projection at this machine's rate,
never a measurement: no cluster runs here, and the plan is not yet executed by the Ray backend.
Numbers are reported, never asserted.
"""

from __future__ import annotations

import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.bench.cluster_ray import RayRun, local_ray_cluster, ray_run
from workbench.bench.embedded import bench_config, embedded_model, on_backend
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.llm.embedded.engine import EngineCounters
from workbench.llm.llamacpp import LlamaCppModel
from workbench.llm.routes import request_key
from workbench.results import Bundle
from workbench.runtime import Simulation
from workbench.runtime.blocking import run_blocking
from workbench.runtime.cluster_plan import Division, plan_round, shard_division
from workbench.runtime.prompt_report import prompt_paths
from workbench.runtime.prompt_walks import bundle_round, distinct_prefix_tokens

DEFAULT_N = 2_000
DEFAULT_ROUNDS = 3
DEFAULT_NODES = (2, 4, 8)
ON_PAPER = 32
"""Always counted: the paper's 32 GPUs."""
RAY_MOST = 8
"""`--ray` plays the config on a local Ray cluster for each K up to this (K nodes of one
machine share its cores)."""

FOOTER = (
    "by shard: engine i % K walks the distinct prompts of shards i, i+K, ... (each shard on its "
    "own node's engine: the Ray backend before the plan); plan: each distinct prompt on one engine "
    "(runtime.cluster_plan).",
    "ray (--ray): the plan as a K-node Ray cluster on this machine executed it, counted by each "
    "model actor; without it, counts from the local run's prompts.",
    "projected s = the round's measured seconds x the largest engine's distinct-prefix tokens / "
    "the round's: a projection at this machine's rate, never a measurement (trie nodes and "
    "draws assumed to scale alike, no network).",
)
"""The report's closing lines (also the JSON's `note`)."""


@dataclass(frozen=True)
class RoundPrompts:
    """A round's distinct prompts over the whole population: each agent's prompt (`codes`,
    agents in the personas' order), each prompt's key, affinity path and tokens."""

    codes: np.ndarray
    keys: list[str]
    paths: list[tuple[str, ...]]
    tokens: list[tuple[int, ...]]

    def report(self, size: int) -> pd.DataFrame:
        """What the shards of `size` consecutive agents report (`REPORT_COLUMNS`): one row per
        (shard, distinct prompt of that shard)."""
        shard = np.arange(len(self.codes), dtype=np.int64) // size
        pairs, agents = np.unique(shard * len(self.keys) + self.codes, return_counts=True)
        shards, codes = np.divmod(pairs, len(self.keys))
        return pd.DataFrame(
            {
                "shard": shards,
                "key": [self.keys[c] for c in codes],
                "path": [self.paths[c] for c in codes],
                "tokens": [len(self.tokens[c]) for c in codes],
                "agents": agents,
            }
        )


def round_prompts(
    prompts: Prompts, shard: AgentShard, ctx: RoundContext, model: Any
) -> RoundPrompts:
    """`shard`'s distinct prompts of round `ctx.round` (its memory restored), tokenized by
    `model`'s node scorer."""
    grouped = prompts.grouped(shard, ctx)
    paths = prompt_paths(shard, [int(m[0]) for m in grouped.members], ctx)
    keys = [request_key(chat) for chat in grouped.chats]
    tokens = run_blocking(model.node_scorer().prompt_tokens(grouped.chats))
    return RoundPrompts(grouped.codes, keys, paths, list(tokens))


@dataclass
class Count:
    """One division of one round on K engines, as the bench reports it."""

    how: str
    engines: list[dict[str, Any]]
    walked: int
    over_distinct: float
    largest_share: float
    largest_token_share: float
    projected_s: float


@dataclass
class RayCount(Count):
    """The plan as a K-node Ray run executed it: each engine's measured work (its nodes are
    the trie nodes its model scored), whether each engine walked exactly the plan's prompts,
    the nodes scored over all engines / the local run's, and whether the answers are the local
    run's."""

    matches_plan: bool = False
    nodes_over_local: float = 0.0
    identical: bool = False


@dataclass
class ClusterCount:
    """One K of one round: its shards, the division by shard, the plan, and the plan as a K-node
    Ray run executed it (`--ray`)."""

    nodes: int
    shards: int
    by_shard: Count
    plan: Count
    ray: RayCount | None = None


@dataclass
class RoundCount:
    """One round: the local run's seconds and engine counters, the distinct prompts and their
    tokens, and each K."""

    round: int
    seconds: float
    distinct_prompts: int
    tokens: int
    prefix_tokens: int
    evaluated: int
    nodes_evaluated: int
    clusters: list[ClusterCount] = field(default_factory=list)

    @property
    def s_per_prefix_token(self) -> float:
        """The round's seconds per distinct-prefix token (the projections' rate)."""
        return self.seconds / self.prefix_tokens if self.prefix_tokens else 0.0


@dataclass
class ClusterReport:
    """What `cluster_bench` counted."""

    config: str
    n_agents: int
    rounds_played: int
    seed: int
    model: str
    local_shards: int
    shards_rule: str
    rounds: list[RoundCount]
    bundle: str | None = None


def parse_nodes(values: list[str] | None) -> list[int]:
    """Engine counts from --nodes (repeatable, each a comma list), ascending, with 32 added;
    ConfigError naming --nodes."""
    texts = values or [",".join(str(k) for k in DEFAULT_NODES)]
    parts = [p.strip() for text in texts for p in text.split(",") if p.strip()]
    if not parts or not all(p.isdigit() and int(p) >= 1 for p in parts):
        raise ConfigError(f"--nodes: give engine counts of 1 or more, e.g. 2,4,8; got {texts!r}")
    return sorted({int(p) for p in parts} | {ON_PAPER})


def cluster_bench(
    config_path: Path | None = None,
    *,
    n: int = DEFAULT_N,
    rounds: int = DEFAULT_ROUNDS,
    nodes: list[str] | None = None,
    seed: int | None = None,
    out: Path | None = None,
    model: LlamaCppModel | None = None,
    ray: bool = False,
) -> ClusterReport:
    """Play the config once locally and count each round's divisions (see the module); the
    bundle goes to `out` (kept) or a temporary folder. `model`: the embedded model to use
    (default: the config's, loaded here). `ray`: also play it on a K-node local Ray cluster
    for each K up to `RAY_MOST` (`bench.cluster_ray`) and count what its engines did."""
    ks = parse_nodes(nodes)
    if rounds < 1:
        raise ConfigError(f"--rounds: play at least one round, got {rounds}")
    config = bench_config(config_path, n=n, rounds=rounds, seed=seed, sampling="workbench")
    on_ray = on_backend(config, "ray").backend
    try:
        sizes = {k: on_ray.shard_size(config.n_agents, k) for k in ks}  # before any model work
    except ConfigError as exc:
        raise ConfigError(
            f"-n: {config.n_agents:,} agents cannot fill the shards of {ks[-1]} nodes ({exc})"
        ) from None
    local = on_backend(config, "local")
    engine = model if model is not None else embedded_model(config)
    with tempfile.TemporaryDirectory(prefix="bench-cluster-") as temp:
        folder = Path(out) if out is not None else Path(temp)
        bundle, measured = _play(local, engine, folder)
        counted = [
            _count_round(bundle, number, engine, sizes, *measured[number - 1])
            for number in range(1, bundle.rounds_count + 1)
        ]
        for k in [k for k in ks if k <= RAY_MOST] if ray else []:
            with local_ray_cluster(k) as address:
                run = ray_run(config, address, bundle, folder)
            for round_count in counted:
                cluster = next(c for c in round_count.clusters if c.nodes == k)
                cluster.ray = _ray_count(run, round_count, cluster)
        kept = str(bundle.path) if out is not None else None
    return ClusterReport(
        config.name,
        config.n_agents,
        rounds,
        config.seed,
        str(engine.identity.get("name")),
        -(-config.n_agents // local.backend.shard_size(config.n_agents)),
        _shards_rule(config),
        counted,
        kept,
    )


def _shards_rule(config: RunConfig) -> str:
    """How the shards were cut for K nodes, in words."""
    backend = config.backend
    if backend.agents_per_shard is not None:
        return f"backend.agents_per_shard {backend.agents_per_shard:,}"
    return f"{backend.shards_per_node or 2} shards a node (backend.shards_per_node), as on Ray"


def _play(
    config: RunConfig, model: LlamaCppModel, folder: Path
) -> tuple[Bundle, list[tuple[float, int, int]]]:
    """Play the rounds locally: the bundle and each round's (seconds, prompt tokens evaluated,
    trie nodes scored), the seconds as the bundle records them."""
    counters: list[tuple[int, int]] = []

    def count(number: int, stats: object, seconds: float) -> None:
        counters.append((model.counters.evaluated_tokens, model.counters.nodes))
        model.counters = EngineCounters()

    model.counters = EngineCounters()
    bundle = Simulation(config, model=model).run(out_dir=folder, progress=False, on_round=count)
    seconds = [float(s) for s in bundle.rounds()["seconds"]]
    return bundle, [(s, *c) for s, c in zip(seconds, counters, strict=True)]


def _count_round(
    bundle: Bundle,
    number: int,
    model: LlamaCppModel,
    sizes: dict[int, int],
    seconds: float,
    evaluated: int,
    nodes: int,
) -> RoundCount:
    """Round `number` of the bundle rebuilt, its prompts reported by each K's shards and
    divided both ways."""
    shard, ctx = bundle_round(bundle, number, bundle.responses())
    found = round_prompts(Prompts.of(bundle.config), shard, ctx, model)
    tokens = dict(zip(found.keys, found.tokens, strict=True))
    prefix = distinct_prefix_tokens(found.tokens)
    counted = RoundCount(
        number,
        seconds,
        len(found.keys),
        sum(len(t) for t in found.tokens),
        prefix,
        evaluated,
        nodes,
    )
    rate = counted.s_per_prefix_token
    for k, size in sizes.items():
        rows = found.report(size)
        by_shard = _count("by shard", shard_division(rows, k), tokens, rate)
        plan = _count("plan", plan_round(rows, k), tokens, rate)
        counted.clusters.append(ClusterCount(k, int(rows["shard"].max()) + 1, by_shard, plan))
    return counted


def _count(how: str, division: Division, tokens: dict[str, tuple[int, ...]], rate: float) -> Count:
    """A division as the bench reports it (`how`: by shard or plan), each engine's
    distinct-prefix tokens added."""
    engines = [
        {
            "prompts": e.prompts,
            "nodes": None,  # not measured: the local run counts a round's nodes, not a prompt's
            "tokens": e.tokens,
            "prefix_tokens": distinct_prefix_tokens([tokens[key] for key in e.keys]),
            "agents": e.agents,
        }
        for e in division.engines
    ]
    largest = max((e["prefix_tokens"] for e in engines), default=0)
    return Count(
        how,
        engines,
        division.walked,
        division.over_distinct,
        division.largest_share,
        division.largest_token_share,
        largest * rate,
    )


def _ray_count(run: RayRun, counted: RoundCount, cluster: ClusterCount) -> RayCount:
    """Round `counted.round` of a K-node Ray run, beside the plan the bench made for it."""
    engines = [
        {
            "prompts": int(row["prompts"]),
            "nodes": int(row["nodes"]),
            "tokens": int(row["prompt_tokens"]),
            "visits": int(row["visits"]),
            "agents": int(row["agents"]),
            "seconds": float(row["seconds"]),
        }
        for row in run.engines.get(counted.round, [])
    ]
    planned = [(e["prompts"], e["tokens"]) for e in cluster.plan.engines]
    matches = [(e["prompts"], e["tokens"]) for e in engines] == planned
    walked = int(sum(e["prompts"] for e in engines))
    distinct = counted.distinct_prompts or 1
    nodes = sum(e["nodes"] for e in engines)
    return RayCount(
        "ray",
        engines,
        walked,
        walked / distinct,
        max((e["prompts"] for e in engines), default=0) / distinct,
        max((e["tokens"] for e in engines), default=0) / (counted.tokens or 1),
        cluster.plan.projected_s if matches else float("nan"),
        matches_plan=matches,
        nodes_over_local=nodes / counted.nodes_evaluated if counted.nodes_evaluated else 0.0,
        identical=run.identical,
    )


def report_dict(report: ClusterReport) -> dict[str, Any]:
    """The report as plain data (`--json`): per round `round`, `distinct_prompts` and, per K
    (`clusters`), `by_shard`, `plan` and (with --ray) `ray`, each with `engines` ({prompts,
    nodes, tokens, ...}; nodes None where not measured per engine: only `ray` measures them)."""
    data = asdict(report)
    for counted, row in zip(report.rounds, data["rounds"], strict=True):
        row["s_per_prefix_token"] = counted.s_per_prefix_token
    data["note"] = " ".join(FOOTER)
    return data


def report_text(report: ClusterReport) -> str:
    """The report for a terminal: a header, per round a table of K x division with each
    engine's prompts and distinct-prefix tokens below, and the footer."""
    lines = [
        f"bench cluster: config {report.config}, {report.n_agents:,} agents, "
        f"{report.rounds_played} round(s), seed {report.seed}; played once on the local backend "
        f"({report.local_shards} shard(s)) with {report.model}",
        f"shards for K nodes: {report.shards_rule}; {_what_ran(report)}",
    ]
    for counted in report.rounds:
        lines += _round_lines(counted)
    if report.bundle is not None:
        lines.append(f"bundle: {report.bundle}")
    lines += ["", *FOOTER]
    return "\n".join(lines)


def _what_ran(report: ClusterReport) -> str:
    """Which K were only counted and which also ran on a local Ray cluster."""
    ran = sorted({c.nodes for r in report.rounds for c in r.clusters if c.ray is not None})
    if not ran:
        return f"every K is counted, not run (K = {ON_PAPER} on paper)"
    listed = ", ".join(str(k) for k in ran)
    return f"K = {listed} also run on a local Ray cluster (ray rows); K = {ON_PAPER} on paper"


def _round_lines(counted: RoundCount) -> list[str]:
    """One round's table: K, division, shards, walked (x distinct), largest shares, projection."""
    lines = [
        "",
        f"round {counted.round}: {counted.distinct_prompts:,} distinct prompts, "
        f"{counted.tokens:,} prompt tokens ({counted.prefix_tokens:,} distinct-prefix); "
        f"{counted.seconds:.2f} s on one engine here, "
        f"{1000 * counted.s_per_prefix_token:.2f} ms a distinct-prefix token "
        f"(engine evaluated {counted.evaluated:,} tokens, {counted.nodes_evaluated:,} trie nodes)",
        f"{'K':>3} {'division':<8} {'shards':>6} {'walked':>8} {'x dist':>7} "
        f"{'largest':>8} {'ideal':>6} {'tok share':>9} {'projected s':>11}",
    ]
    for cluster in counted.clusters:
        for count in _counts(cluster):
            lines.append(
                f"{cluster.nodes:>3} {count.how:<8} {cluster.shards:>6} {count.walked:>8,} "
                f"{count.over_distinct:>6.2f}x {count.largest_share:>8.3f} "
                f"{1 / cluster.nodes:>6.3f} {count.largest_token_share:>9.3f} "
                f"{count.projected_s:>11.2f}"
            )
        for count in (cluster.by_shard, cluster.plan):
            prompts = " ".join(str(e["prompts"]) for e in count.engines)
            tokens = " ".join(str(e["prefix_tokens"]) for e in count.engines)
            lines.append(f"      {count.how:<8} prompts per engine: {prompts}")
            lines.append(f"      {count.how:<8} distinct-prefix tokens per engine: {tokens}")
        if cluster.ray is not None:
            lines += _ray_lines(cluster.ray)
    return lines


def _counts(cluster: ClusterCount) -> list[Count]:
    """The divisions of one K in the order the table shows them."""
    ray = [] if cluster.ray is None else [cluster.ray]
    return [cluster.by_shard, cluster.plan, *ray]


def _ray_lines(ray: RayCount) -> list[str]:
    """What a K-node Ray run's engines did, below its table row."""
    prompts = " ".join(str(e["prompts"]) for e in ray.engines)
    nodes = " ".join(str(e["nodes"]) for e in ray.engines)
    yes = {True: "yes", False: "NO"}
    return [
        f"      ray      prompts per engine (measured): {prompts}; trie nodes scored: {nodes}",
        f"      ray      as planned: {yes[ray.matches_plan]}; nodes over all engines "
        f"{ray.nodes_over_local:.3f}x the local run's; answers identical to the local run's: "
        f"{yes[ray.identical]}",
    ]
