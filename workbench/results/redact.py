"""Secrets out of everything a bundle stores: API keys, tokens and passwords become a marker."""

from __future__ import annotations

import re
from typing import Any

REDACTED = "***REDACTED***"
"""What a secret value is replaced with."""

SECRET_WORDS: frozenset[str] = frozenset(
    {"apikey", "token", "secret", "secrets", "password", "passwd", "authorization"}
)
"""Whole words of a key that make its value a secret."""


def key_words(key: str) -> list[str]:
    """A key split into lower-case words at separators and camelCase humps."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", key)
    return [w for w in re.split(r"[^A-Za-z0-9]+", spaced.lower()) if w]


def is_secret_key(key: Any) -> bool:
    """Whether a dict key names a secret (api_key, apiKey, access_token, Authorization, ...).

    Matches whole words so that `max_tokens` or `prompt_tokens` are not taken for secrets.
    """
    if not isinstance(key, str):
        return False
    words = key_words(key)
    if words and words[-1] == "env":
        return False  # api_key_env names the variable that holds the key, not the key
    pairs = {"".join(words[i : i + 2]) for i in range(len(words) - 1)}
    return bool(SECRET_WORDS.intersection(words) or "apikey" in pairs)


def redact(data: Any) -> Any:
    """A deep copy of nested dicts/lists with every secret value replaced by "***REDACTED***".

    Keys matching api_key|apikey|token|secret|password|authorization (any case) are secrets;
    an empty value (None or "") is kept, so a config without a key does not claim to have one.
    """
    if isinstance(data, dict):
        return {
            k: REDACTED if is_secret_key(k) and v not in (None, "") else redact(v)
            for k, v in data.items()
        }
    if isinstance(data, list | tuple):
        return type(data)(redact(v) for v in data)
    return data
