"""The `replay` model: answers from a bundle's stored raw responses, without any model.

Rerunning a bundle's config with `model: {kind: replay, bundle: <path>}` reproduces its
responses exactly (failures included), for re-analysis or to check a pipeline change.

A run with the paper's extraction call (`policy.extract_number`) stored one raw per agent and
round for two calls: `with_extraction(answer, extracted)` whenever the extraction call was made
(its error text in the brackets when it failed), with both calls' tokens summed. Replay splits
it again by the request's `step`: the answer step gets the answer and all the stored tokens,
the extract step the extracted text (or its failure) and none, so the policy rebuilds the same
raw, status, guess, tokens and `extracted` flag. A stored raw without an extraction (bundles
from before every extraction was stored) answers the extract step with an empty text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.errors import BundleError, ModelError
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams, split_extraction
from workbench.llm.chat_model import ChatModel

if TYPE_CHECKING:
    import pyarrow as pa

FAILED = {"model_error": "model_error", "timeout": "timeout"}


class ReplayModel(ChatModel):
    """A `ChatModel` that looks answers up by (agent id, round) in a result bundle."""

    def __init__(self, bundle: str | Path) -> None:
        # the one edge from llm/ up to results/: read the bundle as every reader does
        from workbench.results.replay import replay_answers

        try:
            answers = replay_answers(bundle)
        except BundleError as exc:
            raise ModelError(f"model.bundle: cannot replay {bundle} ({exc})") from None
        self._setup(answers.path, answers.run_id, answers.model, answers.table)

    @classmethod
    def from_answers(
        cls, path: str | Path, run_id: str, model: Mapping[str, Any], table: pa.Table
    ) -> ReplayModel:
        """A replay of already-read answers (columns agent_id, round, raw, status, tokens)."""
        self = cls.__new__(cls)
        self._setup(Path(path), run_id, model, table)
        return self

    def _setup(self, path: Path, run_id: str, model: Mapping[str, Any], table: pa.Table) -> None:
        """Index the answers by (agent id, round)."""
        self.path, self.run_id, self.source_model = path, run_id, dict(model)
        columns = table.to_pydict()
        self._answers: dict[tuple[int, int], tuple[Any, ...]] = {
            (int(a), int(r)): (raw, status, int(pt or 0), int(ct or 0))
            for a, r, raw, status, pt, ct in zip(
                columns["agent_id"],
                columns["round"],
                columns["raw"],
                columns["status"],
                columns["prompt_tokens"],
                columns["completion_tokens"],
                strict=True,
            )
        }

    @property
    def identity(self) -> dict[str, Any]:
        """The replayed bundle and the model that originally answered."""
        return {
            "engine": "replay",
            "name": f"replay of {self.run_id}",
            "bundle": str(self.path),
            "source_model": self.source_model,
        }

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """The stored answer of each request's agent and round; a missing one is a model_error."""
        results = []
        for request in requests:
            if request.agent_id is None or request.round is None:
                raise ModelError("replay needs requests that name their agent and round")
            stored = self._answers.get((request.agent_id, request.round))
            if stored is None:
                results.append(
                    ChatResult(
                        None,
                        error=f"no stored answer for agent {request.agent_id} in round "
                        f"{request.round} of {self.path.name}",
                        error_kind="model_error",
                    )
                )
                continue
            results.append(_replay(request, *stored))
        return results


def _replay(
    request: ChatRequest, raw: Any, status: str, prompt_tokens: int, completion_tokens: int
) -> ChatResult:
    """The result that makes `request`'s step of the stored decision come out as it did."""
    answer, extracted = (raw, None) if raw is None else split_extraction(raw)
    failed = FAILED.get(status)
    if request.step == "answer":
        if failed is not None and extracted is None:  # the answer call itself failed
            return ChatResult(None, error=raw, error_kind=failed)
        return ChatResult(answer, prompt_tokens, completion_tokens)
    if extracted is None:  # never stored: an answer without a number keeps its raw and status
        return ChatResult("", 0, 0, extra={"replay": "no stored extraction"})
    if failed is not None:  # the extraction call failed: its error, its tokens already counted
        return ChatResult(None, error=extracted, error_kind=failed)
    return ChatResult(extracted, 0, 0)
