"""The `replay` model: answers from a bundle's stored raw responses, without any model.

Rerunning a bundle's config with `model: {kind: replay, bundle: <path>}` reproduces its
responses exactly (failures included), for re-analysis or to check a pipeline change.

A run with the paper's extraction call (`policy.extract_number`) stored one raw per agent and
round for two calls: `with_extraction(answer, extracted)` when the extraction parsed, the bare
answer when it did not, with both calls' tokens summed. Replay splits it again by the request's
`step`: the answer step gets the answer and all the stored tokens, the extract step the
extracted text and none, so the policy rebuilds the same raw, status, guess and token counts.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams, split_extraction

FAILED = {"model_error": "model_error", "timeout": "timeout"}


class ReplayModel:
    """A `ChatModel` that looks answers up by (agent id, round) in a result bundle."""

    def __init__(self, bundle: str | Path) -> None:
        # read the bundle's files as any tool would (results/ sits above llm/ in the layers)
        self.path = Path(bundle)
        try:
            self.manifest = json.loads((self.path / "manifest.json").read_text(encoding="utf-8"))
            frame = pq.read_table(self.path / "responses").to_pandas()
        except (OSError, ValueError, pa.ArrowException) as exc:
            raise ModelError(f"model.bundle: cannot replay {self.path} ({exc})") from None
        self._answers: dict[tuple[int, int], tuple[Any, ...]] = {
            (int(a), int(r)): (raw, status, int(pt or 0), int(ct or 0))
            for a, r, raw, status, pt, ct in zip(
                frame["agent_id"],
                frame["round"],
                frame["raw"],
                frame["status"],
                frame["prompt_tokens"].fillna(0),
                frame["completion_tokens"].fillna(0),
                strict=True,
            )
        }

    @property
    def identity(self) -> dict[str, Any]:
        """The replayed bundle and the model that originally answered."""
        return {
            "engine": "replay",
            "name": f"replay of {self.manifest.get('run_id')}",
            "bundle": str(self.path),
            "source_model": self.manifest.get("model", {}),
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
    if status in FAILED:
        return ChatResult(None, error=raw, error_kind=FAILED[status])
    answer, extracted = (raw, None) if status != "ok" or raw is None else split_extraction(raw)
    if request.step == "answer":
        return ChatResult(answer, prompt_tokens, completion_tokens)
    if extracted is not None:  # the extraction parsed: its text, its tokens already counted
        return ChatResult(extracted, 0, 0)
    # the extraction did not parse (or was never stored): an answer without a number keeps
    # the stored raw and its no_number status
    return ChatResult("", 0, 0, extra={"replay": "stored extraction did not parse"})
