import asyncio
import math
import re

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from workbench.agents import streams
from workbench.errors import ConfigError, ModelError, RoundFailedError, one_line
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
    assert policy.prompts.constrained
    assert sim.describe_model()["engine"] == "llama.cpp"


# --------------------------------------------------------------------------- failing models


@pytest.mark.parametrize("kind", ["model_error", "timeout"])
def test_a_round_whose_answers_all_failed_stops_the_run_as_failed(kind, make_config, tmp_path):
    config = make_config(policy={"kind": "llm"}, n_agents=6, rounds=2)
    with pytest.raises(RoundFailedError) as caught:
        run_sim(config, tmp_path, model=FailingModel(kind))
    (path,) = tmp_path.iterdir()
    message = str(caught.value)
    assert message.startswith(f"round 1: 6 of 6 answers failed (6 {kind}; 100%)")
    assert "more than max_failed_share 0.5 allows" in message
    assert f"first error: {kind}: gave up;" in message
    # an in-process (embedded) model: no server to start again
    assert message.endswith(f"once its cause is fixed: workbench run --resume {path}")
    assert (caught.value.round_number, caught.value.bundle) == (1, str(path))
    assert caught.value.resumable
    assert isinstance(caught.value, ModelError)

    bundle = Bundle.open(path)
    assert bundle.status == "failed" and bundle.error == one_line(caught.value)
    assert bundle.manifest["resumable"] is True
    assert bundle.rounds_count == 0 and len(bundle.rounds()) == 0
    assert not (path / "responses" / "round-1").exists()  # never stored, replayed on resume
    last = bundle.events()[-1]
    assert (last["kind"], last["status"], last["rounds_done"]) == ("run_finished", "failed", 0)
    assert last["error"] == bundle.error
    assert not verify_bundle(path).ok  # incomplete: a failed run is never presented as a result


@pytest.mark.parametrize("kind", ["model_error", "timeout"])
def test_max_failed_share_1_keeps_failed_decisions_and_the_run_completes(
    kind, make_config, tmp_path
):
    model = FailingModel(kind)
    config = make_config(policy={"kind": "llm"}, n_agents=6, rounds=2)
    config = config.model_copy(update={"max_failed_share": 1.0})
    bundle = run_sim(config, tmp_path, model=model)
    assert_complete(bundle, 6, 2)
    frame = bundle.responses()
    assert frame["status"].unique().tolist() == [kind]
    assert frame["guess"].isna().all()
    assert frame["raw"].str.contains("gave up").all()
    table = bundle.rounds()
    assert table["n_valid"].tolist() == [0, 0]
    assert table["n_failed"].tolist() == [6, 6]
    assert table["target"].isna().all()
    assert bundle.manifest["model"]["engine"] == "failing"
    # round 2 was still asked, and told that round 1 had no winner
    second = user_messages(model.requests, 2)
    assert len(second) == 6 and all("nobody won" in t for t in second)


class SomeFail:
    """A model that fails the requests of the agents `fails(agent_id)` picks, each with the
    error `error(agent_id)` (kind timeout when the text says so), and answers 40 to the others."""

    identity = {"engine": "fake", "name": "some-fail"}

    def __init__(self, fails, error=lambda agent: "ConnectError: connection refused") -> None:
        self.fails = fails
        self.error = error

    async def generate(self, requests, params):
        results = []
        for r in requests:
            if not self.fails(r.agent_id):
                results.append(ChatResult(text="40"))
                continue
            text = self.error(r.agent_id)
            kind = "timeout" if text.startswith("timeout") else "model_error"
            results.append(ChatResult(text=None, error=text, error_kind=kind))
        return results


def test_failures_below_the_threshold_are_recorded_and_the_run_completes(make_config, tmp_path):
    config = make_config(policy={"kind": "llm"}, n_agents=12, rounds=2, game={"group_by": "gender"})
    model = SomeFail(lambda agent: agent % 3 == 0)  # 4 of 12: a third, under a half
    bundle = run_sim(config, tmp_path, model=model)
    assert_complete(bundle, 12, 2)
    frame = bundle.responses()
    failed = frame["agent_id"] % 3 == 0
    assert (frame.loc[failed, "status"] == "model_error").all()
    assert frame.loc[failed, "raw"].str.contains("connection refused").all()
    assert (frame.loc[~failed, "status"] == "ok").all()
    rounds = bundle.rounds()
    assert rounds["n_failed"].tolist() == [4, 4] and rounds["n_valid"].tolist() == [8, 8]
    assert rounds["n_extracted"].tolist() == [0, 0]
    groups = bundle.groups()
    assert groups.groupby("round")["n_failed"].sum().tolist() == [4, 4]
    gender = bundle.personas().set_index("agent_id")["gender"]
    expected = frame[failed & (frame["round"] == 1)]["agent_id"].map(gender).value_counts()
    stored = groups[groups["round"] == 1].set_index("group")["n_failed"]
    assert stored[stored > 0].sort_index().to_dict() == expected.sort_index().to_dict()
    finished = [e for e in bundle.events() if e["kind"] == "round_finished"]
    assert [e["failures"] for e in finished] == [4, 4]
    assert [e["stats"]["n_failed"] for e in finished] == [4, 4]


def test_the_error_quoted_is_the_most_telling_one_and_failures_are_counted_by_kind(
    make_config, tmp_path
):
    def error(agent: int) -> str:
        if agent == 4:
            return "HTTP 500 from http://127.0.0.1:9/v1: out of memory"
        return "timeout after 30 s" if agent % 2 else "ConnectError: connection refused"

    config = make_config(policy={"kind": "llm"}, n_agents=8, rounds=2)
    config = config.model_copy(update={"max_failed_share": 0.6})
    with pytest.raises(RoundFailedError) as caught:
        run_sim(config, tmp_path, model=SomeFail(lambda agent: agent != 7, error))
    message = str(caught.value)
    # 7 of 8 failed: agents 0, 2, 4, 6 a model error (the first refused), 1, 3, 5 timed out
    assert message.startswith("round 1: 7 of 8 answers failed (4 model_error, 3 timeout; 87.5%)")
    assert "more than max_failed_share 0.6 allows" in message
    assert "first error: HTTP 500 from http://127.0.0.1:9/v1: out of memory;" in message


def test_a_long_error_is_cut_and_the_fix_survives_in_the_manifest(make_config, tmp_path):
    config = make_config(policy={"kind": "llm"}, n_agents=4, rounds=1)
    with pytest.raises(RoundFailedError):
        run_sim(
            config, tmp_path, model=SomeFail(lambda a: True, lambda a: "HTTP 500 " + "x" * 5000)
        )
    (path,) = tmp_path.iterdir()
    error = Bundle.open(path).error
    assert len(error) < 800
    assert error.endswith(f"workbench run --resume {path}")


def test_the_extracted_column_is_counted_overall_and_per_group(make_config, tmp_path, monkeypatch):
    """The policy's bool column `extracted` (answers read by the extraction call), nulls
    counted as not extracted."""
    from workbench.agents.policies import LLMPolicy

    act = LLMPolicy.act

    async def marking(self, shard, ctx):
        table = await act(self, shard, ctx)
        marks = [None if a == 1 else a % 2 == 0 for a in table.column("agent_id").to_pylist()]
        where = table.column_names.index("extracted")
        return table.set_column(where, "extracted", pa.array(marks, pa.bool_()))

    monkeypatch.setattr(LLMPolicy, "act", marking)
    config = make_config(policy={"kind": "llm"}, n_agents=6, rounds=2, game={"group_by": "gender"})
    bundle = run_sim(config, tmp_path, model=SomeFail(lambda agent: False))
    assert_complete(bundle, 6, 2)  # verify recomputes n_extracted from the responses too
    assert bundle.rounds()["n_extracted"].tolist() == [3, 3]  # agents 0, 2 and 4
    assert bundle.groups().groupby("round")["n_extracted"].sum().tolist() == [3, 3]


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
    # a wrapper with only identity + generate answers one generation per agent (no answer
    # trie), so both runs go through it; distribution mode's own reruns are in
    # tests/llm/test_llamacpp_determinism.py
    recorder = Recorder(embedded_model)
    first = run_sim(config, tmp_path / "a", model=recorder)
    second = run_sim(config, tmp_path / "b", model=Recorder(embedded_model))
    for bundle in (first, second):
        assert_complete(bundle, 8, 2)
        assert bundle.manifest["model"]["engine"] == "llama.cpp"
        assert bundle.manifest["model"]["answers"].startswith("one generation per agent")
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
        assert f"Your own numbers so far: {format_number(guess)}." in text
    assert not math.isnan(target)


def test_the_progress_bar_never_shows_nan_and_flags_failures(capsys):
    from workbench.runtime.events import RoundFinished
    from workbench.runtime.simulation import RoundBar

    bar = RoundBar(3, "run")
    nan = float("nan")
    bar(RoundFinished(round=1, stats={"n_valid": 0, "n_failed": 6, "mean": nan, "target": nan}))
    assert bar.bar.postfix == "no valid answers, 6 failed"
    bar(RoundFinished(round=2, stats={"n_valid": 4, "n_failed": 2, "mean": 40.0, "target": 80 / 3}))
    assert bar.bar.postfix == "mean=40.00, target=26.67, 2 failed"
    bar(RoundFinished(round=3, stats={"n_valid": 6, "n_failed": 0, "mean": 30.0, "target": 20.0}))
    assert bar.bar.postfix == "mean=30.00, target=20.00"
    bar.close()
    assert "nan" not in capsys.readouterr().err.lower()
