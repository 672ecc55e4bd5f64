import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

from workbench.agents.shard import AgentShard, RoundContext, decisions_table, split_into_shards
from workbench.config import GameSpec
from workbench.results import RESPONSE_SCHEMA
from workbench.results.layout import response_table


def personas(n: int, start: int = 0) -> pd.DataFrame:
    ids = np.arange(start, start + n)
    return pd.DataFrame({"agent_id": ids, "persona": [f"agent {i}" for i in ids]})


@pytest.mark.parametrize(
    ("n", "per_shard", "sizes"),
    [(10, 3, [3, 3, 3, 1]), (9, 3, [3, 3, 3]), (5, 100, [5]), (4, 1, [1, 1, 1, 1])],
)
def test_split_into_shards_sizes(n, per_shard, sizes):
    shards = split_into_shards(personas(n), per_shard, rounds=2)
    assert [len(s) for s in shards] == sizes
    assert [s.index for s in shards] == list(range(len(sizes)))
    # every agent in exactly one shard, in order
    np.testing.assert_array_equal(np.concatenate([s.agent_ids for s in shards]), np.arange(n))
    for shard in shards:
        assert shard.guesses.shape == (len(shard), 2)
        assert np.isnan(shard.guesses).all()
        assert list(shard.personas.index) == list(range(len(shard)))


def test_split_into_shards_rejects_empty_shards():
    with pytest.raises(ValueError, match="agents_per_shard must be >= 1, got 0"):
        split_into_shards(personas(10), 0, rounds=1)


def test_agent_ids_are_int64_from_the_personas():
    shard = AgentShard(0, personas(3, start=40).iloc[::-1], rounds=1)
    assert shard.agent_ids.dtype == np.int64
    assert shard.agent_ids.tolist() == [42, 41, 40]


def test_round_context_previous_target():
    game = GameSpec()
    assert RoundContext(1, 0, game, 10).previous_target is None
    assert RoundContext(3, 0, game, 10, (40.0, 25.5)).previous_target == 25.5


def test_remember_keeps_only_ok_guesses():
    shard = AgentShard(0, personas(4), rounds=3)
    table = decisions_table(
        shard.agent_ids, 1, np.array([10.0, 99.0, 30.0, 40.0]), ["ok", "out_of_range", "ok", "ok"]
    )
    shard.remember(1, table)
    np.testing.assert_array_equal(shard.guesses[:, 0], [10.0, np.nan, 30.0, 40.0])
    assert np.isnan(shard.guesses[:, 1:]).all()
    shard.remember(2, decisions_table(shard.agent_ids, 2, np.full(4, 5.0), "ok"))
    np.testing.assert_array_equal(shard.guesses[:, 1], [5.0] * 4)
    np.testing.assert_array_equal(shard.guesses[:, 0], [10.0, np.nan, 30.0, 40.0])


def test_forget_after_drops_later_rounds_only():
    shard = AgentShard(0, personas(2), rounds=3)
    for r in (1, 2, 3):
        shard.remember(r, decisions_table(shard.agent_ids, r, np.full(2, float(r)), "ok"))
    shard.forget_after(1)
    np.testing.assert_array_equal(shard.guesses[:, 0], [1.0, 1.0])
    assert np.isnan(shard.guesses[:, 1:]).all()
    shard.forget_after(0)
    assert np.isnan(shard.guesses).all()


def test_decisions_table_has_the_bundle_layout_and_broadcasts_scalars():
    ids = np.array([5, 6, 7])
    table = decisions_table(ids, 4, [1.0, 2.5, 3.0], "ok", latency_s=0.25, prompt_tokens=12)
    assert table.schema.equals(RESPONSE_SCHEMA)
    assert table.column("round").to_pylist() == [4, 4, 4]
    assert table.column("status").to_pylist() == ["ok", "ok", "ok"]
    assert table.column("latency_s").to_pylist() == [0.25, 0.25, 0.25]
    assert table.column("prompt_tokens").to_pylist() == [12, 12, 12]
    assert table.column("completion_tokens").to_pylist() == [0, 0, 0]
    assert table.column("raw").null_count == 3
    assert table.column("extracted").to_pylist() == [False, False, False]
    assert table.column("agent_id").to_pylist() == [5, 6, 7]
    assert table.column("guess").to_pylist() == [1.0, 2.5, 3.0]
    # the writer takes it as it is
    assert response_table(table, 4).equals(table)


def test_decisions_table_takes_per_agent_arrays():
    table = decisions_table(
        np.array([1, 2]),
        1,
        np.array([np.nan, 7.0]),
        np.array(["model_error", "ok"]),
        raw=["boom", "7"],
        latency_s=np.array([0.5, 0.1]),
        prompt_tokens=np.array([10, 11]),
        completion_tokens=np.array([0, 2]),
        extracted=np.array([False, True]),
    )
    assert table.schema.equals(RESPONSE_SCHEMA)
    assert table.column("status").to_pylist() == ["model_error", "ok"]
    assert table.column("raw").to_pylist() == ["boom", "7"]
    assert table.column("latency_s").to_pylist() == [0.5, 0.1]
    assert table.column("completion_tokens").to_pylist() == [0, 2]
    assert table.column("extracted").to_pylist() == [False, True]
    assert np.isnan(table.column("guess").to_pylist()[0])


def test_decisions_table_of_an_empty_shard():
    table = decisions_table(np.array([], dtype=np.int64), 1, np.array([]), "ok")
    assert table.num_rows == 0
    assert table.schema.equals(RESPONSE_SCHEMA)
    assert isinstance(table, pa.Table)
