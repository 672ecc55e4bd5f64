"""What the resume and fork tests share: a level-k policy, a fake model whose answer hashes its
prompt (so an answer changes when anything the agent was shown changes), a cancel-after-round
callback and a bundle's tables without the columns that measure time."""

from __future__ import annotations

import hashlib

import pandas as pd

from workbench.llm.base import ChatResult
from workbench.results import Bundle
from workbench.runtime import Simulation

LEVEL_K = {"kind": "level_k", "noise_sd": 2.0, "depth_shares": {0: 0.2, 1: 0.4, 2: 0.4}}


class PromptHashModel:
    """A deterministic fake chat model: each answer is a number hashed from the user message.

    The user message holds the round's winning numbers so far, the persona and the agent's own
    earlier numbers, so a resumed round answers the same only if all of those were restored.
    """

    def __init__(self) -> None:
        self.own_numbers_seen = 0

    @property
    def identity(self) -> dict[str, str]:
        return {"engine": "fake", "name": "prompt-hash"}

    async def generate(self, requests, params) -> list[ChatResult]:
        results = []
        for request in requests:
            text = request.messages[1]["content"]
            self.own_numbers_seen += "Your own numbers so far:" in text
            number = int(hashlib.sha256(text.encode()).hexdigest()[:8], 16) % 101
            results.append(ChatResult(text=str(number), prompt_tokens=len(text.split())))
        return results


def cancel_after(sim: Simulation, round_number: int):
    """An on_round callback that cancels `sim` once `round_number` has ended."""

    def on_round(number, stats, seconds) -> None:
        if number == round_number:
            sim.cancel()

    return on_round


def timeless(bundle: Bundle) -> tuple[pd.DataFrame, pd.DataFrame]:
    """A bundle's responses and rounds without the columns that measure time."""
    return bundle.responses().drop(columns="latency_s"), bundle.rounds().drop(columns="seconds")
