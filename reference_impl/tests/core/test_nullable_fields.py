"""Nullable request fields reach the handlers with Kafka's meaning; answers that cannot be encoded
close one connection (issue 17, item 1: the handler tracebacks of the mutation runs)."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    classify_field,
    get_schema_field_type,
    is_optional,
)

from fixtures.wire import complete
from reference_impl.core.handlers import HANDLERS
from reference_impl.core.handlers.registry import Respond
from reference_impl.protocol.apis import request_class, response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request


def _create(h: BrokerHarness, name: str) -> None:
    topic = {"name": name, "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
    (created,) = h.call(request(19, 5, topics=[topic], timeout=1000, validate_only=False)).topics
    assert created.error_code == ErrorCode.none


def _metadata(version: int, topics: list[dict[str, Any]] | None) -> Any:
    return request(
        3,
        version,
        topics=topics,
        allow_auto_topic_creation=False,
        include_topic_authorized_operations=False,
        include_cluster_authorized_operations=False,
    )


@pytest.mark.parametrize("version", [10, 11])
def test_metadata_v10_v11_with_a_null_topic_name_is_invalid_request(version: int) -> None:
    """v10-11 carry a nullable name and a topic id they may not use: ``KafkaApis.handleTopicMetadataRequest``
    (``core/src/main/scala/kafka/server/KafkaApis.scala``) throws InvalidRequestException ("Topic name
    can not be null for version N"), and ``MetadataRequest.getErrorResponse``
    (``clients/src/main/java/org/apache/kafka/common/requests/MetadataRequest.java``) answers every
    requested topic INVALID_REQUEST, its null name as "" since the response's name is not nullable
    before v12. The broker used to put the None in the answer and fail to encode it."""
    h = BrokerHarness()
    _create(h, "known")
    cid = h.connect()
    topics: list[dict[str, Any]] = [
        {"name": None, "topic_id": uuid.uuid4()},
        {"name": "known", "topic_id": None},
    ]
    answer = h.call(_metadata(version, topics), cid)
    assert [(t.name, t.error_code) for t in answer.topics] == [
        ("", ErrorCode.invalid_request),
        ("known", ErrorCode.invalid_request),
    ]
    assert all(t.partitions == () for t in answer.topics)
    assert cid not in h.closed


def test_metadata_v11_with_a_topic_id_is_invalid_request() -> None:
    """The same rule for a non-zero topic id before v12 ("Topic IDs are not supported in requests")."""
    h = BrokerHarness()
    answer = h.call(_metadata(11, [{"name": "x", "topic_id": uuid.uuid4()}]))
    assert [(t.name, t.error_code) for t in answer.topics] == [("x", ErrorCode.invalid_request)]


def test_metadata_v12_asks_by_id_with_a_null_name() -> None:
    """From v12 a null name with a topic id is how a topic is asked for by id (KIP-516)."""
    h = BrokerHarness()
    missing = uuid.uuid4()
    answer = h.call(_metadata(12, [{"name": None, "topic_id": missing}]))
    assert [(t.name, t.topic_id, t.error_code) for t in answer.topics] == [
        (None, missing, ErrorCode.unknown_topic_id)
    ]


@pytest.mark.parametrize("version", [1, 4, 12])
def test_metadata_null_topics_lists_every_topic(version: int) -> None:
    """MetadataRequest.json: topics null (v1+) means all topics."""
    h = BrokerHarness()
    _create(h, "t1")
    answer = h.call(_metadata(version, None))
    assert [t.name for t in answer.topics] == ["t1"]


def test_an_answer_that_cannot_be_encoded_closes_only_its_connection(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A handler bug that puts a null where the response schema has none must not escape the broker's
    step (it used to end the shell's data_received): that connection is closed with one log line
    naming the API, as SocketServer closes a connection whose response fails
    (``core/src/main/scala/kafka/network/SocketServer.scala``, processChannelException)."""

    def broken(broker: Any, ctx: Any, body: Any) -> Respond:
        plain = {"throttle_time": 0, "error_code": 0, "groups": []}
        answer = build(response_class(16, ctx.api_version), plain)
        return Respond(dataclasses.replace(answer, groups=(None,)))

    monkeypatch.setitem(HANDLERS, 16, dataclasses.replace(HANDLERS[16], fn=broken))
    h = BrokerHarness()
    bad, good = h.connect(), h.connect()
    with caplog.at_level(logging.ERROR):
        h.send(bad, request(16, 4))
    assert "internal error encoding the list_groups answer" in h.closed[bad]
    assert sum("list_groups v4 answer" in r.getMessage() for r in caplog.records) == 1
    response = h.call(request(18, 3, client_software_name="t", client_software_version="1"), good)
    assert response.error_code == ErrorCode.none and good not in h.closed


def _nullable_paths(cls: type[Any], prefix: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every field Kafka's schema lets be null (arrays, strings, bytes, structs), nested ones too."""
    for f in dataclasses.fields(cls):
        shape = classify_field(f)
        is_struct = isinstance(shape, EntityField | EntityTupleField)
        if is_optional(f) and (is_struct or get_schema_field_type(f) not in ("uuid", "datetime_i64")):
            yield (*prefix, f.name)
        if is_struct:
            yield from _nullable_paths(shape.type_, (*prefix, f.name))


def _with_null(cls: type[Any], path: tuple[str, ...]) -> dict[str, Any]:
    """Plain data reaching ``path`` (one element in each array on the way) with None at its end."""
    name, *rest = path
    if not rest:
        return {name: None}
    field = next(f for f in dataclasses.fields(cls) if f.name == name)
    shape = classify_field(field)
    inner = complete(shape.type_, _with_null(shape.type_, tuple(rest)))
    return {name: [inner] if isinstance(shape, EntityTupleField) else inner}


@pytest.mark.parametrize("api_key", sorted(HANDLERS), ids=[HANDLERS[k].name for k in sorted(HANDLERS)])
def test_every_nullable_request_field_is_handled(api_key: int) -> None:
    """MessageDataGenerator.java readers hand a handler null only where the schema says nullable; each
    such field, at every version the broker serves, set to null in an otherwise zero-valued request,
    gets an answer or Kafka's error, never an internal error (the mutation runs' TypeErrors)."""
    handler = HANDLERS[api_key]
    h = BrokerHarness()
    failures = []
    for version in range(handler.min_version, handler.max_version + 1):
        cls = request_class(api_key, version)
        for path in _nullable_paths(cls):
            cid = h.connect()
            h.send(cid, build(cls, complete(cls, _with_null(cls, path))))
            h.advance(1)
            if "internal error" in h.closed.get(cid, ""):
                failures.append(f"v{version} {'.'.join(path)}: {h.closed[cid]}")
    assert not failures, failures
