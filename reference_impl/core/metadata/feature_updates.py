"""UpdateFeatures (api 57): what Kafka's controller decides for a request's feature updates
(issue 20). ``validate_update`` checks one update; ``decide`` checks them all and gives the
FeatureLevelRecords to commit, or the first error (the request is all or nothing).

Kafka's source (read, not copied):
metadata/src/main/java/org/apache/kafka/controller/FeatureControlManager.java ``updateFeature``:
an unknown upgrade type, a level below 0, a level outside the supported range (QuorumFeatures:
an unknown feature's range is DISABLED = 0-0, so any level >= 1 of it is unsupported), a
downgrade with upgrade type UPGRADE, or a raise with a downgrade type are each
INVALID_UPDATE_VERSION (Errors.java code 95); otherwise the update is a FeatureLevelRecord.
clients/.../common/message/UpdateFeaturesRequest.json: upgrade type 1 = upgrade, 2 = safe
downgrade, 3 = unsafe downgrade (versions 0-2, flexible from 0).

``decide`` follows ``FeatureControlManager.updateFeatures``: the updates are keyed by feature name
(a repeated name: the last one counts, as Kafka's HashMap), the first invalid one fails the whole
request with nothing written, validate_only writes nothing either, and each valid update is one
FeatureLevelRecord, even at the current level (Kafka writes it too; kraft.version aside).
metadata.version gets ``updateMetadataVersion``'s extra check: a downgrade across a level that
changed the metadata format (MetadataVersion.java ``didMetadataChange``, :data:`MV_CHANGED`) is
refused, as unsafe downgrades are ("not supported in this version").

kraft.version is never a FeatureLevelRecord (KAFKA-18979): Kafka's controller answers an unchanged
level without a record, refuses a downgrade, and upgrades it through the quorum's own control
records. Difference: the reference's quorum takes kraft.version 1 only when formatted with it
(``reference.kraft.version=1``, core/raft/membership.py) and does not upgrade it at run time, so
an upgrade of it is refused INVALID_UPDATE_VERSION too. Cross-feature dependencies
(Features.validateVersion) are not checked: Kafka 4.0's (any level >= 1 needs metadata.version >= 4,
kraft.version 1 needs >= 21) always hold here (the lowest supported metadata.version is 7) or concern
kraft.version. Every broker of the reference supports the same table, so the per-broker support
check is the local one.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from reference_impl.core.metadata.features import FEATURES, KRAFT_VERSION, METADATA_VERSION

from .records import FeatureLevelRecord

NONE = 0
INVALID_UPDATE_VERSION = 95

UPGRADE = 1
SAFE_DOWNGRADE = 2
UNSAFE_DOWNGRADE = 3

MV_CHANGED = frozenset({7, 8, 11, 13, 14, 15, 17, 23})
"""The supported metadata.version levels whose ``didMetadataChange`` is true (MetadataVersion.java:
IBP_3_3_IV3, 3_4_IV0, 3_5_IV2, 3_6_IV1, 3_6_IV2, 3_7_IV0, 3_7_IV2, 4_0_IV1)."""

FAILED_PREFIX = "The update failed for all features since the following feature had an error: "
"""QuorumController.updateFeatures' top-level message before the failing update's own."""


@dataclass(frozen=True, slots=True)
class Update:
    """One FeatureUpdateKey: set ``name`` to ``level`` with ``upgrade_type``."""

    name: str
    level: int
    upgrade_type: int = UPGRADE


def decide(
    finalized: Mapping[str, int], updates: Sequence[Update]
) -> tuple[list[FeatureLevelRecord], int, str | None]:
    """(records to commit, error code, message) for ``updates`` against the ``finalized`` levels:
    every record, or none and the first update's error."""
    latest = {u.name: u for u in updates}
    records: list[FeatureLevelRecord] = []
    for u in latest.values():
        current = finalized.get(u.name, 0)
        code, message = validate_update(u.name, u.level, u.upgrade_type, finalized)
        if code == NONE:
            code, message = _special(u, current)
        if code != NONE:
            return [], code, message
        if u.name != KRAFT_VERSION.name:  # an unchanged kraft.version writes nothing (Kafka)
            records.append(FeatureLevelRecord(name=u.name, feature_level=u.level))
    return records, NONE, None


def _special(u: Update, current: int) -> tuple[int, str | None]:
    """kraft.version's rules (a downgrade is refused, as Kafka; an upgrade too, here) and
    metadata.version's downgrade check (``updateMetadataVersion``)."""
    if u.name == KRAFT_VERSION.name and u.level < current:
        return _invalid(u.name, u.level, "Can't downgrade the version of this feature.")
    if u.name == KRAFT_VERSION.name and u.level > current:
        return _invalid(u.name, u.level, "The reference's quorum does not upgrade kraft.version at run time.")
    if u.name != METADATA_VERSION.name or u.level >= current:
        return NONE, None
    if not any(level in MV_CHANGED for level in range(u.level + 1, current + 1)):
        return NONE, None
    why = (
        "Unsafe metadata downgrade is not supported in this version."
        if u.upgrade_type == UNSAFE_DOWNGRADE
        else "Refusing to perform the requested downgrade because it might delete metadata information."
    )
    return (
        INVALID_UPDATE_VERSION,
        f"Unsupported metadata.version downgrade from {current} to {u.level}. {why}",
    )


def validate_update(
    name: str, new_level: int, upgrade_type: int, finalized: Mapping[str, int]
) -> tuple[int, str | None]:
    """(error code, message) for setting ``name`` to ``new_level`` given the finalized levels."""
    if upgrade_type not in (UPGRADE, SAFE_DOWNGRADE, UNSAFE_DOWNGRADE):
        return _invalid(name, new_level, "The controller does not support the given upgrade type.")
    if new_level < 0:
        return _invalid(name, new_level, "A feature version cannot be less than 0.")
    feature = FEATURES.get(name)
    lo, hi = (feature.min_level, feature.max_level) if feature else (0, 0)
    if not lo <= new_level <= hi:
        return _invalid(name, new_level, f"Local controller does not support levels {lo}-{hi}.")
    current = finalized.get(name, 0)
    if new_level < current and upgrade_type == UPGRADE:
        return _invalid(
            name,
            new_level,
            "Can't downgrade the version of this feature without setting the "
            "upgrade type to either safe or unsafe downgrade.",
        )
    if new_level > current and upgrade_type != UPGRADE:
        return _invalid(name, new_level, "Can't downgrade to a newer version.")
    return NONE, None


def _invalid(name: str, level: int, why: str) -> tuple[int, str]:
    return INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {name}. {why}"
