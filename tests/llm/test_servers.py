"""Server identification, proven constraint modes, seeds on demand and the truth about errors.

Scripted servers (`FakeServer`) pose as vLLM or llama.cpp and honour only some constraint
modes, as the real ones do; the real llama.cpp server (`workbench serve-model`) shows what
`auto` picks there. The real vLLM server's tests are in test_vllm_server.py.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from fake_openai import FakeServer, Reply, completion

from workbench.config import ModelSpec
from workbench.errors import ConfigError, ModelError
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.openai_compat import OpenAICompatModel
from workbench.llm.servers import (
    LLAMA_SERVER_ORDER,
    PROBE_MESSAGES,
    PROBE_VALUE,
    ServerInfo,
    constraint_body,
    root_of,
)
from workbench.runtime import Simulation

NUMBER = OutputConstraint(integer_range=(0, 100))
PARAMS = SamplingParams(max_tokens=4)


def ask(seed: int, step: str = "answer") -> ChatRequest:
    return ChatRequest(
        ({"role": "user", "content": f"a number ({seed})"},),
        seed=seed,
        constraint=NUMBER,
        step=step,  # type: ignore[arg-type]
    )


def checked(model: OpenAICompatModel) -> OpenAICompatModel:
    asyncio.run(model.check())
    return model


# --------------------------------------------------------------------------- identification


def test_auto_on_vllm_picks_structured_outputs_and_names_the_server_and_version():
    with FakeServer(owned_by="vllm", version="0.32.0", honours=("structured_outputs",)) as vllm:
        model = checked(OpenAICompatModel([vllm.url], "fake"))
        asyncio.run(model.generate([ask(1)], PARAMS))
        (sent,) = vllm.chat_posts
        probes = list(vllm.probes)
    assert model.modes == {vllm.url: "structured_outputs"}
    assert model.identity["servers"][vllm.url] == {
        "kind": "vllm",
        "version": "0.32.0",
        "owned_by": "vllm",
        "constraint": "structured_outputs",
        "sampling_law": "yes: every setting sent, in the law's order",
    }
    assert "structured_outputs" in sent["body"] and "grammar" not in sent["body"]
    # every setting of the one sampling law goes to vLLM, so no server default applies
    assert {k: sent["body"][k] for k in ("temperature", "top_p", "top_k", "min_p")} == {
        "temperature": PARAMS.temperature,
        "top_p": PARAMS.top_p,
        "top_k": PARAMS.top_k,
        "min_p": PARAMS.min_p,
    }
    assert len(probes) == 1  # the likeliest mode first: one probe proves it


@pytest.mark.parametrize(
    ("kind", "sent"),
    [
        ("vllm", {"top_k": -1, "min_p": 0.1}),
        ("llama.cpp", {"top_k": 0, "min_p": 0.1, "samplers": LLAMA_SERVER_ORDER}),
        ("llama-cpp-python", {"top_k": 0, "min_p": 0.1}),
        ("openai-compatible", {}),
    ],
)
def test_each_server_gets_the_law_in_its_own_names(kind: str, sent: dict) -> None:
    """top-k off is -1 for vLLM (every version takes it); llama-server also takes the order."""
    params = SamplingParams(top_k=0, min_p=0.1)
    assert ServerInfo(kind).law_body(params) == sent
    assert LLAMA_SERVER_ORDER == ["temperature", "min_p", "top_k", "top_p"]


def test_an_old_vllm_gets_guided_regex():
    assert ServerInfo("vllm", "0.6.3").candidate_modes()[0] == "guided_regex"
    assert ServerInfo("vllm", "0.12.0").candidate_modes()[0] == "structured_outputs"
    assert ServerInfo("vllm", None).candidate_modes()[0] == "structured_outputs"
    assert ServerInfo("llama.cpp", "b4000").candidate_modes()[0] == "grammar"


@pytest.mark.slow
def test_auto_on_the_llama_cpp_server_picks_grammar(llm_server):
    model = checked(OpenAICompatModel([llm_server], "smollm2-135m"))
    server = model.identity["servers"][llm_server]
    assert server["kind"] == "llama-cpp-python" and server["version"]
    assert server["constraint"] == "grammar"


def test_an_explicit_mode_the_server_ignores_is_refused_naming_the_one_that_works(
    make_config, tmp_path
):
    with FakeServer(owned_by="vllm", version="0.32.0", honours=("structured_outputs",)) as vllm:
        model = OpenAICompatModel([vllm.url], "fake", structured_output="grammar")
        with pytest.raises(ModelError) as raised:
            asyncio.run(model.check())
        model_spec = {
            "kind": "openai",
            "base_urls": [vllm.url],
            "name": "fake",
            "structured_output": "guided_regex",
        }
        config = make_config(policy={"kind": "llm"}, n_agents=4, rounds=1, model=model_spec)
        with pytest.raises(ModelError, match="ignores 'guided_regex'"):
            Simulation(config).run(out_dir=tmp_path, progress=False)
        answered = len(vllm.chat_posts)
    message = str(raised.value)
    assert "ignores 'grammar'" in message and "vllm 0.32.0" in message
    assert "set model.structured_output: structured_outputs" in message
    assert "'apple'" in message  # what the ignored probe answered
    assert answered == 0 and list(tmp_path.iterdir()) == []  # nothing asked, nothing written


def test_auto_with_no_honoured_mode_is_refused_with_the_free_text_fix():
    with FakeServer(honours=()) as server:
        with pytest.raises(ModelError, match="structured_output: none"):
            checked(OpenAICompatModel([server.url], "fake"))


def test_none_sends_answers_free_and_keeps_extraction_calls_constrained():
    with FakeServer(honours=("json_schema",)) as server:
        model = checked(OpenAICompatModel([server.url], "fake", structured_output="none"))
        asyncio.run(model.generate([ask(1), ask(2, step="extract")], PARAMS))
        by_prompt = {p["body"]["messages"][0]["content"]: p["body"] for p in server.chat_posts}
        answer, extraction = by_prompt["a number (1)"], by_prompt["a number (2)"]
    assert model.modes == {server.url: "json_schema"}
    assert not {"grammar", "structured_outputs", "response_format"} & set(answer)
    assert extraction["response_format"]["json_schema"]["schema"]["maximum"] == 100


def test_each_endpoint_gets_the_mode_its_own_server_honours():
    with (
        FakeServer(owned_by="vllm", honours=("structured_outputs",)) as vllm,
        FakeServer(owned_by="llamacpp", honours=("grammar",)) as llama,
    ):
        model = checked(OpenAICompatModel([vllm.url, llama.url], "fake", max_concurrency=1))
        asyncio.run(model.generate([ask(s) for s in range(6)], PARAMS))
        to_vllm = [p["body"] for p in vllm.chat_posts]
        to_llama = [p["body"] for p in llama.chat_posts]
    assert to_vllm and to_llama
    assert all("structured_outputs" in b for b in to_vllm)
    assert all("grammar" in b for b in to_llama)


def test_constraint_bodies_and_server_roots():
    assert constraint_body("grammar", None) == {}
    assert constraint_body(None, NUMBER) == {}
    assert constraint_body("structured_outputs", NUMBER) == {
        "structured_outputs": {"regex": "([0-9])|([1-9][0-9])|(100)"}
    }
    assert root_of("http://h:8000/v1/") == "http://h:8000"
    assert root_of("http://h:8000/api") == "http://h:8000/api"
    assert str(PROBE_VALUE) not in PROBE_MESSAGES[0]["content"]  # the prompt never asks for it


# --------------------------------------------------------------------------- seeds


def test_seed_none_sends_no_seed_and_says_so():
    with FakeServer() as server:
        model = checked(OpenAICompatModel([server.url], "fake", seed="none"))
        asyncio.run(model.generate([ask(5)], PARAMS))
        (sent,) = server.chat_posts
    assert "seed" not in sent["body"]
    assert model.identity["seed"] == "none"
    seeded = OpenAICompatModel(["http://127.0.0.1:9/v1"], "fake", structured_output="grammar")
    assert seeded.body(ask(5), PARAMS)["seed"] == 5


def test_seed_none_is_refused_for_a_model_that_always_seeds():
    with pytest.raises(ConfigError, match="seed none is for kind openai and vllm"):
        ModelSpec(kind="embedded", seed="none")
    spec = ModelSpec(kind="openai", base_urls=["http://127.0.0.1:9/v1"], name="m", seed="none")
    assert OpenAICompatModel.from_spec(spec).seed == "none"


# --------------------------------------------------------------------------- errors, attempts


def test_a_500_body_beats_the_refused_connections_after_it_and_latency_is_the_whole():
    calls: list[str] = []

    def dying(request: httpx.Request) -> httpx.Response:
        calls.append(request.url.path)
        if len(calls) == 1:
            error = {"error": {"message": "EngineCore encountered an issue.", "code": 500}}
            return httpx.Response(500, json=error)
        raise httpx.ConnectError("All connection attempts failed", request=request)

    model = OpenAICompatModel(
        ["http://fake.test/v1"],
        "fake",
        structured_output="grammar",
        max_retries=3,
        backoff_s=0.05,
        transport=httpx.MockTransport(dying),
    )
    (result,) = asyncio.run(model.generate([ask(1)], PARAMS))
    assert result.error_kind == "model_error"
    assert "HTTP 500: EngineCore encountered an issue." in (result.error or "")
    assert "attempt 1 of 4" in (result.error or "") and "ConnectError" in (result.error or "")
    assert [a.status for a in result.attempts] == [500, None, None, None]
    assert "EngineCore" in (result.attempts[0].error or "")
    # three backoffs (0.05 + 0.1 + 0.2 s) lie between the attempts: all of it is the latency
    assert result.latency_s >= 0.35 > sum(a.latency_s for a in result.attempts)


def test_a_retried_success_keeps_its_attempts():
    def busy_once(body: dict, n: int) -> Reply:
        return (503, {"error": {"message": "busy"}}) if n == 0 else (200, completion("7"))

    with FakeServer(busy_once) as server:
        model = OpenAICompatModel([server.url], "fake", backoff_s=0.01)
        (result,) = asyncio.run(model.generate([ask(1)], PARAMS))
    assert result.text == "7" and result.error is None
    assert [a.status for a in result.attempts] == [503, 200]
    assert result.attempts[0].error is not None and "HTTP 503: busy" in result.attempts[0].error
    assert json.dumps([a.as_dict() for a in result.attempts])  # plain JSON values


def test_the_manifest_and_bundles_show_name_the_server(make_config, tmp_path):
    from cli_helpers import in_process

    with FakeServer(owned_by="vllm", version="0.32.0", honours=("structured_outputs",)) as vllm:
        model = {"kind": "openai", "base_urls": [vllm.url], "name": "fake", "seed": "none"}
        config = make_config(policy={"kind": "llm"}, n_agents=4, rounds=1, model=model)
        bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
    assert bundle.manifest["model"]["servers"][vllm.url]["version"] == "0.32.0"
    shown = in_process(["bundles", "show", str(bundle.path)], cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    line = f"server:  {vllm.url} (vllm 0.32.0), constraint structured_outputs, seed none"
    assert line in shown.stdout
