"""Validation of one UpdateFeatures (api 57) feature update, as Kafka's controller decides it
(issue 20, first piece; not yet wired to a handler or to the metadata log).

Kafka's source (read, not copied):
metadata/src/main/java/org/apache/kafka/controller/FeatureControlManager.java ``updateFeature``:
an unknown upgrade type, a level below 0, a level outside the supported range (QuorumFeatures:
an unknown feature's range is DISABLED = 0-0, so any level >= 1 of it is unsupported), a
downgrade with upgrade type UPGRADE, or a raise with a downgrade type are each
INVALID_UPDATE_VERSION (Errors.java code 95); otherwise the update is a FeatureLevelRecord.
clients/.../common/message/UpdateFeaturesRequest.json: upgrade type 1 = upgrade, 2 = safe
downgrade, 3 = unsafe downgrade (versions 0-2, flexible from 0).

Not modelled: metadata.version's extra downgrade checks (updateMetadataVersion) and cross-feature
dependencies (Features.validateVersion); every broker of the reference supports the same table, so
the per-broker support check is the local one.
"""

from __future__ import annotations

from reference_impl.core.metadata.features import FEATURES

NONE = 0
INVALID_UPDATE_VERSION = 95

UPGRADE = 1
SAFE_DOWNGRADE = 2
UNSAFE_DOWNGRADE = 3


def validate_update(
    name: str, new_level: int, upgrade_type: int, finalized: dict[str, int]
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
            name, new_level, "Can't downgrade the version of this feature without setting the "
            "upgrade type to either safe or unsafe downgrade.",
        )
    if new_level > current and upgrade_type != UPGRADE:
        return _invalid(name, new_level, "Can't downgrade to a newer version.")
    return NONE, None


def _invalid(name: str, level: int, why: str) -> tuple[int, str]:
    return INVALID_UPDATE_VERSION, f"Invalid update version {level} for feature {name}. {why}"
