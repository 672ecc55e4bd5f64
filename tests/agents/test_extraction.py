"""The paper's second call: a free-form answer without a number is sent back for extraction."""

from __future__ import annotations

import asyncio

from workbench.agents.policies import LLMPolicy
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import GameSpec, PromptSpec
from workbench.llm.base import ChatResult


class Rambler:
    """Reasons without a number first; answers extraction questions with a number."""

    identity = {"engine": "fake", "name": "rambler"}

    def __init__(self) -> None:
        self.batches: list[int] = []

    async def generate(self, requests, params):
        self.batches.append(len(requests))
        out = []
        for r in requests:
            content = r.messages[-1]["content"]
            if content.startswith("Here is a player's answer"):
                assert r.constraint is not None and r.constraint.integer_range == (0, 100)
                out.append(ChatResult("37", prompt_tokens=20, completion_tokens=1))
            elif r.agent_id % 2:
                out.append(ChatResult("Everyone will go lower, so I go low too.", 50, 9))
            else:
                out.append(ChatResult("Thinking... ANSWER: 12", 50, 6))
        return out


def _act(extract: bool, education_personas):
    model = Rambler()
    policy = LLMPolicy(model, constrained=False, extract_number=extract)
    game = GameSpec(prompt=PromptSpec.paper(2))
    shard = AgentShard(0, education_personas(6, 0), 1)
    table = asyncio.run(policy.act(shard, RoundContext(1, 0, game, 6))).to_pandas()
    return table, model


def test_extraction_call_recovers_the_number(education_personas) -> None:
    table, model = _act(True, education_personas)
    assert model.batches == [6, 3]  # one batched extraction call, only for the 3 without a number
    odd = table[table["agent_id"] % 2 == 1]
    assert (odd["status"] == "ok").all() and (odd["guess"] == 37).all()
    assert odd["raw"].str.contains(r"\[extracted: 37\]").all()
    assert (odd["prompt_tokens"] == 70).all() and (odd["completion_tokens"] == 10).all()
    even = table[table["agent_id"] % 2 == 0]
    assert (even["guess"] == 12).all() and (even["prompt_tokens"] == 50).all()


def test_without_extraction_the_answer_has_no_number(education_personas) -> None:
    table, model = _act(False, education_personas)
    assert model.batches == [6]
    assert set(table.loc[table["agent_id"] % 2 == 1, "status"]) == {"no_number"}
