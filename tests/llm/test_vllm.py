"""vLLM: the in-process engine is import-guarded; a real vLLM server is an opt-in test."""

from __future__ import annotations

import asyncio
import importlib.util
import json
import os
from pathlib import Path

import httpx
import pytest

from workbench.config import ModelSpec
from workbench.errors import ModelError
from workbench.llm import make_model
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.openai_compat import OpenAICompatModel
from workbench.results import verify_bundle
from workbench.runtime import Simulation

HAS_VLLM = importlib.util.find_spec("vllm") is not None


@pytest.mark.skipif(HAS_VLLM, reason="checks the message shown when the [vllm] extra is missing")
def test_missing_vllm_extra_is_one_clear_error_before_any_writing(make_config, tmp_path) -> None:
    with pytest.raises(ModelError, match=r"pip install 'agent-sim-workbench\[vllm\]'"):
        make_model(ModelSpec(kind="vllm", name="Qwen/Qwen2-7B-Instruct"))
    config = make_config(policy={"kind": "llm"}, model={"kind": "vllm", "name": "m"})
    with pytest.raises(ModelError, match="needs the vllm package"):
        Simulation(config).run(out_dir=tmp_path, progress=False)
    assert list(tmp_path.iterdir()) == []


def test_structured_outputs_regex_for_new_vllm_servers() -> None:
    bodies = []

    def answer(request: httpx.Request) -> httpx.Response:
        bodies.append(json.loads(request.content))
        return httpx.Response(200, json={"choices": [{"message": {"content": "42"}}]})

    model = OpenAICompatModel(
        ["http://127.0.0.1:9/v1"],
        "m",
        structured_output="structured_outputs",
        transport=httpx.MockTransport(answer),
    )
    request = ChatRequest(
        ({"role": "user", "content": "n?"},), constraint=OutputConstraint((0, 100))
    )
    (result,) = asyncio.run(model.generate([request], SamplingParams()))
    assert result.text == "42"
    assert bodies[0]["structured_outputs"] == {"regex": "([0-9])|([1-9][0-9])|(100)"}


@pytest.mark.vllm
@pytest.mark.skipif(
    not os.environ.get("VLLM_BASE_URL"), reason="opt-in: set VLLM_BASE_URL (and VLLM_MODEL)"
)
def test_a_game_against_a_real_vllm_server(make_config, tmp_path: Path) -> None:
    model = {
        "kind": "openai",
        "base_urls": [os.environ["VLLM_BASE_URL"]],
        "name": os.environ.get("VLLM_MODEL", "Qwen/Qwen2-7B-Instruct"),
        "structured_output": os.environ.get("VLLM_STRUCTURED_OUTPUT", "structured_outputs"),
        "max_tokens": 8,
    }
    config = make_config(policy={"kind": "llm"}, n_agents=20, rounds=2, model=model)
    bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
    assert (bundle.responses()["status"] == "ok").all()  # one constrained call per agent
    assert verify_bundle(bundle.path).ok
