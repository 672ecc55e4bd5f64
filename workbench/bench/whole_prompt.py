"""The other evaluation `workbench bench noise` compares with the canonical one: every prompt
evaluated whole, in one batch, on an engine of its own (`WholePromptModel`), and the node scorer
on it (`WholePromptScorer`). As valid an evaluation as the canonical pieces the runs draw from
(`engine.PIECES_RULE`), and off by llama.cpp's batch numerics (up to 0.5 in a logit, measured);
no run draws from it, so it lives with the bench."""

from __future__ import annotations

from typing import Any

from workbench.llm.distribution.embedded_scorer import EmbeddedNodeScorer
from workbench.llm.embedded.engine import Engine, private_engine
from workbench.llm.embedded.node_slots import NodeSlots


class WholePromptModel:
    """A `LlamaCppModel` evaluating every prompt whole, in one batch, on an engine of its own:
    its engine is private, so its cached state never meets the shared engine's."""

    def __init__(self, model: Any) -> None:
        self._model = model
        self.n_ctx, self.cpu, self.counters = model.n_ctx, model.cpu, model.counters
        self._engine = private_engine(str(model.path), model.n_ctx, model.n_threads)
        self._engine.whole_prompts = True

    @property
    def engine(self) -> Engine:
        """The private engine (prompts never cut)."""
        return self._engine

    def evaluate(self, engine: Engine, tokens: list[int]) -> None:
        """The model's own evaluation, on an engine that never cuts a prompt."""
        self._model.evaluate(engine, tokens)


class WholePromptScorer(EmbeddedNodeScorer):
    """Node logits after each prompt evaluated whole (`WholePromptModel`), every node alone."""

    def describe(self) -> dict[str, Any]:
        """How node logits are computed here."""
        return {
            **super().describe(),
            "nodes": "prompt whole in one batch, then each answer token alone",
            "rows": "one per decode",
        }

    def _slots(self, engine: Engine) -> NodeSlots | None:
        return None  # the node slots cut prompts in pieces: every node alone here
