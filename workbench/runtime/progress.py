"""Progress of shards still playing a round, reported by every backend the same way.

Models count each answer as it lands (`llm.base.report_answered`); a backend reads those
counts for the shards still playing and, every `PROGRESS_EVERY_S`, emits a "playing"
`ShardProgress` for each shard whose counts moved.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any

from workbench.runtime.events import Event, ShardProgress

Emit = Callable[[Event], None]
"""Where a backend sends its events (shard progress): the Simulation's event bus."""

ShardSink = Callable[[int, int, Any], Awaitable[None]]
"""Where a backend hands one shard's decisions (round, shard, Arrow table) the moment that shard
is done, before its "done" progress: the Simulation writes the shard's part file there, so a
reader of the bundle sees the round fill shard by shard."""

PROGRESS_EVERY_S = 1.0
"""How often a backend reports the progress of shards still playing a round."""

Read = Callable[[], Awaitable[Mapping[int, Mapping[str, Any]]]]
"""{shard: counts so far (answered, errors, tokens, node, pid, ...)} of the shards still playing."""


async def report_progress(
    round_number: int,
    agents: Mapping[int, int],
    read: Read,
    emit: Emit,
    every_s: float = PROGRESS_EVERY_S,
) -> None:
    """Every `every_s`, a "playing" `ShardProgress` for each shard whose counts moved; runs
    until cancelled (when the round's shards are all done)."""
    last: dict[int, Mapping[str, Any]] = {}
    while True:
        await asyncio.sleep(every_s)
        for shard, counts in (await read()).items():
            if counts.get("answered") and counts != last.get(shard):
                last[shard] = counts
                emit(ShardProgress(round=round_number, shard=shard, agents=agents[shard], **counts))


@contextlib.asynccontextmanager
async def progress_reports(
    round_number: int,
    agents: Mapping[int, int],
    read: Read,
    emit: Emit | None,
    every_s: float = PROGRESS_EVERY_S,
) -> AsyncIterator[None]:
    """`report_progress` in the background while the block plays the round (nothing without
    `emit`); stopped when the block ends."""
    if emit is None:
        yield
        return
    ticker = asyncio.create_task(report_progress(round_number, agents, read, emit, every_s))
    try:
        yield
    finally:
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
