"""The feature table: every feature flag this broker knows, its supported range and the level a
new cluster finalizes (issue 20, "Features"; issue 19, ``group.version``).

Kafka's sources for the names and levels (read, not copied):
server-common/src/main/java/org/apache/kafka/server/common/MetadataVersion.java (the
``metadata.version`` levels: IBP_3_3_IV3 = 7 is the lowest KRaft level Kafka 4 accepts,
IBP_4_0_IV3 = 25 is Kafka 4.0's last 4.0 level), KRaftVersion.java (0 static quorum, 1 KIP-853),
GroupVersion.java (1 = KIP-848's consumer protocol), TransactionVersion.java (1 = flexible
records, 2 = KIP-890 part 2), ShareVersion.java (1 = KIP-932 share groups), and
metadata/src/main/java/org/apache/kafka/controller/FeatureControlManager.java (a level 0 is
"not finalized": Kafka drops it from the finalized map).

Choice: ``metadata.version`` is finalized at 25 (4.0-IV3), the level a Kafka 4.0 cluster
bootstraps at. ``transaction.version`` is supported 0-1 and finalized at 1 until KIP-890 lands
(the lead raises TRANSACTION_VERSION's max/default to 2 then: the one line below).
``share.version`` is 0 (not finalized) until share groups land.

Issue 20 so far: the controller writes one FeatureLevelRecord per finalized level first on an
empty metadata log (``bootstrap_records``); ApiVersions reads the replayed levels and their epoch
(the offset of the last feature record) from the image, falling back to these static levels at
epoch 0 for a log written before feature records existed (``effective_levels``). UpdateFeatures
(api 57) changes them through the controller (core/metadata/feature_updates.py decides).
"""

from __future__ import annotations

from dataclasses import dataclass

from .records import FeatureLevelRecord


@dataclass(frozen=True)
class Feature:
    """One feature flag: the levels this broker supports and the level a new cluster finalizes."""

    name: str
    min_level: int
    max_level: int
    bootstrap_level: int

    def supports(self, level: int) -> bool:
        return self.min_level <= level <= self.max_level


METADATA_VERSION = Feature("metadata.version", 7, 25, 25)
KRAFT_VERSION = Feature("kraft.version", 0, 1, 0)
GROUP_VERSION = Feature("group.version", 0, 1, 1)
TRANSACTION_VERSION = Feature("transaction.version", 0, 1, 1)
SHARE_VERSION = Feature("share.version", 0, 0, 0)

FEATURES: dict[str, Feature] = {
    f.name: f
    for f in (METADATA_VERSION, KRAFT_VERSION, GROUP_VERSION, TRANSACTION_VERSION, SHARE_VERSION)
}


def bootstrap_levels() -> dict[str, int]:
    """The finalized levels of a new cluster; a level 0 is not finalized (as Kafka)."""
    return {f.name: f.bootstrap_level for f in FEATURES.values() if f.bootstrap_level > 0}


def bootstrap_records() -> list[FeatureLevelRecord]:
    """What the controller writes first on an empty metadata log: one FeatureLevelRecord per
    finalized feature (Kafka's BootstrapMetadata records, FeatureControlManager replays them)."""
    return [FeatureLevelRecord(name=n, feature_level=lv) for n, lv in bootstrap_levels().items()]


def effective_levels(finalized: dict[str, int], epoch: int) -> tuple[dict[str, int], int]:
    """The finalized levels and their epoch given an image's replayed ones: the bootstrap levels at
    epoch 0 while the log has no FeatureLevelRecord (written before feature records existed)."""
    return (finalized, epoch) if epoch >= 0 else (bootstrap_levels(), 0)
