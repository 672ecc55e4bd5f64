"""A served model with several endpoints in distribution mode (issue 38, item 2; `llm.endpoints`):
one plan per round over the endpoints, each distinct prompt's nodes walked on exactly one of
them, the same answers as one endpoint gives, each endpoint's work on the record. Against toy
vLLMs over real HTTP on 127.0.0.1 (`toy_vllm`): `workbench serve-model` (llama.cpp) gives no
node log-probabilities, so distribution mode does not run on it."""

from __future__ import annotations

import asyncio
from pathlib import Path

import numpy as np
from fake_openai import FakeServer, Reply, completion
from toy_vllm import ToyVLLM

from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.distribution.walk import PromptGroup, TrieCounts
from workbench.llm.endpoints import host_port
from workbench.llm.openai_compat import OpenAICompatModel
from workbench.llm.routes import Routes, request_key
from workbench.results import Bundle, verify_bundle
from workbench.runtime import Simulation
from workbench.runtime.events import Event

COLUMNS = ["agent_id", "round", "guess", "status", "raw"]


def test_each_prompt_walks_on_one_endpoint_with_the_answers_of_one(
    make_config, tmp_path: Path
) -> None:
    """24 agents, 3 rounds, 3 shards on two toy servers: the answers of one server; each
    round's distinct prompts each walked on one server only, as the record says per server."""
    with ToyVLLM() as first, ToyVLLM() as second:
        toys = (first, second)
        marks: list[list[int]] = []  # node requests per server at the start and each round end

        def mark(event: Event) -> None:
            if event.kind == "round_finished":
                marks.append([len(toy.node_bodies) for toy in toys])

        def run(urls: list[str], name: str) -> Bundle:
            config = make_config(
                policy={"kind": "llm"},
                n_agents=24,
                rounds=3,
                agents_per_shard=8,
                model={"kind": "openai", "base_urls": urls, "name": "toy"},
            )
            out = tmp_path / name
            return Simulation(config).run(out_dir=out, progress=False, on_event=mark)

        one = run([first.url], "one").responses()
        marks[:] = [[len(toy.node_bodies) for toy in toys]]
        bundle = run([first.url, second.url], "two")
        sent = [  # each round's nodes asked of each server
            [toy.node_prompts(start[i], end[i]) for i, toy in enumerate(toys)]
            for start, end in zip(marks[:-1], marks[1:], strict=True)
        ]

    assert bundle.status == "complete" and verify_bundle(bundle.path).ok
    assert one[COLUMNS].equals(bundle.responses()[COLUMNS])  # whichever server walked it
    assert bundle.manifest["backend"]["endpoints"] == 2
    assert "each distinct prompt on one endpoint" in bundle.manifest["backend"]["division"]
    work = bundle.engine_work()
    assert list(work["round"]) == [1, 1, 2, 2, 3, 3] and list(work["engine"]) == [0, 1] * 3
    assert list(work["node"][:2]) == [host_port(first.url), host_port(second.url)]
    for number, rows in work.groupby("round"):
        asked = sent[number - 1]
        chats = [{first.chat_of(node) for node, _ in nodes} for nodes in asked]
        assert chats[0] and chats[1] and not chats[0] & chats[1]  # each prompt on one server
        assert list(rows["prompts"]) == [len(c) for c in chats]  # the record is the servers'
        assert list(rows["nodes"]) == [len(nodes) for nodes in asked]
        assert rows["agents"].sum() == 24 and (rows["nodes"] <= rows["visits"]).all()
    recorded = [e for e in bundle.events() if e["kind"] == "engine_work"]
    assert [e["round"] for e in recorded] == [1, 2, 3]


def request(word: str) -> ChatRequest:
    text = f"You are {word}. Pick a number from 0 to 100."
    return ChatRequest(
        ({"role": "user", "content": text},),
        constraint=OutputConstraint(integer_range=(0, 100)),
        round=1,
    )


def uniforms(ids: np.ndarray, depth: int) -> np.ndarray:
    return np.array([np.random.default_rng([int(a), depth]).random() for a in ids])


PARAMS = SamplingParams(temperature=0.9, top_p=0.95, max_tokens=8)


def test_a_routed_prompt_goes_to_its_endpoint_and_a_failed_request_elsewhere() -> None:
    """The seam: the model's routes pin each prompt's nodes to its endpoint (the scorer learns
    the prompt's tokens as it tokenizes it); a prompt the routes do not name goes by its key's
    hash; a node request its endpoint fails (500) is retried on the other, as without routes."""
    groups = [PromptGroup(request(w), np.arange(3)) for w in ("a pilot", "a baker", "a judge")]
    with ToyVLLM(fail_on="a pilot") as failing, ToyVLLM() as good:
        alone = OpenAICompatModel([good.url], "toy", sampling="workbench")  # trusted: no check
        expected = asyncio.run(alone.draw_answers(groups, PARAMS, uniforms, TrieCounts()))
        model = OpenAICompatModel(
            [failing.url, good.url], "toy", sampling="workbench", backoff_s=0.0
        )
        endpoints = model.endpoints()
        assert endpoints is not None and endpoints.engines == 2
        planned = {request_key(groups[0].request): 0, request_key(groups[1].request): 1}
        routes = Routes((0, 1), planned)  # the pilot on `failing`, the baker on `good`
        endpoints.route(routes)
        before = [len(failing.node_bodies), len(good.node_bodies)]
        answers = asyncio.run(model.draw_answers(groups, PARAMS, uniforms, TrieCounts()))
        asked = [
            {toy.chat_of(node) for node, _ in toy.node_prompts(at)}
            for toy, at in zip((failing, good), before, strict=True)
        ]
        pilot, *others = (
            tuple(good.chat([dict(m) for m in g.request.messages], True)) for g in groups
        )
    assert [a.texts for a in answers] == [a.texts for a in expected]
    assert all(a.error is None for a in answers)
    assert pilot in asked[0] and pilot in asked[1]  # failed on its endpoint, answered on the other
    for chat, group in zip(others, groups[1:], strict=True):
        engine = routes.engine_of(group.request)  # the judge's by its key's hash
        assert chat in asked[engine]
        assert engine == 0 or chat not in asked[0]  # (on 0 it may share the pilot's retry)
    work = endpoints.work(1)
    assert [w["engine"] for w in work] == [0, 1] and sum(w["agents"] for w in work) == 9
    assert model.stats["retries"] > 0


def test_requests_routed_to_one_endpoint_keep_to_its_limit_and_leave_the_other_alone() -> None:
    """Routed requests wait for room on their own endpoint (`max_concurrency`), not spill over
    to the idle one."""

    def slow(body: dict, n: int) -> Reply:
        return 200, completion("1"), 0.1

    async def routed(model: OpenAICompatModel, prefer: str) -> list:
        async with model.client() as client:
            return await asyncio.gather(
                *(
                    model.exchange(client, "/chat/completions", lambda _: {}, dict, prefer=prefer)
                    for _ in range(6)
                )
            )

    with FakeServer(slow) as busy, FakeServer(slow) as idle:
        model = OpenAICompatModel([busy.url, idle.url], "fake", max_concurrency=2)
        done = asyncio.run(routed(model, busy.url))
        assert all(d.value is not None for d in done)
        assert len(busy.chat_posts) == 6 and busy.peak == 2 and not idle.chat_posts


def test_one_endpoint_or_no_distribution_mode_has_no_plan() -> None:
    two = ["http://127.0.0.1:1/v1", "http://127.0.0.1:2/v1"]
    assert OpenAICompatModel(two, "toy", sampling="workbench").endpoints() is not None
    assert OpenAICompatModel(two[:1], "toy", sampling="workbench").endpoints() is None
    assert OpenAICompatModel(two, "toy", sampling="server").endpoints() is None


def test_an_endpoint_is_named_by_its_host_and_port_only() -> None:
    assert host_port("http://127.0.0.1:8000/v1") == "127.0.0.1:8000"
    assert host_port("https://user:secret@api.example.org/v1?key=x") == "api.example.org:443"
    assert host_port("http://[::1]:9000/v1") == "[::1]:9000"
