"""BrokerRegistration v1-4's checks (core/controller/registration.py), after Kafka's
``ClusterControlManager.registerBroker``, and the v4 request on the wire (core/kraft/wire.py)."""

from __future__ import annotations

import uuid

import pytest
from kio.schema.errors import ErrorCode

from reference_impl.core.controller import messages as cm
from reference_impl.core.controller.registration import (
    SUPPORTED_FEATURES,
    record_owner,
    registration_error,
    reserved,
)
from reference_impl.core.kraft import wire
from reference_impl.core.kraft.inbound import request_error
from reference_impl.protocol.codec import decode_data, encode_body

A, B = str(uuid.uuid4()), str(uuid.uuid4())


@pytest.mark.parametrize(
    ("migrating", "dirs", "owners", "expected"),
    [
        (True, (A,), {}, ErrorCode.broker_id_not_registered),
        (False, (), {}, ErrorCode.invalid_registration),  # v2+ naming no directory
        (False, (A, A), {}, ErrorCode.invalid_registration),
        (False, (str(uuid.UUID(int=1)),), {}, ErrorCode.invalid_registration),  # UNASSIGNED
        (False, (str(uuid.UUID(int=99)),), {}, ErrorCode.invalid_registration),
        (False, (A, B), {B: 7}, ErrorCode.invalid_registration),  # broker 7's directory
        (False, (A, B), {B: 1}, None),  # its own again
        (False, None, {}, None),  # v0/v1 (no LogDirs), or an in-process caller naming none
    ],
)
def test_registration_checks_in_kafkas_order(
    migrating: bool, dirs: tuple[str, ...] | None, owners: dict[str, int], expected: ErrorCode | None
) -> None:
    assert registration_error(1, migrating, dirs, owners) == expected


def test_reserved_directory_ids_are_the_first_hundred() -> None:
    assert reserved(str(uuid.UUID(int=0))) and reserved(str(uuid.UUID(int=99)))
    assert not reserved(str(uuid.UUID(int=100))) and not reserved(str(uuid.UUID(int=1 << 64)))


def test_a_broker_registered_again_lets_its_old_directories_go() -> None:
    owners: dict[str, int] = {}
    record_owner(owners, 1, (A,))
    record_owner(owners, 1, (B,))
    assert owners == {B: 1}


def test_a_v4_registration_survives_the_wire() -> None:
    body = cm.BrokerRegistrationRequest(
        correlation_id=5, broker_id=2, host="127.0.0.1", port=9092, rack="r1",
        incarnation_id=str(uuid.uuid4()), log_dirs=(A, B), previous_broker_epoch=42,
        features=SUPPORTED_FEATURES,
    )  # fmt: skip
    out = wire.request_to_wire(body, "c1")
    assert int(type(out).__version__) == wire.REGISTRATION_VERSION == 4
    back = wire.request_from_wire(62, decode_data(type(out), encode_body(out)), 5)
    assert back == (2, body)


def test_more_log_directories_than_a_broker_has_are_refused_before_anything_is_built() -> None:
    body = cm.BrokerRegistrationRequest(
        correlation_id=5, broker_id=2, host="127.0.0.1", port=9092,
        log_dirs=tuple(str(uuid.uuid4()) for _ in range(wire.MAX_LOG_DIRS + 1)),
    )  # fmt: skip
    out = decode_data(*(lambda o: (type(o), encode_body(o)))(wire.request_to_wire(body, "c1")))
    assert request_error(62, out, "c1") == ErrorCode.invalid_registration


def test_a_broker_without_directory_ids_registers_at_v1() -> None:
    body = cm.BrokerRegistrationRequest(correlation_id=5, broker_id=2, host="127.0.0.1", port=9092)
    out = wire.request_to_wire(body, "c1")
    assert int(type(out).__version__) == 1
    back = wire.request_from_wire(62, decode_data(type(out), encode_body(out)), 5)
    assert back is not None and back[1].log_dirs is None


def test_features_are_checked_against_the_finalized_levels() -> None:
    from reference_impl.core.controller.registration import feature_error

    finalized = {"metadata.version": 25, "group.version": 1}
    assert feature_error(None, finalized) is None  # in-process: not said
    assert feature_error(SUPPORTED_FEATURES, finalized) is None
    assert feature_error((), finalized) == ErrorCode.unsupported_version  # metadata.version taken as 1 only
    no_groups = (("metadata.version", 7, 25),)
    assert feature_error(no_groups, finalized) == ErrorCode.unsupported_version  # group.version 1 unnamed
    assert feature_error((*no_groups, ("group.version", 0, 1)), finalized) is None
    assert (
        feature_error((("metadata.version", 26, 30),), {"metadata.version": 25})
        == ErrorCode.unsupported_version
    )
