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
from typing import TYPE_CHECKING, Any

import numpy as np

from workbench.errors import ConfigError
from workbench.llm.base import ChatRequest, ChatResult, SamplingParams, report_answered
from workbench.llm.chat_model import ChatModel, as_chat_model
from workbench.llm.distribution.cached_scorer import CachedScorer
from workbench.llm.distribution.scorer import NodeScorer

if TYPE_CHECKING:
    from workbench.llm.endpoints import Endpoints

VOLATILE_IDENTITY = ("base_urls", "n_threads", "threads", "cache", "servers", "sampling")
"""Identity fields that do not change answers (where a model runs, how many threads, what a
check found out about its servers, who draws constrained answers: a generated answer is the
same either way, and a node's logits are keyed by how its scorer computes them)."""


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


SQLITE_HEADER = b"SQLite format 3\x00"
"""The first 16 bytes of every SQLite database file."""


def check_cache_path(path: Path) -> None:
    """ConfigError naming model.cache unless `path` is absent or a SQLite file, in a directory."""
    fix = "name a new file (e.g. cache/responses.sqlite) or an existing response cache"
    if path.is_dir():
        raise ConfigError(f"model.cache: {path} is a directory; {fix}")
    for parent in path.parents:
        if parent.exists() and not parent.is_dir():
            raise ConfigError(f"model.cache: {parent} is a file, not a directory; {fix}")
    if path.exists():
        try:
            with path.open("rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
        except OSError as exc:
            raise ConfigError(f"model.cache: cannot read {path} ({exc.strerror}); {fix}") from None
        if header and header != SQLITE_HEADER:
            raise ConfigError(f"model.cache: {path} is not a SQLite file; {fix}")


class ResponseCache:
    """Answers by key in a SQLite file, created on first use (never by a run that fails first)."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        check_cache_path(self.path)
        self._ready = False

    def open(self) -> ResponseCache:
        """Create the file and its table if needed; returns self."""
        if not self._ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            try:
                with self._connect() as db:
                    db.execute("PRAGMA journal_mode=WAL")
                    db.execute(
                        "CREATE TABLE IF NOT EXISTS responses (key TEXT PRIMARY KEY, "
                        "text TEXT NOT NULL, prompt_tokens INTEGER, completion_tokens INTEGER)"
                    )
                    db.execute(
                        "CREATE TABLE IF NOT EXISTS node_logits (key TEXT PRIMARY KEY, "
                        "logits BLOB NOT NULL)"
                    )
            except sqlite3.DatabaseError as exc:
                raise ConfigError(
                    f"model.cache: {self.path} is not a usable SQLite file ({exc})"
                ) from None
            self._ready = True
        return self

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
        with self.open()._connect() as db:
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
        with self.open()._connect() as db:
            db.executemany("INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?)", rows)

    def get_logits(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The cached allowed logits of each answer-trie node key found (float64)."""
        found: dict[str, np.ndarray] = {}
        with self.open()._connect() as db:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                rows = db.execute(
                    f"SELECT key, logits FROM node_logits WHERE key IN ({marks})", chunk
                )
                found.update({row[0]: np.frombuffer(row[1], dtype="<f8") for row in rows})
        return found

    def put_logits(self, rows: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store (key, allowed logits) rows of answer-trie nodes, as little-endian float64."""
        with self.open()._connect() as db:
            db.executemany(
                "INSERT OR IGNORE INTO node_logits VALUES (?, ?)",
                [(key, np.asarray(logits, dtype="<f8").tobytes()) for key, logits in rows],
            )

    def __len__(self) -> int:
        with self.open()._connect() as db:
            return int(db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])


class CachedModel(ChatModel):
    """Wraps a `ChatModel`: cached answers are returned, only the misses reach the model."""

    def __init__(self, model: ChatModel, cache: ResponseCache) -> None:
        self.model = as_chat_model(model)
        self.cache = cache
        self.calls = 0  # requests (or distribution mode's trie nodes) forwarded to the model
        self._scorer: CachedScorer | None = None

    @property
    def identity(self) -> dict[str, Any]:
        """The wrapped model's identity (the cache does not change what answers)."""
        return dict(self.model.identity)

    def __getattr__(self, name: str) -> Any:  # stats, base_urls, ... of the wrapped model
        return getattr(self.model, name)

    def load(self) -> CachedModel:
        """Load the wrapped model and open (create) the cache file; returns self."""
        self.model.load()
        self.cache.open()
        return self

    async def check(self) -> None:
        """The wrapped model's check (the cache file is not created by a failed check)."""
        await self.model.check()

    def check_fits(
        self, requests: Sequence[ChatRequest], params: SamplingParams, field: str = "model"
    ) -> None:
        """The wrapped model's check."""
        self.model.check_fits(requests, params, field)

    def close(self) -> None:
        """Close the wrapped model."""
        self.model.close()

    def _count(self, misses: int) -> None:
        self.calls += misses

    def endpoints(self) -> Endpoints | None:
        """The wrapped model's endpoints (the cache's scorer walks on them)."""
        return self.model.endpoints()

    def node_scorer(self) -> NodeScorer | None:
        """The wrapped model's node scorer behind this cache (None when it has none)."""
        inner = self.model.node_scorer()
        if inner is None:
            return None
        if self._scorer is None or self._scorer.inner is not inner:
            stable = {k: v for k, v in self.identity.items() if k not in VOLATILE_IDENTITY}
            self._scorer = CachedScorer(inner, self.cache, stable, self._count)
        return self._scorer

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
                report_answered(requests[i], results[i])
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
