"""LLM persona writing (`agents.persona_writer`): meta-prompt, tag parsing, retries, fallback;
persona sets on disk (`population.persona_sets`); where each lives; the CLI."""

from __future__ import annotations

import asyncio
import importlib
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from workbench.agents.persona_writer import (
    generate_personas,
    meta_prompt,
    parse_persona,
    persona_seed,
)
from workbench.config import PopulationSpec
from workbench.errors import ConfigError
from workbench.llm.base import ChatResult, SamplingParams
from workbench.llm.cache import CachedModel, ResponseCache
from workbench.population import sample_population
from workbench.population.persona_sets import load_persona_set, save_persona_set

ROOT = Path(__file__).resolve().parents[2]
EDUCATION = ROOT / "personas" / "paper-education.yaml"
GOOD = "Name: Ada Park. Gender: female. Age: 34. Personality: curious, careful and kind."


class FakeModel:
    """Answers by agent id: `flaky` agents fail their first attempt, `broken` ones always."""

    def __init__(self, flaky: set[int] = frozenset(), broken: set[int] = frozenset()) -> None:
        self.flaky, self.broken = set(flaky), set(broken)
        self.calls: list[list] = []
        self.seen: dict[int, int] = {}

    @property
    def identity(self) -> dict:
        return {"engine": "fake", "name": "fake-persona"}

    async def generate(self, requests, params):
        self.calls.append(list(requests))
        results = []
        for request in requests:
            agent = request.agent_id
            self.seen[agent] = self.seen.get(agent, 0) + 1
            if agent in self.broken or (agent in self.flaky and self.seen[agent] == 1):
                results.append(ChatResult("I am a person without tags, sorry."))
            else:
                results.append(ChatResult(f"Sure!\n<persona>{GOOD} #{agent}</persona>\nBye."))
        return results


def test_parse_persona_tags():
    assert parse_persona(f"blah <persona>  {GOOD}\n</persona> tail") == GOOD
    assert parse_persona(f"<PERSONA>{GOOD}</Persona>") == GOOD
    assert parse_persona(f"<persona>{GOOD}") is None  # no end tag
    assert parse_persona(f"{GOOD}</persona>") is None  # no begin tag
    assert parse_persona(GOOD) is None
    assert parse_persona(None) is None
    assert parse_persona("") is None
    assert parse_persona("<persona>   </persona>") is None
    assert parse_persona("<persona>too short</persona>") is None
    assert parse_persona("<persona>" + "x" * 1201 + "</persona>") is None
    assert parse_persona("<persona>" + "x" * 1200 + "</persona>") == "x" * 1200
    # the first pair wins
    assert parse_persona(f"<persona>{GOOD}</persona><persona>{GOOD} 2</persona>") == GOOD


def test_meta_prompt_lists_attributes_and_tags(education_spec):
    attributes = {"education": "doctoral degree", "gender": "female"}
    system, user = meta_prompt(attributes, education_spec)
    assert system["role"] == "system" and user["role"] == "user"
    text = system["content"] + user["content"]
    for value in attributes.values():
        assert value in user["content"]
    assert "<persona>" in text and "</persona>" in text
    assert user["content"].index("gender") < user["content"].index("education")  # spec order
    assert meta_prompt(attributes, education_spec) == (system, user)


def test_persona_seed_differs_by_agent_and_attempt():
    seeds = {persona_seed(0, a, t) for a in range(20) for t in (1, 2, 3)}
    assert len(seeds) == 60
    assert persona_seed(5, 3, 1) == persona_seed(5, 3, 1) != persona_seed(6, 3, 1)
    assert all(0 <= s < 2**31 for s in seeds)


def test_generate_retries_malformed_and_falls_back(education_spec):
    frame = sample_population(education_spec, 8, seed=1)
    model = FakeModel(flaky={1, 4}, broken={6})
    out = asyncio.run(generate_personas(frame, education_spec, model, seed=3, max_attempts=3))

    # one batched call per attempt: all 8, then the 3 malformed, then only the broken one
    assert [len(c) for c in model.calls] == [8, 3, 1]
    assert [r.agent_id for r in model.calls[1]] == [1, 4, 6]
    assert model.calls[0][1].seed != model.calls[1][0].seed  # a retry samples anew
    by_id = out.set_index("agent_id")
    assert by_id.loc[1, "persona_source"] == "llm" and by_id.loc[1, "persona_attempts"] == 2
    assert by_id.loc[4, "persona_attempts"] == 2
    assert by_id.loc[0, "persona_attempts"] == 1
    assert by_id.loc[1, "persona"] == f"{GOOD} #1"
    assert by_id.loc[6, "persona_source"] == "template"
    assert by_id.loc[6, "persona_attempts"] == 3
    assert by_id.loc[6, "persona"] == str(frame.loc[6, "persona"])  # the template text
    assert out["persona"].map(bool).all()
    assert (out["persona_source"] == "llm").sum() == 7
    # the input is untouched, the attribute columns are kept
    assert "persona_source" not in frame.columns
    pd.testing.assert_frame_equal(out[["agent_id", "gender", "education"]], frame.iloc[:, :3])


def test_generate_is_reproducible_in_seeds(education_spec):
    frame = sample_population(education_spec, 4, seed=0)
    a, b = FakeModel(), FakeModel()
    asyncio.run(generate_personas(frame, education_spec, a, seed=9))
    asyncio.run(generate_personas(frame, education_spec, b, seed=9))
    assert [r.seed for r in a.calls[0]] == [r.seed for r in b.calls[0]]
    assert [r.messages for r in a.calls[0]] == [r.messages for r in b.calls[0]]


def test_generate_rejects_missing_dimension(education_spec):
    frame = sample_population(education_spec, 4, seed=0).drop(columns=["education"])
    with pytest.raises(ConfigError, match="education"):
        asyncio.run(generate_personas(frame, education_spec, FakeModel()))


def test_cached_model_second_generation_makes_no_calls(education_spec, tmp_path):
    frame = sample_population(education_spec, 6, seed=2)
    inner = FakeModel(flaky={2})
    cached = CachedModel(inner, ResponseCache(tmp_path / "cache.sqlite"))
    first = asyncio.run(generate_personas(frame, education_spec, cached, seed=1))
    n_calls = len(inner.calls)
    assert cached.calls == 7  # 6 agents + 1 retry
    second = asyncio.run(generate_personas(frame, education_spec, cached, seed=1))
    assert len(inner.calls) == n_calls and cached.calls == 7
    pd.testing.assert_frame_equal(first, second)


def test_save_load_round_trip(education_spec, tmp_path):
    frame = asyncio.run(
        generate_personas(
            sample_population(education_spec, 5, seed=0), education_spec, FakeModel(broken={0})
        )
    )
    path = save_persona_set(
        frame, education_spec, {"engine": "fake", "name": "x"}, tmp_path / "p.parquet"
    )
    assert path.is_file() and not list(tmp_path.glob(".*tmp"))
    loaded, meta = load_persona_set(path)
    pd.testing.assert_frame_equal(loaded, frame)
    assert PopulationSpec.model_validate_json(meta["spec"]) == education_spec
    assert meta["model"] == {"engine": "fake", "name": "x"}
    assert meta["n"] == 5 and meta["created_at"]
    assert meta["sources"] == {"llm": 4, "template": 1}


def test_persona_writing_has_one_home():
    import workbench.population as population
    import workbench.population.persona_sets as sets

    assert population.save_persona_set is sets.save_persona_set
    assert population.load_persona_set is sets.load_persona_set
    # the writer calls a language model: it lives in agents, and population does not offer it
    assert "generate_personas" not in population.__all__
    with pytest.raises(AttributeError):
        population.generate_personas  # noqa: B018
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("workbench.population.generate")


def test_model_answering_too_few_is_a_contract_error(education_spec):
    from workbench.errors import ContractError

    class Short(FakeModel):
        async def generate(self, requests, params):
            return (await super().generate(requests, params))[:-1]

    with pytest.raises(ContractError, match="3 results for 4 requests"):
        asyncio.run(
            generate_personas(sample_population(education_spec, 4, seed=0), education_spec, Short())
        )


def test_load_missing_or_unreadable(tmp_path):
    with pytest.raises(ConfigError, match="not found"):
        load_persona_set(tmp_path / "nope.parquet")
    bad = tmp_path / "bad.parquet"
    bad.write_text("not parquet")
    with pytest.raises(ConfigError, match="not a readable Parquet"):
        load_persona_set(bad)


@pytest.mark.slow
def test_embedded_model_generates_personas(education_spec):
    from workbench.llm.llamacpp import LlamaCppModel

    frame = sample_population(education_spec, 3, seed=0)
    params = SamplingParams(max_tokens=200, temperature=0.8)
    out = asyncio.run(
        generate_personas(frame, education_spec, LlamaCppModel(), seed=0, params=params)
    )
    assert out["persona"].map(lambda t: isinstance(t, str) and t.strip() != "").all()
    assert set(out["persona_source"]) <= {"llm", "template"}
    # the tag grammar makes even the 135M model answer between the tags
    assert (out["persona_source"] == "llm").sum() >= 2
    generated = out.loc[out["persona_source"] == "llm", "persona"]
    assert not generated.str.contains("<persona>").any()


@pytest.mark.slow
def test_cli_personas_generate(tmp_path):
    out = tmp_path / "p.parquet"
    proc = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "personas", "generate", str(EDUCATION)]
        + ["-n", "3", "--out", str(out)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stderr + proc.stdout
    frame, meta = load_persona_set(out)
    assert len(frame) == 3 and meta["n"] == 3
    assert meta["model"]["engine"] == "llama.cpp"
    assert str(out) in proc.stdout
    print(proc.stdout)
