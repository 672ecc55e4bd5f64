import asyncio
import math
import re

import numpy as np
import pandas as pd
import pytest

from workbench.agents import streams
from workbench.errors import ConfigError
from workbench.game import RoundStats, format_number
from workbench.llm.base import ChatResult
from workbench.results import Bundle, list_bundles, verify_bundle
from workbench.runtime import Simulation, run


def responses(bundle: Bundle) -> pd.DataFrame:
    """A bundle's responses without the one column that measures time."""
    return bundle.responses().drop(columns="latency_s")


def run_sim(config, out_dir, **kwargs) -> Bundle:
    return Simulation(config, **kwargs).run(out_dir=out_dir, progress=False)


def assert_complete(bundle: Bundle, n_agents: int, rounds: int) -> None:
    assert bundle.is_complete
    report = verify_bundle(bundle.path)
    assert report.ok, str(report)
    frame = bundle.responses()
    assert len(frame) == n_agents * rounds
    assert (
        frame.groupby("round")["agent_id"].apply(list).tolist() == [list(range(n_agents))] * rounds
    )
    table = bundle.rounds()
    assert table["round"].tolist() == list(range(1, rounds + 1))
    assert table["n"].tolist() == [n_agents] * rounds
    assert len(bundle.personas()) == n_agents


class Recorder:
    """Wraps a chat model and keeps every batch of requests it was sent (it answers nothing)."""

    def __init__(self, model) -> None:
        self.model = model
        self.batches: list[list] = []

    @property
    def identity(self):
        return self.model.identity

    async def generate(self, requests, params):
        self.batches.append(list(requests))
        return await self.model.generate(requests, params)


class FailingModel:
    """A model whose every request fails with one error kind (the retry budget spent)."""

    def __init__(self, kind: str = "model_error") -> None:
        self.kind = kind
        self.requests: list = []

    @property
    def identity(self):
        return {"engine": "failing", "name": "always-fails"}

    async def generate(self, requests, params):
        self.requests.extend(requests)
        return [
            ChatResult(text=None, error=f"{self.kind}: gave up", error_kind=self.kind)
            for _ in requests
        ]


def user_messages(requests, round_number: int) -> list[str]:
    texts = [r.messages[1]["content"] for r in requests]
    return [t for t in texts if f"Round {round_number} of" in t]


# --------------------------------------------------------------------------- baselines


@pytest.mark.parametrize(
    "policy",
    [
        {"kind": "random"},
        {
            "kind": "level_k",
            "noise_sd": 2.0,
            "attribute": "education",
            "by_attribute": {"doctoral degree": {3: 1.0}},
        },
    ],
    ids=["random", "level_k"],
)
def test_same_seed_same_responses_other_seed_other_responses(policy, make_config, tmp_path):
    config = make_config(policy=policy, n_agents=10, rounds=3, seed=5)
    first = run_sim(config, tmp_path / "a")
    second = run_sim(config, tmp_path / "b")
    other = run_sim(make_config(policy=policy, n_agents=10, rounds=3, seed=6), tmp_path / "c")
    assert first.run_id != second.run_id
    pd.testing.assert_frame_equal(responses(first), responses(second))
    timeless = ["seconds"]
    pd.testing.assert_frame_equal(
        first.rounds().drop(columns=timeless), second.rounds().drop(columns=timeless)
    )
    assert not responses(first)["guess"].equals(responses(other)["guess"])
    for bundle in (first, second, other):
        assert_complete(bundle, 10, 3)


@pytest.mark.parametrize("policy", [{"kind": "random"}, {"kind": "level_k", "noise_sd": 1.0}])
def test_responses_do_not_depend_on_shard_size(policy, make_config, tmp_path):
    small = run_sim(make_config(policy=policy, agents_per_shard=3), tmp_path / "small")
    whole = run_sim(make_config(policy=policy, agents_per_shard=100), tmp_path / "whole")
    assert len(small.response_files(1)) == 4 and len(whole.response_files(1)) == 1
    assert small.manifest["backend"] == {"kind": "local", "shards": 4}
    pd.testing.assert_frame_equal(responses(small), responses(whole))


def test_level_k_round_two_replies_to_round_one_target(make_config, tmp_path):
    config = make_config(policy={"kind": "level_k", "depth_shares": {1: 1.0}}, rounds=3)
    bundle = run_sim(config, tmp_path)
    rounds = bundle.rounds()
    guesses = bundle.responses().groupby("round")["guess"]
    np.testing.assert_allclose(guesses.min()[1], 100 / 3)
    # each round's level-1 agents expect the previous round's target to repeat
    for number in (2, 3):
        expected = 2 / 3 * rounds.loc[rounds["round"] == number - 1, "target"].item()
        np.testing.assert_allclose(guesses.min()[number], expected)
        np.testing.assert_allclose(guesses.max()[number], expected)


def test_rounds_table_holds_one_row_per_round_with_statistics(make_config, tmp_path):
    bundle = run_sim(make_config(n_agents=12, rounds=4), tmp_path)
    table = bundle.rounds()
    assert len(table) == 4 and bundle.rounds_count == 4
    frame = bundle.responses()
    for _, row in table.iterrows():
        guesses = frame.loc[frame["round"] == row["round"], "guess"]
        assert row["n_valid"] == 12
        assert row["mean"] == pytest.approx(guesses.mean())
        assert row["target"] == pytest.approx(2 / 3 * guesses.mean())
        assert row["seconds"] >= 0
    assert bundle.manifest["model"] == {"engine": "none", "policy": "random"}


def test_run_calls_on_round_after_each_round(make_config, tmp_path):
    seen = []
    sim = Simulation(make_config(rounds=3))
    bundle = sim.run(
        out_dir=tmp_path, progress=False, on_round=lambda n, s, t: seen.append((n, s, t))
    )
    assert [n for n, _, _ in seen] == [1, 2, 3]
    assert all(isinstance(s, RoundStats) and t >= 0 for _, s, t in seen)
    assert [s.target for _, s, _ in seen] == pytest.approx(bundle.rounds()["target"].tolist())


def test_run_works_inside_a_running_event_loop(make_config, tmp_path):
    sim = Simulation(make_config(rounds=2))

    async def notebook_cell() -> Bundle:
        asyncio.get_running_loop()  # as in Jupyter: a loop is running here
        return sim.run(out_dir=tmp_path, progress=False)

    bundle = asyncio.run(notebook_cell())
    assert_complete(bundle, 10, 2)


def test_arun_can_be_awaited(make_config, tmp_path):
    sim = Simulation(make_config(rounds=2))
    bundle = asyncio.run(sim.arun(out_dir=tmp_path, run_id="awaited", progress=False))
    assert bundle.run_id == "awaited" and bundle.path == tmp_path / "awaited"
    assert_complete(bundle, 10, 2)


def test_module_level_run_entry_point(make_config, tmp_path):
    bundle = run(make_config(rounds=1), out_dir=tmp_path, progress=False)
    assert_complete(bundle, 10, 1)
    assert list_bundles(tmp_path)["status"].tolist() == ["complete"]


def test_bad_level_k_attribute_fails_before_writing_anything(make_config, tmp_path):
    config = make_config(
        policy={"kind": "level_k", "attribute": "income", "by_attribute": {"high": {2: 1.0}}}
    )
    with pytest.raises(ConfigError, match="'income' is not a population dimension"):
        run_sim(config, tmp_path)
    assert not any(tmp_path.iterdir())


def test_llm_policy_uses_the_configured_embedded_model(make_config):
    from workbench.agents.policies import LLMPolicy
    from workbench.llm.llamacpp import LlamaCppModel

    config = make_config(
        policy={"kind": "llm"},
        model={"n_ctx": 1024, "n_threads": 1, "max_tokens": 3, "temperature": 0.2},
    )
    sim = Simulation(config)
    policy = sim.make_policy()
    assert isinstance(policy, LLMPolicy) and isinstance(policy.model, LlamaCppModel)
    assert (policy.model.n_ctx, policy.model.n_threads) == (1024, 1)
    assert (policy.params.max_tokens, policy.params.temperature) == (3, 0.2)
    assert policy.constrained
    assert sim.describe_model()["engine"] == "llama.cpp"


# --------------------------------------------------------------------------- failing models


@pytest.mark.parametrize("kind", ["model_error", "timeout"])
def test_failing_model_gives_failed_decisions_and_the_run_completes(kind, make_config, tmp_path):
    model = FailingModel(kind)
    config = make_config(policy={"kind": "llm"}, n_agents=6, rounds=2, game={"rounds": 2})
    bundle = run_sim(config, tmp_path, model=model)
    assert_complete(bundle, 6, 2)
    frame = bundle.responses()
    assert frame["status"].unique().tolist() == [kind]
    assert frame["guess"].isna().all()
    assert frame["raw"].str.contains("gave up").all()
    table = bundle.rounds()
    assert table["n_valid"].tolist() == [0, 0]
    assert table["target"].isna().all()
    assert bundle.manifest["model"]["engine"] == "failing"
    # round 2 was still asked, and told that round 1 had no winner
    second = user_messages(model.requests, 2)
    assert len(second) == 6 and all("nobody won" in t for t in second)


class ExplodingModel(FailingModel):
    async def generate(self, requests, params):
        raise RuntimeError("the model server went away")


def test_an_exception_marks_the_bundle_failed(make_config, tmp_path):
    config = make_config(policy={"kind": "llm"}, n_agents=4, rounds=2)
    with pytest.raises(RuntimeError, match="went away"):
        run_sim(config, tmp_path, model=ExplodingModel())
    (listed,) = list_bundles(tmp_path).itertuples()
    assert listed.status == "failed"
    bundle = Bundle.open(listed.path)
    assert "went away" in bundle.manifest["error"]
    assert not verify_bundle(bundle.path).ok


# --------------------------------------------------------------------------- embedded model


@pytest.mark.slow
def test_embedded_model_run_is_reproducible(make_config, embedded_model, tmp_path):
    config = make_config(
        policy={"kind": "llm"},
        n_agents=8,
        rounds=2,
        seed=3,
        model={"max_tokens": 4},
    )
    recorder = Recorder(embedded_model)
    first = run_sim(config, tmp_path / "a", model=recorder)
    second = run_sim(config, tmp_path / "b", model=embedded_model)
    for bundle in (first, second):
        assert_complete(bundle, 8, 2)
        assert bundle.manifest["model"]["engine"] == "llama.cpp"
        assert re.fullmatch(r"[0-9a-f]{64}", bundle.manifest["model"]["file_sha256"])
    one, two = responses(first), responses(second)
    pd.testing.assert_frame_equal(one, two)
    assert (one["status"] == "ok").all()
    assert ((one["guess"] >= 0) & (one["guess"] <= 100)).all()

    # round 2's prompts carried round 1's winning number and each agent's own round-1 number
    target = first.rounds().set_index("round").loc[1, "target"]
    requests = [r for batch in recorder.batches for r in batch]
    assert len(requests) == 16 and len(recorder.batches) == 2 * 2  # 2 shards of 4, 2 rounds
    round_one = one[one["round"] == 1].set_index("agent_id")["guess"]
    personas = first.personas().set_index("agent_id")["persona"]
    seeds = streams.request_seeds(config.seed, round_one.index.to_numpy(), 2).tolist()
    later = {r.seed: r.messages[1]["content"] for r in requests if r.seed in seeds}
    assert len(later) == 8 and len(user_messages(requests, 2)) == 8
    for agent_id, guess, seed in zip(round_one.index, round_one, seeds, strict=True):
        text = later[seed]
        assert personas[agent_id] in text
        assert f"round 1: {format_number(target)}" in text
        assert f"Your own numbers so far: round 1: {format_number(guess)}." in text
    assert not math.isnan(target)
