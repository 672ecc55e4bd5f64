"""LLM-written personas: the paper's meta-prompt pipeline, one floor above `llm` and `population`.

Each sampled agent gets its own request: a meta-prompt listing its attributes asks the model for
one individual (name, gender, age, a 2-3 sentence personality) written between `<persona>` and
`</persona>`. All requests of an attempt go to the model in ONE batched `generate` call; answers
without a usable persona are retried (only those) with a fresh seed, and agents still without one
after `max_attempts` keep the template text and are flagged `persona_source == "template"`.

This module stays free of network code: the model is any object with the `ChatModel` protocol
(`workbench.llm.base`), e.g. a `CachedModel`, so an identical rerun costs no model calls. Storing
the result is `workbench.population.persona_sets` (data, no model).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from workbench.config import ModelSpec, PopulationSpec
from workbench.errors import ConfigError, ContractError
from workbench.llm.base import ChatRequest, OutputConstraint, SamplingParams
from workbench.llm.chat_model import ChatModel
from workbench.population.personas import persona_texts

__all__ = [
    "BEGIN_TAG",
    "DEFAULT_PARAMS",
    "END_TAG",
    "TAGGED",
    "generate_personas",
    "meta_prompt",
    "parse_persona",
    "persona_seed",
]

BEGIN_TAG = "<persona>"
END_TAG = "</persona>"
MIN_CHARS = 20
MAX_CHARS = 1200
DEFAULT_PARAMS = SamplingParams(temperature=0.8, top_p=0.95, max_tokens=200)


def persona_model_spec(
    model: str,
    model_name: str | None = None,
    *,
    cache: str | None = None,
    names: tuple[str, str] = ("--model", "--model-name"),
) -> ModelSpec:
    """The model personas are written with: 'embedded', or an OpenAI-compatible URL serving
    `model_name`, in free text (160 tokens at temperature 0.8). `names` are how the caller's
    user gave the two (`workbench personas generate`'s options, the page's fields)."""
    common: dict[str, Any] = {
        "max_tokens": 160,
        "temperature": 0.8,
        "constrained": False,
        "cache": cache,
    }
    model = model.strip()
    if model == "embedded":
        return ModelSpec(kind="embedded", **common)
    if model.startswith(("http://", "https://")):
        if not model_name:
            raise ConfigError(f"{names[1]}: name the model the server at {model} serves")
        return ModelSpec(kind="openai", base_urls=[model], name=model_name, **common)
    raise ConfigError(f"{names[0]}: use 'embedded' or an http(s):// URL, got {model!r}")


_SYSTEM = (
    "You write short, realistic character profiles of individual people for a social "
    "simulation. You always follow the requested format exactly."
)


def meta_prompt(attributes: dict[str, str], spec: PopulationSpec) -> tuple[dict, dict]:
    """System and user message asking for ONE persona consistent with `attributes`.

    Attributes are listed in the spec's dimension order (any extra keys after them), so the same
    agent always yields the same prompt and a response cache can hit.
    """
    order = [d.name for d in spec.dimensions if d.name in attributes]
    order += [k for k in attributes if k not in order]
    listed = "\n".join(f"- {name.replace('_', ' ')}: {attributes[name]}" for name in order)
    user = (
        "Invent one individual person who has these attributes:\n"
        f"{listed}\n\n"
        "Give the person a name, a gender and an age, and describe their personality in 2 to 3 "
        "sentences. Everything you write must agree with the attributes above.\n"
        f"Write the persona between the tags {BEGIN_TAG} and {END_TAG}, like this:\n"
        f"{BEGIN_TAG}Name: ... Gender: ... Age: ... Personality: ...{END_TAG}"
    )
    return {"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}


def parse_persona(text: str | None) -> str | None:
    """The stripped text between the first `<persona>` and the next `</persona>` (tags matched
    case-insensitively); None when a tag is missing or the text is shorter than 20 or longer
    than 1200 characters."""
    if not text:
        return None
    lowered = text.lower()
    start = lowered.find(BEGIN_TAG)
    if start < 0:
        return None
    start += len(BEGIN_TAG)
    end = lowered.find(END_TAG, start)
    if end < 0:
        return None
    body = text[start:end].strip()
    if not MIN_CHARS <= len(body) <= MAX_CHARS:
        return None
    return body


def persona_seed(seed: int, agent_id: int, attempt: int) -> int:
    """A 31-bit request seed derived from (seed, agent_id, attempt); attempts count from 1."""
    state = np.random.SeedSequence([int(seed), int(agent_id), int(attempt)]).generate_state(1)
    return int(state[0]) & 0x7FFFFFFF


TAGGED = OutputConstraint(grammar='root ::= "<persona>" [^<]{20,500} "</persona>"\n')
"""A GBNF grammar that makes the answer one persona between the begin and end tags."""


async def generate_personas(
    personas: pd.DataFrame,
    spec: PopulationSpec,
    model: ChatModel,
    *,
    seed: int = 0,
    params: SamplingParams | None = None,
    max_attempts: int = 3,
    constrained: bool = True,
) -> pd.DataFrame:
    """A copy of `personas` with columns persona, persona_source ("llm"/"template") and
    persona_attempts, one LLM request per agent, one batched `generate` call per attempt.

    `constrained` asks the model for the tags by a grammar where it supports one (llama.cpp):
    small models otherwise rarely write them."""
    if max_attempts < 1:
        raise ConfigError(f"max_attempts must be >= 1, got {max_attempts}")
    if seed < 0:
        raise ConfigError(f"seed must be >= 0, got {seed}")
    names = [d.name for d in spec.dimensions]
    missing = [name for name in names if name not in personas.columns]
    if missing:
        raise ConfigError(
            f"personas have no column for dimensions {missing}; columns: {list(personas)}"
        )
    params = params or DEFAULT_PARAMS
    n = len(personas)
    if "agent_id" in personas.columns:
        agent_ids = personas["agent_id"].to_numpy(dtype=np.int64)
    else:
        agent_ids = np.arange(n, dtype=np.int64)
    columns = {name: personas[name].astype(str).to_numpy() for name in names}
    messages = [
        meta_prompt({name: str(columns[name][i]) for name in names}, spec) for i in range(n)
    ]

    texts: list[str | None] = [None] * n
    attempts = np.zeros(n, dtype=np.int64)
    pending = list(range(n))
    for attempt in range(1, max_attempts + 1):
        if not pending:
            break
        requests = [
            ChatRequest(
                messages=messages[i],
                seed=persona_seed(seed, int(agent_ids[i]), attempt),
                agent_id=int(agent_ids[i]),
                constraint=TAGGED if constrained else None,
            )
            for i in pending
        ]
        results = await model.generate(requests, params)
        if len(results) != len(requests):
            raise ContractError(
                f"model returned {len(results)} results for {len(requests)} requests"
            )
        still = []
        for i, result in zip(pending, results, strict=True):
            attempts[i] = attempt
            parsed = None if result.error is not None else parse_persona(result.text)
            if parsed is None:
                still.append(i)
            else:
                texts[i] = parsed
        pending = still

    out = personas.copy()
    source = np.array(["llm" if t is not None else "template" for t in texts], dtype=object)
    if pending:
        fallback = persona_texts(spec, personas).astype(str).to_numpy()
        for i in pending:
            texts[i] = fallback[i]
    out["persona"] = pd.Series(texts, index=personas.index)
    out["persona_source"] = pd.Series(list(source), index=personas.index)
    out["persona_attempts"] = pd.Series(attempts, index=personas.index, dtype=np.int64)
    return out
