"""RayBackend: one async Ray actor per shard, each hosting many agents as columns.

Actors are placed round-robin over every alive node of the cluster, build their own policy (an
embedded model is loaded once per actor process) and return each round's decisions as an Arrow
table through the object store. The driver keeps every shard's memory too, so an actor that dies
mid-round is recreated with it and the round replayed: deterministic streams make the replay
give the very answers the dead actor would have given, and no agent answers twice.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from collections.abc import Sequence
from typing import Any

import pyarrow as pa

from workbench.agents.factory import make_policy
from workbench.agents.policies import Policy
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import RunConfig
from workbench.errors import ConfigError
from workbench.runtime.local import play_shard

LOOPBACK_SWITCH = "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"
"""Set to 0 before Ray is imported, Ray binds a single-machine cluster to 127.0.0.1."""


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


def _address_error(address: str, why: str) -> ConfigError:
    return ConfigError(
        f"backend.address: cannot reach a Ray cluster at {address!r} ({why}); start one with "
        "`ray start --head` or leave the address empty for a local cluster"
    )


def _split_host_port(address: str) -> tuple[str, int] | None:
    """("host", port) from "host:port" or "[v6]:port"; None when it is not of that form."""
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit():
        return None
    return host, int(port)


def check_address(address: str, timeout_s: float = REACH_TIMEOUT_S) -> None:
    """ConfigError naming backend.address unless a TCP connection to it opens within `timeout_s`.

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
                raise _address_error(address, str(exc).splitlines()[0]) from None
        if resolved is None:  # "local": ray.init starts a new cluster
            return
        target = resolved
    parts = _split_host_port(target)
    if parts is None:
        raise _address_error(address, "expected host:port, e.g. 10.0.0.5:6379, or 'auto'")
    try:
        with socket.create_connection(parts, timeout=timeout_s):
            pass
    except OSError as exc:
        why = exc.strerror or type(exc).__name__
        raise _address_error(address, f"{target}: {why}") from None


def connect(address: str | None = None) -> dict[str, Any]:
    """Join a Ray cluster once per process (reused by later runs); start a local one if none.

    An address that does not answer fails in seconds with a ConfigError naming backend.address
    (also when this process is already connected, so a wrong address never goes unnoticed).
    Returns the cluster's alive nodes as {node_id: resources}.
    """
    if address is None and "ray" not in sys.modules:
        # a local cluster stays on loopback: Ray's own switch for single-machine clusters
        os.environ.setdefault(LOOPBACK_SWITCH, "0")
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

    def __init__(self, shard: AgentShard, config: RunConfig) -> None:
        shard.guesses = shard.guesses.copy()  # arrays from the object store are read-only
        self.shard = shard
        self.policy: Policy = make_policy(config)

    async def play(self, ctx: RoundContext) -> pa.Table:
        """Decide the shard's agents for one round."""
        return await play_shard(self.shard, self.policy, ctx)

    def where(self) -> dict[str, Any]:
        """The node and process this shard lives in (for the monitor and tests)."""
        ray = _ray()
        return {"node_id": ray.get_runtime_context().get_node_id(), "pid": os.getpid()}


class RayBackend:
    """Runs each shard in its own async Ray actor, spread over the cluster's nodes."""

    name = "ray"

    def __init__(self, config: RunConfig, *, max_restarts: int = 3) -> None:
        self.config = config
        self.address = config.backend.address
        self.max_restarts = max_restarts
        self.shards: list[AgentShard] = []
        self.actors: list[Any] = []
        self.nodes: list[str] = []
        self.restarts = 0

    async def node_count(self) -> int:
        """Alive nodes of the cluster (connecting to it, once per process)."""
        self.nodes = sorted(connect(self.address))
        return len(self.nodes)

    async def start(self, shards: Sequence[AgentShard], policy: Policy | None = None) -> None:
        """Create one actor per shard, round-robin over alive nodes (policies built inside)."""
        self.nodes = self.nodes or sorted(connect(self.address))
        self.shards = list(shards)
        self.actors = [self._spawn(i) for i in range(len(self.shards))]
        await asyncio.gather(*(actor.where.remote() for actor in self.actors))

    def _spawn(self, index: int) -> Any:
        ray = _ray()
        from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

        node = self.nodes[index % len(self.nodes)]
        remote = ray.remote(ShardActor).options(
            num_cpus=0,
            max_concurrency=4,
            # hard affinity: a soft one lets Ray put every actor on the driver's node whenever
            # the others are slow to start workers; a node that died is dropped on respawn
            scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False),
        )
        return remote.remote(self.shards[index], self.config)

    async def play_round(self, ctx: RoundContext) -> list[pa.Table]:
        """Every shard's decisions; a shard whose actor died is respawned and replayed."""
        tables = await asyncio.gather(*(self._play(i, ctx) for i in range(len(self.shards))))
        for shard, table in zip(self.shards, tables, strict=True):
            shard.remember(ctx.round, table)  # the driver's copy, for respawns
        return list(tables)

    async def _play(self, index: int, ctx: RoundContext) -> pa.Table:
        from ray.exceptions import RayActorError

        for attempt in range(self.max_restarts + 1):
            try:
                return await self.actors[index].play.remote(ctx)
            except RayActorError:
                if attempt == self.max_restarts:
                    raise
                self.restarts += 1
                self.shards[index].forget_after(ctx.round - 1)
                self.nodes = _alive_nodes() or self.nodes  # its node may be the one that died
                self.actors[index] = self._spawn(index)
        raise AssertionError("unreachable")

    async def placement(self) -> list[dict[str, Any]]:
        """Where each shard's actor runs: shard index, node id, pid, agents."""
        places = await asyncio.gather(*(a.where.remote() for a in self.actors))
        return [
            {"shard": i, "agents": len(s), **p}
            for i, (s, p) in enumerate(zip(self.shards, places, strict=True))
        ]

    def describe(self) -> dict[str, object]:
        """What ran where, for the bundle manifest."""
        return {
            "kind": self.name,
            "shards": len(self.shards),
            "nodes": len(self.nodes),
            "address": self.address or "local",
            "restarts": self.restarts,
        }

    async def close(self) -> None:
        """Kill this run's actors (the Ray connection stays for the next run)."""
        ray = _ray()
        for actor in self.actors:
            ray.kill(actor)
        self.actors = []
