"""The OpenAI-compatible client, over real HTTP on 127.0.0.1.

Two kinds of server: `workbench serve-model` (llama-cpp-python's real OpenAI-compatible server
around the shipped SmolLM2; fixtures `llm_server`, `own_llm_server`) for answers, and a tiny
threaded HTTP server (`FakeServer`, tests/fake_openai.py) whose replies a test scripts: slow
answers, 429 / 5xx / 400, malformed bodies, and a record of every request it saw. Only the
request-body shapes use `httpx.MockTransport`.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from typing import Any

import httpx
import numpy as np
import pandas as pd
import pytest
from cli_helpers import in_process
from fake_openai import FakeServer, Reply, completion

from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import GameSpec, ModelSpec
from workbench.errors import ConfigError, ModelError, RoundFailedError, one_line
from workbench.game import parse_answers
from workbench.llm import make_model
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.llm.grammar import integer_range_grammar, integer_range_regex
from workbench.llm.openai_compat import OpenAICompatModel
from workbench.results import Bundle, verify_bundle
from workbench.runtime import Simulation

SERVED = "smollm2-135m"
PARAMS = SamplingParams(temperature=0.7, top_p=0.95, max_tokens=4)
GAME = GameSpec(rounds=2)
NUMBER = OutputConstraint(integer_range=(0, 100))


def ask(seed: int = 0, constraint: OutputConstraint | None = NUMBER) -> ChatRequest:
    """A one-message chat asking for a number."""
    content = f"Pick a whole number from 0 to 100 (request {seed})."
    return ChatRequest(({"role": "user", "content": content},), seed=seed, constraint=constraint)


def persona_requests(model: ChatModel, personas, seed: int = 11) -> list[ChatRequest]:
    """Round 1's requests for `personas`, built as a simulation builds them."""
    shard = AgentShard(0, personas, GAME.rounds)
    ctx = RoundContext(1, seed, GAME, len(personas))
    return Prompts().chats(shard, ctx)


def generate(model: OpenAICompatModel, requests, params: SamplingParams = PARAMS):
    return asyncio.run(model.generate(requests, params))


def echo_seed(body: dict, n: int) -> Reply:
    """Answer with the request's seed, after a delay that varies with it (answers reorder)."""
    return 200, completion(str(body["seed"])), (body["seed"] % 3) * 0.02


# --------------------------------------------------------------------------- the real server


@pytest.mark.slow
def test_real_server_gives_constrained_numbers_for_persona_prompts(llm_server, education_personas):
    model = OpenAICompatModel([llm_server], SERVED, max_concurrency=4)
    personas = education_personas(8, 3)
    requests = persona_requests(model, personas)
    assert all(r.constraint == NUMBER for r in requests)
    results = generate(model, requests)

    assert len(results) == 8
    assert [r.error for r in results] == [None] * 8, [r.error for r in results]
    texts = [r.text for r in results]
    guesses, statuses = parse_answers(texts, [r.error_kind for r in results], 0, 100)
    assert statuses.tolist() == ["ok"] * 8, texts
    assert all(re.fullmatch(r"\d+", t.strip()) for t in texts), texts  # the grammar held
    assert ((guesses >= 0) & (guesses <= 100) & (guesses == np.round(guesses))).all()
    assert all(r.prompt_tokens > 50 for r in results)  # rules and persona reached the server
    assert all(r.completion_tokens >= 1 for r in results)
    assert all(r.latency_s > 0 for r in results)
    assert model.stats["requests"] == 8 and model.stats["errors"] == 0
    assert model.stats["in_flight"] == {llm_server: 0}


@pytest.mark.slow
def test_real_server_same_seeds_give_the_same_answers(llm_server, education_personas):
    model = OpenAICompatModel([llm_server], SERVED, max_concurrency=2)
    requests = persona_requests(model, education_personas(4, 5), seed=21)
    hot = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=4)
    first = generate(model, requests, hot)  # two event loops: nothing may outlive a call
    second = generate(model, requests, hot)
    assert all(r.error is None for r in first + second)
    assert [r.text for r in first] == [r.text for r in second]


@pytest.mark.slow
def test_real_server_check_passes_and_names_a_wrong_model(llm_server):
    asyncio.run(OpenAICompatModel([llm_server], SERVED).check())
    wrong = OpenAICompatModel([llm_server], "no-such-model")
    with pytest.raises(ModelError, match="no-such-model") as caught:
        asyncio.run(wrong.check())
    assert SERVED in str(caught.value)  # and says what is served


@pytest.mark.slow
def test_simulation_on_the_real_server_completes_and_verifies(llm_server, make_config, tmp_path):
    config = make_config(
        policy={"kind": "llm"},
        n_agents=6,
        rounds=2,
        seed=5,
        agents_per_shard=3,
        model={"kind": "openai", "base_urls": [llm_server], "name": SERVED, "max_tokens": 4},
    )
    sim = Simulation(config)
    assert isinstance(sim.model, OpenAICompatModel)
    bundle = sim.run(out_dir=tmp_path, progress=False)
    assert bundle.is_complete
    report = verify_bundle(bundle.path)
    assert report.ok, str(report)
    frame = bundle.responses()
    assert len(frame) == 12
    assert frame["status"].tolist() == ["ok"] * 12, frame["raw"].tolist()
    assert frame["guess"].between(0, 100).all()
    assert (frame["prompt_tokens"] > 50).all()
    assert bundle.rounds()["n_valid"].tolist() == [6, 6]
    model = bundle.manifest["model"]
    assert model["engine"] == "openai-compatible" and model["name"] == SERVED
    assert model["base_urls"] == [llm_server]


# --------------------------------------------------------------------------- a server that dies


class KillingTransport(httpx.AsyncHTTPTransport):
    """Real HTTP, except that the server is SIGKILLed just before attempt number `kill_at`."""

    def __init__(self, server, kill_at: int) -> None:
        super().__init__()
        self.server = server
        self.kill_at = kill_at
        self.attempts = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.attempts += 1
        if self.attempts == self.kill_at:
            self.server.kill()
        return await super().handle_async_request(request)


@pytest.mark.slow
def test_server_killed_mid_batch_gives_model_errors_and_no_exception(
    own_llm_server, education_personas
):
    # three requests in flight; when the first is answered the fourth attempt kills the
    # server, so the other two die mid-request and everything after finds no server
    transport = KillingTransport(own_llm_server, kill_at=4)
    model = OpenAICompatModel(
        [own_llm_server.url],
        SERVED,
        structured_output="grammar",  # no start-up probes through the counting transport
        max_concurrency=3,
        max_retries=1,
        backoff_s=0.01,
        timeout_s=30,
        transport=transport,
    )
    requests = persona_requests(model, education_personas(10, 6))
    results = generate(model, requests)

    assert own_llm_server.process.poll() is not None  # it really died mid-batch
    assert len(results) == 10
    ok = [r for r in results if r.error is None]
    failed = [r for r in results if r.error is not None]
    assert 1 <= len(ok) <= 3
    assert len(failed) >= 7
    for r in ok:
        assert r.error_kind is None and 0 <= int(r.text) <= 100
    for r in failed:
        assert r.error_kind == "model_error" and r.text is None, r
    assert model.stats["errors"] == len(failed)
    assert model.stats["retries"] >= len(failed)
    _, statuses = parse_answers([r.text for r in results], [r.error_kind for r in results], 0, 100)
    assert sorted(set(statuses.tolist())) == ["model_error", "ok"]

    # and a batch sent to the dead server: every request fails, none is missing
    dead = OpenAICompatModel([own_llm_server.url], SERVED, max_retries=1, backoff_s=0.01)
    again = generate(dead, requests[:4])
    assert [r.error_kind for r in again] == ["model_error"] * 4
    assert all(own_llm_server.url in r.error for r in again)


def timeless(bundle) -> tuple[Any, Any]:
    """A bundle's responses and rounds without the columns that measure time."""
    return bundle.responses().drop(columns="latency_s"), bundle.rounds().drop(columns="seconds")


@pytest.mark.slow
def test_server_killed_between_rounds_the_run_fails_and_resumes_on_a_restarted_server(
    own_llm_server, start_llm_server, make_config, tmp_path
):
    config = make_config(
        policy={"kind": "llm"},
        n_agents=5,
        rounds=2,
        agents_per_shard=5,
        model={
            "kind": "openai",
            "base_urls": [own_llm_server.url],
            "name": SERVED,
            "max_tokens": 4,
            "max_retries": 1,
            "timeout_s": 30,
        },
    )
    whole = Simulation(config).run(out_dir=tmp_path / "whole", progress=False)

    def kill_after_first(number: int, stats, seconds: float) -> None:
        if number == 1:
            own_llm_server.kill()

    sim = Simulation(config)
    with pytest.raises(RoundFailedError) as caught:
        sim.run(out_dir=tmp_path / "parts", progress=False, on_round=kill_after_first)
    (path,) = (tmp_path / "parts").iterdir()
    message = str(caught.value)
    assert message.startswith("round 2: 5 of 5 answers failed (5 model_error; 100%)"), message
    assert f"first error: {own_llm_server.url}" in message  # the dead endpoint, named
    assert message.endswith(f"start the model server again, then: workbench run --resume {path}")
    failed = Bundle.open(path)
    assert failed.status == "failed" and failed.error == one_line(caught.value)
    assert failed.rounds_count == 1 and failed.responses()["round"].unique().tolist() == [1]
    assert not verify_bundle(path).ok  # never presented as a result

    # the CLI on a server that answers 500 to every chat: failed again, the server's own
    # error quoted, exit 1, one error line, no traceback
    def out_of_memory(body: dict, n: int) -> Reply:
        return 500, {"error": "CUDA out of memory"}

    with FakeServer(out_of_memory, model=SERVED) as sick:
        args = ["run", "--resume", path, "--base-url", sick.url, "--no-progress"]
        result = in_process(args, cwd=tmp_path)
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stdout + result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line == f"error: {Bundle.open(path).error}"
    assert line.startswith("error: RoundFailedError: round 2: 5 of 5 answers failed")
    assert "HTTP 500" in line and "CUDA out of memory" in line
    assert line.endswith(f"workbench run --resume {path}")
    assert f"status: failed\nbundle: {path}" in result.stdout
    assert Bundle.open(path).status == "failed"

    # the server restarted on another port: --resume --base-url finishes the run
    server = start_llm_server()
    assert server.url != own_llm_server.url
    result = in_process(
        ["run", "--resume", path, "--base-url", server.url, "--no-progress"], tmp_path
    )
    assert result.returncode == 0, result.stderr
    assert f"bundle: {path}" in result.stdout
    resumed = Bundle.open(path)
    report = verify_bundle(path)
    assert resumed.is_complete and report.ok, str(report)
    changes = [entry.get("changes") for entry in resumed.manifest["resumed"]]
    assert changes == [{"model.base_urls": [sick.url]}, {"model.base_urls": [server.url]}]
    assert resumed.config.model.base_urls == [own_llm_server.url]  # as the run started
    assert resumed.rounds()["n_failed"].tolist() == [0, 0]
    for left, right in zip(timeless(resumed), timeless(whole), strict=True):
        pd.testing.assert_frame_equal(left, right)


# --------------------------------------------------------------------------- timeouts, retries


def test_a_slow_answer_is_a_timeout_and_the_others_still_answer():
    def slow_for_seed_1(body: dict, n: int) -> Reply:
        delay = 5.0 if body["seed"] == 1 else 0.0
        return 200, completion(str(body["seed"])), delay

    with FakeServer(slow_for_seed_1) as server:
        model = OpenAICompatModel([server.url], "fake", timeout_s=0.3, max_retries=0)
        start = time.perf_counter()
        results = generate(model, [ask(0), ask(1), ask(2)])
        elapsed = time.perf_counter() - start
    assert elapsed < 3.0  # the timeout cut the wait, not the server
    assert [r.text for r in results] == ["0", None, "2"]
    assert [r.error_kind for r in results] == [None, "timeout", None]
    assert "timeout" in results[1].error
    assert 0.25 < results[1].latency_s < 3.0
    assert model.stats["errors"] == 1


def test_429_is_retried_then_the_answer_is_kept():
    def busy_once(body: dict, n: int) -> Reply:
        if n == 0:
            return 429, {"error": {"message": "rate limited"}}
        return 200, completion("57", prompt_tokens=31, completion_tokens=2)

    with FakeServer(busy_once) as server:
        model = OpenAICompatModel([server.url], "fake", max_retries=3, backoff_s=0.01)
        (result,) = generate(model, [ask(3)])
        assert len(server.chat_posts) == 2
    assert result.error is None and result.error_kind is None
    assert result.text == "57"
    assert (result.prompt_tokens, result.completion_tokens) == (31, 2)
    assert model.stats["retries"] >= 1 and model.stats["errors"] == 0


@pytest.mark.parametrize("status", [500, 502, 503])
def test_5xx_is_retried_up_to_max_retries_then_a_model_error(status):
    with FakeServer(lambda body, n: (status, {"error": "overloaded"})) as server:
        model = OpenAICompatModel([server.url], "fake", max_retries=2, backoff_s=0.01)
        (result,) = generate(model, [ask(4)])
        hits = len(server.chat_posts)
    assert hits == 3  # the first attempt and two retries
    assert result.text is None and result.error_kind == "model_error"
    assert str(status) in result.error
    assert model.stats["retries"] == 2 and model.stats["errors"] == 1


def test_400_is_a_model_error_without_retry():
    with FakeServer(lambda body, n: (400, {"error": "bad grammar"})) as server:
        model = OpenAICompatModel([server.url], "fake", max_retries=3, backoff_s=0.01)
        (result,) = generate(model, [ask(5)])
        hits = len(server.chat_posts)
    assert hits == 1
    assert result.text is None and result.error_kind == "model_error"
    assert "400" in result.error
    assert model.stats["retries"] == 0


@pytest.mark.parametrize(
    "payload",
    [b"<html>not json</html>", {"choices": []}, {"object": "error"}, [1, 2]],
    ids=["not-json", "no-choices", "no-choices-key", "a-list"],
)
def test_a_malformed_answer_is_a_model_error_not_an_exception(payload):
    with FakeServer(lambda body, n: (200, payload)) as server:
        model = OpenAICompatModel([server.url], "fake", max_retries=0)
        results = generate(model, [ask(6), ask(7)])
    assert [r.error_kind for r in results] == ["model_error"] * 2
    assert all(r.text is None and r.error for r in results)


def test_results_come_back_in_input_order_with_usage():
    with FakeServer(echo_seed) as server:
        model = OpenAICompatModel([server.url], "fake", max_concurrency=8)
        seeds = [5, 3, 9, 1, 0, 4, 8, 2, 7, 6]
        results = generate(model, [ask(s) for s in seeds])
        assert sorted(p["body"]["seed"] for p in server.chat_posts) == sorted(seeds)
    assert [r.text for r in results] == [str(s) for s in seeds]
    assert all((r.prompt_tokens, r.completion_tokens) == (7, 2) for r in results)
    assert all(r.latency_s > 0 for r in results)
    assert generate(model, []) == []


# --------------------------------------------------------------------------- balancing, limits


def test_least_outstanding_balancing_uses_both_endpoints_within_the_limit():
    def slowish(body: dict, n: int) -> Reply:
        return 200, completion(str(body["seed"])), 0.05

    with FakeServer(slowish) as first, FakeServer(slowish) as second:
        model = OpenAICompatModel([first.url, second.url], "fake", max_concurrency=2)
        results = generate(model, [ask(s) for s in range(20)])
        hits = (len(first.chat_posts), len(second.chat_posts))
        peaks = (first.peak, second.peak)
    assert [r.text for r in results] == [str(s) for s in range(20)]
    assert sum(hits) == 20
    assert min(hits) >= 4, hits  # both endpoints take a real share, not a stray request
    assert max(peaks) <= 2, peaks  # max_concurrency holds per endpoint
    assert model.stats["in_flight"] == {first.url: 0, second.url: 0}


def test_a_slow_endpoint_never_has_more_than_max_concurrency_in_flight():
    # the fast endpoint frees connections all the time; the slow one must still stay at 2
    def slow(body: dict, n: int) -> Reply:
        return 200, completion("1"), 0.2

    def fast(body: dict, n: int) -> Reply:
        return 200, completion("2"), 0.01

    with FakeServer(slow) as slow_server, FakeServer(fast) as fast_server:
        model = OpenAICompatModel([slow_server.url, fast_server.url], "fake", max_concurrency=2)
        results = generate(model, [ask(s) for s in range(12)])
        peaks = (slow_server.peak, fast_server.peak)
        hits = len(slow_server.chat_posts) + len(fast_server.chat_posts)
    assert all(r.error is None for r in results) and hits == 12
    assert max(peaks) <= 2, peaks


def test_max_concurrency_holds_across_concurrent_generate_calls():
    # the local backend plays its shards concurrently: one generate() call per shard
    def slowish(body: dict, n: int) -> Reply:
        return 200, completion("1"), 0.1

    async def three_shards(model: OpenAICompatModel):
        batches = [[ask(10 * shard + i) for i in range(4)] for shard in range(3)]
        return await asyncio.gather(*(model.generate(b, PARAMS) for b in batches))

    with FakeServer(slowish) as server:
        model = OpenAICompatModel([server.url], "fake", max_concurrency=2)
        answered = asyncio.run(three_shards(model))
        peak = server.peak
    assert [len(results) for results in answered] == [4, 4, 4]
    assert peak <= 2, f"{peak} requests in flight at once with max_concurrency=2"


def test_max_concurrency_bounds_and_fills_one_endpoint():
    def slowish(body: dict, n: int) -> Reply:
        return 200, completion("1"), 0.1

    with FakeServer(slowish) as server:
        model = OpenAICompatModel([server.url], "fake", max_concurrency=3)
        results = generate(model, [ask(s) for s in range(9)])
        peak = server.peak
    assert [r.text for r in results] == ["1"] * 9
    assert peak == 3  # never more than the limit, and the limit is used (requests overlap)


# --------------------------------------------------------------------------- request bodies


def captured_bodies(structured_output: str, requests: list[ChatRequest]) -> list[httpx.Request]:
    """The HTTP requests a model with this structured_output sends for `requests`."""
    seen: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        if request.method == "POST":  # not the model list a "none" client asks for first
            seen.append(request)
        return httpx.Response(200, json=completion("12"))

    model = OpenAICompatModel(
        ["http://fake.test/v1/"],
        "served-name",
        structured_output=structured_output,  # type: ignore[arg-type]
        transport=httpx.MockTransport(handler),
    )
    results = generate(model, requests, SamplingParams(temperature=0.3, top_p=0.9, max_tokens=5))
    assert [r.text for r in results] == ["12"] * len(requests)
    return seen


@pytest.mark.parametrize("mode", ["grammar", "guided_regex", "json_schema", "none"])
def test_the_body_carries_the_sampling_settings(mode):
    request = ask(77)
    (sent,) = captured_bodies(mode, [request])
    assert sent.method == "POST"
    assert sent.url == "http://fake.test/v1/chat/completions"
    body = json.loads(sent.content)
    assert body["model"] == "served-name"
    assert body["messages"] == list(request.messages)
    assert (body["temperature"], body["top_p"], body["max_tokens"]) == (0.3, 0.9, 5)
    assert body["seed"] == 77
    assert "authorization" not in sent.headers  # no key, no header


def _find_range(node: Any) -> bool:
    """Whether a JSON schema (anywhere inside) bounds an integer to [0, 100]."""
    if isinstance(node, dict):
        if node.get("minimum") == 0 and node.get("maximum") == 100:
            return True
        return any(_find_range(v) for v in node.values())
    if isinstance(node, list):
        return any(_find_range(v) for v in node)
    return False


def test_grammar_mode_sends_a_gbnf_grammar():
    constrained, plain = captured_bodies("grammar", [ask(1), ask(2, constraint=None)])
    body = json.loads(constrained.content)
    assert body["grammar"] == integer_range_grammar(0, 100)
    assert "guided_regex" not in body and "response_format" not in body
    assert "grammar" not in json.loads(plain.content)  # unconstrained requests stay plain


def test_guided_regex_mode_sends_a_regex_for_the_range():
    constrained, plain = captured_bodies("guided_regex", [ask(1), ask(2, constraint=None)])
    body = json.loads(constrained.content)
    regex = body["guided_regex"]
    assert regex == integer_range_regex(0, 100)
    assert all(re.fullmatch(regex, s) for s in ("0", "7", "42", "99", "100"))
    assert not any(re.fullmatch(regex, s) for s in ("101", "-1", "007", "1.5", ""))
    assert "grammar" not in body and "response_format" not in body
    assert "guided_regex" not in json.loads(plain.content)


def test_json_schema_mode_sends_a_response_format():
    constrained, plain = captured_bodies("json_schema", [ask(1), ask(2, constraint=None)])
    body = json.loads(constrained.content)
    response_format = body["response_format"]
    assert response_format["type"] == "json_schema"
    assert _find_range(response_format), response_format
    assert "grammar" not in body and "guided_regex" not in body
    assert "response_format" not in json.loads(plain.content)


def test_none_mode_sends_no_constraint():
    (sent,) = captured_bodies("none", [ask(1)])
    body = json.loads(sent.content)
    assert not {"grammar", "guided_regex", "response_format"} & set(body)


# --------------------------------------------------------------------------- API keys


def test_api_key_is_sent_as_a_bearer_token_and_never_shown():
    key = "sk-test-0123456789abcdef"
    with FakeServer() as server:
        model = OpenAICompatModel([server.url], "fake", api_key=key)
        asyncio.run(model.check())
        generate(model, [ask(1), ask(2)])
        posts, gets = server.chat_posts, server.gets
    assert len(posts) == 2 and gets[0]["path"] == "/v1/models"
    assert all(p["headers"].get("Authorization") == f"Bearer {key}" for p in posts)
    assert all(g["headers"].get("Authorization") == f"Bearer {key}" for g in gets)
    identity = model.identity
    assert identity == {
        "engine": "openai-compatible",
        "name": "fake",
        "base_urls": [server.url],
        "structured_output": "auto",
        "seed": "per_request",
        "servers": {
            server.url: {
                "kind": "openai-compatible",
                "version": None,
                "owned_by": "test",
                "constraint": "grammar",
                "sampling_law": "temperature and top_p only: the server takes no top_k or min_p",
            }
        },
        "sampling": {
            "mode": "server",
            "requested": "auto",
            "sampler": "the server's own, one generation per agent",
            "why": f"{server.url} (openai-compatible): openai-compatible gives no "
            "log-probabilities of chosen tokens under a greedy step (vLLM's allowed_token_ids "
            "with logprob_token_ids), so it samples itself",
        },
    }
    assert key not in json.dumps(identity) and key not in repr(model)


def test_without_a_key_no_authorization_header():
    with FakeServer() as server:
        generate(OpenAICompatModel([server.url], "fake"), [ask(1)])
        (post,) = server.chat_posts
    assert "Authorization" not in post["headers"]


def test_from_spec_reads_the_key_from_the_environment(monkeypatch):
    monkeypatch.setenv("WB_TEST_OPENAI_KEY", "sk-from-env")
    spec = ModelSpec(
        kind="openai",
        base_urls=["http://127.0.0.1:9/v1"],
        name="m",
        api_key_env="WB_TEST_OPENAI_KEY",
        structured_output="guided_regex",
        max_concurrency=5,
        timeout_s=12.5,
        max_retries=4,
    )
    for model in (OpenAICompatModel.from_spec(spec), make_model(spec)):
        assert isinstance(model, OpenAICompatModel)
        assert model.identity == {
            "engine": "openai-compatible",
            "name": "m",
            "base_urls": ["http://127.0.0.1:9/v1"],
            "structured_output": "guided_regex",
            "seed": "per_request",
            "sampling": {
                "mode": None,
                "requested": "auto",
                "note": "decided by the start-up check",
            },
        }
        assert (model.max_concurrency, model.timeout_s, model.max_retries) == (5, 12.5, 4)
        assert "sk-from-env" not in json.dumps(model.identity)

    with FakeServer() as server:
        spec = spec.model_copy(update={"base_urls": [server.url]})
        generate(make_model(spec), [ask(1)])
        (post,) = server.chat_posts
    assert post["headers"].get("Authorization") == "Bearer sk-from-env"


def test_from_spec_with_an_unset_key_variable_is_a_config_error(monkeypatch):
    monkeypatch.delenv("WB_TEST_UNSET_KEY", raising=False)
    spec = ModelSpec(
        kind="openai",
        base_urls=["http://127.0.0.1:9/v1"],
        name="m",
        api_key_env="WB_TEST_UNSET_KEY",
    )
    with pytest.raises(ConfigError, match=r"model\.api_key_env.*WB_TEST_UNSET_KEY"):
        OpenAICompatModel.from_spec(spec)
    with pytest.raises(ConfigError, match=r"model\.api_key_env"):
        make_model(spec)


def test_a_run_with_an_api_key_never_writes_the_key(make_config, tmp_path, monkeypatch):
    key = "sk-never-in-a-bundle-5f3a9c"
    monkeypatch.setenv("WB_TEST_OPENAI_KEY", key)
    with FakeServer(model="served") as server:
        config = make_config(
            policy={"kind": "llm"},
            n_agents=4,
            rounds=2,
            model={
                "kind": "openai",
                "base_urls": [server.url],
                "name": "served",
                "api_key_env": "WB_TEST_OPENAI_KEY",
            },
        )
        bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
        posts = server.chat_posts
    assert len(posts) == 8
    assert all(p["headers"].get("Authorization") == f"Bearer {key}" for p in posts)
    assert bundle.is_complete and verify_bundle(bundle.path).ok
    assert bundle.responses()["guess"].tolist() == [42.0] * 8
    for name in ("manifest.json", "config.yaml"):
        assert key not in (bundle.path / name).read_text(), name
    for path in bundle.path.rglob("*"):
        if path.is_file():
            assert key.encode() not in path.read_bytes(), path
    assert key not in json.dumps(bundle.manifest["model"])


# --------------------------------------------------------------------------- checks at start


def test_check_names_an_unreachable_endpoint():
    with FakeServer() as server:
        model = OpenAICompatModel([server.url, "http://127.0.0.1:1/v1"], "fake")
        with pytest.raises(ModelError, match=r"cannot reach http://127\.0\.0\.1:1/v1"):
            asyncio.run(model.check())


def test_check_names_the_wrong_model_and_the_served_ones():
    with FakeServer(model="served-one") as server:
        with pytest.raises(ModelError, match="'wanted'.*served-one"):
            asyncio.run(OpenAICompatModel([server.url], "wanted").check())
        asyncio.run(OpenAICompatModel([server.url], "served-one").check())


def test_unreachable_endpoint_fails_the_run_before_anything_is_written(make_config, tmp_path):
    config = make_config(
        policy={"kind": "llm"},
        model={
            "kind": "openai",
            "base_urls": ["http://127.0.0.1:1/v1"],
            "name": SERVED,
            "max_retries": 0,
        },
    )
    out = tmp_path / "runs"
    with pytest.raises((ModelError, ConfigError), match="127.0.0.1:1"):
        Simulation(config).run(out_dir=out, progress=False)
    assert not out.exists() or not any(out.iterdir())


def test_wrong_model_name_fails_the_run_before_any_agent_asks(make_config, tmp_path):
    with FakeServer(model="served") as server:
        config = make_config(
            policy={"kind": "llm"},
            model={"kind": "openai", "base_urls": [server.url], "name": "other"},
        )
        with pytest.raises(ModelError, match="'other'"):
            Simulation(config).run(out_dir=tmp_path / "runs", progress=False)
        assert server.chat_posts == []
    assert not (tmp_path / "runs").exists() or not any((tmp_path / "runs").iterdir())
