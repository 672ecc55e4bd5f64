"""Model actors on Ray: one model shared by many shard actors (per node, per GPU, or per cluster).

A shard actor that builds its own model loads it once per shard; for an in-process vLLM engine
that is one engine per shard on one GPU. Instead the Ray backend can start `ModelActor`s, each
holding one model, and give every shard a `RemoteModel` that forwards its batches to the model
actor on its own node. Ray restarts a model actor whose process dies and retries the calls that
were in flight; a model actor that stays dead turns its shards' requests into recorded
model_error answers, never a lost round.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.llm import ChatModel, as_chat_model, model_for
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.llm.distribution.walk import GroupAnswers, PromptGroup, TrieCounts, report_group
from workbench.llm.engine_work import WorkMeter
from workbench.llm.routes import Routes

Placement = Literal["shard", "node", "gpu", "cluster"]

AUTO_PLACEMENT: dict[str, Placement] = {
    "vllm": "gpu",
    "openai": "cluster",
    "replay": "node",
    "embedded": "node",
}
"""`model_placement: auto` by model kind. The embedded model is one per node: shard actors that
each loaded their own model with every core's thread oversubscribed the node (Ray rounds took
twice the local ones on 2 cores)."""


def resolve_placement(config: RunConfig, given_model: bool = False) -> Placement:
    """Where the run's model lives: the config's choice, or the default for its model kind.

    A model object handed to `Simulation(model=...)` lives in one actor for the cluster; with
    several kinds in a mixed population the most shared placement wins (gpu, cluster, node).
    """
    requested = config.backend.model_placement
    if requested != "auto":
        return requested
    if given_model:
        return "cluster"
    kinds = {spec.kind for spec in config.models.values()} or {config.model.kind}
    chosen = {AUTO_PLACEMENT[k] for k in kinds if k in AUTO_PLACEMENT}
    for placement in ("gpu", "cluster", "node"):
        if placement in chosen:
            return placement  # type: ignore[return-value]
    return "shard"


@dataclass(frozen=True)
class EngineSlot:
    """Where one model actor goes: its node and the GPUs it holds."""

    node: str
    gpus: int = 0


def plan_engines(
    placement: Placement,
    nodes: dict[str, dict[str, float]],
    driver_node: str | None = None,
    gpus_per_engine: int = 1,
) -> list[EngineSlot]:
    """The model actors a placement needs on these nodes ({node id: resources}).

    `shard` needs none; `cluster` one on the driver's node; `node` one per node; `gpu` one per
    `gpus_per_engine` GPUs of every node (ConfigError naming backend.model_placement when no
    node has that many).
    """
    ordered = sorted(nodes)
    if placement == "shard":
        return []
    if placement == "cluster":
        return [EngineSlot(driver_node if driver_node in nodes else ordered[0])]
    if placement == "node":
        return [EngineSlot(node) for node in ordered]
    slots = [
        EngineSlot(node, gpus_per_engine)
        for node in ordered
        for _ in range(int(nodes[node].get("GPU", 0)) // gpus_per_engine)
    ]
    if not slots:
        most = max(int(resources.get("GPU", 0)) for resources in nodes.values())
        raise ConfigError(
            f"backend.model_placement: gpu needs {gpus_per_engine} GPU(s) on one node for an "
            f"engine, and the nodes of this Ray cluster have at most {most}; use "
            "model_placement: node (or shard), a smaller tensor_parallel_size, or a cluster "
            "with GPU nodes"
        )
    return slots


def gpus_per_engine(config: RunConfig) -> int:
    """GPUs each model actor holds: the most any of the run's models needs."""
    specs = list(config.models.values()) or [config.model]
    return max(spec.gpus_per_engine() for spec in specs)


def engine_for(
    shard_node: str, index: int, slots: Sequence[EngineSlot], alive: set[str] | None = None
) -> int:
    """Which model actor shard `index` on `shard_node` asks: one on its own node when there is
    one (shards of a node take turns over its GPUs), else one on any alive node (round-robin)."""
    local = [i for i, slot in enumerate(slots) if slot.node == shard_node]
    live = [i for i, slot in enumerate(slots) if alive is None or slot.node in alive]
    pool = local or live or list(range(len(slots)))
    return pool[index % len(pool)]


class ModelActor:
    """Hosts one chat model inside a Ray actor; shard actors send it their batches."""

    def __init__(self, source: RunConfig | ChatModel) -> None:
        model = model_for(source) if isinstance(source, RunConfig) else as_chat_model(source)
        model.load()  # now, so that a model that cannot load fails the run before it starts
        self.model: ChatModel = model
        self.meter = WorkMeter(lambda: _memo_hits(model))

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """One shard's batch, answered by this actor's model."""
        return await self.model.generate(requests, params)

    def identity(self) -> dict[str, Any]:
        """The hosted model's identity."""
        return dict(self.model.identity)

    def draws_answers(self) -> bool:
        """Whether the hosted model draws constrained answers in distribution mode."""
        return self.model.draws_answers()

    async def draw_answers(
        self,
        groups: Sequence[PromptGroup],
        params: SamplingParams,
        uniforms: Callable[[Any, int], Any],
    ) -> tuple[list[GroupAnswers], dict[str, int]]:
        """One shard's prompt groups drawn by this actor's model, with what the trie did (also
        counted into this engine's round, `work`)."""
        counts = TrieCounts()
        round_number = (groups[0].request.round or 0) if groups else 0
        with self.meter.walking(round_number) as work:
            answers = await self.model.draw_answers(groups, params, uniforms, counts)
        self.meter.add(work, groups, answers, counts)
        return answers, counts.as_dict()

    async def prompt_lengths(self, requests: Sequence[ChatRequest]) -> list[int]:
        """Each chat's prompt tokens as this actor's model counts them (a shard's report)."""
        scorer = self.model.node_scorer()
        if scorer is None:
            raise ConfigError("distribution mode's plan needs a model that scores trie nodes")
        return [len(tokens) for tokens in await scorer.prompt_tokens(requests)]

    def work(self, round_number: int, engine: int) -> dict[str, Any]:
        """What this engine (number `engine`) did in round `round_number`
        (`results.layout.ENGINE_WORK_FIELDS`)."""
        import ray

        return self.meter.take(round_number, engine, ray.get_runtime_context().get_node_id())

    def where(self) -> dict[str, Any]:
        """Node, process and the GPUs Ray gave this actor (for the monitor and tests)."""
        import ray

        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "gpu_ids": [str(g) for g in ray.get_gpu_ids()],
            "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        }


class RemoteModel(ChatModel):
    """A `ChatModel` that forwards batches to a `ModelActor` (what shard actors hold)."""

    def __init__(
        self,
        handles: Sequence[Any],
        identity: dict[str, Any],
        engine: int,
        draws: bool = False,
    ) -> None:
        self.handles = list(handles)  # every model actor of the run, by engine number
        self.handle = self.handles[engine]
        self._identity = identity
        self.engine = engine  # this shard's own engine (on its node)
        self.draws = draws  # the hosted model draws answers in distribution mode
        self.routes: Routes | None = None
        """The round's plan for this shard's prompts (set before each round it applies to);
        None: every walk goes to the own engine."""

    @property
    def identity(self) -> dict[str, Any]:
        """The remote model's identity."""
        return self._identity

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """The model actor's answers; a model actor that stays dead answers model_error."""
        from ray.exceptions import RayActorError

        try:
            return list(await self.handle.generate.remote(list(requests), params))
        except RayActorError as exc:
            error = self._died(exc)
            return [ChatResult(None, error=error, error_kind="model_error") for _ in requests]

    def draws_answers(self) -> bool:
        """Whether the model actor draws constrained answers in distribution mode (the trie
        is walked there, next to the engine, one call per shard and step)."""
        return self.draws

    async def draw_answers(
        self,
        groups: Sequence[PromptGroup],
        params: SamplingParams,
        uniforms: Callable[[Any, int], Any],
        counts: TrieCounts,
    ) -> list[GroupAnswers]:
        """The model actors' draws (each group on the engine `routes` gives it, else on this
        shard's own), their trie counts added to `counts` and each group's progress reported
        here; a model actor that stays dead fails every group it was sent (model_error)."""
        routes = self.routes
        if routes is None:
            parts = {self.engine: list(range(len(groups)))}
        else:
            parts = routes.split([g.request for g in groups])
        drawn = await asyncio.gather(
            *(
                self._draw(engine, [groups[i] for i in where], params, uniforms)
                for engine, where in parts.items()
            )
        )
        answers: list[GroupAnswers | None] = [None] * len(groups)
        for where, (mine, done) in zip(parts.values(), drawn, strict=True):
            counts.add(TrieCounts(**done))
            for i, answer in zip(where, mine, strict=True):
                answers[i] = answer
                report_group(groups[i], answer)
        return answers  # type: ignore[return-value]

    async def _draw(
        self,
        engine: int,
        groups: list[PromptGroup],
        params: SamplingParams,
        uniforms: Callable[[Any, int], Any],
    ) -> tuple[list[GroupAnswers], dict[str, int]]:
        """Engine `engine`'s draws of `groups` and its trie counts; every group failed when the
        engine stays dead."""
        from ray.exceptions import RayActorError

        try:
            answers, done = await self.handles[engine].draw_answers.remote(groups, params, uniforms)
        except RayActorError as exc:
            error = self._died(exc, engine)
            failed = [
                GroupAnswers([], [], np.zeros(len(g.agent_ids), dtype=np.int64), 0, error=error)
                for g in groups
            ]
            return failed, TrieCounts().as_dict()
        return list(answers), done

    async def prompt_lengths(self, requests: Sequence[ChatRequest]) -> list[int]:
        """Each chat's prompt tokens, counted by this shard's own engine."""
        return list(await self.handle.prompt_lengths.remote(list(requests)))

    def _died(self, exc: Exception, engine: int | None = None) -> str:
        """The error every answer of a model actor that stays dead records."""
        number = self.engine if engine is None else engine
        return f"model actor {number} died: {str(exc).splitlines()[0]}"


def _memo_hits(model: ChatModel) -> int:
    """How many node scores `model`'s scorer has answered without scoring them so far (0 when
    it scores no nodes)."""
    scorer = model.node_scorer()
    return 0 if scorer is None else scorer.memo_hits
