"""The `replay` model: answers from a bundle's stored raw responses, without any model.

Rerunning a bundle's config with `model: {kind: replay, bundle: <path>}` reproduces its
responses exactly (failures included), for re-analysis or to check a pipeline change.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from workbench.errors import ModelError
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams

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
            raw, status, prompt_tokens, completion_tokens = stored
            if status in FAILED:
                results.append(ChatResult(None, error=raw, error_kind=FAILED[status]))
            else:
                results.append(ChatResult(raw, prompt_tokens, completion_tokens))
        return results
