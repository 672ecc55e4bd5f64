"""Counter-based random streams: every draw is a pure function of (seed, agent id, round, stream).

An agent's numbers do not depend on which shard holds it, how many shards there are, or the order
in which shards run, so local and distributed runs of one config give identical results.
The generator is splitmix64 over numpy uint64 arrays (wrapping arithmetic), vectorised per shard.
"""

from __future__ import annotations

import numpy as np

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15


def _mix_int(x: int) -> int:
    """splitmix64's finaliser on a Python int (for the per-call key)."""
    x = (x + _GOLDEN) & _MASK
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK
    return x ^ (x >> 31)


def _mix_array(x: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser on a uint64 array (wraps modulo 2**64)."""
    x = x + np.uint64(_GOLDEN)
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def stream_bits(seed: int, agent_ids: np.ndarray, round_number: int, stream: int) -> np.ndarray:
    """64 random bits per agent for (seed, round, stream): the root of every other draw here."""
    key = _mix_int(_mix_int(_mix_int(seed & _MASK) ^ (round_number & _MASK)) ^ (stream & _MASK))
    ids = np.asarray(agent_ids, dtype=np.int64).astype(np.uint64)
    return _mix_array(ids * np.uint64(_GOLDEN) ^ np.uint64(key))


def uniform(seed: int, agent_ids: np.ndarray, round_number: int, stream: int) -> np.ndarray:
    """One uniform float in [0, 1) per agent."""
    bits = stream_bits(seed, agent_ids, round_number, stream)
    return (bits >> np.uint64(11)).astype(np.float64) * (1.0 / (1 << 53))


def normal(seed: int, agent_ids: np.ndarray, round_number: int, stream: int) -> np.ndarray:
    """One standard normal per agent (Box-Muller over two derived uniform streams)."""
    u1 = uniform(seed, agent_ids, round_number, 2 * stream + 1_000_003)
    u2 = uniform(seed, agent_ids, round_number, 2 * stream + 1_000_004)
    return np.sqrt(-2.0 * np.log1p(-u1)) * np.cos(2.0 * np.pi * u2)


def request_seeds(seed: int, agent_ids: np.ndarray, round_number: int) -> np.ndarray:
    """A 31-bit model sampling seed per agent and round (reproducible per-request seeds)."""
    bits = stream_bits(seed, agent_ids, round_number, stream=0x5EED)
    return (bits >> np.uint64(33)).astype(np.int64)
