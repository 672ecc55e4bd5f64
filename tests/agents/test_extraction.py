"""The paper's second call: which number did a free-form answer choose?

`extract_number`: never, fallback (answers without a stated answer) or always (every answer).
"""

from __future__ import annotations

import asyncio

import numpy as np
import pytest

from workbench.agents.policies import LLMPolicy
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import GameSpec, PromptSpec
from workbench.llm.base import ChatResult, split_extraction

STRAY = (
    "As a 17-year-old who has played this 2 times, I think 2/3 of 50 is about 33 and "
    "others go lower still, so I go low too."
)
"""A reasoning answer without a stated answer: only stray numbers (the lenient parse says 33)."""


class Rambler:
    """Answers by agent id mod 3: a stated answer, stray numbers only, or a blank; answers
    extraction questions with 37, checking they are constrained to the range."""

    identity = {"engine": "fake", "name": "rambler"}

    def __init__(self, blank: bool = False) -> None:
        self.blank = blank
        self.batches: list[int] = []

    async def generate(self, requests, params):
        self.batches.append(len(requests))
        out = []
        for r in requests:
            content = r.messages[-1]["content"]
            if content.startswith("Here is a player's answer"):
                assert r.step == "extract"
                assert r.constraint is not None and r.constraint.integer_range == (0, 100)
                out.append(ChatResult("37", prompt_tokens=20, completion_tokens=1))
            elif r.agent_id % 3 == 0:
                out.append(ChatResult("Level 1 says 33, level 2 says 22.\n\nANSWER: 12", 50, 6))
            elif r.agent_id % 3 == 1 or not self.blank:
                out.append(ChatResult(STRAY, 50, 9))
            else:
                out.append(ChatResult("  \n", 50, 9))
        return out


def _act(extract, education_personas, blank: bool = False):
    model = Rambler(blank)
    policy = LLMPolicy(model, constrained=False, extract_number=extract)
    game = GameSpec(prompt=PromptSpec.paper(2))
    shard = AgentShard(0, education_personas(6, 0), 1)
    table = asyncio.run(policy.act(shard, RoundContext(1, 0, game, 6))).to_pandas()
    return table, model


@pytest.mark.parametrize("extract", [True, "fallback"])
def test_fallback_sends_only_answers_without_a_stated_answer(extract, education_personas) -> None:
    table, model = _act(extract, education_personas)
    assert model.batches == [6, 4]  # one batched extraction call, for the 4 stray answers
    stray = table[table["agent_id"] % 3 != 0]
    assert (stray["status"] == "ok").all() and (stray["guess"] == 37).all()
    assert stray["extracted"].all()
    assert stray["raw"].str.endswith(f"{STRAY}\n[extracted: 37]").all()
    assert (stray["prompt_tokens"] == 70).all() and (stray["completion_tokens"] == 10).all()
    stated = table[table["agent_id"] % 3 == 0]
    assert (stated["guess"] == 12).all() and (stated["prompt_tokens"] == 50).all()
    assert not stated["extracted"].any() and not stated["raw"].str.contains("extracted").any()


def test_never_takes_the_stray_number(education_personas) -> None:
    table, model = _act(False, education_personas)
    assert model.batches == [6]
    assert not table["extracted"].any()
    assert table.loc[table["agent_id"] % 3 != 0, "guess"].tolist() == [33.0] * 4


def test_always_lets_the_extraction_decide_every_answer(education_personas) -> None:
    table, model = _act("always", education_personas)
    assert model.batches == [6, 6]
    assert table["extracted"].all() and (table["guess"] == 37).all()  # even over ANSWER: 12
    assert table["raw"].str.endswith("\n[extracted: 37]").all()


def test_a_blank_answer_is_never_extracted(education_personas) -> None:
    table, model = _act("always", education_personas, blank=True)
    assert model.batches == [6, 4]
    blank = table[table["agent_id"] % 3 == 2]
    assert (blank["status"] == "no_number").all() and not blank["extracted"].any()
    assert np.isnan(blank["guess"]).all()


class SlowExtractor(Rambler):
    """Like Rambler, but every extraction call times out."""

    async def generate(self, requests, params):
        answers = await super().generate(requests, params)
        if requests[0].step == "extract":
            return [ChatResult(None, error="read timeout", error_kind="timeout") for _ in answers]
        return answers


def test_a_failed_extraction_is_the_agents_failure(education_personas) -> None:
    policy = LLMPolicy(SlowExtractor(), constrained=False, extract_number="always")
    shard = AgentShard(0, education_personas(3, 0), 1)
    game = GameSpec(prompt=PromptSpec.paper(2))
    table = asyncio.run(policy.act(shard, RoundContext(1, 0, game, 3))).to_pandas()
    assert (table["status"] == "timeout").all() and table["extracted"].all()
    assert table["raw"].str.endswith("\n[extracted: read timeout]").all()


def test_an_empty_shard_makes_no_call(education_personas) -> None:
    model = Rambler()
    policy = LLMPolicy(model, constrained=False, extract_number="always")
    shard = AgentShard(0, education_personas(6, 0).iloc[:0], 1)
    game = GameSpec(prompt=PromptSpec.paper(2))
    table = asyncio.run(policy.act(shard, RoundContext(1, 0, game, 6)))
    assert table.num_rows == 0 and model.batches == [0]


def test_extract_number_from_python_keeps_the_booleans() -> None:
    assert LLMPolicy(Rambler(), extract_number=True).prompts.extract_number == "fallback"
    assert LLMPolicy(Rambler(), extract_number=False).prompts.extract_number == "never"
    assert LLMPolicy(Rambler()).prompts.extract_number == "never"
    with pytest.raises(ValueError, match="extract_number must be one of never, fallback, always"):
        LLMPolicy(Rambler(), extract_number="sometimes")  # type: ignore[arg-type]


# --------------------------------------------------------------------------- real models

FREE_TEXT = {"prompt": {"style": "step_by_step"}}
"""The paper's prompt 2: reason step by step, then "ANSWER: <number>"."""


def _free_text_run(make_config, tmp_path, spec: dict, extract: str, **run):
    """A one-round step-by-step game with unconstrained answers, checked to verify and to
    replay exactly; its bundle's responses."""
    from workbench.config import ModelSpec
    from workbench.results import verify_bundle
    from workbench.runtime import Simulation

    config = make_config(
        policy={"kind": "llm", "extract_number": extract},
        model={"max_tokens": 48, **spec},
        game=FREE_TEXT,
        n_agents=6,
        rounds=1,
    )
    bundle = Simulation(config, **run).run(out_dir=tmp_path / "run", progress=False)
    assert verify_bundle(bundle.path).ok
    replay = config.model_copy(update={"model": ModelSpec(kind="replay", bundle=str(bundle.path))})
    replayed = Simulation(replay).run(out_dir=tmp_path / "replay", progress=False)
    columns = ["agent_id", "guess", "status", "raw", "prompt_tokens", "extracted"]
    assert bundle.responses()[columns].equals(replayed.responses()[columns])
    return bundle.responses()


@pytest.mark.slow
def test_always_on_the_embedded_model(make_config, embedded_model, tmp_path) -> None:
    table = _free_text_run(
        make_config, tmp_path, {"constrained": False}, "always", model=embedded_model
    )
    assert table["extracted"].all()  # every answer went through the extraction call
    assert (table["status"] == "ok").all()  # a grammar keeps the extraction in range
    assert table["guess"].between(0, 100).all()
    assert table["raw"].str.contains(r"\n\[extracted: \d+\]$").all()
    answers = table["raw"].str.rsplit("\n[extracted: ", n=1).str[0]
    assert answers.str.contains(r"[A-Za-z]{2}").all()  # the answers themselves were free text


@pytest.mark.slow
def test_always_against_the_served_model_without_structured_output(
    make_config, llm_server, tmp_path
) -> None:
    """`structured_output: none`: answers unconstrained, every one then extracted; the client
    still sends the extraction call constrained (grammar, proven on llama.cpp's server), so
    every extraction is a number in range."""
    served = {
        "kind": "openai",
        "base_urls": [llm_server],
        "name": "smollm2-135m",
        "structured_output": "none",
        "constrained": False,
    }
    table = _free_text_run(make_config, tmp_path, served, "always")
    assert table["extracted"].all()
    assert table["raw"].str.contains("\n[extracted: ", regex=False).all()
    assert (table["status"] == "ok").all()
    assert table["guess"].between(0, 100).all()
    extractions = [split_extraction(raw)[1] for raw in table["raw"]]
    assert all(e is not None and e.strip().isdigit() for e in extractions), extractions
