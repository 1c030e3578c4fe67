"""AlterClientQuotas (49) as Kafka's ClientQuotaControlManager decides it (pure checks), and through
the broker: alter then DescribeClientQuotas (48), validate_only, removal, the refusals per entity,
CLUSTER ALTER_CONFIGS authorization and the records' replay after a restart."""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl.core.controller import client_quotas as cq
from reference_impl.core.metadata.image import MetadataImage
from reference_impl.core.metadata.records import ClientQuotaRecord, decode, encode
from reference_impl.core.ports import MemoryLogStore
from reference_impl.protocol.errors import ErrorCode, KafkaError

from .harness import BrokerHarness, request
from .test_acls import ACL_CONFIGS, _login

ALICE = (("user", "alice"),)


def _image() -> MetadataImage:
    return MetadataImage(cluster_id="c", controller_id=1)


def _one(image: MetadataImage, entity: cq.EntityPairs, *ops: tuple[str, float | None]) -> tuple[Any, ...]:
    records, results = cq.decide(image, [cq.Alteration(entity, ops)])
    assert len(results) == 1
    return records, results[0][1], results[0][2]


@pytest.mark.parametrize(
    ("entity", "ops", "message"),
    [
        ((), (("producer_byte_rate", 1.0),), "Invalid empty client quota entity"),
        ((("group", "g"),), (("producer_byte_rate", 1.0),), "Unhandled client quota entity type: group"),
        ((("user", ""),), (("producer_byte_rate", 1.0),), "Empty user not supported"),
        ((("ip", "1.2.3.4"), ("user", "a")), (("connection_creation_rate", 1.0),), "IP entity should"),
        ((("ip", "not an ip"),), (("connection_creation_rate", 1.0),), "not a valid IP"),
        (ALICE, (("connection_creation_rate", 1.0),), "Invalid configuration key connection_creation_rate"),
        ((("ip", None),), (("producer_byte_rate", 1.0),), "Invalid configuration key producer_byte_rate"),
        (ALICE, (("bogus", 1.0),), "Invalid configuration key bogus"),
        (ALICE, (("producer_byte_rate", 0.0),), "must be greater than 0"),
        (ALICE, (("request_percentage", -1.0),), "must be greater than 0"),
        (ALICE, (("producer_byte_rate", 1.5),), "cannot be a fractional value"),
        (ALICE, (("consumer_byte_rate", 1e19),), "too large for a LONG"),
        ((("ip", "::1"),), (("connection_creation_rate", 2.0**31),), "too large for an INT"),
        (ALICE, (("producer_byte_rate", 1.0), ("producer_byte_rate", 2.0)), "Ignoring duplicate entity"),
    ],
)
def test_refusals(entity: cq.EntityPairs, ops: tuple[tuple[str, float | None], ...], message: str) -> None:
    records, code, text = _one(_image(), entity, *ops)
    assert code == ErrorCode.invalid_request and message in text
    assert records == []


def test_accepted_values_and_what_is_written() -> None:
    image = _image()
    ops = (("producer_byte_rate", 1024.0), ("request_percentage", 12.5), ("consumer_byte_rate", None))
    records, code, _ = _one(image, (("user", "alice"), ("client-id", None)), *ops)
    assert code == ErrorCode.none
    assert [(r.key, r.value, r.remove) for r in records] == [
        ("producer_byte_rate", 1024.0, False),
        ("request_percentage", 12.5, False),
    ]
    for offset, record in enumerate(records):
        image.apply(record, offset)
    entity = frozenset({("user", "alice"), ("client-id", None)})
    assert image.client_quotas[entity] == {"producer_byte_rate": 1024.0, "request_percentage": 12.5}
    # the same value again writes nothing; a removal of a held key writes a removal
    records, code, _ = _one(
        image,
        (("client-id", None), ("user", "alice")),
        ("producer_byte_rate", 1024.0),
        ("request_percentage", None),
    )
    assert code == ErrorCode.none
    assert [(r.key, r.remove) for r in records] == [("request_percentage", True)]
    assert _one(_image(), (("ip", "10.0.0.1"),), ("connection_creation_rate", 5.0))[1] == ErrorCode.none
    assert _one(_image(), ALICE, ("producer_byte_rate", 1.0000001))[1] == ErrorCode.none  # within 1e-6


def test_one_failing_op_fails_its_entity_only_and_a_repeated_entity_is_refused() -> None:
    records, results = cq.decide(
        _image(),
        [
            cq.Alteration(ALICE, (("producer_byte_rate", 10.0), ("bogus", 1.0))),
            cq.Alteration((("user", "bob"),), (("producer_byte_rate", 10.0),)),
            cq.Alteration((("user", "carol"),), (("producer_byte_rate", 5.0),)),
            cq.Alteration((("user", "carol"),), (("consumer_byte_rate", 5.0),)),
        ],
    )
    by_user = {dict(e)["user"]: (code, text) for e, code, text in results}
    assert by_user["alice"][0] == ErrorCode.invalid_request
    assert by_user["bob"] == (ErrorCode.none, None)
    assert by_user["carol"][0] == ErrorCode.invalid_request
    assert "Ignoring duplicate entity" in (by_user["carol"][1] or "")
    # Kafka's loop keeps the first carol entry's records although its result is overwritten
    assert sorted((r.entity_names, r.key) for r in records if isinstance(r, ClientQuotaRecord)) == [
        (("bob",), "producer_byte_rate"),
        (("carol",), "producer_byte_rate"),
    ]


def test_a_type_named_twice_keeps_its_last_name_and_the_batch_is_bounded() -> None:
    _records, code, _ = _one(_image(), (("user", "a"), ("user", "b")), ("producer_byte_rate", 1.0))
    assert code == ErrorCode.none
    many = [cq.Alteration((("user", f"u{i}"),), (("producer_byte_rate", 1.0),)) for i in range(10_001)]
    with pytest.raises(KafkaError) as refused:
        cq.decide(_image(), many)
    assert refused.value.code == ErrorCode.policy_violation


def test_record_codec_round_trip() -> None:
    record = ClientQuotaRecord(
        entity_types=("user", "client-id"), entity_names=(None, "app"), key="k", remove=True
    )
    assert decode(encode(record)) == record


# -- through the broker --------------------------------------------------------------------------


def _entry(entity: cq.EntityPairs, *ops: tuple[str, float | None]) -> dict[str, Any]:
    return {
        "entity": [{"entity_type": t, "entity_name": n} for t, n in entity],
        "ops": [{"key": k, "value": 0.0 if v is None else v, "remove": v is None} for k, v in ops],
    }


def _alter(
    harness: BrokerHarness, *entries: dict[str, Any], validate_only: bool = False, cid: int | None = None
) -> list[tuple[Any, ...]]:
    answer = harness.call(request(49, 1, entries=list(entries), validate_only=validate_only), cid)
    return [
        (tuple((e.entity_type, e.entity_name) for e in r.entity), r.error_code, r.error_message)
        for r in answer.entries
    ]


def _described(harness: BrokerHarness) -> dict[frozenset[tuple[str, str | None]], dict[str, float]]:
    answer = harness.call(request(48, 0, components=[], strict=False))
    assert answer.error_code == ErrorCode.none
    return {
        frozenset((e.entity_type, e.entity_name) for e in entry.entity): {
            v.key: v.value for v in entry.values
        }
        for entry in answer.entries
    }


def test_alter_describe_validate_only_remove_and_restart() -> None:
    store = MemoryLogStore()
    harness = BrokerHarness(store=store)
    checked = _alter(harness, _entry(ALICE, ("producer_byte_rate", 2048.0)), validate_only=True)
    assert checked == [(ALICE, ErrorCode.none, None)]
    assert _described(harness) == {}
    done = _alter(
        harness,
        _entry(ALICE, ("producer_byte_rate", 2048.0), ("consumer_byte_rate", 4096.0)),
        _entry((("ip", "127.0.0.1"),), ("connection_creation_rate", 3.0)),
        _entry((("user", "bob"),), ("bogus", 1.0)),
    )
    assert {e: code for e, code, _ in done} == {
        ALICE: ErrorCode.none,
        (("ip", "127.0.0.1"),): ErrorCode.none,
        (("user", "bob"),): ErrorCode.invalid_request,
    }
    expected = {
        frozenset(ALICE): {"producer_byte_rate": 2048.0, "consumer_byte_rate": 4096.0},
        frozenset({("ip", "127.0.0.1")}): {"connection_creation_rate": 3.0},
    }
    assert _described(harness) == expected
    assert _alter(harness, _entry(ALICE, ("consumer_byte_rate", None)))[0][1] == ErrorCode.none
    expected[frozenset(ALICE)] = {"producer_byte_rate": 2048.0}
    assert _described(harness) == expected
    assert _alter(harness) == []  # no entries: nothing to do
    restarted = BrokerHarness(store=store)
    assert _described(restarted) == expected


def test_alter_needs_alter_configs_on_the_cluster() -> None:
    harness = BrokerHarness(*ACL_CONFIGS)
    alice = _login(harness, "alice", "alice-secret")
    admin = _login(harness, "admin", "admin-secret")
    refused = _alter(
        harness,
        _entry(ALICE, ("producer_byte_rate", 1.0)),
        _entry(ALICE, ("consumer_byte_rate", 1.0)),
        cid=alice,
    )
    assert [code for _, code, _ in refused] == [ErrorCode.cluster_authorization_failed] * 2
    assert _alter(harness, _entry(ALICE, ("producer_byte_rate", 1.0)), cid=admin)[0][1] == ErrorCode.none
