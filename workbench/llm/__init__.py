"""Batch-first chat models: the interface, the embedded llama.cpp default, and a factory."""

from workbench.config import ModelSpec, RunConfig
from workbench.config.sampling import SETTINGS
from workbench.llm.base import ChatRequest, ChatResult, OutputConstraint, SamplingParams
from workbench.llm.chat_model import ChatModel, as_chat_model


def make_model(spec: ModelSpec) -> ChatModel:
    """The model a `ModelSpec` describes: embedded llama.cpp or an OpenAI-compatible server,
    behind a response cache when `spec.cache` names one."""
    model: ChatModel
    if spec.kind == "openai":
        from workbench.llm.openai_compat import OpenAICompatModel

        model = OpenAICompatModel.from_spec(spec)
    elif spec.kind == "vllm":
        from workbench.llm.vllm_engine import VLLMEngineModel

        model = VLLMEngineModel(
            spec.name or "",
            seeded=spec.seed == "per_request",
            sampling=spec.sampling,
            **spec.engine_args,
        )
    elif spec.kind == "replay":
        from workbench.llm.replay import ReplayModel

        model = ReplayModel(spec.bundle or "")
    else:
        from workbench.llm.llamacpp import LlamaCppModel

        model = LlamaCppModel(
            spec.path, n_ctx=spec.n_ctx, n_threads=spec.n_threads, sampling=spec.sampling
        )
    if spec.cache is not None:
        from workbench.llm.cache import CachedModel, ResponseCache

        model = CachedModel(model, ResponseCache(spec.cache))
    return model


def model_for(config: RunConfig) -> ChatModel:
    """The model(s) a run's LLM agents ask: `config.model`, or a mix of `config.models`."""
    if not config.models:
        return make_model(config.model)
    from workbench.llm.mix import ModelMix

    return ModelMix(
        {name: (make_model(spec), sampling_params(spec)) for name, spec in config.models.items()}
    )


def sampling_params(spec: ModelSpec) -> SamplingParams:
    """The sampling settings a `ModelSpec` asks for (every setting of the one law)."""
    return SamplingParams(**{name: getattr(spec, name) for name in SETTINGS})


__all__ = [
    "ChatModel",
    "ChatRequest",
    "ChatResult",
    "OutputConstraint",
    "SamplingParams",
    "as_chat_model",
    "make_model",
    "model_for",
    "sampling_params",
]
