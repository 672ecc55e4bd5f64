"""RayBackend: one async Ray actor per shard, each hosting many agents as columns.

Actors are placed round-robin over every alive node of the cluster, build their own policy and
return each round's decisions as an Arrow table through the object store. An LLM policy's model
lives where `backend.model_placement` says: in every shard actor, or in model actors (one per
node, per GPU or per cluster, see `engines`) that the shards on a node share.

The driver keeps every shard's memory too, so an actor that dies mid-round is recreated with it
and the round replayed: deterministic streams make the replay give the very answers the dead
actor would have given, and no agent answers twice.

Shard actors are named after their run (`actor_name`: `<run id>/shard-<i>` in the Ray namespace
`NAMESPACE`) once the Simulation has told the backend its run id, so the cluster monitor finds
them with Ray's public `list_named_actors` and can shut down those whose run has ended.
"""

from __future__ import annotations

import asyncio
import os
import re
import secrets
import socket
import sys
import time
from collections.abc import Sequence
from typing import Any

import pandas as pd
import pyarrow as pa

from workbench.agents.factory import make_policy
from workbench.agents.policies import LLMPolicy, Policy
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import LLMPolicySpec, RunConfig
from workbench.errors import ConfigError, ModelError
from workbench.llm import ChatModel
from workbench.llm.base import BatchProgress, track_progress
from workbench.llm.routes import Routes
from workbench.runtime.cluster_plan import RoundPlan, plan_round, shard_routes
from workbench.runtime.events import ShardProgress, event_from_dict, rss_bytes, shard_done
from workbench.runtime.local import play_shard
from workbench.runtime.model_actors import (
    EngineSlot,
    ModelActor,
    Placement,
    RemoteModel,
    engine_for,
    gpus_per_engine,
    plan_engines,
    resolve_placement,
)
from workbench.runtime.progress import PROGRESS_EVERY_S, Emit, ShardSink, progress_reports
from workbench.runtime.prompt_report import shard_report

LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to 0 before Ray is imported, Ray binds a single-machine cluster to 127.0.0.1."""

AUTH_MODE_ENV = "RAY_AUTH_MODE"
AUTH_TOKEN_ENV = "RAY_AUTH_TOKEN"
"""Ray's token authentication (2.60, after ShadowRay): its mode, and the token Ray reads before
any file (~/.ray/auth_token, which Ray would otherwise write with the user's umask)."""


def keep_local_token_in_memory() -> None:
    """Token authentication for a local cluster this process starts, with a token made here
    and held only in this process's environment (inherited by the raylet and workers Ray
    starts; /proc/PID/environ is readable by the owner only), never written to a file. An
    owner's own RAY_AUTH_MODE or RAY_AUTH_TOKEN is kept."""
    os.environ.setdefault(AUTH_MODE_ENV, "token")
    if os.environ[AUTH_MODE_ENV].lower() != "token":
        return
    os.environ.setdefault(AUTH_TOKEN_ENV, secrets.token_hex(32))
    if "ray" in sys.modules:  # Ray read its config at import: make it read the mode again
        from ray._raylet import AuthenticationTokenLoader, Config

        Config.initialize("")
        AuthenticationTokenLoader.instance().reset_cache()


def _ray() -> Any:
    """Import ray with a clear message when it is missing."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    try:
        import ray
    except ImportError:  # pragma: no cover - ray is a core dependency
        raise ConfigError(
            "backend.kind ray needs the `ray` package: run `bash .ci/setup`"
        ) from None
    return ray


REACH_TIMEOUT_S = 2.0
"""How long `connect` waits for a TCP answer from a cluster address before giving up."""


NAMESPACE = "workbench"
"""The Ray namespace of the workbench's named actors (what the cluster monitor lists)."""

_ACTOR_NAME = re.compile(r"(?P<run_id>.+)/shard-(?P<index>\d+)(?:\.r[0-9a-f]+)?")


def actor_name(run_id: str, index: int) -> str:
    """The Ray name of a run's shard actor: `<run id>/shard-<index>`."""
    return f"{run_id}/shard-{index}"


def parse_actor_name(name: str) -> tuple[str, int] | None:
    """(run id, shard index) from a name `actor_name` gave (or its `.r<hex>` form, taken when
    that name is still held); None for a name the workbench did not give."""
    match = _ACTOR_NAME.fullmatch(name)
    if match is None:
        return None
    return match["run_id"], int(match["index"])


def _address_error(address: str, why: str, field: str = "backend.address") -> ConfigError:
    fix = (
        "start one with `ray start --head` or leave the address empty for a local cluster"
        if field == "backend.address"
        else "start one with `ray start --head`, or check the address (host:port or 'auto')"
    )
    return ConfigError(f"{field}: cannot reach a Ray cluster at {address!r} ({why}); {fix}")


def _split_host_port(address: str) -> tuple[str, int] | None:
    """("host", port) from "host:port" or "[v6]:port"; None when it is not of that form."""
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        return None
    return host, int(port)


def check_address(
    address: str, timeout_s: float = REACH_TIMEOUT_S, field: str = "backend.address"
) -> None:
    """ConfigError naming `field` unless a TCP connection to `address` opens within `timeout_s`.

    `ray.init` retries an address that does not answer for minutes; this fails in seconds.
    "auto" is resolved the way Ray does it (RAY_ADDRESS, then the last `ray start` cluster), and
    a loopback host is checked as Ray will dial it (Ray swaps it for this machine's address).
    """
    target = address.removeprefix("ray://")
    if target == address:  # a cluster address, not a Ray Client one: resolve it as ray.init does
        _ray()
        try:
            from ray._private.services import canonicalize_bootstrap_address
        except ImportError:  # pragma: no cover - private API moved; check the address as given
            resolved: str | None = address
        else:
            try:
                resolved = canonicalize_bootstrap_address(address)
            except (ConnectionError, ValueError) as exc:
                raise _address_error(address, str(exc).splitlines()[0], field) from None
        if resolved is None:  # "local": ray.init starts a new cluster
            return
        target = resolved
    parts = _split_host_port(target)
    if parts is None:
        raise _address_error(address, "expected host:port, e.g. 10.0.0.5:6379, or 'auto'", field)
    try:
        with socket.create_connection(parts, timeout=timeout_s):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise _address_error(address, f"{target}: {why}", field) from None


def connect(address: str | None = None) -> dict[str, Any]:
    """Join a Ray cluster once per process (reused by later runs); start a local one if none.

    An address that does not answer fails in seconds with a ConfigError naming backend.address
    (also when this process is already connected, so a wrong address never goes unnoticed).
    A local cluster keeps Ray's token authentication with a token held in memory only
    (`keep_local_token_in_memory`). Returns the cluster's alive nodes as {node_id: resources}.
    """
    if address is None and "ray" not in sys.modules:
        # a local cluster stays on loopback: Ray's own switch for single-machine clusters
        os.environ.setdefault(LOOPBACK_SWITCH, "0")
    if address is None and not ("ray" in sys.modules and sys.modules["ray"].is_initialized()):
        keep_local_token_in_memory()  # before Ray is imported, where it can be
    ray = _ray()
    if address is not None:
        current = ray.get_runtime_context().gcs_address if ray.is_initialized() else None
        if address != current:
            check_address(address)
    if not ray.is_initialized():
        if address is None:
            print(
                "workbench: no Ray address given, starting a local Ray cluster on this machine",
                file=sys.stderr,
            )
            ray.init(
                address="local",  # a new cluster, never one a `ray start` left behind
                include_dashboard=False,
                logging_level="WARNING",
                log_to_driver=False,
            )
        else:
            try:
                ray.init(address=address, logging_level="WARNING", log_to_driver=False)
            except (ConnectionError, RuntimeError, ValueError) as exc:
                raise _address_error(address, str(exc).splitlines()[0]) from None
    return {n["NodeID"]: n["Resources"] for n in ray.nodes() if n["Alive"]}


def _alive_nodes() -> list[str]:
    """Ids of the connected cluster's alive nodes, sorted."""
    return sorted(n["NodeID"] for n in _ray().nodes() if n["Alive"])


class ShardActor:
    """Hosts one shard and its policy inside a Ray actor process."""

    def __init__(
        self, shard: AgentShard, config: RunConfig, model: ChatModel | None = None
    ) -> None:
        shard.guesses = shard.guesses.copy()  # arrays from the object store are read-only
        self.shard = shard
        self.policy: Policy = make_policy(config, model)
        self.playing: BatchProgress | None = None

    async def report(self, ctx: RoundContext) -> pd.DataFrame | None:
        """This shard's distinct prompts of the round for the cluster's plan
        (`runtime.prompt_report`); None when its answers are not drawn by model actors in
        distribution mode (there is nothing to plan)."""
        policy = self.policy
        if not (isinstance(policy, LLMPolicy) and policy.distribution):
            return None
        model = policy.model
        if not isinstance(model, RemoteModel):
            return None
        return await shard_report(policy.prompts, self.shard, ctx, model.prompt_lengths)

    async def play(
        self, ctx: RoundContext, routes: Routes | None = None
    ) -> tuple[pa.Table, dict[str, Any]]:
        """Decide the shard's agents for one round, each prompt walked on the engine `routes`
        gives it (None: on this shard's own); the decisions and this actor's progress."""
        if isinstance(self.policy, LLMPolicy) and isinstance(self.policy.model, RemoteModel):
            self.policy.model.routes = routes
        start = time.perf_counter()
        self.playing = BatchProgress()
        try:
            with track_progress(self.playing):
                table = await play_shard(self.shard, self.policy, ctx)
        finally:
            self.playing = None
        node = _ray().get_runtime_context().get_node_id()
        done = shard_done(table, ctx.round, self.shard.index, time.perf_counter() - start, node)
        return table, done.to_dict()

    def progress(self) -> dict[str, Any]:
        """The round in play so far (answers the model has reported), with where and how big
        this actor is; {} between rounds."""
        playing = self.playing
        if playing is None:
            return {}
        node = _ray().get_runtime_context().get_node_id()
        return {**playing.snapshot(), "node": node, "pid": os.getpid(), "rss_bytes": rss_bytes()}

    def where(self) -> dict[str, Any]:
        """The node and process this shard lives in, and what answers its agents."""
        ray = _ray()
        model = self.policy.model if isinstance(self.policy, LLMPolicy) else None
        return {
            "node_id": ray.get_runtime_context().get_node_id(),
            "pid": os.getpid(),
            "model": None if model is None else type(model).__name__,
            "engine": model.engine if isinstance(model, RemoteModel) else None,
        }


class RayBackend:
    """Runs each shard in its own async Ray actor, spread over the cluster's nodes."""

    name = "ray"

    def __init__(
        self, config: RunConfig, *, max_restarts: int = 3, model: ChatModel | None = None
    ) -> None:
        self.config = config
        self.address = config.backend.address
        self.max_restarts = max_restarts
        self.model = model  # a model object given to Simulation: copied into the model actors
        self.shards: list[AgentShard] = []
        self.actors: list[Any] = []
        self.nodes: list[str] = []
        self.resources: dict[str, dict[str, float]] = {}
        self.placement_kind: Placement | None = None
        self.slots: list[EngineSlot] = []
        self.engines: list[Any] = []
        self.engine_identity: dict[str, Any] = {}
        self.engine_draws = False
        self.plans: dict[int, RoundPlan] = {}
        """Each planned round's plan (`cluster_plan.plan_round`), by round number."""
        self.model_ref: Any = None  # the given model in Ray's object store
        self.restarts = 0
        self.progress_every_s = PROGRESS_EVERY_S
        self.run_id: str | None = None
        """The run these shards play (the Simulation sets it before `start`): the shard actors
        are then named `actor_name(run_id, i)` in NAMESPACE; None leaves them unnamed."""
        self.shard_sink: ShardSink | None = None
        """Where each shard's decisions go as soon as its actor returns them (the Simulation
        writes its part file)."""

    async def node_count(self) -> int:
        """Alive nodes of the cluster (connecting to it, once per process)."""
        self.resources = connect(self.address)
        self.nodes = sorted(self.resources)
        return len(self.nodes)

    async def prepare(self) -> None:
        """Start the model actors the placement asks for and wait until their models load.

        Runs before the bundle is written: no GPU for `gpu`, a model object Ray cannot send,
        or a model that fails to load is an error before any agent plays.
        """
        if not self.nodes:
            await self.node_count()
        if not isinstance(self.config.policy, LLMPolicySpec):
            return
        self.placement_kind = resolve_placement(self.config, self.model is not None)
        if self.model is not None:
            # the given model goes to the store once; the backend holds the reference so that
            # an actor Ray restarts can still read its constructor's argument
            self.model_ref = self._shippable(self.model)
        if self.placement_kind == "shard":
            return
        ray = _ray()
        driver = ray.get_runtime_context().get_node_id()
        self.slots = plan_engines(
            self.placement_kind, self.resources, driver, gpus_per_engine(self.config)
        )
        _check_free_gpus(sum(slot.gpus for slot in self.slots))
        source = self.model_ref if self.model_ref is not None else self.config
        self.engines = [self._spawn_engine(slot, source) for slot in self.slots]
        from ray.exceptions import RayActorError

        try:
            await asyncio.gather(*(engine.where.remote() for engine in self.engines))
            self.engine_identity = await self.engines[0].identity.remote()
            self.engine_draws = await self.engines[0].draws_answers.remote()
        except RayActorError as exc:
            await self.close()
            raise ModelError(f"a model actor failed to start: {_cause(exc)}") from None

    def _shippable(self, model: ChatModel) -> Any:
        """The given model in Ray's object store; ConfigError when it cannot be sent."""
        ray = _ray()
        try:
            return ray.put(model)
        except Exception as exc:  # Ray raises TypeError or its own serialization errors
            raise ConfigError(
                f"Simulation(model=...): {type(model).__name__} cannot be sent to Ray actors "
                f"({type(exc).__name__}: {str(exc).splitlines()[0]}); describe the model in "
                "config.model instead, or run it on the local backend"
            ) from None

    def _spawn_engine(self, slot: EngineSlot, source: Any) -> Any:
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        remote = ray.remote(ModelActor).options(
            num_cpus=0,
            num_gpus=slot.gpus,
            max_concurrency=1000,
            # a model actor whose process dies is restarted and the calls in flight retried
            max_restarts=self.max_restarts,
            max_task_retries=self.max_restarts,
            scheduling_strategy=NodeAffinitySchedulingStrategy(slot.node, soft=False),
        )
        return remote.remote(source)

    async def start(self, shards: Sequence[AgentShard]) -> None:
        """Create one actor per shard, round-robin over alive nodes (policies built inside)."""
        if not self.nodes:
            await self.node_count()
        self.shards = list(shards)
        self.actors = [self._spawn(i) for i in range(len(self.shards))]
        await asyncio.gather(*(actor.where.remote() for actor in self.actors))

    def _spawn(self, index: int) -> Any:
        """A new actor for shard `index` on its round-robin node, named after the run (a name
        still held, e.g. by a leftover actor of a resumed run, takes a `.r<hex>` suffix)."""
        ray = _ray()
        from ray.exceptions import ActorAlreadyExistsError
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = self.nodes[index % len(self.nodes)]
        options: dict[str, Any] = {
            "num_cpus": 0,
            "max_concurrency": 4,
            # hard affinity: a soft one lets Ray put every actor on the driver's node whenever
            # the others are slow to start workers; a node that died is dropped on respawn
            "scheduling_strategy": NodeAffinitySchedulingStrategy(node, soft=False),
        }
        args = (self.shards[index], self.config, self._model_of(node, index))
        remote = ray.remote(ShardActor)
        if self.run_id is None:
            return remote.options(**options).remote(*args)
        name = actor_name(self.run_id, index)
        try:
            return remote.options(**options, name=name, namespace=NAMESPACE).remote(*args)
        except ActorAlreadyExistsError:
            name = f"{name}.r{secrets.token_hex(3)}"
            return remote.options(**options, name=name, namespace=NAMESPACE).remote(*args)

    def _respawn(self, index: int) -> Any:
        """A new actor for shard `index` after its actor died, under the same name. This process
        holds an actor's name for as long as it holds a handle of it, dead or not, so the dead
        actor's handle goes first (a name still held elsewhere is suffixed, see `_spawn`)."""
        self.actors[index] = None
        return self._spawn(index)

    def _model_of(self, node: str, index: int) -> Any:
        """What shard `index` on `node` asks: a model actor, the given model, or its own."""
        if not self.engines:
            return self.model_ref  # None: the shard actor builds the config's model itself
        engine = engine_for(node, index, self.slots, set(self.nodes))
        return RemoteModel(self.engines, self.engine_identity, engine, self.engine_draws)

    async def play_round(self, ctx: RoundContext, emit: Emit | None = None) -> list[pa.Table]:
        """Every shard's decisions; a shard whose actor died is respawned and replayed.

        Each actor's own progress report (node, pid, memory, errors, tokens) goes to `emit` as
        soon as that shard is done, while the other shards still play; the actors still playing
        are asked how far they have got every `progress_every_s`.
        """
        routes = await self._plan(ctx)
        pending = set(range(len(self.shards)))

        async def play(index: int) -> pa.Table:
            try:
                return await self._play(index, ctx, emit, routes.get(index))
            finally:
                pending.discard(index)

        async def read() -> dict[int, dict[str, Any]]:
            indices = sorted(pending)
            answers = await asyncio.gather(
                *(self.actors[i].progress.remote() for i in indices), return_exceptions=True
            )
            return {i: a for i, a in zip(indices, answers, strict=True) if isinstance(a, dict)}

        agents = {i: len(s) for i, s in enumerate(self.shards)}
        async with progress_reports(ctx.round, agents, read, emit, self.progress_every_s):
            tables = await asyncio.gather(*(play(i) for i in range(len(self.shards))))
        for shard, table in zip(self.shards, tables, strict=True):
            shard.remember(ctx.round, table)  # the driver's copy, for respawns
        return list(tables)

    async def _plan(self, ctx: RoundContext) -> dict[int, Routes]:
        """The round's plan over the model actors alive, as each shard's routes: every shard
        reports its distinct prompts, each distinct prompt goes to exactly one engine
        (`cluster_plan.plan_round`). {} (each shard walks on its own node's engine) with one
        engine, outside distribution mode, or when a shard cannot report (its actor died: it
        is respawned when it plays)."""
        alive = set(self.nodes)
        engines = [i for i, slot in enumerate(self.slots) if slot.node in alive]
        if len(engines) < 2 or not self.engine_draws:
            return {}
        from ray.exceptions import RayActorError

        try:
            reports = await asyncio.gather(*(a.report.remote(ctx) for a in self.actors))
        except RayActorError:
            return {}
        if any(r is None for r in reports):
            return {}
        rows = pd.concat(reports, ignore_index=True)
        plan = plan_round(rows, len(engines))
        self.plans[ctx.round] = plan
        return shard_routes(plan, rows, engines)

    async def engine_work(self, round_number: int) -> list[dict[str, Any]]:
        """What each model actor did in round `round_number` (`results.layout.ENGINE_WORK_FIELDS`),
        engines in order; [] outside distribution mode (nothing is walked there) and for an
        engine that stays dead."""
        if not self.engines or not self.engine_draws:
            return []
        answers = await asyncio.gather(
            *(e.work.remote(round_number, i) for i, e in enumerate(self.engines)),
            return_exceptions=True,
        )
        return [a for a in answers if isinstance(a, dict)]

    async def _play(
        self, index: int, ctx: RoundContext, emit: Emit | None, routes: Routes | None = None
    ) -> pa.Table:
        from ray.exceptions import RayActorError

        shard = self.shards[index]
        for attempt in range(self.max_restarts + 1):
            if emit is not None:
                emit(ShardProgress(round=ctx.round, shard=index, agents=len(shard)))
            try:
                table, progress = await self.actors[index].play.remote(ctx, routes)
                if self.shard_sink is not None:
                    await self.shard_sink(ctx.round, index, table)
                if emit is not None:
                    event = event_from_dict(progress)
                    if event is not None:
                        emit(event)
                return table
            except RayActorError:
                if attempt == self.max_restarts:
                    raise
                self.restarts += 1
                self.shards[index].forget_after(ctx.round - 1)
                self.nodes = _alive_nodes() or self.nodes  # its node may be the one that died
                self.actors[index] = self._respawn(index)
        raise AssertionError("unreachable")

    async def placement(self) -> list[dict[str, Any]]:
        """Where each shard's actor runs: shard index, node id, pid, agents."""
        places = await asyncio.gather(*(a.where.remote() for a in self.actors))
        return [
            {"shard": i, "agents": len(s), **p}
            for i, (s, p) in enumerate(zip(self.shards, places, strict=True))
        ]

    async def engine_placement(self) -> list[dict[str, Any]]:
        """Where each model actor runs: engine index, node id, pid, GPUs."""
        places = await asyncio.gather(*(e.where.remote() for e in self.engines))
        return [{"engine": i, **p} for i, p in enumerate(places)]

    def describe(self) -> dict[str, object]:
        """What ran where, for the bundle manifest."""
        described: dict[str, object] = {
            "kind": self.name,
            "shards": len(self.shards),
            "nodes": len(self.nodes),
            "address": self.address or "local",
            "restarts": self.restarts,
        }
        if self.placement_kind is not None:
            described["model_placement"] = self.placement_kind
            described["model_actors"] = len(self.engines)
            if len(self.engines) > 1 and self.engine_draws:
                described["division"] = "one plan per round: each distinct prompt on one engine"
        return described

    async def close(self) -> None:
        """Kill this run's actors (the Ray connection stays for the next run)."""
        ray = _ray()
        for actor in [*self.actors, *self.engines]:
            ray.kill(actor)
        self.actors, self.engines, self.model_ref = [], [], None


def _check_free_gpus(needed: int) -> None:
    """ConfigError when other jobs hold GPUs the model actors need (they would wait forever)."""
    if needed == 0:
        return
    free = int(_ray().available_resources().get("GPU", 0))
    if free < needed:
        raise ConfigError(
            f"backend.model_placement: the model actors need {needed} GPU(s) and {free} are "
            "free in this Ray cluster (other jobs hold the rest); wait for them, or use "
            "model_placement: node (or shard)"
        )


def _cause(exc: BaseException) -> str:
    """The first line of why an actor died (Ray wraps the constructor's error)."""
    text = str(exc)
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    errors = [ln for ln in lines if "Error" in ln and not ln.startswith(("File", "Traceback"))]
    return (errors[-1] if errors else lines[0]) if lines else type(exc).__name__
