"""The reference numbers: every row has its source, and the tables hold what they say."""

from __future__ import annotations

import pytest

from workbench.viz.baselines import (
    CHC,
    FINDING_COLUMNS,
    GAMA,
    HUMAN_COLUMNS,
    LLM_COLUMNS,
    PAPER,
    PEER_COLUMNS,
    PEERS,
    PROMPT_MEAN_COLUMNS,
    ROUND_COLUMNS,
    human_baselines,
    llm_baselines,
    paper_findings,
    paper_prompt_means,
    paper_rounds,
    peer_benchmarks,
)

TABLES = [
    (human_baselines, HUMAN_COLUMNS, 13),
    (llm_baselines, LLM_COLUMNS, 107),
    (paper_prompt_means, PROMPT_MEAN_COLUMNS, 24),
    (paper_rounds, ROUND_COLUMNS, 28),
    (paper_findings, FINDING_COLUMNS, 27),
    (peer_benchmarks, PEER_COLUMNS, 11),
]


@pytest.mark.parametrize(("table", "columns", "rows"), TABLES)
def test_every_row_names_its_source(table, columns, rows: int) -> None:
    frame = table()
    assert tuple(frame.columns) == columns and len(frame) == rows
    assert frame["source"].str.len().gt(10).all()


def test_human_baselines() -> None:
    humans = human_baselines().set_index("group")
    assert humans.loc["Caltech Board", ["p", "mean", "sd", "n"]].tolist() == pytest.approx(
        [2 / 3, 42.6, 23.4, 73]
    )
    assert humans.loc["Game theorists", "source"] == CHC
    interior = humans.loc[humans.index.str.startswith("Interior")].iloc[0]
    assert interior["offset"] + interior["p"] * 60 == pytest.approx(0.7 * (60 + 18))
    mine = human_baselines()
    mine.loc[0, "mean"] = -1  # a fresh frame each call: changing one leaves the next alone
    assert human_baselines().loc[0, "mean"] == 42.6


def test_paper_tables() -> None:
    means = paper_prompt_means().set_index(["model", "prompt"])["first_round_mean"]
    assert means["Qwen2-72B", 3] == 8.15 and means["Llama3-8B", 1] == 55.89
    rounds = paper_rounds()
    mixed = rounds[rounds["statistic"] == "winning_number"]
    assert mixed["value"].tolist() == [15.90, 10.35, 6.16, 3.67, 2.18]
    findings = paper_findings()
    assert (findings["source"] == PAPER).all()
    tokens = findings[findings["topic"] == "tokens"].iloc[0]
    assert (
        tokens["value_text"] == "1.00/155.46/260.80/190.42" and tokens["value"] != tokens["value"]
    )


def test_peer_benchmarks() -> None:
    peers = peer_benchmarks()
    assert (peers["source"] == PEERS).all()
    agentscope = peers[peers["system"] == "AgentScope 0.1.1 distributed"]
    assert agentscope.set_index("agents")["round_seconds"].loc[[1_000, 100_000]].tolist() == [
        9.5,
        453.0,
    ]
    never = peers[(peers["system"] == "Ray one actor per agent") & (peers["agents"] == 1_000)]
    assert never["round_seconds"].isna().all() and never["peak_memory_mib"].tolist() == [18800]
    asyncio_1m = peers[(peers["system"] == "plain asyncio") & (peers["agents"] == 1_000_000)]
    assert asyncio_1m["round_seconds"].tolist() == [29.0]


def test_llm_baselines() -> None:
    llms = llm_baselines()
    # guesses of the 0-100 game, p = 2/3, rounds 1-5, sd and n only where they can be
    assert llms["mean"].between(0, 100).all() and (llms["p_text"] == "2/3").all()
    assert llms["round"].between(1, 5).all() and (llms["sd"].dropna() >= 0).all()
    gama = llms[llms["source"] == GAMA].set_index(["model", "round"])
    assert len(gama) == 12 * 5 and (gama["n"] == 50).all() and (gama["players"] == 10).all()
    assert gama.loc[("gpt-4o", 1), ["mean", "sd"]].tolist() == [30.26, 4.6]
    assert gama.loc[("gpt-3.5-turbo-0613", 1), ["mean", "sd"]].tolist() == [50.0, 0.0]
    assert gama["direct"].all() and gama["note"].str.contains("GAMABench").all()
    # the paper's rows are its own tables' numbers, not copies that could drift
    fig17 = llms[llms["source"] == f"{PAPER}, Fig. 17"]
    means = paper_prompt_means()
    assert sorted(fig17["mean"]) == sorted(means["first_round_mean"])
    assert fig17.loc[fig17["direct"].astype(bool), "prompt"].eq("1 direct").all()
    paper = llms[llms["source"] == PAPER]
    rounds = paper_rounds()
    assert sorted(paper["mean"]) == sorted(rounds.loc[rounds["statistic"] == "mean", "value"])
    assert paper.loc[paper["prompt"] == "not stated", "direct"].isna().all()
    mine = llm_baselines()
    mine.loc[0, "mean"] = -1  # a fresh frame each call
    assert llm_baselines().loc[0, "mean"] == llms.loc[0, "mean"]
