"""UpdateFeatures validation (reference_impl/core/metadata/feature_updates.py)."""

from reference_impl.core.metadata import feature_updates as fu
from reference_impl.core.metadata.features import bootstrap_levels

BAD = fu.INVALID_UPDATE_VERSION


def test_upgrade_within_range_and_same_level_pass() -> None:
    fin = bootstrap_levels()
    assert fu.validate_update("kraft.version", 1, fu.UPGRADE, fin) == (fu.NONE, None)
    assert fu.validate_update("group.version", 1, fu.UPGRADE, fin) == (fu.NONE, None)
    assert fu.validate_update("group.version", 0, fu.SAFE_DOWNGRADE, fin) == (fu.NONE, None)


def test_invalid_updates_are_invalid_update_version() -> None:
    fin = bootstrap_levels()
    assert fu.validate_update("group.version", 2, fu.UPGRADE, fin)[0] == BAD  # above max
    assert fu.validate_update("group.version", -1, fu.UNSAFE_DOWNGRADE, fin)[0] == BAD
    assert fu.validate_update("group.version", 0, fu.UPGRADE, fin)[0] == BAD  # downgrade as upgrade
    assert fu.validate_update("kraft.version", 1, fu.SAFE_DOWNGRADE, fin)[0] == BAD  # raise as downgrade
    assert fu.validate_update("no.such.feature", 1, fu.UPGRADE, fin)[0] == BAD
    assert fu.validate_update("group.version", 1, 9, fin)[0] == BAD
    msg = fu.validate_update("group.version", 2, fu.UPGRADE, fin)[1]
    assert msg is not None and "group.version" in msg
