import asyncio
import time

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from workbench.agents.policies import LevelKPolicy, LLMPolicy, RandomPolicy
from workbench.agents.prompts import Prompts
from workbench.agents.shard import AgentShard, RoundContext, decisions_table, split_into_shards
from workbench.config import GameSpec, LevelKPolicySpec, PromptSpec, RandomPolicySpec
from workbench.game import round_question, rules_text
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams
from workbench.runtime import LocalBackend

SEED = 123


def shard_of(n: int, *, rounds: int = 1, education: list[str] | None = None) -> AgentShard:
    frame = pd.DataFrame({"agent_id": np.arange(n), "persona": [f"Persona {i}." for i in range(n)]})
    if education is not None:
        frame["education"] = pd.Categorical(education)
    return AgentShard(0, frame, rounds)


def act(policy, shard: AgentShard, ctx: RoundContext) -> pa.Table:
    return asyncio.run(policy.act(shard, ctx))


def ctx_for(round_number: int = 1, targets: tuple[float, ...] = (), **game) -> RoundContext:
    return RoundContext(round_number, SEED, GameSpec(**game), 50, targets)


# --------------------------------------------------------------------------- random


def test_random_policy_really_awaits_its_latency():
    policy = RandomPolicy(RandomPolicySpec(latency_s=0.2))
    start = time.perf_counter()
    table = act(policy, shard_of(10), ctx_for())
    assert time.perf_counter() - start >= 0.2
    assert table.column("latency_s").to_pylist() == [0.2] * 10
    assert set(table.column("status").to_pylist()) == {"ok"}


def test_random_policy_shards_wait_together():
    policy = RandomPolicy(RandomPolicySpec(latency_s=0.2))
    shards = split_into_shards(shard_of(20).personas, 4, rounds=1)

    async def all_shards():
        return await asyncio.gather(*(policy.act(s, ctx_for()) for s in shards))

    start = time.perf_counter()
    tables = asyncio.run(all_shards())
    elapsed = time.perf_counter() - start
    assert len(tables) == 5
    assert 0.2 <= elapsed < 0.9  # five shards, one latency: concurrent, not 5 x 0.2 s


def test_random_policy_guesses_integers_in_range():
    table = act(RandomPolicy(), shard_of(2000), ctx_for(low=13, high=87))
    guesses = np.array(table.column("guess").to_pylist())
    assert np.all(guesses == np.round(guesses))
    assert guesses.min() == 13 and guesses.max() == 87
    assert len(np.unique(guesses)) == 75


def test_random_policy_rounds_inward_for_fractional_bounds():
    table = act(RandomPolicy(), shard_of(2000), ctx_for(low=0.5, high=10.5))
    guesses = np.array(table.column("guess").to_pylist())
    assert set(guesses.tolist()) == set(map(float, range(1, 11)))


def test_random_policy_continuous_guesses():
    spec = RandomPolicySpec(integer=False)
    guesses = np.array(act(RandomPolicy(spec), shard_of(2000), ctx_for()).column("guess"))
    assert guesses.min() >= 0 and guesses.max() <= 100
    assert np.any(guesses != np.round(guesses))


def test_random_policy_rounds_and_seeds_differ():
    shard = shard_of(100)
    one = act(RandomPolicy(), shard, ctx_for(1)).column("guess")
    two = act(RandomPolicy(), shard, ctx_for(2, (30.0,))).column("guess")
    again = act(RandomPolicy(), shard, ctx_for(1)).column("guess")
    other_seed = act(RandomPolicy(), shard, RoundContext(1, SEED + 1, GameSpec(), 50)).column(
        "guess"
    )
    assert one.equals(again)
    assert not one.equals(two)
    assert not one.equals(other_seed)


# --------------------------------------------------------------------------- level-k


def level_k(**spec) -> LevelKPolicy:
    return LevelKPolicy(LevelKPolicySpec(**spec))


@pytest.mark.parametrize(("depth", "guess"), [(1, 100 / 3), (2, 200 / 9), (3, 400 / 27)])
def test_level_k_depth_guesses_round_one(depth, guess):
    table = act(level_k(depth_shares={depth: 1.0}), shard_of(10), ctx_for())
    np.testing.assert_allclose(table.column("guess").to_pylist(), guess)
    assert table.column("raw").to_pylist() == [f"depth={depth}"] * 10
    assert round(guess, 2) in (33.33, 22.22, 14.81)


def test_cognitive_hierarchy_differs_from_level_k():
    shares = {0: 0.5, 1: 0.25, 2: 0.25}
    game = GameSpec()
    lk = level_k(depth_shares=shares).depth_guesses(game, 50.0, 2)
    ch = level_k(depth_shares=shares, model="cognitive_hierarchy").depth_guesses(game, 50.0, 2)
    np.testing.assert_allclose(lk, [50, 100 / 3, 200 / 9])
    # depth 2 replies to the 2:1 mix of depth 0 (50) and depth 1 (33.33): 2/3 * 44.44
    np.testing.assert_allclose(ch, [50, 100 / 3, 2 / 3 * (0.5 * 50 + 0.25 * 100 / 3) / 0.75])
    assert ch[2] != pytest.approx(lk[2])


def test_level_k_round_two_anchors_on_previous_target():
    policy = level_k(depth_shares={1: 0.5, 2: 0.5})
    table = act(policy, shard_of(200), ctx_for(2, (30.0,)))
    depth = np.array([int(r.split("=")[1]) for r in table.column("raw").to_pylist()])
    guesses = np.array(table.column("guess").to_pylist())
    assert set(depth.tolist()) == {1, 2}
    np.testing.assert_allclose(guesses[depth == 1], 20.0)
    np.testing.assert_allclose(guesses[depth == 2], 40 / 3)


def test_level_k_after_a_round_without_target_anchors_on_the_midpoint():
    table = act(level_k(depth_shares={1: 1.0}), shard_of(5), ctx_for(2, (float("nan"),)))
    np.testing.assert_allclose(table.column("guess").to_pylist(), 100 / 3)


def test_level_k_offset_game_respects_bounds():
    table = act(level_k(depth_shares={1: 1.0}), shard_of(5), ctx_for(ratio=0.5, offset=5))
    np.testing.assert_allclose(table.column("guess").to_pylist(), 30.0)


def test_level_k_depth_shares_are_honoured():
    policy = level_k()  # default {0: .2, 1: .4, 2: .3, 3: .1}
    depth = policy.depths(shard_of(20_000), SEED)
    shares = np.bincount(depth, minlength=4) / len(depth)
    np.testing.assert_allclose(shares, [0.2, 0.4, 0.3, 0.1], atol=0.015)


def test_level_k_depth_zero_guesses_uniformly():
    table = act(level_k(depth_shares={0: 1.0}), shard_of(2000), ctx_for())
    guesses = np.array(table.column("guess").to_pylist())
    assert guesses.min() >= 0 and guesses.max() <= 100
    assert abs(guesses.mean() - 50) < 3


def test_level_k_depth_by_attribute_applies_to_the_right_agents():
    education = ["doctoral degree", "elementary school"] * 10
    policy = level_k(
        depth_shares={1: 1.0},
        attribute="education",
        by_attribute={"doctoral degree": {3: 1.0}},
    )
    shard = shard_of(20, education=education)
    depth = policy.depths(shard, SEED)
    doctors = np.array(education) == "doctoral degree"
    assert np.all(depth[doctors] == 3) and np.all(depth[~doctors] == 1)
    guesses = np.array(act(policy, shard, ctx_for()).column("guess").to_pylist())
    np.testing.assert_allclose(guesses[doctors], 400 / 27)
    np.testing.assert_allclose(guesses[~doctors], 100 / 3)


def test_level_k_unknown_attribute_column_is_named():
    policy = level_k(attribute="income", by_attribute={"high": {2: 1.0}})
    with pytest.raises(ValueError, match="'income' does not exist"):
        policy.depths(shard_of(3), SEED)


def test_level_k_noise_is_clipped_to_the_range():
    table = act(level_k(depth_shares={1: 1.0}, noise_sd=1000), shard_of(500), ctx_for())
    guesses = np.array(table.column("guess").to_pylist())
    assert guesses.min() == 0 and guesses.max() == 100
    assert np.all((guesses >= 0) & (guesses <= 100))


def test_level_k_small_noise_spreads_around_the_depth_guess():
    table = act(level_k(depth_shares={1: 1.0}, noise_sd=2.0), shard_of(2000), ctx_for())
    guesses = np.array(table.column("guess").to_pylist())
    assert abs(guesses.mean() - 100 / 3) < 0.3
    assert abs(guesses.std() - 2.0) < 0.2


# --------------------------------------------------------------------------- LLM requests


def two_rounds_shard(n: int = 6) -> AgentShard:
    shard = shard_of(n, rounds=3)
    own = np.arange(n) * 10.0 + 1
    statuses = ["ok"] * (n - 1) + ["no_number"]
    shard.remember(1, decisions_table(shard.agent_ids, 1, own, statuses))
    return shard


def test_llm_requests_share_the_system_message_and_put_it_first():
    shard = shard_of(6)
    ctx = ctx_for(rounds=3)
    requests = Prompts().chats(shard, ctx)
    assert len(requests) == 6 and all(isinstance(r, ChatRequest) for r in requests)
    systems = {r.messages[0]["content"] for r in requests}
    assert systems == {rules_text(ctx.game, ctx.n_players)}
    for request in requests:
        assert [m["role"] for m in request.messages] == ["system", "user"]
        assert not any(p in request.messages[0]["content"] for p in shard.personas["persona"])


def test_llm_requests_put_the_persona_after_the_shared_question():
    shard = shard_of(6)
    ctx = ctx_for(rounds=3)
    question = round_question(ctx.game, 1, ())
    for request, persona in zip(
        Prompts().chats(shard, ctx), shard.personas["persona"], strict=True
    ):
        user = request.messages[1]["content"]
        assert user.startswith(question)
        assert user.index(persona) > len(question)


def test_llm_requests_leave_the_persona_out_when_disabled():
    ctx = ctx_for(prompt=PromptSpec(persona=False))
    requests = Prompts().chats(shard_of(3), ctx)
    assert all("Persona" not in r.messages[1]["content"] for r in requests)
    assert len({r.messages[1]["content"] for r in requests}) == 1


def test_llm_requests_in_round_two_show_the_target_and_own_numbers():
    shard = two_rounds_shard()
    ctx = ctx_for(2, (27.5,), rounds=3)
    question = round_question(ctx.game, 2, (27.5,))
    assert "27.5" in question
    requests = Prompts().chats(shard, ctx)
    for i, request in enumerate(requests[:-1]):
        user = request.messages[1]["content"]
        assert user.startswith(question)
        assert f"Your own numbers so far: {i * 10 + 1}." in user.removeprefix(question)
        assert f"Persona {i}." in user
    # an invalid answer is remembered as no number
    assert "no valid number" in requests[-1].messages[1]["content"]


def test_llm_request_seeds_differ_per_agent_and_are_reproducible():
    policy = Prompts()
    seeds = [r.seed for r in policy.chats(shard_of(8), ctx_for())]
    assert len(set(seeds)) == 8
    assert all(0 <= s < 2**31 for s in seeds)
    assert seeds == [r.seed for r in policy.chats(shard_of(8), ctx_for())]
    assert seeds != [r.seed for r in policy.chats(shard_of(8), ctx_for(2, (3.0,)))]
    # seeds belong to agents, not to positions in a shard
    back = AgentShard(1, shard_of(8).personas.iloc[4:], 1)
    assert [r.seed for r in policy.chats(back, ctx_for())] == seeds[4:]


def test_llm_requests_carry_the_integer_constraint():
    policy = Prompts()
    (request,) = policy.chats(shard_of(1), ctx_for(low=0.5, high=10.5))
    assert request.constraint is not None
    assert request.constraint.integer_range == (1, 10)
    (free,) = Prompts(constrained=False).chats(shard_of(1), ctx_for())
    assert free.constraint is None


def test_llm_constraint_stays_inside_negative_ranges():
    (request,) = Prompts().chats(shard_of(1), ctx_for(low=-10.5, high=-2.5))
    assert request.constraint.integer_range == (-10, -3)


class FixedModel:
    """A stand-in that answers every request with a fixed text (for the parsing path only)."""

    identity = {"engine": "fixed"}

    def __init__(self, texts: list[str | None], error_kind: str | None = None) -> None:
        self.texts, self.error_kind = texts, error_kind

    async def generate(self, requests, params):
        return [
            ChatResult(
                text=t,
                error=None if t is not None else "failed",
                error_kind=None if t is not None else self.error_kind,
                prompt_tokens=5,
                completion_tokens=1,
            )
            for t, _ in zip(self.texts, requests, strict=True)
        ]


def test_llm_act_parses_every_answer_with_a_status():
    model = FixedModel(["42", "abc", "150", None], error_kind="timeout")
    table = act(LLMPolicy(model, SamplingParams()), shard_of(4), ctx_for())
    assert table.column("status").to_pylist() == ["ok", "no_number", "out_of_range", "timeout"]
    assert table.column("guess").to_pylist()[0] == 42.0
    assert table.column("raw").to_pylist() == ["42", "abc", "150", "failed"]
    assert table.column("prompt_tokens").to_pylist() == [5] * 4


# --------------------------------------------------------------------------- sharding


def play(personas: pd.DataFrame, policy, per_shard: int, rounds: int = 3) -> pd.DataFrame:
    async def go() -> pd.DataFrame:
        backend = LocalBackend()
        await backend.start(split_into_shards(personas, per_shard, rounds), policy)
        frames, targets = [], []
        for number in range(1, rounds + 1):
            ctx = RoundContext(number, SEED, GameSpec(rounds=rounds), len(personas), tuple(targets))
            tables = await backend.play_round(ctx)
            frame = pa.concat_tables(tables).to_pandas()
            frames.append(frame)
            targets.append(2 / 3 * frame["guess"].mean())
        await backend.close()
        return pd.concat(frames).sort_values(["round", "agent_id"]).reset_index(drop=True)

    return asyncio.run(go())


@pytest.mark.parametrize(
    "policy",
    [
        RandomPolicy(),
        RandomPolicy(RandomPolicySpec(integer=False)),
        LevelKPolicy(LevelKPolicySpec(noise_sd=3.0)),
        LevelKPolicy(
            LevelKPolicySpec(
                model="cognitive_hierarchy",
                attribute="education",
                by_attribute={"doctoral degree": {3: 1.0}},
                noise_sd=1.0,
            )
        ),
    ],
    ids=["random", "random-float", "level_k", "cognitive_hierarchy-by-education"],
)
def test_results_do_not_depend_on_sharding(policy, education_personas):
    personas = education_personas(12, 3)
    one = play(personas, policy, per_shard=12)
    three = play(personas, policy, per_shard=4)
    odd = play(personas, policy, per_shard=5)
    assert len(one) == 36
    pd.testing.assert_frame_equal(one, three)
    pd.testing.assert_frame_equal(one, odd)
    assert one.groupby("round")["guess"].mean().nunique() == 3  # rounds really differ
