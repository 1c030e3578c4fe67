"""UpdateFeatures (api 57) through a broker: the controller's FeatureLevelRecords, what ApiVersions
then reports, the answer's shape per version, authorization, and the levels after a restart
(core/handlers/k57_update_features.py, core/metadata/feature_updates.py ``decide``)."""

from __future__ import annotations

from typing import Any

from reference_impl.core.metadata import feature_updates as fu
from reference_impl.core.metadata.records import FeatureLevelRecord
from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request
from .test_acls import ACL_CONFIGS, _login


def _update(
    harness: BrokerHarness,
    updates: list[tuple[str, int, int]],
    *,
    version: int = 1,
    validate_only: bool = False,
    cid: int | None = None,
) -> Any:
    keys = [{"feature": n, "max_version_level": lv, "upgrade_type": t} for n, lv, t in updates]
    body = request(57, version, feature_updates=keys, validate_only=validate_only, timeout=5000)
    return harness.call(body, cid)


def _finalized(harness: BrokerHarness) -> tuple[dict[str, int], int]:
    answer = harness.call(request(18, 4, client_software_name="t", client_software_version="1"))
    levels = {str(f.name): int(f.max_version_level) for f in answer.finalized_features}
    return levels, int(answer.finalized_features_epoch)


def test_downgrade_and_upgrade_are_written_and_shown_by_api_versions() -> None:
    harness = BrokerHarness()
    before, epoch = _finalized(harness)
    assert before["group.version"] == 1
    answer = _update(harness, [("group.version", 0, fu.SAFE_DOWNGRADE)])
    assert answer.error_code == ErrorCode.none and answer.error_message is None
    assert [(r.feature, r.error_code, r.error_message) for r in answer.results] == [
        ("group.version", ErrorCode.none, "NONE")
    ]
    after, downgraded_epoch = _finalized(harness)
    assert "group.version" not in after  # level 0: not finalized
    assert downgraded_epoch > epoch
    assert _update(harness, [("group.version", 1, fu.UPGRADE)]).error_code == ErrorCode.none
    again, upgraded_epoch = _finalized(harness)
    assert again == before and upgraded_epoch > downgraded_epoch


def test_validate_only_checks_and_writes_nothing() -> None:
    harness = BrokerHarness()
    before = _finalized(harness)
    answer = _update(harness, [("group.version", 0, fu.SAFE_DOWNGRADE)], validate_only=True)
    assert answer.error_code == ErrorCode.none and len(answer.results) == 1
    assert _finalized(harness) == before
    bad = _update(harness, [("group.version", 2, fu.UPGRADE)], validate_only=True)
    assert bad.error_code == ErrorCode.invalid_update_version


def test_one_bad_update_fails_the_whole_request_with_a_top_level_error() -> None:
    harness = BrokerHarness()
    before = _finalized(harness)
    answer = _update(harness, [("group.version", 0, fu.SAFE_DOWNGRADE), ("no.such.feature", 1, fu.UPGRADE)])
    assert answer.error_code == ErrorCode.invalid_update_version
    assert answer.error_message.startswith(fu.FAILED_PREFIX) and "no.such.feature" in answer.error_message
    assert list(answer.results) == []  # Kafka's QuorumController: no per-feature results on error
    assert _finalized(harness) == before  # the valid update was not written either
    for updates in (
        [("group.version", 2, fu.UPGRADE)],  # above the supported max
        [("group.version", 0, fu.UPGRADE)],  # a downgrade asked as an upgrade
        [("group.version", 1, 7)],  # an unknown upgrade type
        [("metadata.version", 6, fu.SAFE_DOWNGRADE)],  # below the lowest supported
        [("metadata.version", 22, fu.SAFE_DOWNGRADE)],  # across a metadata format change
        [("metadata.version", 22, fu.UNSAFE_DOWNGRADE)],
        [("kraft.version", 1, fu.UPGRADE)],  # the reference's quorum cannot change it
    ):
        assert _update(harness, updates).error_code == ErrorCode.invalid_update_version, updates
    assert _finalized(harness) == before


def test_metadata_version_downgrade_without_a_format_change_is_allowed() -> None:
    """MetadataVersion.java: IBP_4_0_IV3 (25) and IBP_4_0_IV2 (24) did not change the metadata
    format, so 25 -> 24 is a safe downgrade; 24 -> 25 an upgrade again."""
    harness = BrokerHarness()
    assert _update(harness, [("metadata.version", 24, fu.SAFE_DOWNGRADE)]).error_code == ErrorCode.none
    assert _finalized(harness)[0]["metadata.version"] == 24
    assert _update(harness, [("metadata.version", 25, fu.UPGRADE)]).error_code == ErrorCode.none
    assert _finalized(harness)[0]["metadata.version"] == 25


def test_version_differences() -> None:
    """v2 answers no per-feature results; v0 has no UpgradeType, so (as Kafka's controller reads only
    that field) a v0 downgrade is refused whatever AllowDowngrade says."""
    harness = BrokerHarness()
    v2 = _update(harness, [("group.version", 1, fu.UPGRADE)], version=2)
    assert v2.error_code == ErrorCode.none and not hasattr(v2, "results")
    keys = [{"feature": "group.version", "max_version_level": 0, "allow_downgrade": True}]
    v0 = harness.call(request(57, 0, feature_updates=keys, timeout=5000))
    assert v0.error_code == ErrorCode.invalid_update_version
    assert _finalized(harness)[0]["group.version"] == 1


def test_cluster_alter_is_required() -> None:
    harness = BrokerHarness(*ACL_CONFIGS)
    alice = _login(harness, "alice", "alice-secret")
    refused = _update(harness, [("group.version", 0, fu.SAFE_DOWNGRADE)], cid=alice)
    assert refused.error_code == ErrorCode.cluster_authorization_failed and list(refused.results) == []
    assert harness.broker.image.finalized_features["group.version"] == 1
    admin = _login(harness, "admin", "admin-secret")
    allowed = _update(harness, [("group.version", 0, fu.SAFE_DOWNGRADE)], cid=admin)
    assert allowed.error_code == ErrorCode.none
    assert "group.version" not in harness.broker.image.finalized_features


def test_levels_survive_a_restart() -> None:
    harness = BrokerHarness()
    assert _update(harness, [("transaction.version", 0, fu.UNSAFE_DOWNGRADE)]).error_code == ErrorCode.none
    levels, epoch = _finalized(harness)
    restarted = BrokerHarness(store=harness.store)  # replayed from the metadata log
    assert _finalized(restarted) == (levels, epoch)
    assert "transaction.version" not in levels


def test_a_log_without_feature_records_gets_the_bootstrap_levels_with_the_update() -> None:
    """A metadata log written before feature records existed: the first update writes the other
    features' bootstrap levels too, so ApiVersions (which then reads the image) keeps them."""
    harness = BrokerHarness()
    writer = harness.broker.controller.writer()
    for image in (writer.image, harness.broker.image):  # the controller's and the broker's
        image.finalized_features.clear()
        image.features_epoch = -1
    code, _ = writer.update_features(
        [fu.Update("group.version", 0, fu.SAFE_DOWNGRADE)], validate_only=False, now_ms=0
    )
    assert code == fu.NONE
    harness.advance(0)  # the records commit and reach the broker's image
    assert harness.broker.image.finalized_features == {"metadata.version": 25, "transaction.version": 1}


def test_decide_keeps_the_last_of_a_repeated_feature() -> None:
    records, code, _ = fu.decide(
        {"group.version": 1},
        [fu.Update("group.version", 2), fu.Update("group.version", 0, fu.SAFE_DOWNGRADE)],
    )
    assert code == fu.NONE and records == [FeatureLevelRecord(name="group.version", feature_level=0)]


def test_kraft_version_is_never_a_feature_level_record() -> None:
    """KAFKA-18979: an unchanged kraft.version is a success that writes nothing; a downgrade is
    refused (Kafka), an upgrade too (the reference's static quorum)."""
    assert fu.decide({}, [fu.Update("kraft.version", 0)]) == ([], fu.NONE, None)
    assert fu.decide({}, [fu.Update("kraft.version", 1)])[1] == fu.INVALID_UPDATE_VERSION
    assert fu.decide({"kraft.version": 1}, [fu.Update("kraft.version", 0, 2)])[1] == fu.INVALID_UPDATE_VERSION
