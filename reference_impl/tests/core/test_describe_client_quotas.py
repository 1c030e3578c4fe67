"""DescribeClientQuotas (48) answers from the image's quota table (ClientQuotaRecord replayed):
EXACT, DEFAULT and ANY matches, strict, and the filter errors as Kafka's ClientQuotasImage."""

from __future__ import annotations

from reference_impl.core.metadata.records import ClientQuotaRecord
from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request


def _harness() -> BrokerHarness:
    harness = BrokerHarness()
    image = harness.broker.image
    image.apply(
        ClientQuotaRecord(
            entity_types=("user",), entity_names=("alice",), key="producer_byte_rate", value=10.0
        ),
        900,
    )
    image.apply(
        ClientQuotaRecord(entity_types=("user",), entity_names=(None,), key="consumer_byte_rate", value=20.0),
        901,
    )
    image.apply(
        ClientQuotaRecord(
            entity_types=("user", "client-id"),
            entity_names=("alice", "app"),
            key="request_percentage",
            value=30.0,
        ),
        902,
    )
    return harness


def _describe(harness: BrokerHarness, components: list[dict[str, object]], strict: bool) -> object:
    return harness.call(request(48, 1, components=components, strict=strict))


def _entities(answer: object) -> set[tuple[tuple[str, str | None], ...]]:
    return {tuple((e.entity_type, e.entity_name) for e in entry.entity) for entry in answer.entries}  # type: ignore[attr-defined]


def test_exact_default_any_strict() -> None:
    harness = _harness()
    exact = _describe(harness, [{"entity_type": "user", "match_type": 0, "match": "alice"}], False)
    assert exact.error_code == ErrorCode.none  # type: ignore[attr-defined]
    assert _entities(exact) == {(("user", "alice"),), (("client-id", "app"), ("user", "alice"))}
    strict = _describe(harness, [{"entity_type": "user", "match_type": 0, "match": "alice"}], True)
    assert _entities(strict) == {(("user", "alice"),)}
    default = _describe(harness, [{"entity_type": "user", "match_type": 1, "match": None}], True)
    assert _entities(default) == {(("user", None),)}
    values = {(v.key, v.value) for v in default.entries[0].values}  # type: ignore[attr-defined]
    assert values == {("consumer_byte_rate", 20.0)}
    every = _describe(harness, [], False)
    assert len(_entities(every)) == 3


def test_invalid_filters() -> None:
    harness = _harness()
    mixed = _describe(
        harness,
        [
            {"entity_type": "ip", "match_type": 2, "match": None},
            {"entity_type": "user", "match_type": 2, "match": None},
        ],
        False,
    )
    assert mixed.error_code == ErrorCode.invalid_request  # type: ignore[attr-defined]
    unknown = _describe(harness, [{"entity_type": "group", "match_type": 2, "match": None}], False)
    assert unknown.error_code == ErrorCode.unsupported_version  # type: ignore[attr-defined]
