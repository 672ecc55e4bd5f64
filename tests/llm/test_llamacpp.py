"""The embedded llama.cpp model (SmolLM2-135M), run for real: no mock stands in for it here."""

import asyncio
import re

import numpy as np
import pytest

from workbench.agents.policies import LLMPolicy
from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import GameSpec, ModelSpec
from workbench.errors import ModelError
from workbench.game import parse_answer
from workbench.llm import make_model, sampling_params
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.llm.embedded.engine import shipped_model_path
from workbench.llm.grammar import integer_range_grammar
from workbench.llm.llamacpp import LlamaCppModel

PARAMS = SamplingParams(temperature=0.7, top_p=0.95, max_tokens=4)
GAME = GameSpec(rounds=2)


def persona_requests(personas, round_number: int = 1, seed: int = 11) -> list[ChatRequest]:
    shard = AgentShard(0, personas, GAME.rounds)
    ctx = RoundContext(round_number, seed, GAME, len(personas))
    return Prompts().chats(shard, ctx)


@pytest.mark.slow
def test_real_llamacpp_answer_for_a_persona_prompt_is_parsed_as_a_number(
    embedded_model, education_personas
):
    personas = education_personas(6, 1)
    policy = LLMPolicy(embedded_model, PARAMS)
    shard = AgentShard(0, personas, GAME.rounds)
    ctx = RoundContext(1, 11, GAME, len(personas))
    requests = Prompts().chats(shard, ctx)
    assert all(
        p in r.messages[1]["content"] for p, r in zip(personas["persona"], requests, strict=True)
    )

    table = asyncio.run(policy.act(shard, ctx)).to_pandas()
    assert table["status"].tolist() == ["ok"] * 6
    assert table["agent_id"].tolist() == personas["agent_id"].tolist()
    for raw, guess in zip(table["raw"], table["guess"], strict=True):
        assert re.fullmatch(r"-?\d+", raw.strip()), raw
        assert parse_answer(raw, 0, 100)[0] == guess
        assert 0 <= guess <= 100 and guess == int(guess)
    assert (table["prompt_tokens"] > 50).all()  # the rules and the persona reached the model
    assert (table["completion_tokens"] >= 1).all()
    assert (table["latency_s"] > 0).all()


@pytest.mark.slow
def test_same_requests_and_seeds_give_identical_answers(embedded_model, education_personas):
    requests = persona_requests(education_personas(4, 2))
    first = embedded_model.generate_sync(requests, PARAMS)
    second = asyncio.run(embedded_model.generate(requests, PARAMS))
    assert [r.text for r in first] == [r.text for r in second]
    assert all(r.error is None for r in first)


@pytest.mark.slow
def test_requests_without_prefix_reuse_answer_too(embedded_model, education_personas):
    model = LlamaCppModel(n_threads=embedded_model.n_threads)  # shares the loaded weights
    model.reuse_prefix = False
    requests = persona_requests(education_personas(3, 4))
    results = model.generate_sync(requests, PARAMS)
    assert len(results) == 3
    for result in results:
        assert result.error is None and result.error_kind is None
        value = int(result.text.strip())
        assert 0 <= value <= 100


@pytest.mark.slow
def test_a_request_that_fails_does_not_lose_the_batch():
    model = LlamaCppModel(n_ctx=256, n_threads=1)
    too_long = ChatRequest(({"role": "user", "content": "word " * 400},), seed=1)
    short = ChatRequest(
        ({"role": "user", "content": "Pick a number from 0 to 10."},),
        seed=1,
        constraint=OutputConstraint(integer_range=(0, 10)),
    )
    failed, answered = model.generate_sync([too_long, short], SamplingParams(max_tokens=3))
    assert failed.text is None and failed.error_kind == "model_error"
    assert "context window" in failed.error
    assert answered.error is None and 0 <= int(answered.text) <= 10


def test_identity_names_engine_and_file_hash(embedded_model):
    identity = embedded_model.identity
    assert identity["engine"] == "llama.cpp"
    assert re.fullmatch(r"[0-9a-f]{64}", identity["file_sha256"])
    assert identity["file"] == shipped_model_path().name
    assert identity["engine_version"]
    build = identity["build"]
    assert build["built_for"].startswith("CPU : ") and "AVX" in build["built_for"]
    assert "AMX" not in build["built_for"]  # .ci/setup builds without it (see there)
    assert isinstance(embedded_model, ChatModel)


def test_missing_model_path_is_a_model_error_naming_it(tmp_path):
    missing = tmp_path / "nowhere" / "model.gguf"
    with pytest.raises(ModelError, match=re.escape(str(missing))):
        LlamaCppModel(missing)
    with pytest.raises(ModelError, match="model.gguf"):
        make_model(ModelSpec(path=str(missing)))


def test_unreadable_model_file_is_a_model_error(tmp_path):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a gguf file")
    with pytest.raises(ModelError, match="could not load model file .*junk.gguf"):
        LlamaCppModel(junk).load()


def test_make_model_follows_the_spec():
    spec = ModelSpec(temperature=0.3, top_p=0.8, max_tokens=5, n_ctx=1024, n_threads=1)
    model = make_model(spec)
    assert isinstance(model, LlamaCppModel)
    assert (model.n_ctx, model.n_threads, model.path) == (1024, 1, shipped_model_path())
    assert sampling_params(spec) == SamplingParams(temperature=0.3, top_p=0.8, max_tokens=5)


@pytest.mark.parametrize(("low", "high"), [(0, 100), (13, 87), (-20, 20), (100, 100), (7, 1234)])
def test_llamacpp_parses_the_integer_grammar(low, high):
    from llama_cpp import LlamaGrammar

    grammar = LlamaGrammar.from_string(integer_range_grammar(low, high), verbose=False)
    assert grammar is not None


def test_embedded_model_refuses_regex_constraints(embedded_model):
    request = ChatRequest(
        ({"role": "user", "content": "Pick."},), constraint=OutputConstraint(regex=r"\d+")
    )
    with pytest.raises(ModelError, match="integer_range constraints only"):
        embedded_model.generate_sync([request], PARAMS)


def test_request_seeds_reach_the_model_as_32_bit_values(education_personas):
    seeds = np.array([r.seed for r in persona_requests(education_personas(5, 0))])
    assert np.all((seeds >= 0) & (seeds < 2**31))
