"""A content-addressed response cache: a rerun of the same prompts costs no model calls.

The key is the sha256 of (model identity, messages, sampling params, seed, constraint), so only
an identical request with an identical model hits. Entries live in one SQLite file (WAL mode,
busy timeout), which shards in several processes may share. Failed requests are never cached.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from workbench.llm.base import ChatModel, ChatRequest, ChatResult, SamplingParams

VOLATILE_IDENTITY = ("base_urls", "n_threads", "cache")
"""Identity fields that do not change answers (where a model runs, how many threads)."""


def request_key(identity: dict[str, Any], request: ChatRequest, params: SamplingParams) -> str:
    """sha256 over everything that determines the answer."""
    stable = {k: v for k, v in identity.items() if k not in VOLATILE_IDENTITY}
    payload = {
        "model": stable,
        "messages": list(request.messages),
        "params": dataclasses.asdict(params),
        "seed": request.seed,
        "constraint": dataclasses.asdict(request.constraint) if request.constraint else None,
    }
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class ResponseCache:
    """Answers by key in a SQLite file."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.execute(
                "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, text TEXT NOT NULL,"
                " prompt_tokens INTEGER, completion_tokens INTEGER)"
            )

    @contextlib.contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        """A connection that commits on success and is always closed."""
        db = sqlite3.connect(self.path, timeout=30)
        try:
            with db:
                yield db
        finally:
            db.close()

    def get_many(self, keys: Sequence[str]) -> dict[str, tuple[str, int, int]]:
        """The cached (text, prompt_tokens, completion_tokens) of each key found."""
        found: dict[str, tuple[str, int, int]] = {}
        with self._connect() as db:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    "SELECT key, text, prompt_tokens, completion_tokens FROM responses "
                    f"WHERE key IN ({marks})",
                    chunk,
                )
                found.update({row[0]: (row[1], row[2], row[3]) for row in rows})
        return found

    def put_many(self, rows: Sequence[tuple[str, str, int, int]]) -> None:
        """Store (key, text, prompt_tokens, completion_tokens) rows; existing keys are kept."""
        with self._connect() as db:
            db.executemany("INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?)", rows)

    def __len__(self) -> int:
        with self._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


class CachedModel:
    """Wraps a `ChatModel`: cached answers are returned, only the misses reach the model."""

    def __init__(self, model: ChatModel, cache: ResponseCache) -> None:
        self.model = model
        self.cache = cache
        self.calls = 0  # requests forwarded to the model

    @property
    def identity(self) -> dict[str, Any]:
        """The wrapped model's identity (the cache does not change what answers)."""
        return dict(self.model.identity)

    def __getattr__(self, name: str) -> Any:  # load(), check(), ... of the wrapped model
        return getattr(self.model, name)

    async def generate(
        self, requests: Sequence[ChatRequest], params: SamplingParams
    ) -> list[ChatResult]:
        """Answers from the cache where present; one batched model call for the rest."""
        identity = self.identity
        keys = [request_key(identity, r, params) for r in requests]
        hits = self.cache.get_many(keys)
        results: list[ChatResult | None] = [None] * len(requests)
        misses = []
        for i, key in enumerate(keys):
            if key in hits:
                text, prompt_tokens, completion_tokens = hits[key]
                results[i] = ChatResult(
                    text, prompt_tokens, completion_tokens, extra={"cached": True}
                )
            else:
                misses.append(i)
        if misses:
            self.calls += len(misses)
            answered = await self.model.generate([requests[i] for i in misses], params)
            fresh = []
            for i, result in zip(misses, answered, strict=True):
                results[i] = result
                if result.error is None and result.text is not None:
                    fresh.append(
                        (keys[i], result.text, result.prompt_tokens, result.completion_tokens)
                    )
            self.cache.put_many(fresh)
        return results  # type: ignore[return-value]
