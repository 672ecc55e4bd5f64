"""One plan per round for K engines: each distinct prompt of the round walked on exactly one.

The input is a round's prompts as the shards report them, not their agents: one row per
(shard, distinct prompt of that shard) with the columns of `REPORT_COLUMNS`:

- `shard`: the shard's number (shards are numbered as `agents.shard.split_into_shards` cuts them);
- `key`: the prompt's identity (`llm.routes.prompt_key`: a hash of its chat messages and
  model), equal on every shard that holds agents with that prompt;
- `path`: its affinity path, a tuple of strings: the persona and model first, then the agent's
  earlier numbers in order. That is what the prompt's prefix is made of: the shared rules and
  round question, then the persona, then the numbers (`game.user_message`), so two prompts
  whose paths share a head share that much of their tokens;
- `tokens`: its prompt tokens; `agents`: how many of the shard's agents ask it.

`plan_round(rows, k)` assigns each distinct prompt to exactly one of `k` engines:

1. The round's distinct prompts: rows with one key are one prompt (its agents summed over the
   shards that report it).
2. Buckets by the first element of the path (persona and model): prompts that share it share
   their prefix up to the persona, so one engine's cached pieces serve them all.
3. Every bucket heavier (in prompt tokens) than the split line is split by the next element of
   its path (the next earlier number; a prompt whose path is spent is split off by its key), until
   none is heavier or nothing is left to split. The line starts at the share total / k.
4. The buckets go to the engines longest-first: by tokens descending (ties: the bucket's path),
   each to the engine with the fewest tokens so far (ties: the lowest engine number).
5. While the largest engine holds more than `tolerance` x total / k tokens and some bucket can
   still be split, the line is halved and steps 3 and 4 redone. So prompts are split off their
   persona (and then their earlier numbers) only as far as balance needs, and the largest engine's
   share approaches 1/k.

Engines are balanced by prompt tokens summed, each prompt whole (a prompt's walk costs its
tokens beyond what its engine has cached plus its answer trie's nodes, both about even across a
round's prompts). The same rows give the same plan: nothing depends on row order.

`shard_division(rows, k)` is today's division for comparison: on Ray with
`backend.model_placement: node`, shard actor i goes to node i % K (`RayBackend._spawn`: nodes
sorted, round-robin) and asks the one model actor on its node (`model_actors.engine_for`), so
engine i % K walks the distinct prompts of its own shards: a prompt whose agents sit on shards
of several engines is walked on each of them.

Pure: pandas. The Ray backend executes it (`runtime.ray_backend`): shards report, the driver
plans, each shard's prompts go to their engines by `llm.routes.Routes`.
"""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from workbench.llm.routes import Routes

REPORT_COLUMNS = ("shard", "key", "path", "tokens", "agents")
"""The columns of a round's reported prompts (see the module)."""

TOLERANCE = 1.05
"""How far above 1/k the largest engine's token share may stay before buckets split further."""

MAX_HALVINGS = 64
"""The split line is halved at most this often (a bound; splitting stops earlier, at single
prompts)."""


@dataclass(frozen=True)
class EngineLoad:
    """What one engine walks in a round: its distinct prompts (`keys`, sorted), their prompt
    tokens summed (each prompt whole) and the agents whose answers they give."""

    keys: tuple[str, ...]
    tokens: int
    agents: int

    @property
    def prompts(self) -> int:
        """Distinct prompts the engine walks."""
        return len(self.keys)


@dataclass(frozen=True)
class Division:
    """A round's prompts divided over engines (`how`: "plan" or "shards"), beside the round's
    distinct prompts and their tokens."""

    how: str
    engines: tuple[EngineLoad, ...]
    distinct_prompts: int
    distinct_tokens: int

    @property
    def walked(self) -> int:
        """Prompts walked over all engines (a prompt walked on two engines counts twice)."""
        return sum(e.prompts for e in self.engines)

    @property
    def over_distinct(self) -> float:
        """Prompts walked over all engines / the round's distinct prompts (1.0: each once)."""
        return self.walked / self.distinct_prompts if self.distinct_prompts else 1.0

    @property
    def largest_share(self) -> float:
        """The largest engine's prompts / the round's distinct prompts (ideal 1/k)."""
        most = max((e.prompts for e in self.engines), default=0)
        return most / self.distinct_prompts if self.distinct_prompts else 0.0

    @property
    def largest_token_share(self) -> float:
        """The largest engine's prompt tokens / the round's distinct prompts' tokens."""
        most = max((e.tokens for e in self.engines), default=0)
        return most / self.distinct_tokens if self.distinct_tokens else 0.0


@dataclass(frozen=True)
class RoundPlan(Division):
    """`plan_round`'s division: each distinct prompt on exactly one engine (`engine_of`), and
    the buckets (path heads) the prompts were kept together by."""

    engine_of: Mapping[str, int]
    buckets: tuple[tuple[str, ...], ...]


def distinct_prompts(rows: pd.DataFrame) -> pd.DataFrame:
    """The round's distinct prompts from the shards' rows: one row per key (sorted), with its
    path and tokens (the first reported) and its agents over all shards."""
    _check(rows)
    if rows.empty:
        return pd.DataFrame({"key": [], "path": [], "tokens": [], "agents": []})
    grouped = rows.groupby("key", sort=True)
    out = grouped.agg(path=("path", "first"), tokens=("tokens", "first"), agents=("agents", "sum"))
    out["path"] = [tuple(str(p) for p in path) for path in out["path"]]
    out["tokens"] = out["tokens"].astype("int64")
    out["agents"] = out["agents"].astype("int64")
    return out.reset_index()


def plan_round(rows: pd.DataFrame, k: int, tolerance: float = TOLERANCE) -> RoundPlan:
    """Each distinct prompt of the round on exactly one of `k` engines, prefix-affine and
    balanced by tokens (the rule is the module's)."""
    if k < 1:
        raise ValueError(f"k must be >= 1 engine, got {k}")
    prompts = distinct_prompts(rows)
    total = int(prompts["tokens"].sum())
    paths = [(*path, key) for path, key in zip(prompts["path"], prompts["key"], strict=True)]
    weights = prompts["tokens"].tolist()
    buckets: dict[tuple[str, ...], list[int]] = {}
    for i, path in enumerate(paths):
        buckets.setdefault(path[:1], []).append(i)
    line = total / k
    for _ in range(MAX_HALVINGS):
        buckets = _split(buckets, paths, weights, line)
        loads, engine_of_bucket = _assign(buckets, weights, k)
        balanced = max(loads, default=0) <= tolerance * total / k
        if balanced or not any(_splittable(b, paths, buckets[b]) for b in buckets):
            break
        line /= 2
    engine_of: dict[str, int] = {}
    members: list[list[int]] = [[] for _ in range(k)]
    for head, engine in engine_of_bucket.items():
        for i in buckets[head]:
            engine_of[paths[i][-1]] = engine
            members[engine].append(i)
    engines = tuple(_load(prompts, sorted(m)) for m in members)
    heads = tuple(sorted(buckets))
    return RoundPlan("plan", engines, len(prompts), total, engine_of, heads)


def shard_routes(plan: RoundPlan, rows: pd.DataFrame, engines: Sequence[int]) -> dict[int, Routes]:
    """Each reporting shard's part of `plan` (made for `len(engines)` engines): its prompts' engine
    numbers, plan engine i being `engines[i]` (the engines alive, in order)."""
    routes: dict[int, Routes] = {}
    numbers = tuple(engines)
    for shard, mine in rows.groupby("shard", sort=True):
        planned = {key: numbers[plan.engine_of[key]] for key in mine["key"]}
        routes[int(shard)] = Routes(numbers, planned)
    return routes


def shard_division(rows: pd.DataFrame, k: int) -> Division:
    """Today's division (see the module): engine e walks every distinct prompt of the shards
    i with i % k == e, once each however many of its shards report it."""
    if k < 1:
        raise ValueError(f"k must be >= 1 engine, got {k}")
    prompts = distinct_prompts(rows)
    tokens = dict(zip(prompts["key"], prompts["tokens"], strict=True))
    engine = rows["shard"].astype("int64") % k
    engines = []
    for e in range(k):
        mine = rows[engine == e]
        keys = tuple(sorted(set(mine["key"])))
        engines.append(
            EngineLoad(keys, int(sum(tokens[key] for key in keys)), int(mine["agents"].sum()))
        )
    return Division("shards", tuple(engines), len(prompts), int(prompts["tokens"].sum()))


def _check(rows: pd.DataFrame) -> None:
    missing = [c for c in REPORT_COLUMNS if c not in rows.columns]
    if missing:
        raise ValueError(f"reported prompts lack the column(s) {missing}; need {REPORT_COLUMNS}")


def _splittable(head: tuple[str, ...], paths: list[tuple[str, ...]], members: list[int]) -> bool:
    """Whether a bucket can split: more than one prompt, all with a path beyond its head."""
    return len(members) > 1 and all(len(paths[i]) > len(head) for i in members)


def _split(
    buckets: dict[tuple[str, ...], list[int]],
    paths: list[tuple[str, ...]],
    weights: list[int],
    line: float,
) -> dict[tuple[str, ...], list[int]]:
    """The buckets with every one heavier than `line` split by its paths' next element, again
    and again, until none is heavier or none heavier can split."""
    done: dict[tuple[str, ...], list[int]] = {}
    todo = list(buckets.items())
    while todo:
        head, members = todo.pop()
        if sum(weights[i] for i in members) <= line or not _splittable(head, paths, members):
            done[head] = members
            continue
        children: dict[tuple[str, ...], list[int]] = {}
        for i in members:
            children.setdefault(paths[i][: len(head) + 1], []).append(i)
        todo.extend(children.items())
    return done


def _assign(
    buckets: dict[tuple[str, ...], list[int]], weights: list[int], k: int
) -> tuple[list[int], dict[tuple[str, ...], int]]:
    """Greedy longest-first: each bucket, heaviest first (ties by head), to the engine with
    the fewest tokens so far (ties: the lowest number). The engines' tokens and each bucket's
    engine."""
    sized = sorted(
        ((sum(weights[i] for i in m), head) for head, m in buckets.items()),
        key=lambda item: (-item[0], item[1]),
    )
    heap = [(0, e) for e in range(k)]
    loads = [0] * k
    engine_of: dict[tuple[str, ...], int] = {}
    for weight, head in sized:
        load, engine = heapq.heappop(heap)
        engine_of[head] = engine
        loads[engine] = load + weight
        heapq.heappush(heap, (loads[engine], engine))
    return loads, engine_of


def _load(prompts: pd.DataFrame, members: list[int]) -> EngineLoad:
    """An engine's load from the distinct prompts at positions `members`."""
    picked = prompts.iloc[members]
    return EngineLoad(
        tuple(sorted(picked["key"])), int(picked["tokens"].sum()), int(picked["agents"].sum())
    )
