"""What one model engine did per round, counted where it walks: a Ray model actor
(`runtime.model_actors`), or one endpoint of a served model (`llm.endpoints`).

A model actor walks the prompt groups the shards send it (`ModelActor.draw_answers`); a served
model with several endpoints walks each group's nodes on the endpoint its route gives. A
`WorkMeter` counts, per round: the distinct prompts it walked (a prompt walked for two shards
counts once) and their prompt tokens, the trie nodes the walks asked for (`visits`) and those its
model scored (`nodes`: visits less the model's memo hits; a node scored for one shard is read
back for another), the answers drawn and the seconds it was busy walking (overlapping calls
count once). The driver (or the local backend) takes each engine's round (`take`) into the
bundle and the events (`results.layout.ENGINE_WORK_FIELDS`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from workbench.llm.distribution.walk import GroupAnswers, PromptGroup, TrieCounts
from workbench.llm.routes import request_key


@dataclass
class RoundWork:
    """One engine's round so far."""

    tokens: dict[str, int] = field(default_factory=dict)  # prompt key -> its prompt tokens
    visits: int = 0
    agents: int = 0
    seconds: float = 0.0
    hits_before: int = 0  # the model's memo hits when the round's first walk began


class WorkMeter:
    """Counts one engine's walks per round; `hits` reads its model's memo hits so far (0 for a
    model without a memo)."""

    def __init__(self, hits: Callable[[], int]) -> None:
        self.hits = hits
        self.rounds: dict[int, RoundWork] = {}
        self._active = 0
        self._since = 0.0

    @contextmanager
    def walking(self, round_number: int) -> Iterator[RoundWork]:
        """Held while one call walks groups of `round_number`: its busy time is counted once
        however many calls overlap."""
        work = self.rounds.get(round_number)
        if work is None:
            work = self.rounds[round_number] = RoundWork(hits_before=self.hits())
        if self._active == 0:
            self._since = time.perf_counter()
        self._active += 1
        try:
            yield work
        finally:
            self._active -= 1
            if self._active == 0:
                work.seconds += time.perf_counter() - self._since

    @staticmethod
    def add(
        work: RoundWork,
        groups: Sequence[PromptGroup],
        answers: Sequence[GroupAnswers],
        counts: TrieCounts,
    ) -> None:
        """One call's walks into its round."""
        for group, answer in zip(groups, answers, strict=True):
            work.tokens.setdefault(request_key(group.request), answer.prompt_tokens)
            work.agents += len(group.agent_ids)
        work.visits += counts.nodes

    def take(self, round_number: int, engine: int, node: str | None) -> dict[str, Any]:
        """Engine `engine`'s work in round `round_number` (`ENGINE_WORK_FIELDS`); the round is
        then forgotten here (a replayed round counts afresh)."""
        work = self.rounds.pop(round_number, None) or RoundWork(hits_before=self.hits())
        scored = work.visits - (self.hits() - work.hits_before)
        return {
            "round": round_number,
            "engine": engine,
            "node": node,
            "prompts": len(work.tokens),
            "prompt_tokens": sum(work.tokens.values()),
            "nodes": max(scored, 0),
            "visits": work.visits,
            "agents": work.agents,
            "seconds": round(work.seconds, 6),
        }
