"""Reference numbers to set runs beside: human subjects' guesses, the paper's, other LLMs'.

Copied from the project's reference tables: Camerer, Ho & Chong 2004, QJE 119(3), Table II
(CHC); Nagel 1995, AER 85(5); Bosch-Domenech et al. 2002, AER 92(5); Pan et al. 2024,
arXiv 2407.17789; and the dummy benchmark measured on this project's kind of machine for
AgentScope, Ray and plain asyncio (`peer_benchmarks`). `llm_baselines` adds published results
of LLMs playing the game: the paper's and GAMA-Bench's (Huang et al. 2025, computed from the
authors' published raw results, see `GAMA_DATA`). Every row names its source; each accessor
returns a fresh DataFrame. They are data for overlays and expected ranges, not targets to tune
a run to.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pandas as pd

PAPER = "Pan et al. 2024, arXiv 2407.17789"
"""Very Large-Scale Multi-Agent Simulation in AgentScope, the paper the workbench reproduces."""

CHC = "Camerer Ho Chong 2004 Table II"
GAMA = "Huang et al. 2025, ICLR (GAMA-Bench, arXiv 2403.11807)"
"""Competing Large Language Models in Multi-Agent Gaming Environments: its "guess 2/3 of the
average" game, 10 LLM players of one model, 20 rounds, a direct JSON answer (no reasoning)."""
GAMA_DATA = (
    "computed from the authors' raw results: github.com/CUHK-ARISE/GAMABench, "
    "raw_results/guessing_game/<model>_guessing_game_v1_{1..5}.json at commit 41ebccf "
    "(5 games of 10 players: each round's 50 guesses)"
)
"""Where `llm_baselines`' GAMA-Bench means come from: the paper draws them as figures; these are
the same runs' guesses (each file's round_records), their mean and sd per round."""
PEERS = (
    "the paper's dummy benchmark (1 s wait, then a random number) measured on a 2-core, "
    "24 GiB machine of the project's kind (reference peer_benchmarks.csv)"
)
"""Where `peer_benchmarks` comes from: not the paper's hardware, the project's."""
_NAN = math.nan

HUMAN_COLUMNS = ("group", "p", "p_text", "offset", "mean", "sd", "n", "note", "source")
"""Columns of `human_baselines`: target = offset + p * mean; sd and n nan where unreported."""

# fmt: off
_HUMAN: tuple[tuple, ...] = (
    # group, p, offset, mean, sd, n, note, source
    ("Caltech Board", "2/3", 0, 42.6, 23.4, 73, "", CHC),
    ("CEOs", "2/3", 0, 37.9, 18.8, 20, "", CHC),
    ("German students", "2/3", 0, 37.2, 20.0, 66, "", "Nagel 1995 via CHC 2004"),
    ("80-year-olds", "2/3", 0, 37.0, 17.5, 33, "", CHC),
    ("US high-school students", "2/3", 0, 32.5, 18.6, 52, "", CHC),
    ("Economics PhDs", "2/3", 0, 27.4, 18.7, 16, "", CHC),
    ("Portfolio managers", "2/3", 0, 24.3, 16.1, 26, "", CHC),
    ("Caltech students", "2/3", 0, 23.0, 11.1, 42, "", CHC),
    ("Newspaper entrants", "2/3", 0, 23.0, 20.2, 7884, "mode 1",
     "Bosch-Domenech et al. 2002 via CHC 2004"),
    ("Game theorists", "2/3", 0, 19.1, 21.8, 136, "mode 0", CHC),
    ("Students (p=1/2)", "1/2", 0, 26.7, 19.9, 48, "", "Nagel 1998 via CHC 2004"),
    ("Students (p=0.7)", "0.7", 0, 38.9, _NAN, _NAN, "",
     "Ho Camerer Weigelt 1998 via CHC 2004"),
    # target 0.7 * (mean + 18) = 12.6 + 0.7 * mean
    ("Interior equilibrium 0.7*(mean+18) (equilibrium 42)", "0.7", 12.6, 49.5, _NAN, _NAN, "",
     "Camerer Ho Chong 2004"),
)

_PROMPT_MEANS: dict[str, tuple[float, float, float, float]] = {
    # first-round mean guess with prompts 1, 2, 3, 4 (paper Fig. 17)
    "Llama3-8B": (55.89, 49.85, 47.84, 47.09),
    "Llama3-70B": (50.30, 34.18, 36.11, 17.15),
    "MistralAI-8x7B": (36.63, 37.57, 35.19, 24.42),
    "MistralAI-8x22B": (31.69, 19.89, 7.62, 7.94),
    "Qwen2-7B": (66.96, 32.57, 26.45, 28.38),
    "Qwen2-72B": (50.56, 19.15, 8.15, 8.85),
}

_MIXED = "all (500 each Llama3-70B/MistralAI-8x22B/Qwen2-72B)"
_ROUNDS: tuple[tuple, ...] = (
    # experiment, model, prompt (0: not stated), round, statistic, value
    *(("multi_round", "Qwen2-72B", prompt, 3, "mean", value)
      for prompt, value in zip((1, 2, 3, 4), (35.30, 6.11, 1.55, 1.69), strict=True)),
    *(("multi_round", "Qwen2-72B", prompt, 5, "mean", value)
      for prompt, value in zip((1, 2, 3, 4), (25.16, 2.02, 0.14, 0.15), strict=True)),
    *(("mixed_population", _MIXED, 0, round_, "winning_number", value)
      for round_, value in enumerate((15.90, 10.35, 6.16, 3.67, 2.18), start=1)),
    *(("mixed_population", model, 0, round_ + 1, "mean", values[round_])
      for round_ in range(5)
      for model, values in {
          "Llama3-70B": (32.91, 17.58, 9.46, 5.30, 3.01),
          "MistralAI-8x22B": (19.75, 15.12, 9.71, 6.06, 3.79),
          "Qwen2-72B": (18.83, 13.85, 8.55, 5.13, 2.99),
      }.items()),
)

_FINDINGS: tuple[tuple[str, str, str, str, str], ...] = (
    # topic, setting, statistic, value as written, note
    ("prompt", "Qwen2-72B prompt 1", "winning_number", "33.70", "first round"),
    ("prompt", "Qwen2-72B prompt 2", "winning_number", "12.76", "first round"),
    ("prompt", "MistralAI-8x22B prompt 2", "share_near_zero", "0.30",
     "more than 30% report about 0"),
    ("ratio", "ratio 51/100", "winning_number", "11.85", ""),
    ("ratio", "ratio 51/100 with note that it is a variant of the 2/3 game", "winning_number",
     "6.46", ""),
    ("ratio", "ratio 1/2", "winning_number", "6.21", ""),
    ("variant", "target 5 + 1/2 mean", "equilibrium", "10", "agents converge near 10 over rounds"),
    ("temperature", "0.05", "mean", "15.42", "1000 agents Qwen2-72B prompt 2"),
    ("temperature", "0.25", "mean", "15.27", ""),
    ("temperature", "0.5", "mean", "18.54", ""),
    ("temperature", "1.0", "mean", "16.72", ""),
    ("temperature", "0.05", "std", "6.50", ""),
    ("temperature", "0.25", "std", "7.22", ""),
    ("temperature", "0.5", "std", "7.74", ""),
    ("temperature", "1.0", "std", "8.20", ""),
    ("tokens", "Llama3-8B prompt 1..4", "mean_response_tokens", "1.00/155.46/260.80/190.42", ""),
    ("tokens", "Llama3-70B prompt 1..4", "mean_response_tokens", "1.04/248.69/381.36/408.40", ""),
    ("education", "MistralAI-8x22B", "largest_group_gap", "3.49",
     "32.73 vs 29.24; means fall as education rises"),
    ("education", "Llama3-70B", "largest_group_gap", "5.72", ""),
    ("education", "Qwen2-72B", "largest_group_gap", "8.24", ""),
    ("occupation", "all models", "ordering", "",
     "game theory professors and economists lowest; artists writers athletes higher"),
    ("scalability", "1M agents Llama3-8B prompt 1 on 4 nodes x 8 A100", "minutes", "12", ""),
    ("scalability", "1M agents Llama3-8B prompt 2 on 4 nodes x 8 A100", "minutes", "85", ""),
    ("scalability", "10k agents Llama3-70B prompt 2 on 1 -> 4 nodes", "minutes", "22 -> 5.6", ""),
    ("scalability", "dummy 1M agents (1 s wait each) on 4 nodes x 64 cores", "seconds", "40", ""),
    ("scalability", "dummy 1M agents serial", "days", "12", ""),
    ("scalability", "dummy 1M agents python asyncio", "hours", "8.6", ""),
)

_PEERS: tuple[tuple, ...] = (
    # system, agents, configuration, round seconds (nan: none), peak MiB, note
    ("AgentScope 0.1.1 distributed", 100,
     "4 agent servers + 1 env server; 32 threads each (paper defaults)", 1.19, 1013, ""),
    ("AgentScope 0.1.1 distributed", 1_000, "same", 9.5, 1041, ""),
    ("AgentScope 0.1.1 distributed", 10_000, "same", 89.8, 1260, ""),
    ("AgentScope 0.1.1 distributed", 10_000, "same; 1024 threads per server", 20.8, 1410, ""),
    ("AgentScope 0.1.1 distributed", 100_000,
     "8 agent servers + 1 env server; 1024 threads per server", 453, 3549, ""),
    ("Ray one actor per agent", 100, "1 actor per agent", 1.11, 4500,
     "actor creation alone 29.6 s"),
    ("Ray one actor per agent", 1_000, "1 actor per agent", _NAN, 18800,
     "never became ready in 420 s"),
    ("plain asyncio", 10_000, "one process; gather over one coroutine per agent", 1.11, 39, ""),
    ("plain asyncio", 100_000, "same", 2.6, 187, ""),
    ("plain asyncio", 1_000_000, "same", 29, 1780, "22.6 to 34 s across runs"),
    ("Ray 2 async actors", 1_000_000, "one coroutine per agent; half the agents per actor", 20,
     2600, "19.5 to 24.7 s"),
)
_GAMA_ROUNDS: dict[str, tuple[tuple[float, float], ...]] = {
    # model (as the files name it): (mean, sd) of the 50 guesses in rounds 1-5
    "gemini-1.0-pro": ((59.82, 12.56), (39.70, 4.48), (29.58, 7.01), (25.50, 6.99), (22.64, 6.73)),
    "gemini-1.5-pro": ((29.24, 8.85), (20.36, 4.62), (13.96, 3.08), (9.66, 2.16), (6.90, 1.66)),
    "gpt-3.5-turbo-0613": ((50.00, 0.00), (65.62, 14.26), (61.72, 9.83), (61.26, 11.31),
                           (63.14, 9.06)),
    "gpt-3.5-turbo-1106": ((50.00, 0.00), (48.04, 7.59), (50.44, 6.54), (41.82, 5.09),
                           (38.26, 6.02)),
    "gpt-4-0125-preview": ((42.10, 12.36), (26.68, 3.74), (19.00, 2.84), (14.86, 2.07),
                           (12.98, 2.57)),
    "gpt-4o": ((30.26, 4.60), (20.04, 2.98), (13.14, 2.23), (10.16, 1.54), (8.42, 1.40)),
    "llama-3.1-405b": ((35.46, 8.04), (24.66, 3.54), (18.18, 1.41), (11.96, 1.67), (8.20, 1.11)),
    "llama-3.1-70b": ((40.74, 8.28), (30.84, 6.37), (23.46, 4.36), (19.26, 4.51), (14.36, 3.75)),
    "llama-3.1-8b": ((46.28, 11.66), (32.70, 5.49), (30.12, 13.11), (20.62, 7.50), (15.54, 7.69)),
    "mixtral-8x22b": ((33.34, 6.82), (25.96, 5.45), (22.90, 8.17), (20.02, 5.28), (17.80, 5.33)),
    "mixtral-8x7b": ((40.02, 9.18), (30.80, 10.16), (21.68, 2.45), (16.82, 2.21), (13.50, 1.61)),
    "qwen2-72b": ((40.06, 12.86), (24.22, 5.23), (16.64, 3.40), (12.16, 2.72), (8.84, 2.24)),
}
# fmt: on

PROMPT_MEAN_COLUMNS = ("model", "prompt", "first_round_mean", "source")
"""Columns of `paper_prompt_means`: prompts 1 direct, 2 think step by step, 3 + all players
rational, 4 + guess each other's strategies."""

ROUND_COLUMNS = ("experiment", "model", "prompt", "round", "statistic", "value", "source")
"""Columns of `paper_rounds`: multi-round means and winning numbers (prompt 0: not stated)."""

FINDING_COLUMNS = ("topic", "setting", "statistic", "value", "value_text", "note", "source")
"""Columns of `paper_findings`: value is nan where the paper gives a list, a change or nothing
("1.00/155.46/...", "22 -> 5.6"); value_text keeps it as written."""


LLM_COLUMNS = (
    "source",
    "model",
    "p",
    "p_text",
    "prompt",
    "direct",
    "round",
    "mean",
    "sd",
    "n",
    "players",
    "note",
)
"""Columns of `llm_baselines`: `prompt` as the source words it (the paper's prompts 1-4: 1 direct,
2 step by step, 3 + all players rational, 4 + guess others' strategies); `direct` True where the
model answered a number with no reasoning text (the setting a constrained run plays), False
where it reasoned first, NA where the source does not say; `n` the guesses the mean is over,
`players` the players of one game; sd, n and players nan where unreported."""

_PROMPTS = {1: "1 direct", 2: "2 step by step", 3: "3 + all rational", 4: "4 + others' strategies"}
"""The paper's prompts 1-4 as `llm_baselines` names them."""

PEER_COLUMNS = (
    "system",
    "agents",
    "configuration",
    "round_seconds",
    "peak_memory_mib",
    "note",
    "source",
)
"""Columns of `peer_benchmarks`: round_seconds nan where the run never reached a round."""


def _number(text: str) -> float:
    """A finding's value as a number, nan when it is a list, a change or empty."""
    try:
        return float(text)
    except ValueError:
        return _NAN


def human_baselines() -> pd.DataFrame:
    """First-round guesses of human subjects in the p-beauty contest, one row per group."""
    rows = [
        (group, float(Fraction(p)), p, float(offset), mean, sd, n, note, source)
        for group, p, offset, mean, sd, n, note, source in _HUMAN
    ]
    frame = pd.DataFrame(rows, columns=list(HUMAN_COLUMNS))
    return frame.astype({"sd": "float64", "n": "float64"})


def paper_prompt_means() -> pd.DataFrame:
    """The paper's first-round mean guess per model and prompt (its Fig. 17)."""
    rows = [
        (model, prompt, mean, f"{PAPER}, Fig. 17")
        for model, means in _PROMPT_MEANS.items()
        for prompt, mean in enumerate(means, start=1)
    ]
    return pd.DataFrame(rows, columns=list(PROMPT_MEAN_COLUMNS))


def paper_rounds() -> pd.DataFrame:
    """The paper's multi-round means and winning numbers, per experiment, model and round."""
    return pd.DataFrame([(*row, PAPER) for row in _ROUNDS], columns=list(ROUND_COLUMNS))


def paper_findings() -> pd.DataFrame:
    """The paper's other single figures (ratios, temperature, tokens, education, scale)."""
    rows = [(t, s, stat, _number(v), v, note, PAPER) for t, s, stat, v, note in _FINDINGS]
    return pd.DataFrame(rows, columns=list(FINDING_COLUMNS))


def llm_baselines() -> pd.DataFrame:
    """Published means of LLMs playing the 2/3 beauty contest, per source, model, prompt and
    round: the paper's (Fig. 17, its multi-round and mixed-population means) and GAMA-Bench's
    (rounds 1-5 of 12 models). What our LLM agents' means are set beside, as the humans' are."""
    mixed = "mixed population: 500 each of Llama3-70B, MistralAI-8x22B, Qwen2-72B in one game"
    rows = [
        # source, model, prompt, direct, round, mean, sd, n, players, note
        (f"{PAPER}, Fig. 17", model, _PROMPTS[k], k == 1, 1, mean, _NAN, _NAN, _NAN, "")
        for model, means in _PROMPT_MEANS.items()
        for k, mean in enumerate(means, start=1)
    ]
    for experiment, model, k, round_, statistic, value in _ROUNDS:
        if statistic != "mean":
            continue  # the winning numbers are 2/3 of these means
        if experiment == "multi_round":
            rows.append(
                (PAPER, model, _PROMPTS[k], k == 1, round_, value, _NAN, _NAN, _NAN,
                 "multi-round run")
            )  # fmt: skip
        else:
            rows.append((PAPER, model, "not stated", None, round_, value, _NAN, 500, 1500, mixed))
    rows += [
        (GAMA, model, "direct (JSON answer)", True, round_, mean, sd, 50, 10,
         f"10 players of one model, 20 rounds; {GAMA_DATA}")
        for model, by_round in _GAMA_ROUNDS.items()
        for round_, (mean, sd) in enumerate(by_round, start=1)
    ]  # fmt: skip
    frame = pd.DataFrame(
        [(source, model, 2 / 3, "2/3", *rest) for source, model, *rest in rows],
        columns=list(LLM_COLUMNS),
    )
    kinds = {"direct": "boolean", "sd": "float64", "n": "float64", "players": "float64"}
    return frame.astype(kinds)


def peer_benchmarks() -> pd.DataFrame:
    """The paper's dummy benchmark run with AgentScope 0.1.1, Ray (one actor per agent, or two
    async actors) and plain asyncio on a 2-core machine: reference times for the scale plot."""
    frame = pd.DataFrame([(*row, PEERS) for row in _PEERS], columns=list(PEER_COLUMNS))
    return frame.astype({"round_seconds": "float64", "peak_memory_mib": "float64"})
