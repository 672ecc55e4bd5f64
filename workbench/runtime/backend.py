"""The Backend contract: what the Simulation asks of any place that hosts agent shards.

A backend builds its own policy (in this process, or inside each Ray shard actor), so the
Simulation never needs to know which backend it drives. `make_backend` picks one by config.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pyarrow as pa

    from workbench.agents.shard import AgentShard, RoundContext
    from workbench.config import RunConfig
    from workbench.llm.base import ChatModel
    from workbench.runtime.events import Event

Emit = Callable[["Event"], None]
"""Where a backend sends its events (shard progress): the Simulation's event bus."""

PROGRESS_EVERY_S = 1.0
"""How often a backend reports the progress of shards still playing a round."""


async def report_progress(
    round_number: int,
    agents: Mapping[int, int],
    read: Callable[[], Awaitable[Mapping[int, Mapping[str, Any]]]],
    emit: Emit,
    every_s: float = PROGRESS_EVERY_S,
) -> None:
    """Every `every_s`, a "playing" `ShardProgress` for each shard whose counts moved.

    `read()` gives {shard: counts so far (answered, errors, tokens, node, pid, ...)} of the
    shards still playing; runs until cancelled (when the round's shards are all done).
    """
    from workbench.runtime.events import ShardProgress

    last: dict[int, Mapping[str, Any]] = {}
    while True:
        await asyncio.sleep(every_s)
        for shard, counts in (await read()).items():
            if counts.get("answered") and counts != last.get(shard):
                last[shard] = counts
                emit(ShardProgress(round=round_number, shard=shard, agents=agents[shard], **counts))


@runtime_checkable
class Backend(Protocol):
    """Hosts a run's shards: prepare (before writing), start, play rounds, describe, close."""

    name: str

    async def node_count(self) -> int:
        """Nodes the shards are spread over (sizes the shards)."""
        ...

    async def prepare(self) -> None:
        """Build the policy and load its model (or start model actors) before anything is written;
        a model that cannot load fails here."""
        ...

    async def start(self, shards: Sequence[AgentShard]) -> None:
        """Take the shards (the policy is the backend's own)."""
        ...

    async def play_round(self, ctx: RoundContext, emit: Emit | None = None) -> list[pa.Table]:
        """Every shard's decisions for one round, in shard order; progress sent to `emit`."""
        ...

    def describe(self) -> dict[str, object]:
        """What ran where, for the bundle manifest."""
        ...

    async def close(self) -> None:
        """Release what the run held (actors, the policy's model)."""
        ...


def make_backend(config: RunConfig, model: ChatModel | None = None) -> Backend:
    """The backend `config.backend.kind` names; `model`: the object LLM agents ask (local: the one
    the Simulation resolved; Ray: one given to `Simulation(model=...)`, sent to model actors)."""
    if config.backend.kind == "ray":
        from workbench.runtime.ray_backend import RayBackend

        return RayBackend(config, max_restarts=config.backend.max_restarts, model=model)
    from workbench.runtime.local import LocalBackend

    return LocalBackend(config, model)
