"""A prompt that cannot fit the embedded model's context is refused before the bundle is written,
in one line naming model.n_ctx and the prompt's length; the estimate of the last round's prompt
is never shorter than a real one; and a round that failed on its context gets no resume advice
(a resume keeps the config and replays the same prompts).

The prompts are tokenized by the real SmolLM2 GGUF (its vocabulary, without the weights)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
import yaml
from cli_helpers import workbench

from workbench._examples import example_path
from workbench.agents.context_probes import longest_number, probe_requests
from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext
from workbench.config import GameSpec, load_run_config
from workbench.errors import NO_RESUME, ConfigError, RoundFailedError
from workbench.llm import sampling_params
from workbench.llm.base import ChatResult
from workbench.llm.embedded.engine import chat_tokens, vocabulary
from workbench.llm.llamacpp import LlamaCppModel
from workbench.results import Bundle
from workbench.runtime import Simulation


def _quickstart(tmp_path: Path, rounds: int, n_ctx: int) -> Path:
    """The quickstart config (10 agents) with `rounds` and `model.n_ctx`, written in tmp_path."""
    data = yaml.safe_load(example_path("quickstart").read_text())
    data["population"] = str(example_path("quickstart").parent / data["population"])
    data["n_agents"] = 10
    data["game"]["rounds"] = rounds
    data["model"]["n_ctx"] = n_ctx
    path = tmp_path / "tight.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_workbench_run_refuses_a_prompt_longer_than_n_ctx_before_writing(tmp_path: Path) -> None:
    config = _quickstart(tmp_path, rounds=30, n_ctx=256)  # round 30's history is long
    out = tmp_path / "results"
    result = workbench("run", config, "--out", out, "--no-progress", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr  # one line, and nothing from llama.cpp
    (line,) = lines
    assert line.startswith(
        "error: model.n_ctx: 256 tokens cannot hold round 30's prompt: it is up to "
    )
    assert "plus model.max_tokens 4 for the answer; set model.n_ctx to at least" in line
    need = int(line.rsplit(" ", 1)[1])
    assert need > 256
    assert not out.exists()  # nothing written, not even the results folder


def test_a_run_that_fits_passes_the_check_and_the_estimate_covers_a_real_last_round(
    tmp_path: Path,
) -> None:
    config = load_run_config(_quickstart(tmp_path, rounds=5, n_ctx=2048))
    sim = Simulation(config)
    params = sampling_params(config.model)
    probes = probe_requests(config, sim.personas, params)
    model = LlamaCppModel(n_ctx=config.model.n_ctx)
    model.check_fits(probes, params)  # the quickstart fits easily
    llm, formatter = vocabulary(str(model.path))
    estimate = max(len(chat_tokens(llm, formatter, r)[0]) for r in probes)
    # real round-5 prompts: every agent, with a history of typical numbers and of invalid ones
    shard = AgentShard(0, sim.personas, config.game.rounds)
    prompts = Prompts.of(config)
    for history in ((33.33, 22.22, 14.81, 9.88), (math.nan, 100, math.nan, 0)):
        shard.guesses[:, :4] = history
        ctx = RoundContext(5, config.seed, config.game, config.n_agents, history)
        real = max(len(chat_tokens(llm, formatter, r)[0]) for r in prompts.chats(shard, ctx))
        assert real <= estimate
    with pytest.raises(ConfigError, match=r"^model\.n_ctx: 64 tokens cannot hold round 5's"):
        LlamaCppModel(n_ctx=64).check_fits(probes, params)


def test_the_longest_number_has_the_most_digits_a_guess_or_target_can_have() -> None:
    assert longest_number(GameSpec()) == 100.67  # [0, 100]
    assert longest_number(GameSpec(low=-50, high=20, offset=0)) == -50.67
    assert longest_number(GameSpec(offset=500, ratio=0.5)) == 550.67  # a target beyond high


class ContextOverflow:
    """A model whose every answer failed as llama.cpp fails a prompt longer than its context."""

    identity = {"engine": "overflowing"}

    async def generate(self, requests, params):
        error = "ValueError: Requested tokens (300) exceed context window of 256"
        return [ChatResult(text=None, error=error, error_kind="model_error") for _ in requests]


def test_a_round_failed_on_the_context_gives_no_resume_advice(make_config, tmp_path) -> None:
    config = make_config(policy={"kind": "llm"}, n_agents=4, rounds=2)
    with pytest.raises(RoundFailedError) as caught:
        Simulation(config, model=ContextOverflow()).run(out_dir=tmp_path, progress=False)
    message = str(caught.value)
    assert not caught.value.resumable
    assert "start a new run with a larger model.n_ctx" in message and NO_RESUME in message
    assert "--resume" not in message
    (bundle,) = tmp_path.iterdir()
    assert Bundle.open(bundle).manifest["resumable"] is False
    result = workbench("bundles", "show", bundle, cwd=tmp_path)
    assert result.returncode == 0 and "resume:" not in result.stdout, result.stdout
