"""A mixed population's models behind one `ChatModel`: each request goes to its named model.

The paper's mixed population (500 agents each of three models) plays one game: every agent's
request names its model, each model answers its share of the batch with its own sampling
settings, all models at once, and the results come back in input order.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.llm.chat_model import ChatModel, as_chat_model
from workbench.llm.routes import in_input_order

if TYPE_CHECKING:
    from workbench.llm.distribution.walk import GroupAnswers, PromptGroup, TrieCounts


class ModelMix(ChatModel):
    """Routes each request to `models[request.model]`, using that model's own sampling params."""

    def __init__(self, models: Mapping[str, tuple[ChatModel, SamplingParams]]) -> None:
        if not models:
            raise ModelError("a model mix needs at least one model")
        self.models = {
            name: (as_chat_model(m, f"models.{name}"), p) for name, (m, p) in models.items()
        }

    @property
    def identity(self) -> dict[str, Any]:
        """Every named model's identity."""
        return {
            "engine": "mix",
            "name": "+".join(self.models),
            "models": {name: dict(m.identity) for name, (m, _) in self.models.items()},
        }

    def load(self) -> ModelMix:
        """Load every model (the embedded ones do work here); returns self."""
        for model, _ in self.models.values():
            model.load()
        return self

    async def check(self) -> None:
        """Check every model (server endpoints answer and serve their names)."""
        for model, _ in self.models.values():
            await model.check()

    def check_fits(
        self, requests: Sequence[ChatRequest], params: SamplingParams, field: str = "model"
    ) -> None:
        """Each named model checks the requests naming it, with its own params (its field is
        `models.<name>`)."""
        for name, (model, own) in self.models.items():
            mine = [r for r in requests if r.model == name]
            model.check_fits(mine, own, f"models.{name}")

    def close(self) -> None:
        """Close every model."""
        for model, _ in self.models.values():
            model.close()

    def draws_answers(self) -> bool:
        """Whether every model of the mix draws in distribution mode."""
        return all(model.draws_answers() for model, _ in self.models.values())

    async def draw_answers(
        self,
        groups: Sequence[PromptGroup],
        params: SamplingParams,
        uniforms: Callable[[Any, int], Any],
        counts: TrieCounts,
    ) -> list[GroupAnswers]:
        """Each model draws the groups naming it, with its own sampling params."""
        by_model: dict[str, list[int]] = {}
        for i, group in enumerate(groups):
            by_model.setdefault(self._known(group.request.model), []).append(i)
        answered = await asyncio.gather(
            *(
                self.models[name][0].draw_answers(
                    [groups[i] for i in idx], self.models[name][1], uniforms, counts
                )
                for name, idx in by_model.items()
            )
        )
        return in_input_order(len(groups), by_model.values(), answered)

    def _known(self, name: str | None) -> str:
        if name not in self.models:
            raise ModelError(f"request for model {name!r}; the mix has {sorted(self.models)}")
        return name

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """One batched call per model, all at once; `params` is replaced by each model's own."""
        by_model: dict[str, list[int]] = {}
        for i, request in enumerate(requests):
            by_model.setdefault(self._known(request.model), []).append(i)
        answered = await asyncio.gather(
            *(
                self.models[name][0].generate([requests[i] for i in idx], self.models[name][1])
                for name, idx in by_model.items()
            )
        )
        return in_input_order(len(requests), by_model.values(), answered)
