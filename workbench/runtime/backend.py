"""The Backend contract: what the Simulation asks of any place that hosts agent shards.

A backend builds its own policy (in this process, or inside each Ray shard actor), so the
Simulation never needs to know which backend it drives. `make_backend` picks one by config.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    import pyarrow as pa

    from workbench.agents.shard import AgentShard, RoundContext
    from workbench.config import RunConfig
    from workbench.llm.chat_model import ChatModel
    from workbench.runtime.progress import Emit, ShardSink


@runtime_checkable
class Backend(Protocol):
    """Hosts a run's shards: prepare (before writing), start, play rounds, describe, close."""

    name: str
    run_id: str | None
    """The run it plays, set by the Simulation once the bundle exists (Ray names actors by it)."""
    shard_sink: ShardSink | None
    """Set by the Simulation: awaited with each shard's decisions as soon as that shard is done
    (its part file is written there); shards a backend never hands over are written with the
    round."""

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

    async def engine_work(self, round_number: int) -> list[dict[str, Any]]:
        """What each model engine did in round `round_number`, once it is played
        (`results.layout.ENGINE_WORK_FIELDS`); [] where there are no engines to count."""
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
