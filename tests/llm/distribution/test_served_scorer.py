"""Distribution mode on a server (`llm.distribution.served_scorer`), against a toy vLLM over real
HTTP on 127.0.0.1 (`toy_vllm`): the start-up probe proves or refuses the mode, every agent's
answer is the one its own walk over the server's probabilities gives, more than 128 allowed
tokens take several requests, a failing node fails only its group, and the manifest says which mode
answered. The real vLLM is in `test_vllm_sampling.py`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
import pytest
from fake_openai import FakeServer
from toy_vllm import END, ToyVLLM

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.distribution.sampler import draw
from workbench.llm.distribution.vocabulary import IntegerVocabulary
from workbench.llm.distribution.walk import PromptGroup, TrieCounts
from workbench.llm.openai_compat import OpenAICompatModel
from workbench.results import verify_bundle
from workbench.runtime import Simulation

PARAMS = SamplingParams(temperature=0.9, top_p=0.95, max_tokens=8)


def uniforms(ids: np.ndarray, depth: int) -> np.ndarray:
    return np.array([np.random.default_rng([int(a), depth]).random() for a in ids])


def request(word: str, low: int = 0, high: int = 100) -> ChatRequest:
    text = f"You are {word}. Pick a number from {low} to {high}."
    return ChatRequest(
        ({"role": "user", "content": text},),
        constraint=OutputConstraint(integer_range=(low, high)),
    )


def alone(toy: ToyVLLM, vocab: IntegerVocabulary, req: ChatRequest, agent: int) -> str:
    """One agent's answer computed straight from the toy model's logits, as it would be
    drawn alone."""
    sequence = toy.chat(list(req.messages), True)
    text = ""
    for depth in range(PARAMS.max_tokens):
        if text and not vocab.can_continue(text):
            break
        allowed = vocab.allowed(text)
        pick = draw(toy.logits(sequence, allowed.tolist()), PARAMS, uniforms([agent], depth))
        token = int(allowed[pick[0]])
        if token == END:
            break
        text += toy.piece(token)
        sequence.append(token)
    return text


def drawn(model: OpenAICompatModel, groups: list[PromptGroup]) -> tuple[list[list[str]], int]:
    counts = TrieCounts()
    answers = asyncio.run(model.draw_answers(groups, PARAMS, uniforms, counts))
    assert all(a.error is None for a in answers), [a.error for a in answers]
    return [[a.texts[i] for i in a.leaf] for a in answers], counts.nodes


@pytest.mark.parametrize("grouped", [False, True], ids=["digit tokens", "1-3 digit tokens"])
def test_every_agent_gets_its_own_answer_from_the_servers_probabilities(grouped: bool) -> None:
    low, high = (0, 100) if not grouped else (-999, 999)
    with ToyVLLM(grouped_digits=grouped) as toy:
        model = OpenAICompatModel([toy.url], "toy")
        asyncio.run(model.check())
        assert model.identity["sampling"]["mode"] == "workbench" and model.draws_answers()
        groups = [
            PromptGroup(request(w, low, high), np.arange(i * 300, (i + 1) * 300))
            for i, w in enumerate(("a farmer", "a teacher", "a pilot"))
        ]
        before = len(toy.node_bodies)
        answers, nodes = drawn(model, groups)
        bodies = toy.node_bodies[before:]
    scorer = model.node_scorer()
    assert scorer is not None and scorer.tokens is not None
    vocab = IntegerVocabulary(*scorer.tokens, low, high)
    for group, texts in zip(groups, answers, strict=True):
        expected = [alone(toy, vocab, group.request, int(a)) for a in group.agent_ids]
        assert texts == expected
    assert len({t for texts in answers for t in texts}) > 10  # a spread, not one answer
    prompts = sum(len(b["prompt"]) for b in bodies)
    assert all(len(b["logprob_token_ids"]) <= 128 for b in bodies)
    assert all(b["max_tokens"] == 1 and "seed" not in b for b in bodies)
    if grouped:  # the root allows "-" and 1,000 numbers: 8 requests of at most 128 ids
        assert len(vocab.allowed("")) == 1001
        assert prompts > nodes and len(bodies) < prompts
    else:
        assert prompts == nodes
        assert len(bodies) < nodes  # nodes of one depth and allowed set share a request


@pytest.mark.parametrize(
    ("fault", "why"),
    [
        ({"by_text": True}, "no log-probabilities by token id"),
        ({"greedy_shift": 1}, "the server itself answered"),
    ],
)
def test_a_server_that_cannot_prove_the_mode_keeps_its_own_sampling(fault, why) -> None:
    with ToyVLLM(**fault) as toy:
        auto = OpenAICompatModel([toy.url], "toy")
        asyncio.run(auto.check())
        sampling = auto.identity["sampling"]
        assert sampling["mode"] == "server" and why in sampling["why"], sampling
        assert not auto.draws_answers()
        strict = OpenAICompatModel([toy.url], "toy", sampling="workbench")
        with pytest.raises(ModelError, match="model.sampling: workbench") as raised:
            asyncio.run(strict.check())
        assert why in str(raised.value) and "set model.sampling: server" in str(raised.value)


def test_servers_other_than_vllm_are_not_asked_for_node_probabilities() -> None:
    with FakeServer() as server:  # llama-cpp-python's server, any OpenAI-compatible one
        auto = OpenAICompatModel([server.url], "fake")
        asyncio.run(auto.check())
        assert auto.identity["sampling"]["mode"] == "server"
        assert "openai-compatible gives no log-probabilities" in auto.identity["sampling"]["why"]
        with pytest.raises(ModelError, match="model.sampling: workbench"):
            asyncio.run(OpenAICompatModel([server.url], "fake", sampling="workbench").check())
        paths = {p["path"] for p in server.posts}
        server_mode = OpenAICompatModel([server.url], "fake", sampling="server")
        asyncio.run(server_mode.check())
        assert server_mode.identity["sampling"] == {
            "mode": "server",
            "requested": "server",
            "sampler": "the server's own, one generation per agent",
        }
    assert "/tokenize" not in paths and "/v1/completions" not in paths


def test_a_failing_node_fails_its_own_group_only() -> None:
    with ToyVLLM(fail_on="a pilot") as toy:
        model = OpenAICompatModel([toy.url], "toy", max_retries=0)
        asyncio.run(model.check())
        groups = [
            PromptGroup(request(w), np.arange(i * 50, (i + 1) * 50))
            for i, w in enumerate(("a farmer", "a pilot", "a teacher"))
        ]
        answers = asyncio.run(model.draw_answers(groups, PARAMS, uniforms, TrieCounts()))
    assert [a.error is None for a in answers] == [True, False, True]
    assert "HTTP 500" in (answers[1].error or "")


def test_the_manifest_says_which_mode_answered(make_config, tmp_path: Path) -> None:
    with ToyVLLM() as toy, ToyVLLM(by_text=True) as refusing:
        for server, mode in ((toy, "workbench"), (refusing, "server")):
            config = make_config(
                policy={"kind": "llm"},
                n_agents=40,
                rounds=2,
                agents_per_shard=20,
                model={"kind": "openai", "base_urls": [server.url], "name": "toy"},
            )
            bundle = Simulation(config).run(out_dir=tmp_path / mode, progress=False)
            assert bundle.status == "complete" and verify_bundle(bundle.path).ok
            assert (bundle.responses()["status"] == "ok").all()
            model = bundle.manifest["model"]
            assert model["sampling"]["mode"] == mode
            if mode == "workbench":
                assert model["answers"].startswith("distribution mode")
            else:
                assert model["answers"].startswith("one generation per agent")
                assert "auto fell back" in model["answers"]


def test_shards_of_one_process_send_each_node_once(make_config, tmp_path: Path) -> None:
    """Issue 26, item 1: 10 shards ask the server for the same distinct nodes as one shard
    does (the memo and the requests in flight answer the rest), and draw the same answers."""
    with ToyVLLM() as toy:
        runs = {}
        for shards in (1, 10):
            config = make_config(
                policy={"kind": "llm"},
                n_agents=300,
                rounds=2,
                agents_per_shard=300 // shards,
                model={"kind": "openai", "base_urls": [toy.url], "name": "toy"},
            )
            before = len(toy.node_bodies)
            bundle = Simulation(config).run(out_dir=tmp_path / str(shards), progress=False)
            assert bundle.status == "complete" and verify_bundle(bundle.path).ok
            sent = toy.node_prompts(before)
            assert len(sent) == len(set(sent))  # no node asked twice
            answers = bundle.responses().sort_values(["round", "agent_id"])
            runs[shards] = (set(sent), answers[["round", "agent_id", "guess", "raw"]])
    assert runs[1][0] == runs[10][0]
    assert runs[1][1].reset_index(drop=True).equals(runs[10][1].reset_index(drop=True))
    assert (runs[10][1]["guess"].notna()).all()


@pytest.mark.ray
def test_shard_actors_on_ray_send_each_node_once(ray_cluster, make_config, tmp_path: Path) -> None:
    """On Ray a served model lives in one model actor for the cluster (`model_placement`
    auto), whose scorer all 4 shard actors share: the same distinct nodes, each once, and the
    same answers as one shard in this process."""
    from workbench.config import BackendSpec
    from workbench.config.yaml_io import validate

    with ToyVLLM() as toy:
        config = make_config(
            policy={"kind": "llm"},
            n_agents=200,
            rounds=2,
            model={"kind": "openai", "base_urls": [toy.url], "name": "toy"},
        )
        local = Simulation(config).run(out_dir=tmp_path / "local", progress=False)
        on_ray = config.model_copy(
            update={
                "backend": validate(
                    BackendSpec,
                    {"kind": "ray", "address": ray_cluster.address, "agents_per_shard": 50},
                    "backend",
                )
            }
        )
        before = len(toy.node_bodies)
        ray_run = Simulation(on_ray).run(out_dir=tmp_path / "ray", progress=False)
        sent = toy.node_prompts(before)
    assert ray_run.status == "complete" and ray_run.manifest["backend"]["model_actors"] == 1
    assert len(sent) == len(set(sent))  # no node asked twice across the 4 shard actors
    columns = ["round", "agent_id", "guess", "raw"]
    a = local.responses()[columns].sort_values(["round", "agent_id"]).reset_index(drop=True)
    b = ray_run.responses()[columns].sort_values(["round", "agent_id"]).reset_index(drop=True)
    assert a.equals(b)


@pytest.mark.parametrize(("noise", "found"), [(0.0, "yes"), (1e-3, "no")])
def test_the_probe_says_whether_the_server_is_batch_invariant(
    make_config, tmp_path: Path, noise: float, found: str
) -> None:
    """Issue 26, item 4: one node asked alone (cold, then warm) and inside a batch, compared
    bitwise; the manifest records the finding per endpoint and overall, and `workbench run`
    ends with one line saying what it means when the server is not invariant."""
    from cli_helpers import in_process

    from workbench.config import to_yaml
    from workbench.results import Bundle

    with ToyVLLM(batch_noise=noise) as toy:
        config = make_config(
            policy={"kind": "llm"},
            n_agents=20,
            rounds=1,
            model={"kind": "openai", "base_urls": [toy.url], "name": "toy"},
        )
        (tmp_path / "run.yaml").write_text(to_yaml(config))
        done = in_process(["run", "run.yaml", "--out", "out"], tmp_path)
    assert done.returncode == 0, done.stderr
    (path,) = (tmp_path / "out").iterdir()
    model = Bundle.open(path).manifest["model"]
    assert model["sampling"]["mode"] == "workbench"
    assert model["sampling"]["batch_invariant"] == found
    report = model["servers"][toy.url]["invariance"]
    assert report["batch_invariant"] == found
    assert report["cold_vs_warm_max_diff"] == 0.0
    assert report["alone_vs_batch_of_8_max_diff"] == pytest.approx(7 * noise)
    note = [line for line in done.stderr.splitlines() if "not batch invariant" in line]
    if found == "no":
        assert len(note) == 1 and "VLLM_BATCH_INVARIANT=1" in note[0]
        assert "a rerun may differ" in note[0]
    else:
        assert note == []
