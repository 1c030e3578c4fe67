"""ApiVersions (key 18): truthfulness of what is advertised, unknown versions, tagged fields.

Rules from the Kafka protocol guide ("Versioning and compatibility"), KIP-511
(ApiVersions v3: client software name and version; an unsupported ApiVersions
version is answered with a v0 body carrying UNSUPPORTED_VERSION and the
supported range) and KIP-482 (flexible versions and tagged fields).
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from fixtures.plugin import session_of
from fixtures.targets import TargetUnavailableError
from fixtures.wire import Capabilities, WireClient
from reference_impl.protocol.apis import API_NAMES, schema_versions
from reference_impl.protocol.codec import decode_response, encode_body
from reference_impl.protocol.frames import size_prefix

from .expect import expect, expect_code

FEATURE = "ApiVersions"

# APIs whose minimal request is not "empty": what a client must send for a legal answer.
MINIMAL_BODY: dict[str, dict[str, Any]] = {
    "produce": {"acks": -1, "timeout": 1000},
    "fetch": {"replica_id": -1, "max_wait": 0, "min_bytes": 1, "max_bytes": 1 << 20},
    "list_offsets": {"replica_id": -1},
    "join_group": {
        "group_id": "kh-probe",
        "session_timeout": 6000,
        "rebalance_timeout": 6000,
        "protocol_type": "consumer",
    },
    "sasl_handshake": {"mechanism": "KH-NO-SUCH-MECHANISM"},
    "api_versions": {"client_software_name": "kafka-harness", "client_software_version": "0.1.0"},
    "init_producer_id": {
        "transactional_id": None,
        "transaction_timeout": 60000,
        "producer_id": -1,
        "producer_epoch": -1,
    },
    "metadata": {"topics": []},
    "find_coordinator": {"key": "kh-probe", "coordinator_keys": ["kh-probe"]},
}
# Exchanges that only make sense inside another protocol (SASL after a handshake) are not probed empty.
NOT_PROBED = {"sasl_authenticate"}


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "probe" not in metafunc.fixturenames:
        return
    try:
        caps = session_of(metafunc.config).capabilities()
    except (TargetUnavailableError, OSError) as exc:
        metafunc.parametrize(
            "probe", [pytest.param(None, marks=pytest.mark.skip(reason=f"target unavailable: {exc}"))]
        )
        return
    probes = []
    for key in sorted(caps.advertised):
        name = API_NAMES.get(key)
        if name is None or name in NOT_PROBED:
            continue
        usable = caps.versions(key)
        for version in sorted({usable[0], usable[-1]} if usable else set()):
            probes.append(pytest.param((key, version), id=f"{name}-v{version}"))
    metafunc.parametrize("probe", probes)


def test_every_advertised_version_answers(probe: tuple[int, int], wire: WireClient) -> None:
    """Protocol guide, Versioning: a broker answers every version it lists in ApiVersions, with that
    version's layout.

    The lowest and highest advertised version of every API are probed with a
    minimal request; the answer must arrive on the same connection, carry the
    request's correlation id and decode as that version's response.
    """
    key, version = probe
    name = API_NAMES[key]
    try:
        answer = wire.request(key, version, MINIMAL_BODY.get(name, {}))
    except Exception as exc:
        raise AssertionError(
            f"[Protocol guide, Versioning] {name} v{version} is advertised but the broker "
            f"gave no decodable answer: {exc}"
        ) from None
    expect(answer is not None, "Protocol guide, Versioning", f"{name} v{version} answered nothing")


def test_api_versions_lists_itself_with_v3(caps: Capabilities) -> None:
    """KIP-511: a broker serving flexible clients advertises ApiVersions v0..v3 or later."""
    lo, hi = caps.advertised.get(18, (-1, -1))
    expect(lo == 0 and hi >= 3, "KIP-511", f"ApiVersions advertised as v{lo}..v{hi}")


def test_advertised_ranges_are_well_formed(caps: Capabilities) -> None:
    """Protocol guide, ApiVersions: each advertised range has min_version <= max_version, one entry per
    key."""
    bad = {API_NAMES.get(k, k): r for k, r in caps.advertised.items() if r[0] > r[1] or r[0] < 0}
    expect(not bad, "Protocol guide, ApiVersions", f"ill-formed ranges {bad}")


def test_unsupported_api_versions_version_gets_v0_error_body(wire: WireClient) -> None:
    """KIP-511: ApiVersions at a version the broker does not know is answered UNSUPPORTED_VERSION in a
    v0 body that still lists the supported ApiVersions range, so the client can retry lower."""
    correlation_id = wire.next_correlation_id()
    header = struct.pack(">hhih", 18, 127, correlation_id, 2) + b"kh" + b"\x00"
    body = b"\x03kh\x020\x00"  # compact strings "kh", "0", no tagged fields
    answer = wire.send_raw(size_prefix(len(header + body)) + header + body)
    expect(answer is not None, "KIP-511", "the broker closed the connection instead of answering v0")
    assert answer is not None
    got_id, parsed = decode_response(18, 0, answer)
    expect(got_id == correlation_id, "KIP-511", f"correlation id {got_id} != {correlation_id}")
    expect_code(parsed.error_code, "UNSUPPORTED_VERSION", rule="KIP-511")
    entries = {int(k.api_key): (int(k.min_version), int(k.max_version)) for k in parsed.api_keys}
    expect(18 in entries, "KIP-511", "the error answer does not list ApiVersions' own range")


def test_invalid_client_software_name_is_rejected(wire: WireClient) -> None:
    """KIP-511: client_software_name and _version must match [a-zA-Z0-9](?:[a-zA-Z0-9\\-.]*[a-zA-Z0-9])?;
    anything else is answered INVALID_REQUEST."""
    answer = wire.request("api_versions", 3, client_software_name="bad name!", client_software_version="1.0")
    expect_code(answer.error_code, "INVALID_REQUEST", rule="KIP-511")


@pytest.mark.requires("api_versions", min_version=3)
def test_unknown_tagged_field_in_request_is_ignored(wire: WireClient) -> None:
    """KIP-482: a receiver skips tagged fields whose tag it does not know; the request is served normally."""
    from kio.schema.api_versions.v3.request import ApiVersionsRequest

    body = encode_body(ApiVersionsRequest(client_software_name="kh", client_software_version="1"))
    # Replace the empty tag buffer at the end (0x00) with one unknown tag 99 carrying 3 bytes.
    tagged = body[:-1] + b"\x01" + b"\x63" + b"\x03" + b"abc"
    correlation_id = wire.next_correlation_id()
    header = struct.pack(">hhih", 18, 3, correlation_id, 2) + b"kh" + b"\x01\x63\x01z"  # header tag too
    answer = wire.send_raw(size_prefix(len(header + tagged)) + header + tagged)
    expect(answer is not None, "KIP-482", "the broker closed the connection on an unknown tagged field")
    assert answer is not None
    _got, parsed = decode_response(18, 3, answer)
    expect_code(parsed.error_code, "NONE", rule="KIP-482")
    expect(len(parsed.api_keys) > 0, "KIP-482", "no APIs listed")


def test_request_at_unsupported_version_of_another_api_gets_no_answer(
    wire_factory: Any, caps: Capabilities
) -> None:
    """Protocol guide, Versioning: a request at a version the broker does not support cannot be parsed;
    Kafka closes the connection (only ApiVersions answers an unknown version)."""
    key = 3  # Metadata
    unsupported = max(caps.advertised[key][1], schema_versions(key).stop - 1) + 20
    client = wire_factory()
    header = struct.pack(">hhih", key, unsupported, client.next_correlation_id(), 2) + b"kh" + b"\x00"
    answer = client.send_raw(size_prefix(len(header) + 2) + header + b"\x01\x00", timeout_s=10)
    expect(
        answer is None,
        "Protocol guide, Versioning",
        f"Metadata v{unsupported} was answered ({len(answer or b'')} bytes), the connection stayed open",
    )


@pytest.mark.requires("api_versions", min_version=4)
def test_finalized_features_lie_in_supported_ranges(wire: WireClient) -> None:
    """KIP-584 (ApiVersions v3 feature lists; Kafka's FinalizedFeatures and BrokerFeatures): every
    finalized level a broker reports lies within the range it lists as supported for that
    feature, and no feature is finalized at a level above 0 without being listed as supported
    (asked at v4: below it Kafka leaves out features whose range starts at 0, KAFKA-17492)."""
    answer = wire.request("api_versions", 4, client_software_name="kh", client_software_version="1")
    supported = {
        str(f.name): (int(f.min_version), int(f.max_version)) for f in answer.supported_features or []
    }
    for f in answer.finalized_features or []:
        name, level = str(f.name), int(f.max_version_level)
        low, high = supported.get(name, (1, 0))
        expect(low <= level <= high, "KIP-584", f"{name} finalized at {level}, supported {supported}")


@pytest.mark.requires("api_versions", min_version=3)
def test_v3_leaves_out_features_supported_from_level_0(wire: WireClient) -> None:
    """KAFKA-17492 (Kafka's ApiVersionsResponse.java): at ApiVersions v3 a feature whose lowest
    supported level is 0 is left out of the supported list, as clients before v4 refuse such a
    range."""
    answer = wire.request("api_versions", 3, client_software_name="kh", client_software_version="1")
    zero = [str(f.name) for f in answer.supported_features or [] if int(f.min_version) == 0]
    expect(not zero, "KAFKA-17492", f"v3 lists features supported from 0: {zero}")


@pytest.mark.requires("api_versions", min_version=3)
def test_finalized_features_carry_metadata_version_and_an_epoch(wire: WireClient) -> None:
    """KIP-584 and KIP-778 (Kafka's FeatureControlManager.java, ApiVersionsResponse.java): a KRaft
    cluster always finalizes ``metadata.version``, and the finalized features come with an epoch,
    the metadata offset of the last FeatureLevelRecord, which is never negative once any
    feature is finalized."""
    answer = wire.request("api_versions", 3, client_software_name="kh", client_software_version="1")
    finalized = {str(f.name): int(f.max_version_level) for f in answer.finalized_features or []}
    expect("metadata.version" in finalized, "KIP-778", f"finalized features: {finalized}")
    epoch = int(answer.finalized_features_epoch)
    expect(epoch >= 0, "KIP-584", f"finalized features {finalized} at epoch {epoch}")
