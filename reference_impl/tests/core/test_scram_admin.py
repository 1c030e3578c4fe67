"""SCRAM credentials in the metadata log: AlterUserScramCredentials and DescribeUserScramCredentials
as Kafka's ScramControlManager and ScramImage answer them, the records' replay after a restart, and
``--add-scram``'s bootstrap records (written on an empty log only)."""

from __future__ import annotations

from reference_impl.core.broker import Broker
from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.core.controller import scram
from reference_impl.core.controller.records import ControllerImage, decode_snapshot, encode_snapshot
from reference_impl.core.controller.scram import bootstrap_records
from reference_impl.core.metadata.records import UserScramCredentialRecord
from reference_impl.core.ports import MemoryLogStore
from reference_impl.core.security.mechanisms import make_credential, salted_password
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.sasl_client import ScramClient

from .harness import START_MS, BrokerHarness, request, settled
from .test_security import SASL_CONFIGS

SHA256, SHA512 = 1, 2


def _upsert(name: str, password: str, mechanism: int = SHA256, iterations: int = 4096) -> dict[str, object]:
    mech = "SCRAM-SHA-256" if mechanism == SHA256 else "SCRAM-SHA-512"
    salt = b"0123456789abcdef"
    salted = salted_password(mech, password, salt, iterations) if mechanism in (1, 2) else b"x"
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted,
    }


def _alter(
    harness: BrokerHarness, deletions: list[dict[str, object]], upsertions: list[dict[str, object]]
) -> dict[str, tuple[ErrorCode, str | None]]:
    answer = harness.call(request(51, 0, deletions=deletions, upsertions=upsertions))
    return {r.user: (r.error_code, r.error_message) for r in answer.results}


def _describe(
    harness: BrokerHarness, users: list[str] | None
) -> dict[str, tuple[ErrorCode, list[tuple[int, int]]]]:
    asked = None if users is None else [{"name": u} for u in users]
    answer = harness.call(request(50, 0, users=asked))
    assert answer.error_code == ErrorCode.none
    return {
        r.user: (r.error_code, [(int(c.mechanism), int(c.iterations)) for c in r.credential_infos])
        for r in answer.results
    }


def _scram_login(harness: BrokerHarness, mechanism: str, user: str, password: str) -> bool:
    cid = harness.connect("SASL_PLAINTEXT")
    harness.call(request(17, 1, mechanism=mechanism), cid)
    client = ScramClient(mechanism, user, password)
    first = harness.call(request(36, 2, auth_bytes=client.first()), cid)
    if first.error_code != ErrorCode.none:
        return False
    final = harness.call(request(36, 2, auth_bytes=client.final(first.auth_bytes)), cid)
    return bool(final.error_code == ErrorCode.none)


def test_alter_then_authenticate_describe_and_delete() -> None:
    harness = BrokerHarness(*SASL_CONFIGS)
    assert _describe(harness, None) == {}
    results = _alter(harness, [], [_upsert("alice", "pw"), _upsert("bob", "pw2", SHA512, 8192)])
    assert results == {"alice": (ErrorCode.none, None), "bob": (ErrorCode.none, None)}
    assert _scram_login(harness, "SCRAM-SHA-256", "alice", "pw")
    assert not _scram_login(harness, "SCRAM-SHA-256", "alice", "wrong")
    assert not _scram_login(harness, "SCRAM-SHA-512", "alice", "pw")  # no SHA-512 credential
    assert _describe(harness, None) == {
        "alice": (ErrorCode.none, [(1, 4096)]),
        "bob": (ErrorCode.none, [(2, 8192)]),
    }
    described = _describe(harness, ["bob", "carol", "alice", "alice"])
    assert described["bob"] == (ErrorCode.none, [(2, 8192)])
    assert described["carol"][0] == ErrorCode.resource_not_found
    assert described["alice"][0] == ErrorCode.duplicate_resource
    assert _alter(harness, [{"name": "alice", "mechanism": SHA256}], []) == {"alice": (ErrorCode.none, None)}
    assert not _scram_login(harness, "SCRAM-SHA-256", "alice", "pw")
    assert _describe(harness, ["alice"])["alice"][0] == ErrorCode.resource_not_found


def test_alter_refusals_as_kafka() -> None:
    harness = BrokerHarness(*SASL_CONFIGS)
    assert _alter(harness, [], [_upsert("twice", "pw")])["twice"][0] == ErrorCode.none
    results = _alter(
        harness,
        [{"name": "ghost", "mechanism": SHA256}, {"name": "twice", "mechanism": SHA256}],
        [
            _upsert("twice", "pw"),
            _upsert("few", "pw", iterations=4095),
            _upsert("many", "pw", iterations=16385),
            _upsert("mech", "pw", mechanism=3),
            _upsert("", "pw"),
            _upsert("ok", "pw", iterations=16384),
        ],
    )
    assert results["ghost"] == (
        ErrorCode.resource_not_found,
        "Attempt to delete a user credential that does not exist",
    )
    assert results["twice"] == (
        ErrorCode.duplicate_resource,
        "A user credential cannot be altered twice in the same request",
    )
    assert results["few"] == (ErrorCode.unacceptable_credential, "Too few iterations")
    assert results["many"] == (ErrorCode.unacceptable_credential, "Too many iterations")
    assert results["mech"] == (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism")
    assert results[""] == (ErrorCode.unacceptable_credential, "Username must not be empty")
    assert results["ok"] == (ErrorCode.none, None)
    assert set(_describe(harness, None)) == {"ok", "twice"}  # the refused request left "twice" as it was


def test_credentials_survive_a_restart_and_bootstrap_only_once() -> None:
    store = MemoryLogStore()
    config = BrokerConfig.parse(1, SASL_CONFIGS)
    boot = bootstrap_records([("SCRAM-SHA-256", "admin", make_credential("SCRAM-SHA-256", "secret"))])

    def start() -> Broker:
        return settled(
            Broker(
                config=config,
                store=store,
                advertised_host="127.0.0.1",
                advertised_port=9092,
                cluster_id="c",
                now_ms=START_MS,
                bootstrap_records=boot,
            ),
            START_MS,
        )

    first = start()
    assert set(first.image.scram) == {(1, "admin")}
    first.controller.writer().commit(
        [*bootstrap_records([("SCRAM-SHA-512", "bob", make_credential("SCRAM-SHA-512", "b"))])], START_MS
    )
    first.controller.writer().alter_scram([scram.Deletion("admin", 1)], [], START_MS)
    settled(first, START_MS).tick(START_MS)  # the records commit and are applied
    second = start()  # the log is not empty: --add-scram's records are not written again
    assert set(second.image.scram) == {(2, "bob")}
    assert second.scram_credential("SCRAM-SHA-512", "bob") is not None
    assert second.scram_credential("SCRAM-SHA-256", "admin") is None


def test_snapshot_keeps_credentials() -> None:
    image = ControllerImage(cluster_id="c", controller_id=1)
    for r in bootstrap_records([("SCRAM-SHA-256", "u", make_credential("SCRAM-SHA-256", "p"))]):
        image.apply(r, 0)
    again = decode_snapshot(encode_snapshot(image), "c", 1)
    assert isinstance(again.scram[(1, "u")], UserScramCredentialRecord)
    assert again.scram == image.scram
