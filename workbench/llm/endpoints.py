"""A served model's several endpoints as the engines of one plan per round (issue 38, item 2).

Without a plan each node request goes to the endpoint with the fewest requests in flight, so
every endpoint's prefix cache fills with the same prompts. A model with several `base_urls`
that draws answers in distribution mode is instead given, before each round's model work, the
round's routes (`llm.routes.Routes`: the local backend plans them over every shard's report with
`runtime.cluster_plan.plan_round`): each distinct prompt of the round on exactly one endpoint,
prompts that share a history prefix together. `Endpoints` then walks each group on its
prompt's endpoint: the scorer sends every node of a prompt there first
(`ServedNodeScorer.route`; a request that fails is retried elsewhere, as without a plan), and
each endpoint's work is counted per round (`engine_work.WorkMeter`: engine = the endpoint's
number in `base_urls`, node = its host:port, never its path, user or key). Answers do not
depend on the routes: a node's log-probabilities are the same on every endpoint of one build.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from workbench.llm.base import SamplingParams
from workbench.llm.distribution.scorer import NodeScorer
from workbench.llm.distribution.served_scorer import HttpNodes, ServedModel, ServedNodeScorer
from workbench.llm.distribution.walk import GroupAnswers, PromptGroup, TrieCounts, draw_answers
from workbench.llm.engine_work import WorkMeter
from workbench.llm.routes import Routes, in_input_order


def host_port(url: str) -> str:
    """An endpoint's host:port (the scheme's default port when none is given): what the
    record names it by, without its path, user or password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    host = f"[{host}]" if ":" in host else host
    port = parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    return f"{host}:{port}" if port else host


class Endpoints:
    """The endpoints of `model` (a served model) as the engines of a round's plan; `scorer`
    gives the model's node scorer as it is now (the start-up check may replace it)."""

    def __init__(self, model: ServedModel, scorer: Callable[[], ServedNodeScorer | None]) -> None:
        self.model = model
        self.scorer = scorer
        self.routes: Routes | None = None
        """The round's routes; None: no plan (each node request to the least busy endpoint)."""
        self.meters = [WorkMeter(self._hits(engine)) for engine in range(self.engines)]

    @property
    def engines(self) -> int:
        """How many endpoints the plan divides the prompts over."""
        return len(self.model.base_urls)

    def _hits(self, engine: int) -> Callable[[], int]:
        """Engine `engine`'s nodes answered without a request so far (`WorkMeter`'s hits)."""

        def hits() -> int:
            scorer = self.scorer()
            return 0 if scorer is None else scorer.shared_on[engine]

        return hits

    def route(self, routes: Routes | None) -> None:
        """Walk the coming round's prompts on the endpoints `routes` gives them (engine i:
        `base_urls[i]`); None: as without a plan."""
        self.routes = routes
        scorer = self.scorer()
        if scorer is not None:
            sources = [HttpNodes(self.model, prefer=base) for base in self.model.base_urls]
            scorer.route(routes, sources if routes is not None else ())

    async def draw(
        self,
        scorer: NodeScorer,
        groups: Sequence[PromptGroup],
        params: SamplingParams,
        uniforms: Callable[[Any, int], Any],
        counts: TrieCounts,
    ) -> list[GroupAnswers]:
        """Every group's answers through `scorer` (the model's, or a cache over it), the groups
        of each endpoint walked together and counted into that endpoint's round (the routes
        must be set)."""
        if self.routes is None:
            raise ValueError("Endpoints.draw needs the round's routes (route)")
        parts = self.routes.split([g.request for g in groups])
        round_number = (groups[0].request.round or 0) if groups else 0

        async def walk(engine: int, where: list[int]) -> list[GroupAnswers]:
            mine = [groups[i] for i in where]
            done = TrieCounts()
            meter = self.meters[engine]
            with meter.walking(round_number) as work:
                async with scorer.turn():
                    answers = await draw_answers(scorer, mine, params, uniforms, done)
            meter.add(work, mine, answers, done)
            counts.add(done)
            return answers

        drawn = await asyncio.gather(*(walk(e, where) for e, where in parts.items()))
        return in_input_order(len(groups), parts.values(), drawn)

    def work(self, round_number: int) -> list[dict[str, Any]]:
        """Each endpoint's work in round `round_number` (`results.layout.ENGINE_WORK_FIELDS`),
        endpoints in order; [] when the round was not planned here."""
        if self.routes is None:
            return []
        bases = self.model.base_urls
        return [
            meter.take(round_number, engine, host_port(bases[engine]))
            for engine, meter in enumerate(self.meters)
        ]
