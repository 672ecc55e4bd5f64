"""One plan per round for K engines (issue 38, first step): `runtime.cluster_plan` on hand-made
reports of a round's prompts, beside today's division by shards."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from workbench.llm.routes import prompt_key
from workbench.runtime.cluster_plan import distinct_prompts, plan_round, shard_division


def report(entries: list[tuple[int, str, tuple[str, ...], int, int]]) -> pd.DataFrame:
    """Rows of (shard, key, path, tokens, agents)."""
    return pd.DataFrame(entries, columns=["shard", "key", "path", "tokens", "agents"])


def population_report(
    n: int = 20_000, shards: int = 40, personas: int = 10, seed: int = 3
) -> pd.DataFrame:
    """A round-3 shape: `personas` personas of uneven sizes, each agent with two earlier numbers
    drawn from skewed persona-specific distributions, `shards` shards of consecutive agents."""
    rng = np.random.default_rng(seed)
    persona = rng.choice(personas, size=n, p=_skewed(personas, rng))
    first = np.array([rng.choice(12, p=_skewed(12, rng)) for _ in range(personas)])[persona]
    first = (first + rng.choice(6, size=n, p=_skewed(6, rng))) * 3
    second = first // 2 + rng.choice(8, size=n, p=_skewed(8, rng))
    frame = pd.DataFrame(
        {
            "shard": np.arange(n) * shards // n,
            "persona": persona,
            "first": first,
            "second": second,
        }
    )
    grouped = frame.groupby(["shard", "persona", "first", "second"]).size().reset_index()
    entries = []
    for shard, p, a, b, agents in grouped.itertuples(index=False):
        path = (f"persona {p}", str(a), str(b))
        key = prompt_key([{"role": "user", "content": " ".join(path)}])
        entries.append((int(shard), key, path, 300 + 7 * int(p) + 4, int(agents)))
    return report(entries)


def _skewed(size: int, rng: np.random.Generator) -> np.ndarray:
    weights = rng.pareto(1.5, size) + 0.05
    return weights / weights.sum()


def test_every_distinct_prompt_goes_to_exactly_one_engine() -> None:
    rows = population_report()
    distinct = distinct_prompts(rows)
    for k in (1, 2, 4, 8, 32):
        plan = plan_round(rows, k)
        assert len(plan.engines) == k
        walked = [key for engine in plan.engines for key in engine.keys]
        assert sorted(walked) == sorted(distinct["key"])  # each once: no duplicates, none lost
        assert plan.walked == plan.distinct_prompts == len(distinct)
        assert plan.over_distinct == 1.0
        assert set(plan.engine_of) == set(distinct["key"])
        for e, engine in enumerate(plan.engines):
            assert all(plan.engine_of[key] == e for key in engine.keys)
        assert sum(e.tokens for e in plan.engines) == plan.distinct_tokens
        assert sum(e.agents for e in plan.engines) == int(rows["agents"].sum())


def test_the_same_report_gives_the_same_plan_in_any_row_order() -> None:
    rows = population_report(n=5_000, shards=10)
    plan = plan_round(rows, 4)
    shuffled = rows.sample(frac=1.0, random_state=11).reset_index(drop=True)
    again = plan_round(shuffled, 4)
    assert again.engine_of == plan.engine_of
    assert again.engines == plan.engines
    assert again.buckets == plan.buckets


@pytest.mark.parametrize("k", [2, 4, 8, 32])
def test_the_largest_engine_holds_within_1_15_over_k_on_a_realistic_round(k: int) -> None:
    rows = population_report()
    plan = plan_round(rows, k)
    assert plan.largest_token_share <= 1.15 / k, [e.tokens for e in plan.engines]
    assert plan.largest_share <= 1.15 / k, [e.prompts for e in plan.engines]


def test_prompts_of_a_persona_stay_together_when_balance_allows() -> None:
    # four personas of equal weight, three histories each: two engines take two personas each
    entries = []
    for shard, persona in enumerate("abcd"):
        for number in ("10", "20", "30"):
            path = (persona, number)
            entries.append((shard, f"{persona}{number}", path, 100, 5))
    plan = plan_round(report(entries), 2)
    assert plan.buckets == (("a",), ("b",), ("c",), ("d",))
    for persona in "abcd":
        engines = {plan.engine_of[f"{persona}{n}"] for n in ("10", "20", "30")}
        assert len(engines) == 1, persona
    assert [e.tokens for e in plan.engines] == [600, 600]


def test_only_the_persona_too_heavy_for_one_engine_is_split_by_its_earlier_numbers() -> None:
    # persona a holds 8 of 12 equal prompts: over half, so it splits by its first number; b's
    # prompts stay on one engine
    entries = []
    for number in range(8):
        entries.append((0, f"a{number}", ("a", str(number % 4), str(number)), 100, 1))
    for number in range(4):
        entries.append((1, f"b{number}", ("b", "0", str(number)), 100, 1))
    plan = plan_round(report(entries), 2)
    assert ("b",) in plan.buckets
    assert len({plan.engine_of[f"b{n}"] for n in range(4)}) == 1
    assert all(len(head) == 2 and head[0] == "a" for head in plan.buckets if head != ("b",))
    for first in range(4):  # a's prompts that share their first number stay together too
        keys = [f"a{n}" for n in range(8) if n % 4 == first]
        assert len({plan.engine_of[key] for key in keys}) == 1
    assert [e.tokens for e in plan.engines] == [600, 600]


def test_a_single_prompt_cannot_be_split() -> None:
    rows = report([(0, "x", ("a",), 1_000, 7), (1, "y", ("b",), 10, 1)])
    plan = plan_round(rows, 4)
    assert plan.walked == 2
    assert plan.largest_token_share == pytest.approx(1_000 / 1_010)
    assert sorted(e.prompts for e in plan.engines) == [0, 0, 1, 1]


def test_shard_division_walks_a_prompt_on_every_engine_whose_shards_ask_it() -> None:
    # prompt p's agents sit on shards 0, 1 and 2; q only on shard 3; r on shards 0 and 2
    rows = report(
        [
            (0, "p", ("a", "1"), 10, 4),
            (1, "p", ("a", "1"), 10, 3),
            (2, "p", ("a", "1"), 10, 2),
            (3, "q", ("b", "1"), 20, 5),
            (0, "r", ("a", "2"), 30, 1),
            (2, "r", ("a", "2"), 30, 1),
        ]
    )
    today = shard_division(rows, 2)  # engine 0: shards 0 and 2; engine 1: shards 1 and 3
    assert [e.keys for e in today.engines] == [("p", "r"), ("p", "q")]
    assert [e.tokens for e in today.engines] == [40, 30]
    assert [e.agents for e in today.engines] == [8, 8]
    assert today.distinct_prompts == 3 and today.walked == 4
    assert today.over_distinct == pytest.approx(4 / 3)
    assert today.largest_share == pytest.approx(2 / 3)
    assert today.largest_token_share == pytest.approx(40 / 60)
    four = shard_division(rows, 4)  # one shard each: p on three engines, r on two
    assert four.walked == 6 and [e.prompts for e in four.engines] == [2, 1, 2, 1]
    plan = plan_round(rows, 2)
    assert plan.walked == 3 and plan.distinct_tokens == 60


def test_shard_division_counts_what_the_plan_saves_on_a_realistic_round() -> None:
    rows = population_report()
    for k in (2, 4, 8):
        today, plan = shard_division(rows, k), plan_round(rows, k)
        assert today.distinct_prompts == plan.distinct_prompts
        assert today.walked > plan.walked == plan.distinct_prompts
        assert today.largest_share > plan.largest_share


def test_prompt_key_is_the_messages_and_the_model() -> None:
    chat = [{"role": "system", "content": "rules"}, {"role": "user", "content": "guess"}]
    assert prompt_key(chat) == prompt_key([dict(m) for m in chat])
    assert prompt_key(chat) != prompt_key(chat, "other-model")
    assert prompt_key(chat) != prompt_key(chat[:1])


def test_a_report_without_its_columns_is_refused() -> None:
    with pytest.raises(ValueError, match="tokens"):
        plan_round(pd.DataFrame({"shard": [0], "key": ["x"], "path": [("a",)]}), 2)
    with pytest.raises(ValueError, match="k must be"):
        plan_round(report([(0, "x", ("a",), 1, 1)]), 0)
