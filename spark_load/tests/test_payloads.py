"""The deterministic dataset: same seed same bytes, checksums that catch tampering, the asked-for shape."""

from __future__ import annotations

import itertools
import statistics
from collections import Counter

import pytest

from spark_load.config import DatasetSpec, LoadConfig, LoadConfigError, ProducerSpec, task_ranges
from spark_load.consume import Split, plan_splits
from spark_load.payloads import RecordGenerator, is_intact, parse_value


def test_same_seed_gives_the_same_records_and_another_seed_different_ones() -> None:
    first = RecordGenerator(DatasetSpec(records=100, seed=7, value_size_distribution="uniform"))
    again = RecordGenerator(DatasetSpec(records=100, seed=7, value_size_distribution="uniform"))
    other = RecordGenerator(DatasetSpec(records=100, seed=8, value_size_distribution="uniform"))
    records = [first.record(seq) for seq in range(100)]
    assert records == [again.record(seq) for seq in range(100)]
    assert sum(records[seq] == other.record(seq) for seq in range(100)) < 5


def test_each_value_carries_generator_id_sequence_and_a_checksum_over_key_and_filler() -> None:
    generator = RecordGenerator(DatasetSpec(records=10, generator_id="gen-A"))
    key, value = generator.record(1234)
    parsed = parse_value(value)
    assert parsed is not None
    assert (parsed.generator_id, parsed.seq) == ("gen-A", 1234)
    assert is_intact(key, value)
    flipped = bytearray(value)
    flipped[-1] ^= 0x01
    assert not is_intact(key, bytes(flipped))
    assert not is_intact(b"k-other", value), "a value moved to another key must not pass"
    assert not is_intact(key, b"not a load value")
    assert parse_value(b"KH1|g|notanumber|00000000|x") is None


@pytest.mark.parametrize("distribution", ["fixed", "uniform", "exponential"])
def test_value_sizes_follow_the_distribution(distribution: str) -> None:
    generator = RecordGenerator(DatasetSpec(records=1, value_size=200, value_size_distribution=distribution))
    sizes = [len(generator.record(seq)[1]) for seq in range(4000)]
    if distribution == "fixed":
        assert set(sizes) == {200}
    elif distribution == "uniform":
        assert min(sizes) >= 100 and max(sizes) <= 300
        assert 180 <= statistics.mean(sizes) <= 220
        assert len(set(sizes)) > 150
    else:
        assert max(sizes) <= 2000
        assert 150 <= statistics.mean(sizes) <= 250
        assert statistics.median(sizes) < statistics.mean(sizes), "an exponential law is right-skewed"


def test_key_skew_concentrates_records_on_few_keys() -> None:
    def top_share(skew: float) -> float:
        generator = RecordGenerator(DatasetSpec(records=1, key_space=1000, key_skew=skew))
        counts = Counter(generator.key_index(seq) for seq in range(20_000))
        assert all(0 <= index < 1000 for index in counts)
        return counts.most_common(1)[0][1] / 20_000

    uniform, skewed = top_share(0.0), top_share(1.2)
    assert uniform < 0.005
    assert skewed > 0.1


def test_bad_settings_are_refused_with_the_option_named() -> None:
    with pytest.raises(LoadConfigError, match="--value-size"):
        DatasetSpec(records=1, value_size=0).validate()
    with pytest.raises(LoadConfigError, match="--generator-id"):
        DatasetSpec(records=1, generator_id="has space").validate()
    with pytest.raises(LoadConfigError, match="idempotence"):
        ProducerSpec(acks="1").validate()
    with pytest.raises(LoadConfigError, match="--topic"):
        LoadConfig("127.0.0.1:9092", "bad/topic", DatasetSpec(records=1)).validate()


def test_task_ranges_cover_every_sequence_number_once_in_order() -> None:
    for records, tasks in ((10, 3), (5, 8), (0, 4), (1_000_003, 20)):
        ranges = task_ranges(records, tasks)
        covered = [seq for start, end in ranges for seq in range(start, end)] if records < 100 else None
        assert ranges[0][0] == 0 and ranges[-1][1] == records
        assert all(a[1] == b[0] for a, b in itertools.pairwise(ranges))
        sizes = [end - start for start, end in ranges]
        assert max(sizes) - min(sizes) <= 1
        if covered is not None:
            assert covered == list(range(records))


def test_splits_cut_each_partition_and_leave_the_last_split_open_ended() -> None:
    splits = plan_splits({0: (0, 25), 1: (5, 5), 2: (10, 20)}, split_records=10)
    assert splits == [
        Split(0, 0, 0, 10),
        Split(1, 0, 10, 20),
        Split(2, 0, 20, 25, to_eof=True),
        Split(3, 1, 5, 5, to_eof=True),
        Split(4, 2, 10, 20, to_eof=True),
    ]
