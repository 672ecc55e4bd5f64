"""The model endpoints of the runs this results folder's launcher started, with their health.

Health is the same `GET <base_url>/models` check a run makes before it starts
(`workbench.llm.servers.served_by`), sent WITHOUT any API key: an endpoint is named by data on
disk (a bundle's or a launch's config), and data never chooses which secret is sent where. An
endpoint that wants a key answers 401/403 and reads "needs key". Only runs started
by `runs.launch` into this folder (their launch records under `.launches`) that are running now
are checked: a bundle planted to read "running" is never asked about.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pandas as pd

from workbench.config import LLMPolicySpec, ModelSpec, RunConfig, load_run_config
from workbench.errors import BundleError, ConfigError, ModelError
from workbench.results.run_statuses import RunStatus
from workbench.runs.cancelling import refusal
from workbench.runs.launch_states import launches
from workbench.runs.launcher import run_coroutine
from workbench.runs.records import CONFIG_FILE

__all__ = ["ENDPOINT_COLUMNS", "HEALTH_TIMEOUT_S", "endpoints"]

ENDPOINT_COLUMNS: tuple[str, ...] = tuple(
    "run_id model kind name base_url health detail latency_ms".split()
)
"""Columns of `endpoints()`: one row per model endpoint of each running launched run."""

HEALTH_TIMEOUT_S = 1.0
"""How long an endpoint's health check waits for `GET <base_url>/models`."""


def _model_specs(config: RunConfig) -> dict[str, ModelSpec]:
    """The run's models by key: `models` when it names several, else its one `model`."""
    return dict(config.models) if config.models else {"model": config.model}


async def _health(base_url: str, spec: ModelSpec, timeout_s: float) -> tuple[str, str, float]:
    """(health, detail, latency in ms) of one endpoint: "ok" with who serves the model, or
    "unreachable"/"error" with the check's own message."""
    import httpx

    from workbench.llm.servers import served_by

    start = time.perf_counter()
    # no headers, no key: never `spec.api_key_env`, whatever the config on disk names
    async with httpx.AsyncClient(timeout=timeout_s, trust_env=False) as client:
        try:
            owner = await served_by(client, base_url.rstrip("/"), spec.name or "", timeout_s)
        except ModelError as exc:
            text, ms = str(exc), round(1000 * (time.perf_counter() - start), 1)
            if "HTTP 401" in text or "HTTP 403" in text:  # alive, and it wants a key
                return "needs key", "answers; wants an API key (a health check sends none)", ms
            return ("unreachable" if "cannot reach" in text else "error"), text, ms
    detail = f"serves {spec.name!r}" + (f" (owned by {owner})" if owner else "")
    return "ok", detail, round(1000 * (time.perf_counter() - start), 1)


def endpoints(results_dir: str | Path, *, timeout_s: float = HEALTH_TIMEOUT_S) -> pd.DataFrame:
    """The model endpoints of the running runs launched into `results_dir` (ENDPOINT_COLUMNS),
    each checked at once with `GET <base_url>/models`, with no API key (at most `timeout_s`):
    health "ok" when it answers and serves the run's model name, "needs key" when it answers
    401/403, "unreachable" or "error" with the reason.

    Models that live inside the run's processes (embedded, replay, in-process vLLM) are listed
    with health "in-process" and no URL.
    """
    rows: list[dict[str, Any]] = []
    checks: list[tuple[dict[str, Any], str, ModelSpec]] = []
    for state in launches(results_dir):
        if state.status is not RunStatus.RUNNING or state.launch is None or refusal(state.launch):
            continue  # only a live run proven to be this folder's launch
        try:
            config = load_run_config(state.launch.folder / CONFIG_FILE)
        except (BundleError, ConfigError, OSError):
            continue
        if not isinstance(config.policy, LLMPolicySpec):
            continue  # a baseline policy asks no model
        for key, spec in _model_specs(config).items():
            base = {"run_id": state.launch.launch_id, "model": key, "kind": spec.kind}
            base["name"] = spec.name or spec.kind
            if spec.kind != "openai":
                rows.append({**base, "base_url": "", "health": "in-process", "detail": ""})
                continue
            for url in spec.base_urls:
                row = {**base, "base_url": url}
                rows.append(row)
                checks.append((row, url, spec))

    async def check_all() -> list[tuple[str, str, float]]:
        return await asyncio.gather(*(_health(u, s, timeout_s) for _, u, s in checks))

    if checks:
        for (row, _, _), (health, detail, ms) in zip(
            checks, run_coroutine(check_all()), strict=True
        ):
            row.update(health=health, detail=detail, latency_ms=ms)
    return pd.DataFrame(rows, columns=list(ENDPOINT_COLUMNS))
