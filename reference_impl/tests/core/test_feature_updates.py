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


def test_feature_level_record_round_trips_and_replays_with_epoch() -> None:
    from reference_impl.core.metadata.image import MetadataImage
    from reference_impl.core.metadata.records import FeatureLevelRecord, decode, encode

    rec = FeatureLevelRecord(name="group.version", feature_level=1)
    assert decode(encode(rec)) == rec
    image = MetadataImage(cluster_id="c", controller_id=0)
    assert image.features_epoch == -1
    image.apply(rec, 4)
    image.apply(FeatureLevelRecord(name="kraft.version", feature_level=1), 7)
    assert image.finalized_features == {"group.version": 1, "kraft.version": 1}
    assert image.features_epoch == 7
    image.apply(FeatureLevelRecord(name="kraft.version", feature_level=0), 9)
    assert image.finalized_features == {"group.version": 1}
    assert image.features_epoch == 9


def test_finalized_features_survive_a_controller_snapshot() -> None:
    from reference_impl.core.controller.records import (
        ControllerImage,
        decode_snapshot,
        encode_snapshot,
    )
    from reference_impl.core.metadata.records import FeatureLevelRecord

    image = ControllerImage(cluster_id="c", controller_id=0)
    image.apply(FeatureLevelRecord(name="group.version", feature_level=1), 3)
    back = decode_snapshot(encode_snapshot(image), "c", 10)
    assert back.finalized_features == {"group.version": 1}
    assert back.features_epoch == 9


def test_api_versions_reads_the_image_once_feature_records_exist() -> None:
    from reference_impl.core.handlers.k18_api_versions import feature_lists
    from reference_impl.core.metadata.image import MetadataImage
    from reference_impl.core.metadata.records import FeatureLevelRecord

    image = MetadataImage(cluster_id="c", controller_id=0)
    before = feature_lists(4, image)
    assert before["finalized_features_epoch"] == 0
    assert {f["name"] for f in before["finalized_features"]} == set(bootstrap_levels())
    image.apply(FeatureLevelRecord(name="kraft.version", feature_level=1), 5)
    after = feature_lists(4, image)
    assert after["finalized_features_epoch"] == 5
    assert after["finalized_features"] == [
        {"name": "kraft.version", "min_version_level": 1, "max_version_level": 1}
    ]
