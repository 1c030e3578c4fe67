"""UpdateFeatures (key 57): finalized feature levels changed over the protocol (KIP-584, KIP-778).

Kafka's rules: ``clients/src/main/resources/common/message/UpdateFeaturesRequest.json`` /
``UpdateFeaturesResponse.json`` (v1 adds ValidateOnly and UpgradeType: 1 upgrade, 2 safe downgrade,
3 unsafe downgrade; v2 answers no per-feature results), ``metadata/src/main/java/org/apache/kafka/
controller/FeatureControlManager.java`` (INVALID_UPDATE_VERSION for an unknown upgrade type, a
level a node does not support, an unknown feature (supported range 0-0), a downgrade sent as an
upgrade; the request is all or nothing; validate_only writes nothing), ``QuorumController.java``
``updateFeatures`` (a failed request has one top-level error and no results) and
``ControllerApis.scala`` ``handleUpdateFeatures`` (ALTER on the CLUSTER, else
CLUSTER_AUTHORIZATION_FAILED). ApiVersions (v3+) shows the finalized levels that result.

Target-agnostic: the features are read from the target's ApiVersions. The one case that changes
the cluster lowers a feature other than metadata.version by one level and raises it back.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from fixtures.wire import Capabilities, Router, WireClient
from fixtures.wire.acls import describe_acls

from .expect import expect, expect_code, expect_equal
from .security_common import restricted_security

FEATURE = "UpdateFeatures"
CONTROL = "FeatureControlManager.java"
QUORUM = "QuorumController.java"
UPGRADE, SAFE_DOWNGRADE = 1, 2
MOVABLE = ("transaction.version", "group.version")
"""Features the round-trip case may lower by one level and raise back (never metadata.version or
kraft.version, which change how the cluster stores its metadata)."""
SETTLE_S = 15.0


def _features(wire: WireClient, caps: Capabilities) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    """(supported ranges, finalized levels) from ApiVersions at the highest advertised version."""
    version = max(caps.versions("api_versions"))
    answer = wire.request("api_versions", version, client_software_name="kh", client_software_version="1")
    supported = {
        str(f.name): (int(f.min_version), int(f.max_version)) for f in answer.supported_features or []
    }
    finalized = {str(f.name): int(f.max_version_level) for f in answer.finalized_features or []}
    return supported, finalized


def _update(
    wire: WireClient, version: int, updates: list[tuple[str, int, int]], validate_only: bool = False
) -> Any:
    keys = [{"feature": n, "max_version_level": lv, "upgrade_type": t} for n, lv, t in updates]
    return wire.request(
        "update_features", version, feature_updates=keys, validate_only=validate_only, timeout=30_000
    )


def _settled(check: Callable[[], bool]) -> bool:
    """Whether ``check`` holds within SETTLE_S: each broker applies the metadata log on its own time."""
    deadline = time.monotonic() + SETTLE_S
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


@pytest.fixture
def features(wire: WireClient, caps: Capabilities) -> tuple[dict[str, tuple[int, int]], dict[str, int]]:
    if not caps.versions("api_versions", 3):
        pytest.skip("the target does not advertise ApiVersions v3+ (no feature lists)")
    supported, finalized = _features(wire, caps)
    if "metadata.version" not in finalized:
        pytest.skip("the target finalizes no metadata.version (not a KRaft cluster)")
    return supported, finalized


def _movable(supported: dict[str, tuple[int, int]], finalized: dict[str, int]) -> str | None:
    """The first of :data:`MOVABLE` finalized above its lowest supported level, if any."""
    for name in MOVABLE:
        if finalized.get(name, 0) >= 1 and supported.get(name, (1, 0))[0] <= finalized[name] - 1:
            return name
    return None


def _expect_failed(answer: Any, code: str, what: str) -> None:
    expect_code(answer.error_code, code, rule=CONTROL, where=what)
    results = list(getattr(answer, "results", ()))
    expect_equal(results, [], QUORUM, f"{what}: per-feature results of a failed request")


@pytest.mark.versions("update_features", lo=1)
def test_validate_only_answers_and_changes_nothing(
    version: int, wire: WireClient, caps: Capabilities, features: Any
) -> None:
    """ValidateOnly: a valid update (a movable feature one level down; else metadata.version to its
    own level) is answered NONE (at v1 with one NONE result per feature, at v2 with none) and the
    finalized levels stay as they were."""
    supported, before = features
    name = _movable(supported, before)
    update = (
        (name, before[name] - 1, SAFE_DOWNGRADE)
        if name
        else ("metadata.version", before["metadata.version"], UPGRADE)
    )
    answer = _update(wire, version, [update], validate_only=True)
    expect_code(answer.error_code, "NONE", rule=CONTROL, where=f"validate_only {update}")
    if version <= 1:
        codes = [(str(r.feature), int(r.error_code.value)) for r in answer.results]
        expect_equal(codes, [(update[0], 0)], QUORUM, "v1 per-feature results")
    else:
        expect(not getattr(answer, "results", ()), QUORUM, "v2 answers per-feature results")
    expect_equal(_features(wire, caps)[1], before, CONTROL, "finalized levels after validate_only")


@pytest.mark.versions("update_features")
def test_unknown_feature_and_unsupported_level_are_invalid_update_version(
    version: int, wire: WireClient, caps: Capabilities, features: Any
) -> None:
    """A feature no node supports (range 0-0) at level 1, and metadata.version above the highest
    supported level: INVALID_UPDATE_VERSION at the top level, no results; nothing changes."""
    supported, before = features
    top = supported.get("metadata.version", (0, 0))[1]
    for update, what in (
        (("kh.no.such.feature", 1, UPGRADE), "unknown feature"),
        (("metadata.version", top + 1, UPGRADE), f"metadata.version {top + 1} (supported up to {top})"),
    ):
        _expect_failed(_update(wire, version, [update]), "INVALID_UPDATE_VERSION", what)
    expect_equal(_features(wire, caps)[1], before, CONTROL, "finalized levels after refused updates")


@pytest.mark.versions("update_features", lo=1)
def test_downgrade_sent_as_upgrade_and_unknown_upgrade_type_are_refused(
    version: int, wire: WireClient, caps: Capabilities, features: Any
) -> None:
    """UpgradeType: lowering a level with type 1 (upgrade) and an upgrade type other than 1-3 are
    INVALID_UPDATE_VERSION, validated even with ValidateOnly."""
    _, before = features
    level = before["metadata.version"]
    _expect_failed(
        _update(wire, version, [("metadata.version", level - 1, UPGRADE)], validate_only=True),
        "INVALID_UPDATE_VERSION",
        "a downgrade sent as an upgrade",
    )
    _expect_failed(
        _update(wire, version, [("metadata.version", level, 9)], validate_only=True),
        "INVALID_UPDATE_VERSION",
        "upgrade type 9",
    )
    expect_equal(_features(wire, caps)[1], before, CONTROL, "finalized levels after refused updates")


@pytest.mark.versions("update_features", lo=1)
def test_downgrade_and_upgrade_show_in_api_versions(
    version: int, router: Router, wire: WireClient, caps: Capabilities, features: Any
) -> None:
    """A safe downgrade of a feature by one level, then the upgrade back: each answered NONE and
    shown by every broker's ApiVersions (a level 0 is not listed as finalized); the feature ends
    at the level it had. On a cluster the two go to different brokers, so at least one is sent to
    a broker that is not the active controller and must forward it (KIP-590)."""
    supported, before = features
    name = _movable(supported, before)
    if name is None:
        pytest.skip(f"the target finalizes none of {MOVABLE} above its lowest supported level: {before}")
    level = before[name]

    def shown(expected: int) -> bool:
        return all(_features(conn, caps)[1].get(name, 0) == expected for conn in router.connections())

    try:
        lowered = _update(router.connections()[-1], version, [(name, level - 1, SAFE_DOWNGRADE)])
        expect_code(lowered.error_code, "NONE", rule=CONTROL, where=f"{name} {level} -> {level - 1}")
        expect(
            _settled(lambda: shown(level - 1)), CONTROL, f"ApiVersions does not show {name} at {level - 1}"
        )
        raised = _update(wire, version, [(name, level, UPGRADE)])
        expect_code(raised.error_code, "NONE", rule=CONTROL, where=f"{name} {level - 1} -> {level}")
        expect(_settled(lambda: shown(level)), CONTROL, f"ApiVersions does not show {name} back at {level}")
    finally:
        if _features(wire, caps)[1].get(name, 0) != level:
            _update(wire, version, [(name, level, UPGRADE)])  # best effort: leave the cluster as found


@pytest.mark.versions("update_features")
def test_principal_without_cluster_alter_is_refused(
    version: int, wire_factory: Callable[..., WireClient], caps: Capabilities, features: Any
) -> None:
    """ControllerApis.handleUpdateFeatures: without ALTER on the CLUSTER the request is answered
    CLUSTER_AUTHORIZATION_FAILED at the top level, with no results, and nothing changes."""
    if describe_acls(wire_factory()).error == ErrorCode.security_disabled:
        pytest.skip("the target has no authorizer (DescribeAcls: SECURITY_DISABLED)")
    restricted = wire_factory(security=restricted_security())
    _, before = features
    level = before["metadata.version"]
    answer = _update(restricted, version, [("metadata.version", level, UPGRADE)])
    expect_code(answer.error_code, "CLUSTER_AUTHORIZATION_FAILED", rule="ControllerApis.scala")
    expect_equal(list(getattr(answer, "results", ())), [], QUORUM, "results of a refused request")
    expect_equal(_features(wire_factory(), caps)[1], before, CONTROL, "finalized levels after a refusal")
