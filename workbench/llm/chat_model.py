"""The batch-first chat model interface every model client and engine implements.

`ChatModel` answers a batch of `ChatRequest`s (`base`) with one `ChatResult` each, in input
order, and in distribution mode draws constrained answers through the answer trie
(`llm.distribution`) with the node scorer it offers. `as_chat_model` adapts any object that has
`identity` and `async generate(requests, params)`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.errors import ConfigError
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams

if TYPE_CHECKING:
    from workbench.llm.distribution.scorer import NodeScorer
    from workbench.llm.distribution.walk import GroupAnswers, PromptGroup, TrieCounts
    from workbench.llm.endpoints import Endpoints


class ChatModel:
    """A batch-first chat model: one call for many requests, results in input order.

    The contract every model client and engine implements: `identity` and `generate`, plus
    `load()` (heavy set-up, once per process), `check()` (cheap reachability check before a run
    writes anything), `check_fits()` (the run's longest prompts fit the context) and `close()`
    (release connections or engines), whose defaults do nothing.
    Objects that only have `identity` and `generate` are adapted by `as_chat_model`. A model
    that answers request by request calls `report_answered` for each, so a round's progress is
    seen while its batch is still going.
    """

    @property
    def identity(self) -> dict[str, Any]:
        """What exactly answered (name, engine, version, file hash): recorded in bundles."""
        raise NotImplementedError

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """Complete every request with the same sampling params; never raises per request."""
        raise NotImplementedError

    def load(self) -> ChatModel:
        """Load weights or engines now rather than on first use; returns self."""
        return self

    async def check(self) -> None:
        """Raise ModelError when the model cannot answer (a server down, a wrong name)."""

    def check_fits(
        self, requests: Sequence[ChatRequest], params: SamplingParams, field: str = "model"
    ) -> None:
        """Raise ConfigError naming `<field>.n_ctx` when the longest of `requests` (a run's
        worst-case prompts), with room for a `max_tokens` answer, cannot fit the model's
        context: checked before a run writes anything. A model whose limit is not known here
        (a server's) checks nothing."""

    def close(self) -> None:
        """Release what the model holds; it may be loaded again later."""

    def node_scorer(self) -> NodeScorer | None:
        """Distribution mode's scorer of answer-trie nodes (`llm.distribution`); None when this
        model answers constrained requests with its own sampler, one generation per agent."""
        return None

    def endpoints(self) -> Endpoints | None:
        """The model's several endpoints that a round's plan divides distribution mode's
        prompts over (`llm.endpoints`); None (the default) with one engine, or when answers are
        not drawn in distribution mode."""
        return None

    def draws_answers(self) -> bool:
        """Whether constrained integer answers are drawn in distribution mode."""
        return self.node_scorer() is not None

    async def draw_answers(
        self,
        groups: Sequence[PromptGroup],
        params: SamplingParams,
        uniforms: Callable[[Any, int], Any],
        counts: TrieCounts,
    ) -> list[GroupAnswers]:
        """Every group's answers drawn through the answer trie (`walk.draw_answers`), each on
        its prompt's endpoint where the round is routed over several (`endpoints`)."""
        # imported here: the trie needs numpy, which `import workbench.llm` does not load
        from workbench.llm.distribution.walk import draw_answers

        scorer = self.node_scorer()
        if scorer is None:
            raise ConfigError("this model does not draw answers in distribution mode")
        endpoints = self.endpoints()
        if endpoints is not None and endpoints.routes is not None:
            return await endpoints.draw(scorer, groups, params, uniforms, counts)
        async with scorer.turn():  # shards sharing an engine walk one after another
            return await draw_answers(scorer, groups, params, uniforms, counts)


class AdaptedModel(ChatModel):
    """A duck-typed model (only `identity` and `generate`) behind the full contract."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner

    @property
    def identity(self) -> dict[str, Any]:
        """The adapted object's identity."""
        return dict(self.inner.identity)

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """The adapted object's answers."""
        return list(await self.inner.generate(requests, params))


def as_chat_model(model: Any, where: str = "model") -> ChatModel:
    """`model` as a `ChatModel`: itself, or an adapter for an object with identity + generate.

    An adapted object is taken as ready to answer (its own set-up is the caller's).
    """
    if isinstance(model, ChatModel):
        return model
    if callable(getattr(model, "generate", None)) and hasattr(model, "identity"):
        return AdaptedModel(model)
    raise ConfigError(
        f"{where}: {type(model).__name__} is not a chat model; subclass "
        "workbench.llm.ChatModel or give it `identity` and `async generate(requests, params)`"
    )
