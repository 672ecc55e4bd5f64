import numpy as np
import pytest

from workbench.agents import streams

IDS = np.arange(100_000, dtype=np.int64)


def test_uniform_lies_in_unit_interval_and_covers_it():
    u = streams.uniform(1, IDS, 1, 1)
    assert u.dtype == np.float64 and u.shape == IDS.shape
    assert u.min() >= 0.0 and u.max() < 1.0
    assert abs(u.mean() - 0.5) < 0.01
    # every tenth of [0, 1) gets about a tenth of the draws
    counts = np.histogram(u, bins=10, range=(0, 1))[0] / len(u)
    assert np.all(np.abs(counts - 0.1) < 0.01)


def test_same_call_gives_same_numbers():
    a = streams.uniform(42, IDS[:1000], 3, 1)
    b = streams.uniform(42, IDS[:1000], 3, 1)
    np.testing.assert_array_equal(a, b)


def test_an_agents_draw_does_not_depend_on_its_array():
    """Shard independence: a slice, a permutation or a single id give the same per-agent value."""
    ids = np.arange(1000)
    full = streams.uniform(5, ids, 2, 1)
    np.testing.assert_array_equal(streams.uniform(5, ids[500:510], 2, 1), full[500:510])
    perm = np.random.default_rng(0).permutation(ids)
    np.testing.assert_array_equal(streams.uniform(5, perm, 2, 1), full[perm])
    assert streams.uniform(5, np.array([737]), 2, 1)[0] == full[737]
    np.testing.assert_array_equal(
        streams.request_seeds(5, ids[::7], 2), streams.request_seeds(5, ids, 2)[::7]
    )
    np.testing.assert_array_equal(
        streams.normal(5, ids[3:9], 2, 4), streams.normal(5, ids, 2, 4)[3:9]
    )


@pytest.mark.parametrize(
    ("seed", "round_number", "stream"),
    [(8, 1, 1), (7, 2, 1), (7, 1, 2), (8, 2, 3)],
)
def test_different_seed_round_or_stream_gives_different_numbers(seed, round_number, stream):
    base = streams.uniform(7, IDS[:10_000], 1, 1)
    other = streams.uniform(seed, IDS[:10_000], round_number, stream)
    # independent streams: essentially no value repeats, and they are uncorrelated
    assert np.mean(base == other) < 0.001
    assert abs(np.corrcoef(base, other)[0, 1]) < 0.05


def test_different_agents_get_different_numbers():
    u = streams.uniform(0, IDS, 1, 1)
    assert len(np.unique(u)) > 0.999 * len(u)


def test_normal_has_mean_zero_and_sd_one():
    z = streams.normal(3, IDS, 1, 1)
    assert np.all(np.isfinite(z))
    assert abs(z.mean()) < 0.02
    assert abs(z.std() - 1) < 0.02
    # tails like a standard normal: about 4.55% beyond 2 sd
    assert abs(np.mean(np.abs(z) > 2) - 0.0455) < 0.005
    assert not np.array_equal(z, streams.normal(3, IDS, 1, 2))


def test_request_seeds_are_31_bit_non_negative_and_distinct():
    s = streams.request_seeds(11, IDS, 1)
    assert s.dtype == np.int64
    assert s.min() >= 0 and s.max() < 2**31
    assert len(np.unique(s)) > 0.99 * len(s)
    assert s.max() > 2**30  # the whole 31-bit range is used
    assert not np.array_equal(s, streams.request_seeds(11, IDS, 2))
    assert not np.array_equal(s, streams.request_seeds(12, IDS, 1))


def test_huge_seeds_and_ids_are_accepted():
    ids = np.array([0, 2**62, 2**63 - 1], dtype=np.int64)
    u = streams.uniform(2**63 - 1, ids, 1000, 1)
    assert np.all((u >= 0) & (u < 1))
    s = streams.request_seeds(2**63 - 1, ids, 1000)
    assert np.all((s >= 0) & (s < 2**31))
